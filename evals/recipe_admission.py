"""Auto-FL admission table over one realistic job.py per NVFLARE 2.9 recipe class (`make eval` prints it).

Usage:
    python evals/recipe_admission.py

Imports every `tests/fixtures/jobs/recipes/<name>/job.py` with the static importer (in-process, default
arguments) and compares it with `tests/fixtures/jobs/recipes/expected.json` (written by hand): the NVFLARE class
the job builds, its family, and whether it must be admitted. Every recipe class of the rendered recipe table
(`autofl_core/importer/nvflare_recipes.json`, i.e. of the installed NVFLARE) must be covered by a fixture.
Prints one row per fixture (budget as value/confidence: hi = high, pin = pinned, med = medium default), the reason
of every training job refused on purpose (a shape job.py can change: its refusal names the line), then
`recipe admission: ...` with the counts. Optional expectations: `refusal` (a phrase the first admission error
names) and `num_rounds_source` / `num_clients_source` (where the value must come from). Exit 0 when every row is
as expected and every class is covered, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
FIXTURES = REPO / "tests" / "fixtures" / "jobs" / "recipes"
EXPECTED = FIXTURES / "expected.json"
BUDGET = ("num_clients", "min_clients", "num_rounds")
SHORT = {"high": "hi", "pinned": "pin", "medium": "med", "unresolved": "??", "not_applicable": "n/a"}


def _importer():
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from autofl_core.importer import api, recipes

    return api, recipes


def _budget_text(config: dict) -> str:
    budget = config.get("fixed_budget") or {}
    if not budget:
        return "-"
    return " ".join(f"{budget[f]['value']}/{SHORT.get(budget[f]['confidence'], '?')}" for f in BUDGET)


def check(name: str, expected: dict) -> tuple[list[str], list[str]]:
    """(table cells, misses) for one fixture."""
    api, _ = _importer()
    started = time.perf_counter()
    config = api.import_job(FIXTURES / name / "job.py")
    seconds = time.perf_counter() - started
    admitted = not config["admission_errors"]
    job = config["job"]
    misses = []
    if admitted != expected["admit"]:
        first = config["admission_errors"][0]["message"] if config["admission_errors"] else "admitted"
        misses.append(f"expected {'admitted' if expected['admit'] else 'refused'}: {first}")
    if job.get("nvflare_class") != expected["nvflare_class"]:
        misses.append(f"class {job.get('nvflare_class')} instead of {expected['nvflare_class']}")
    if job.get("family") != expected["family"]:
        misses.append(f"family {job.get('family')} instead of {expected['family']}")
    first = config["admission_errors"][0]["message"] if config["admission_errors"] else ""
    if expected.get("refusal") and expected["refusal"] not in first:
        misses.append(f"the refusal does not name {expected['refusal']!r}: {first or 'admitted'}")
    for field in ("num_rounds", "num_clients"):
        wanted = expected.get(f"{field}_source")
        source = ((config.get("fixed_budget") or {}).get(field) or {}).get("source") or ""
        if wanted and wanted not in source:
            misses.append(f"{field} comes from {source!r}, not {wanted!r}")
    cells = [
        name,
        job.get("class") or "-",
        expected["family"] or "-",
        "admit" if expected["admit"] else "refuse",
        "admit" if admitted else "refuse",
        _budget_text(config),
        f"{seconds * 1000:.0f}ms",
    ]
    return cells, misses


def uncovered(expected: dict) -> list[str]:
    """Recipe classes of the installed NVFLARE (rendered table) that no fixture builds."""
    _, recipes = _importer()
    covered = {e["nvflare_class"] for e in expected.values()}
    return sorted(q for q, e in recipes.table()["classes"].items() if e["kind"] == "recipe" and q not in covered)


def print_section(out=None) -> int:
    """Print the admission table and its summary line (to `out`, default stdout); returns the number of misses."""
    out = out or sys.stdout
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))["fixtures"]
    header = ["fixture", "class", "family", "expected", "actual", "budget clients/min/rounds", "import"]
    rows, misses = [], []
    for name in sorted(expected):
        cells, problems = check(name, expected[name])
        rows.append(cells + ["PASS" if not problems else "FAIL"])
        misses += [f"{name}: {p}" for p in problems]
    misses += [f"no fixture builds {q}" for q in uncovered(expected)]
    widths = [max(len(r[i]) for r in [header + ["result"], *rows]) for i in range(len(header) + 1)]
    print(
        f"== Auto-FL recipe admission (tests/fixtures/jobs/recipes, nvflare {_importer()[1].nvflare_version()}) ==",
        file=out,
    )
    for row in [header + ["result"], *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out)
    for name in sorted(expected):
        if not expected[name]["admit"] and expected[name]["family"] in ("training", None):
            print(f"recipe refusal: {name}: {_first_error(name)}", file=out)
    for miss in misses:
        print(f"recipe miss: {miss}", file=out)
    actual = {n: r[4] for n, r in zip(sorted(expected), rows, strict=True)}
    admits = [n for n in expected if expected[n]["admit"]]
    others = [n for n in expected if not expected[n]["admit"] and expected[n]["family"] not in ("training", None)]
    fixable = [n for n in expected if not expected[n]["admit"] and n not in others]
    print(
        f"recipe admission: {sum(actual[n] == 'admit' for n in admits)}/{len(admits)} training jobs admitted, "
        f"{sum(actual[n] == 'refuse' for n in others)}/{len(others)} non-training jobs refused, "
        f"{sum(actual[n] == 'refuse' for n in fixable)}/{len(fixable)} jobs refused for a reason job.py can fix "
        f"(the line named), {len(misses)} misses",
        file=out,
    )
    return len(misses)


def _first_error(name: str) -> str:
    api, _ = _importer()
    errors = api.import_job(FIXTURES / name / "job.py")["admission_errors"]
    return errors[0]["message"] if errors else "admitted"


def main() -> int:
    return 1 if print_section() else 0


if __name__ == "__main__":
    sys.exit(main())
