"""Admission over the job corpus, static reading vs import by dry run (slow: real dry runs, about 1-2 s per job).

Usage:
    python evals/import_corpus.py

Imports every job of the corpus twice, `import_job(job)` (static) and `import_job(job, dry_run=True)`, in-process
with default arguments: the NVFLARE examples (tests/fixtures/nvflare_examples, family in SOURCES.json), the recipe
fixtures (tests/fixtures/jobs/recipes, family in expected.json) and the dry-run fixtures
(tests/fixtures/jobs/dryrun, family below). Prints one row per job (family, static and dry-run verdict, budget,
dry-run status) and `import corpus: ...` with, for each importer, training jobs admitted, non-training jobs
admitted (must be 0) and crashes (must be 0). Exit 0 when neither importer admits a non-training job or crashes
and the dry run admits at least every job the static reading admits; 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "nvflare-autofl" / "scripts"))
from autofl_core.importer import api  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
DRYRUN_FAMILIES = {
    "class_parser": "training",
    "computed_budget": "training",
    "env_rounds": "training",
    "eval_from_table": "evaluation",
    "hidden_rounds": "training",
    "picked_from_table": "training",
}


def corpus() -> list[tuple[str, Path, str]]:
    """(name, job.py, family) for every job of the corpus."""
    examples = json.loads((FIXTURES / "nvflare_examples" / "SOURCES.json").read_text(encoding="utf-8"))["jobs"]
    recipes = json.loads((FIXTURES / "jobs" / "recipes" / "expected.json").read_text(encoding="utf-8"))["fixtures"]
    jobs = [(f"examples/{n}", FIXTURES / "nvflare_examples" / n / "job.py", e["family"]) for n, e in examples.items()]
    jobs += [(f"recipes/{n}", FIXTURES / "jobs" / "recipes" / n / "job.py", e["family"]) for n, e in recipes.items()]
    jobs += [(f"dryrun/{n}", FIXTURES / "jobs" / "dryrun" / n / "job.py", f) for n, f in DRYRUN_FAMILIES.items()]
    return sorted(jobs)


def verdict(job: Path, dry_run: bool) -> tuple[str, dict | None]:
    try:
        config = api.import_job(job, dry_run=dry_run)
    except Exception as error:  # noqa: BLE001  (a crash is what this eval counts)
        return f"CRASH {type(error).__name__}: {error}", None
    return ("admit" if not config["admission_errors"] else "refuse"), config


def budget_text(config: dict | None) -> str:
    budget = (config or {}).get("fixed_budget") or {}
    return "/".join(str((budget.get(f) or {}).get("value")) for f in ("num_clients", "min_clients", "num_rounds"))


def main() -> int:
    counts = {"static": [0, 0, 0], "dry run": [0, 0, 0]}
    lost = []
    print(f"{'job':<38} {'family':<11} {'static':<7} {'dry run':<7} {'budget (dry run)':<16} dry-run record")
    for name, job, family in corpus():
        rows = {}
        for label, dry in (("static", False), ("dry run", True)):
            word, config = verdict(job, dry)
            rows[label] = (word, config)
            tally = counts[label]
            tally[0] += word == "admit" and family in ("training", None)
            tally[1] += word == "admit" and family not in ("training", None)
            tally[2] += word.startswith("CRASH")
        if rows["static"][0] == "admit" and rows["dry run"][0] != "admit":
            lost.append(name)
        config = rows["dry run"][1] or {}
        record = ((config.get("import") or {}).get("dry_run") or {}).get("status", "-")
        print(
            f"{name:<38} {family or '-':<11} {rows['static'][0][:7]:<7} {rows['dry run'][0][:7]:<7} "
            f"{budget_text(config):<16} {record}"
        )
    training = sum(1 for _, _, family in corpus() if family in ("training", None))
    for label, (admitted, wrong, crashes) in counts.items():
        print(
            f"import corpus ({label}): {admitted}/{training} training jobs admitted, {wrong} non-training admitted, "
            f"{crashes} crashes"
        )
    if lost:
        print(f"import corpus: admitted statically but not with the dry run: {', '.join(lost)}")
    bad = any(c[1] or c[2] for c in counts.values()) or bool(lost)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
