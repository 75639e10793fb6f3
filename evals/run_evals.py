"""Replay the diagnose eval cases through the real CLI and score them.

Usage:
    python evals/run_evals.py [--filter ID] [--verbose] [--jobs N]

Loads `evals/diagnose/evals.json` and adds one generated case per entry of the poisoned corpus
(`evals/diagnose/files/poisoned/variants.json`), so the corpus and the evals cannot drift apart. Every
file-backed case runs `sys.executable skills/nvflare-diagnose-job/scripts/diagnose_job.py <files...> [args]`
in a subprocess (argv list, sanitized environment, 120 s timeout; `-` feeds the case's `stdin` file) and is
compared with its `expected` object (keys documented in evals/eval_checks.py). Every report is also checked
against the spec's invariants, the rendered catalog (`references/failure_patterns.json`: recovery_category and
next_action copied exactly from the matched row) and the JSON Schema `shared/schemas/diagnose_report.v1.schema.json`.

Cases with `expected.trigger: false` are negatives for agent-level evaluation. They are not run through the
script; instead each negative prompt (and, as a control, each file-backed prompt) is checked against the
SKILL.md `description` with a keyword heuristic: a prompt "triggers" when it names FLARE (nvflare, flare,
federated, fedavg, simulator, job.py, ...) AND contains a failure word whose family the description itself
mentions (families: fail; error; exception/traceback; timed out/timeout; stall/stuck/hang;
crash/killed/abort/died; suspicious), unless the prompt asks for an out-of-scope task (a clause starting with
"tune", "download", "deploy", "create", ...) or states one ("finished fine", "not a FLARE job") that an
exclusion sentence of the description names (`eval_checks.OUT_OF_SCOPE`). Negatives must not trigger and the
description must state exclusions ("do not"/"not for"/...); positives must trigger. They are counted on their
own line.

The real-world set (evals/realworld/cases.json, see evals/realworld_set.py) runs the same way and prints its own
table and `real-world: N of M passed (...)` line; a miss there fails the run too.

The blind set (evals/blind/{dev,sealed,sealed2,sealed3,sealedrun,...,sealedrun6}, see
evals/blind_set.py): real failure reports and real failing runs the rules were not written from, in ten halves. Each half prints `blind NAME: R of N right (...), W wrong at high confidence,
...`, how far it is from the bars (>= 90 % right, none wrong at high confidence), and fails the run only when it falls
below the floor recorded when it was first scored (a regression).

Then the NVFLARE message coverage figures (evals/message_coverage.py): the share of the installed NVFLARE's
error-message templates the reviewed mapping files (goal: all), and the share of generated job.py tracebacks (and
bare simulator error lines), one per user-facing template, diagnosed as the mapped row (goal: >= 95 %).

Output (stdout): a per-case table (id, PASS/FAIL, first miss; --verbose lists every miss), then the real-world
set's table (under its `== Real-world set ... ==` header, ending with `real-world: N of M passed (...)`), then the
Auto-FL recipe admission section (a separate table delimited by its `== Auto-FL recipe admission ... ==` header and
ending with `recipe admission: ...`; see evals/recipe_admission.py), then `trigger checks: ...`, the
`nvflare messages ...` lines (one per release line among them), the `nvflare templates whose class disagrees ...`
lines (evals/template_dissent.py) and the score line `N passed, M failed` of the
diagnose cases alone on the last line. Exit 0 when everything passed, 1 on any miss (real-world and recipe
admission misses included) or a coverage figure below its goal, 2 on bad usage or an unreadable evals.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import blind_set  # noqa: E402
import eval_checks  # noqa: E402
import message_coverage  # noqa: E402
import realworld_set  # noqa: E402
import template_dissent  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EVALS = REPO / "evals" / "diagnose" / "evals.json"
FILES = REPO / "evals" / "diagnose" / "files"
VARIANTS = FILES / "poisoned" / "variants.json"
SKILL = REPO / "skills" / "nvflare-diagnose-job"
SCRIPT = SKILL / "scripts" / "diagnose_job.py"
CATALOG_JSON = SKILL / "references" / "failure_patterns.json"
REPORT_SCHEMA = REPO / "shared" / "schemas" / "diagnose_report.v1.schema.json"
RECIPE_ADMISSION = REPO / "evals" / "recipe_admission.py"
TIMEOUT = 120


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def load_cases() -> tuple[list[dict], list[str]]:
    """Valid cases from evals.json plus the generated poisoned ones; second item lists problems (each a miss)."""
    doc = json.loads(EVALS.read_text(encoding="utf-8"))
    cases = list(doc["cases"])
    problems = []
    try:
        cases += eval_checks.poisoned_cases(json.loads(VARIANTS.read_text(encoding="utf-8")))
    except FileNotFoundError:
        problems.append(f"poisoned corpus index missing: {_rel(VARIANTS)}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        problems.append(f"poisoned corpus index unreadable: {_rel(VARIANTS)}: {exc!r}")
    ids = [c.get("id") for c in cases]
    problems += [f"duplicate case id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    valid = []
    for case in cases:
        case_problems = eval_checks.validate_case(case)
        problems += [f"{case.get('id')}: {p}" for p in case_problems]
        valid += [] if case_problems else [case]
    return valid, problems


def load_catalog() -> dict | None:
    """id -> row of the rendered catalog (and its user_calls table under eval_checks.USER_CALLS_KEY), or None
    (reported) when it is not there yet."""
    if not CATALOG_JSON.is_file():
        print(f"note: {_rel(CATALOG_JSON)} missing; catalog invariants not checked", file=sys.stderr)
        return None
    document = json.loads(CATALOG_JSON.read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in document.get("patterns", [])}
    release = (document.get("release_mismatch") or {}).get("next_action")
    return dict(rows, **{eval_checks.USER_CALLS_KEY: document.get("user_calls", []), eval_checks.RELEASE_KEY: release})


def load_schema() -> dict | None:
    """The published report JSON Schema, or None (reported) when it is not there yet."""
    if not REPORT_SCHEMA.is_file():
        print(f"note: {_rel(REPORT_SCHEMA)} missing; reports are not schema-validated", file=sys.stderr)
        return None
    return json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))


def skill_description() -> str:
    """The `description` of SKILL.md's frontmatter ('' when SKILL.md or its frontmatter is missing)."""
    path = SKILL / "SKILL.md"
    if not path.is_file():
        return ""
    parts = path.read_text(encoding="utf-8").split("---", 2)
    if len(parts) < 3:
        return ""
    try:
        meta = yaml.safe_load(parts[1]) or {}
    except yaml.YAMLError:
        return ""
    return str(meta.get("description", "")) if isinstance(meta, dict) else ""


