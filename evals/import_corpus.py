"""Admission over the job corpus, static reading vs import by dry run (slow: real dry runs, about 1-5 s per job).

Usage:
    python evals/import_corpus.py [--examples]

Imports every job of the corpus twice, `import_job(job)` (static) and `import_job(job, dry_run=True)`, in-process
with default arguments: the NVFLARE examples (tests/fixtures/nvflare_examples, family in SOURCES.json), the recipe
fixtures (tests/fixtures/jobs/recipes, family in expected.json) and the dry-run fixtures
(tests/fixtures/jobs/dryrun, family below); `--examples` imports the NVFLARE examples only. Prints one row per job
(family, static and dry-run verdict, budget, dry-run status), the codes and first reason of every refused training
job, and for each set and importer `import corpus (<set>, <importer>): A/T training jobs admitted, N non-training
admitted, C crashes`, then how many of the dry run's admissions come from a run that recorded the job. Exit 0 when
neither importer admits a non-training job or crashes and the dry run admits at least every job the static reading
admits; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "nvflare-autofl" / "scripts"))
from autofl_core.importer import api  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
DRYRUN_FAMILIES = {
    "class_parser": "training",
    "collab_module": "training",
    "computed_budget": "training",
    "env_rounds": "training",
    "eval_from_table": "evaluation",
    "helper_run": "training",
    "hidden_rounds": "training",
    "parent_parser": "training",
    "picked_from_table": "training",
    "stand_in_unpack": "training",
    "subclass_module": "training",
    "workflow_default_clients": "training",
}
IMPORTERS = (("static", False), ("dry run", True))


def corpus(examples_only: bool = False) -> list[tuple[str, Path, str, list[str]]]:
    """(name, job.py, family, base arguments) for every job of the corpus (or of the NVFLARE examples only).

    An example's base arguments are the ones its job.py documents for running it (`args` in SOURCES.json): a
    user passes them to the runner with --base-args."""
    examples = json.loads((FIXTURES / "nvflare_examples" / "SOURCES.json").read_text(encoding="utf-8"))["jobs"]
    jobs = [
        (f"examples/{n}", FIXTURES / "nvflare_examples" / n / "job.py", e["family"], e.get("args", []))
        for n, e in examples.items()
    ]
    if not examples_only:
        recipes = json.loads((FIXTURES / "jobs" / "recipes" / "expected.json").read_text(encoding="utf-8"))
        jobs += [
            (f"recipes/{n}", FIXTURES / "jobs" / "recipes" / n / "job.py", e["family"], [])
            for n, e in recipes["fixtures"].items()
        ]
        jobs += [
            (f"dryrun/{n}", FIXTURES / "jobs" / "dryrun" / n / "job.py", f, []) for n, f in DRYRUN_FAMILIES.items()
        ]
    return sorted(jobs)


def verdict(job: Path, dry_run: bool, base_args: list[str] = ()) -> tuple[str, dict | None]:
    try:
        config = api.import_job(job, dry_run=dry_run, base_args=base_args)
    except Exception as error:  # noqa: BLE001  (a crash is what this eval counts)
        return f"CRASH {type(error).__name__}: {error}", None
    return ("admit" if not config["admission_errors"] else "refuse"), config


def budget_text(config: dict | None) -> str:
    budget = (config or {}).get("fixed_budget") or {}
    return "/".join(str((budget.get(f) or {}).get("value")) for f in ("num_clients", "min_clients", "num_rounds"))


def is_training(family: str | None) -> bool:
    return family in ("training", None)


def tally(rows: list[tuple[str, str, dict]], label: str) -> tuple[int, int, int, int]:
    """(training admitted, training jobs, non-training admitted, crashes) for one importer over `rows`."""
    admitted = sum(1 for _, family, r in rows if r[label][0] == "admit" and is_training(family))
    training = sum(1 for _, family, _ in rows if is_training(family))
    wrong = sum(1 for _, family, r in rows if r[label][0] == "admit" and not is_training(family))
    crashes = sum(1 for _, _, r in rows if r[label][0].startswith("CRASH"))
    return admitted, training, wrong, crashes


def recorded(rows: list[tuple[str, str, dict]]) -> int:
    """How many training jobs the dry run admits were admitted from a run that recorded the job."""
    return sum(
        1
        for _, family, r in rows
        if is_training(family)
        and r["dry run"][0] == "admit"
        and r["dry run"][1]["import"]["dry_run"].get("status") == "recorded"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", action="store_true", help="the NVFLARE examples only")
    options = parser.parse_args(argv)
    rows: list[tuple[str, str, dict]] = []
    print(f"{'job':<38} {'family':<11} {'static':<7} {'dry run':<7} {'budget (dry run)':<16} dry-run record")
    for name, job, family, base_args in corpus(options.examples):
        result = {label: verdict(job, dry, base_args) for label, dry in IMPORTERS}
        rows.append((name, family, result))
        config = result["dry run"][1] or {}
        record = ((config.get("import") or {}).get("dry_run") or {}).get("status", "-")
        print(
            f"{name:<38} {family or '-':<11} {result['static'][0][:7]:<7} {result['dry run'][0][:7]:<7} "
            f"{budget_text(config):<16} {record}"
        )
    print("refused training jobs (dry run), every code and the first reason:")
    for name, family, result in rows:
        word, config = result["dry run"]
        if is_training(family) and word != "admit":
            errors = [] if config is None else config["admission_errors"]
            reason = word if config is None else errors[0]["message"]
            print(f"  {name} [{', '.join(e['code'] for e in errors)}]: {reason[:220]}")
    sets = sorted({name.partition("/")[0] for name, _, _ in rows})
    for group in [*sets, "all"] if len(sets) > 1 else sets:
        chosen = [row for row in rows if group == "all" or row[0].startswith(group + "/")]
        for label, _ in IMPORTERS:
            admitted, training, wrong, crashes = tally(chosen, label)
            print(
                f"import corpus ({group}, {label}): {admitted}/{training} training jobs admitted, "
                f"{wrong} non-training admitted, {crashes} crashes"
            )
        admitted = tally(chosen, "dry run")[0]
        print(f"import corpus ({group}, dry run): {recorded(chosen)}/{admitted} admitted training jobs' runs recorded")
    lost = [n for n, _, r in rows if r["static"][0] == "admit" and r["dry run"][0] != "admit"]
    if lost:
        print(f"import corpus: admitted statically but not with the dry run: {', '.join(lost)}")
    bad = any(tally(rows, label)[2] or tally(rows, label)[3] for label, _ in IMPORTERS) or bool(lost)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
