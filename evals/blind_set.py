"""The blind set: real NVFLARE failure reports the diagnose rules were not written from (evals/blind/).

Eight halves with the same schema as evals/realworld/cases.json plus `source` (the public report's URL, or the job
of a real run) and optional `acceptable_patterns` (rows the catalog equally allows):
    dev      the half the rule changes could be checked against
    sealed   the half nobody changing rules read until the work was done; opened once, after those rules were merged
    sealed2  a second sealed half built after `sealed` was opened, from other reports, for the next rule changes
    sealed3  a third sealed half from yet other reports, labelled and committed before the script ever ran on it
    sealedrun real NVFLARE 2.9 failure runs (jobs run here, not reconstructions; `source` names the job, not a URL),
             labelled and committed before the script ever ran on them
    sealedrun2 a second half of real NVFLARE 2.9 failure runs with other mistakes, labelled and committed the same way
    sealedrun3 a third half of real NVFLARE 2.9 failure runs with yet other mistakes, labelled and committed the same way
    sealedrun4 a fourth half of real NVFLARE 2.9 failure runs (all in simulation), labelled and committed the same way

A case is right when the report's matched_pattern is the expected row or one of acceptable_patterns; wrong at
high confidence when it is not right and the report says `high`. Usage: `results = score_half(name, run_case)`
with the harness's run_case, then `summary_line(name, results)`. Pure apart from reading the case files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "evals" / "blind"
HALVES = (
    "dev",
    "sealed",
    "sealed2",
    "sealed3",
    "sealedrun",
    "sealedrun2",
    "sealedrun3",
    "sealedrun4",
    "sealedrun5",
    "sealedrun6",
)
# The bars of the sealed half: at least 90 % right, none wrong at high confidence. `make eval` prints how far a half
# is from them (bar_misses) and fails only when a half falls below its recorded floor (floor_misses).
MIN_RIGHT_SHARE = 0.9
MAX_WRONG_HIGH = 0
# The figures measured when each sealed half was first scored (2026-12-05; sealed3 and sealedrun 2026-12-06;
# sealed3's wrong-at-high case went right with the confidence calibration of session 11; docs/decisions.md):
# (right, wrong at high confidence) per half. A change that gets fewer right or more wrong at high confidence is a
# regression.
# sealedrun2 was scored once on 2026-12-07 (session 15) by the coordinator, who had not read it: 14 right, 1 wrong at
# high confidence, the same on the code before and after that session's first rule changes; its three misses were
# then read and answered by general rules (h15dfx), after which it is 17 of 17 and no longer a blind figure.
# sealedrun3 (built 2026-12-07, session 16) was scored once by the coordinator, who had not read it: 16 of 18 right,
# 0 wrong at high confidence, mode 18 of 18; the same on the code of the session's start (95e6d25). Its two misses (both
# at low confidence) were then read and answered by general rules (h16dfy), after which it is 18 of 18 and no longer a
# blind figure.
# sealedrun4 (built 2026-12-07, session 17) was scored once by the coordinator, who had not read it, on the code of the
# session's start (6275a8d): 18 of 18 right, 0 wrong at high confidence, mode 18 of 18 (every case is a simulation).
# sealedrun5 (built 2026-12-07, session 18) was scored once by the coordinator, who had not read it, on the code of the
# session's start (7a6f785): 18 of 18 right, 0 wrong at high confidence, mode 18 of 18 (every case is a simulation).
# sealedrun6 (built 2026-12-07, session 19) was scored once by the coordinator, who had not read it, on the code of the
# session's start (0abf831e, session 18's code with the half wired in): 15 of 18 right, 2 wrong at high confidence,
# mode 18 of 18 (every case is a simulation). The first blind half since sealedrun2 with a wrong answer at high. Its
# three misses were then read and answered by general rules (h19dfx: a parse error in the job's code a site ran is
# the job's, not a rejected job.py argument; argparse's rejection by a client script is a job.py argument the script
# refused; h19hnd: a traceback after which the same client did later work it was assigned was handled), after which
# it is 18 of 18, 0 wrong at high, and no longer a blind figure; the floor stays the blind figure.
FLOORS = {
    "dev": (15, 0),
    "sealed": (15, 0),
    "sealed2": (17, 0),
    "sealed3": (15, 0),
    "sealedrun": (17, 0),
    "sealedrun2": (17, 0),
    "sealedrun3": (18, 0),
    "sealedrun4": (18, 0),
    "sealedrun5": (18, 0),
    "sealedrun6": (15, 2),
}


@dataclass(frozen=True)
class Verdict:
    """One case's outcome: what the script said and how it compares with the label."""

    case_id: str
    expected: tuple[str, ...]
    said: str
    confidence: str
    right: bool
    wrong_high: bool
    mode_right: bool