def child_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


def run_case(case: dict) -> tuple[int, str, str]:
    """Run the CLI for one case; returns (exit code, stdout, stderr). A timeout is reported as exit code -1."""
    files = Path(case.get("files_root", FILES))  # the real-world set keeps its files in evals/realworld/files
    argv = [sys.executable, str(SCRIPT)]
    argv += [f if f == "-" else str(files / f) for f in case["files"]]
    argv += list(case.get("args", []))
    stdin = (files / case["stdin"]).read_bytes() if case.get("stdin") else b""
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, cwd=REPO, env=child_env(), timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {TIMEOUT} s"
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def evaluate(case: dict, catalog: dict | None, schema: dict | None) -> list[str]:
    try:
        code, out, err = run_case(case)
    except OSError as exc:
        return [f"cannot run the case: {exc}"]
    markdown = "markdown" in case.get("args", []) and "--format" in case.get("args", [])
    return eval_checks.check_result(case["expected"], code, out, err, catalog, markdown=markdown, schema=schema)


def trigger_results(cases: list[dict], description: str) -> list[tuple[str, list[str]]]:
    """(id, misses) for every negative prompt and every file-backed prompt."""
    results = []
    for case in cases:
        if not case.get("prompt"):
            continue
        negative = case["expected"].get("trigger") is False
        results.append((case["id"], eval_checks.trigger_misses(case["prompt"], description, not negative)))
    return results


def print_trigger_checks(cases: list[dict]) -> int:
    """Print the trigger misses and the `trigger checks:` line; return the number of failed checks."""
    description = skill_description()
    triggers = trigger_results(cases, description)
    failed = [(i, m) for i, m in triggers if m]
    if not description.strip():
        print(f"trigger miss: {_rel(SKILL / 'SKILL.md')} has no description; every prompt check fails")
    for case_id, misses in failed if description.strip() else []:
        print(f"trigger miss: {case_id}: {'; '.join(misses)}")
    negatives = sum(1 for c in cases if c["expected"].get("trigger") is False)
    print(
        f"trigger checks: {len(triggers) - len(failed)} passed, {len(failed)} failed "
        f"({negatives} negative and {len(triggers) - negatives} positive prompts vs the SKILL.md description)"
    )
    return len(failed)


def print_recipe_admission() -> int:
    """Run the Auto-FL recipe admission section (a sibling script); returns its number of misses."""
    print()
    try:
        sys.path.insert(0, str(RECIPE_ADMISSION.parent))
        import recipe_admission

        misses = recipe_admission.print_section()
    except Exception as exc:  # noqa: BLE001  (the section fails as a miss, the diagnose evals still report)
        print(f"recipe miss: the admission section could not run: {exc!r}")
        misses = 1
    print()
    return misses


