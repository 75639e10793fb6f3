"""The real-world eval set: how NVFLARE fails in the field, across releases and deployments (evals/realworld/).

Usage: `cases, problems = load_cases()` (cases ready for run_evals.evaluate: `files_root` set, the set's own keys
moved out of the way) and `score_line(results)` for the line `make eval` prints. Pure apart from reading the
case file. Each case of evals/realworld/cases.json carries, besides the eval_checks keys:
    provenance   "real" (captured from a run of that NVFLARE release by evals/realworld/make_captures.py),
                 "wrapped" (a real capture with Docker/Kubernetes/journal/ANSI wrappers added by
                 evals/realworld/make_wrapped.py) or "reconstruction" (written after field reports: the release's
                 real wordings and shapes, the values made up)
    release      the NVFLARE release the evidence comes from ("2.5.2", "2.4", ...)
    reason       one line: why the expected row is the right answer (the catalog rule that gives it)
    source       optional: the https URL of the public report a reconstruction takes its facts from
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_checks  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "evals" / "realworld" / "cases.json"
FILES = REPO / "evals" / "realworld" / "files"
PROVENANCES = ("real", "wrapped", "reconstruction")
OWN_KEYS = ("provenance", "release", "reason", "source")
MIN_CASES = 30


def case_problems(case: dict) -> list[str]:
    """Problems of one case: the eval_checks structure, the set's own keys, the files named."""
    problems = eval_checks.validate_case({k: v for k, v in case.items() if k not in OWN_KEYS})
    if case.get("provenance") not in PROVENANCES:
        problems.append(f"provenance must be one of {list(PROVENANCES)}")
    if not isinstance(case.get("release"), str) or not case["release"].startswith("2."):
        problems.append("release must name the NVFLARE release, e.g. '2.5.2'")
    reason = case.get("reason")
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason:
        problems.append("reason must be one non-empty line")
    source = case.get("source")
    if source is not None and not (isinstance(source, str) and source.startswith("https://") and " " not in source):
        problems.append("source must be the https URL of the public report")
    if "matched_pattern" not in case.get("expected", {}):
        problems.append("expected must name the row (matched_pattern)")
    for name in case.get("files", []):
        if name != "-" and not (FILES / name).exists():
            problems.append(f"file {name} does not exist under evals/realworld/files")
    return problems


def load_cases(path: Path = CASES) -> tuple[list[dict], list[str]]:
    """The valid cases (with `files_root`, without the set's own keys) and the problems found (each a miss)."""
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    problems, valid = [], []
    ids = [case.get("id") for case in cases]
    problems += [f"duplicate case id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if len(cases) < MIN_CASES:
        problems.append(f"the real-world set has {len(cases)} cases; it needs at least {MIN_CASES}")
    for case in cases:
        found = case_problems(case)
        problems += [f"{case.get('id')}: {p}" for p in found]
        if not found:
            runnable = {k: v for k, v in case.items() if k not in OWN_KEYS}
            valid.append({**runnable, "files_root": str(FILES), "provenance": case["provenance"]})
    return valid, problems


def score_line(results: list[tuple[dict, list[str]]]) -> str:
    """`real-world: N of M passed (real a/b, wrapped c/d, reconstruction e/f)` for (case, misses) pairs."""
    passed = sum(1 for _, misses in results if not misses)
    parts = []
    for provenance in PROVENANCES:
        mine = [misses for case, misses in results if case.get("provenance") == provenance]
        parts.append(f"{provenance} {sum(1 for m in mine if not m)}/{len(mine)}")
    return f"real-world: {passed} of {len(results)} passed ({', '.join(parts)})"