def load_half(name: str, root: Path = ROOT) -> list[dict]:
    """The cases of one half, each with `files_root` set for the harness's run_case."""
    half = root / name
    cases = json.loads((half / "cases.json").read_text(encoding="utf-8"))["cases"]
    return [{**case, "files_root": str(half / "files")} for case in cases]


def judge(case: dict, code: int, stdout: str) -> Verdict:
    """Compare the script's JSON report (exit code and stdout) with the case's label."""
    expected = (case["expected"]["matched_pattern"], *case.get("acceptable_patterns", []))
    try:
        report = json.loads(stdout) if code == 0 else {}
    except ValueError:
        report = {}
    said = str(report.get("matched_pattern") or f"exit {code}")
    confidence = str(report.get("confidence") or "")
    right = said in expected
    mode = case["expected"].get("runtime_mode")
    return Verdict(
        case_id=case["id"],
        expected=expected,
        said=said,
        confidence=confidence,
        right=right,
        wrong_high=not right and confidence == "high",
        mode_right=mode is None or report.get("runtime_mode") == mode,
    )


def score_half(name: str, run_case: Callable[[dict], tuple[int, str, str]], root: Path = ROOT) -> list[Verdict]:
    """Run every case of one half through run_case (argv built by the harness, JSON output) and judge it."""
    verdicts = []
    for case in load_half(name, root):
        runnable = {**case, "args": ["--format", "json"]}
        code, out, _ = run_case(runnable)
        verdicts.append(judge(case, code, out))
    return verdicts


def summary_line(name: str, verdicts: list[Verdict]) -> str:
    """`blind dev: 12 of 16 right (75 %), 0 wrong at high confidence, mode right 15 of 16`."""
    n = len(verdicts)
    right = sum(v.right for v in verdicts)
    share = f"{100 * right / n:.0f} %" if n else "-"
    return (
        f"blind {name}: {right} of {n} right ({share}), {sum(v.wrong_high for v in verdicts)} wrong at high "
        f"confidence, mode right {sum(v.mode_right for v in verdicts)} of {n}"
    )


def bar_misses(verdicts: list[Verdict]) -> list[str]:
    """What keeps a half from the bars: the right share and the count of confident mistakes."""
    n = len(verdicts)
    misses = []
    right = sum(v.right for v in verdicts)
    if not n or right / n < MIN_RIGHT_SHARE:
        misses.append(f"{right} of {n} right; the bar is {MIN_RIGHT_SHARE:.0%}")
    wrong_high = [v.case_id for v in verdicts if v.wrong_high]
    if len(wrong_high) > MAX_WRONG_HIGH:
        misses.append(f"wrong at high confidence: {', '.join(wrong_high)}")
    return misses


def floor_misses(name: str, verdicts: list[Verdict]) -> list[str]:
    """A regression against the half's recorded floor (fewer right, or more wrong at high confidence)."""
    right_floor, wrong_high_ceiling = FLOORS[name]
    right = sum(v.right for v in verdicts)
    wrong_high = sum(v.wrong_high for v in verdicts)
    misses = []
    if right < right_floor:
        misses.append(f"{right} right, fewer than the recorded {right_floor}")
    if wrong_high > wrong_high_ceiling:
        misses.append(f"{wrong_high} wrong at high confidence, more than the recorded {wrong_high_ceiling}")
    return misses


def table(verdicts: list[Verdict]) -> list[str]:
    """One line per case: mark, id, expected rows, what the script said."""
    lines = []
    for v in verdicts:
        mark = "ok" if v.right else ("WRONG-HIGH" if v.wrong_high else "wrong")
        lines.append(f"{mark:10}  {v.case_id}  expected {'|'.join(v.expected)}  said {v.said} ({v.confidence})")
    return lines