def print_table(rows: list[tuple[str, list[str]]], verbose: bool) -> None:
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'case'.ljust(width)}  result  missed")
    for case_id, misses in rows:
        print(f"{case_id.ljust(width)}  {'FAIL' if misses else 'PASS'}    {misses[0] if misses else ''}")
        for miss in misses[1:] if verbose else []:
            print(f"{''.ljust(width)}          {miss}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", help="run only cases whose id contains this text")
    parser.add_argument("--verbose", action="store_true", help="list every miss, not only the first")
    parser.add_argument("--jobs", type=int, default=2, help="cases run in parallel (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        cases, problems = load_cases()
        catalog, schema = load_catalog(), load_schema()
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(
            f"error: cannot load the eval inputs: {exc!r}; fix {_rel(EVALS)} (or the catalog/schema)", file=sys.stderr
        )
        return 2
    if args.filter:
        cases = [c for c in cases if args.filter in c["id"]]
    runnable = [c for c in cases if c["expected"].get("trigger") is not False and c.get("files")]
    try:
        field, field_problems = realworld_set.load_cases()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        field, field_problems = [], [f"real-world set unreadable: {exc!r}"]
    if args.filter:
        field = [c for c in field if args.filter in c["id"]]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: evaluate(c, catalog, schema), runnable + field))
        rows = list(zip([c["id"] for c in runnable], results[: len(runnable)], strict=True))
        field_results = list(zip(field, results[len(runnable) :], strict=True))
    rows += [("<evals.json>", [p]) for p in problems]
    print_table(rows, args.verbose)
    field_failed = print_realworld(field_results, field_problems, args.verbose)
    blind_failed = print_blind(args.verbose) if not args.filter else 0
    recipe_misses = print_recipe_admission()
    failed_triggers = print_trigger_checks(cases)
    coverage_met = print_message_coverage(args.verbose)
    dissent_met = print_template_dissent(args.verbose)
    failed = sum(1 for _, misses in rows if misses)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return (
        1
        if failed
        or field_failed
        or blind_failed
        or failed_triggers
        or recipe_misses
        or not coverage_met
        or not dissent_met
        else 0
    )


def print_realworld(results: list[tuple[dict, list[str]]], problems: list[str], verbose: bool) -> int:
    """The real-world set's own table and score line (evals/realworld_set.py); returns its number of misses."""
    print("\n== Real-world set (evals/realworld: field failures across NVFLARE releases and deployments) ==")
    rows = [(f"{case['id']} [{case['provenance']}]", misses) for case, misses in results]
    print_table(rows + [("<realworld/cases.json>", [p]) for p in problems], verbose)
    print(realworld_set.score_line(results))
    return sum(1 for _, misses in results if misses) + len(problems)


def print_blind(verbose: bool) -> int:
    """The blind set's halves (evals/blind_set.py): per-case lines with --verbose, one summary line each, how far
    each half is from the bars; returns the number of regressions against the recorded floors."""
    print("\n== Blind set (evals/blind: real failure reports the rules were not written from) ==")
    misses = 0
    for name in blind_set.HALVES:
        try:
            verdicts = blind_set.score_half(name, run_case)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"blind {name}: unreadable: {exc!r}")
            misses += 1
            continue
        for line in blind_set.table(verdicts) if verbose else []:
            print(line)
        print(blind_set.summary_line(name, verdicts))
        for miss in blind_set.bar_misses(verdicts):
            print(f"blind {name} short of the bar: {miss}")
        for miss in blind_set.floor_misses(name, verdicts):
            print(f"blind {name} regressed: {miss}")
            misses += 1
    return misses


def print_message_coverage(verbose: bool) -> bool:
    """Print the NVFLARE message coverage figures (evals/message_coverage.py); True when both goals are met."""
    figures = message_coverage.measure()
    print("\n".join(figures.lines(verbose)))
    if not figures.met:
        print("nvflare messages: below goal (every template mapped, >= 95 % of generated cases diagnosed as mapped)")
    return figures.met


def print_template_dissent(verbose: bool) -> bool:
    """NVFLARE's templates whose exception class disagrees with their row (evals/template_dissent.py); True when
    each user-facing one is reported below high with the other row among other_candidates."""
    figures = template_dissent.measure()
    print("\n".join(figures.lines(verbose)))
    if not figures.met:
        print("nvflare templates whose class disagrees: one is reported at high confidence or without the other row")
    return figures.met


if __name__ == "__main__":
    sys.exit(main())
