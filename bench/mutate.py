"""`make mutate`: mutation testing of the pure cores with mutmut, and a kill score per module.

Usage: python bench/mutate.py [--only NAME ...] [--sample 10|20|50] [--max-children N] [--keep DIR] [--survivors]

For each module group below, a scratch folder is staged (the package to mutate at its top, so mutmut names
mutants `autofl_core.campaign.guard.x_...`; a copy of tests/, skills/, evals/, shared/, bench/ and examples/ in its
`mutants/` folder, where the skill's copy of the package is a link to the mutated one, so in-process tests and
the scripts they start both run the mutants) and `mutmut run` runs there with the group's tests only. mutmut
breaks the code one small change at a time (an operator, a constant, a comparison, a removed call) and
reruns the tests that reach the changed function. Prints one line per module: killed (tests failed or timed
out) / total mutants, and the score. `--sample 20` tests a fixed fifth of the mutants (faster, an estimate);
`--survivors` lists every surviving mutant (`mutmut show NAME` in the kept folder prints its diff).
Not part of `make test`: a full run takes an hour or more on 2 shared cores; see docs/mutation.md.
Exit 0 when every selected group reaches GOAL, 1 otherwise, 2 on bad usage or when mutmut cannot run.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL = 0.85
COPIED = ("tests", "skills", "evals", "shared", "bench", "examples", "pyproject.toml")
PYTEST_ARGS = ("-p", "no:cacheprovider", "-m", "not integration and not slow")
DETECTED = {"killed", "timeout"}
# --sample: mutmut numbers each function's mutants 1, 2, 3, ...; a sample takes those ending in these digits.
SAMPLE_DIGITS = {10: "0", 20: "05", 50: "02468"}
TIMEOUT_MULTIPLIER = 10.0  # a mutant may use 2 x 10 x (its tests' clean time + 1 s); mutmut's default is 15


@dataclass(frozen=True)
class Group:
    """One module (or sub-package) to mutate, with the tests that matter for it."""

    name: str
    skill: str
    package: str
    files: tuple[str, ...]  # globs relative to the skill's scripts/ folder
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()  # test node ids left out (too slow to rerun for every mutant)


AUTOFL, DIAGNOSE = "nvflare-autofl", "nvflare-diagnose-job"
AUTOFL_EDGES = "tests/test_autofl_core_edges.py"
GUARD_TESTS = ("tests/autofl/test_guard.py", "tests/autofl/test_guard_ledgers.py", "tests/autofl/test_guard_oracle.py")
IMPORTER_TESTS = tuple(
    f"tests/autofl/test_importer_{name}.py"
    for name in (
        "argparse",
        "budget_trust",
        "dataflow",
        "evaluate",
        "objective",
        "real_parser",
        "recipes",
        "robustness",
        "surface",
        "survivors_schema",
        "survivors_argparse",
        "survivors_walker",
        "survivors_values",
    )
)
EVALS_IN_PROCESS = "tests/test_evals_in_process.py"
MATCHER_TESTS = (
    "tests/diagnose/test_matcher.py",
    "tests/diagnose/test_inspect_source.py",
    "tests/diagnose/test_job_folder.py",
    EVALS_IN_PROCESS,
    "tests/test_matcher_edges.py",
    "tests/test_refine_edges.py",
)
INJECTION_TESTS = (
    "tests/diagnose/test_injection.py",
    "tests/diagnose/test_poisoned_corpus.py",
    "tests/diagnose/test_logline.py",
    EVALS_IN_PROCESS,
    "tests/test_injection_edges.py",
)
GROUPS = (
    Group("guard", AUTOFL, "autofl_core", ("autofl_core/campaign/guard.py",), (*GUARD_TESTS, AUTOFL_EDGES)),
    Group(
        "compare",
        AUTOFL,
        "autofl_core",
        ("autofl_core/campaign/compare.py",),
        ("tests/autofl/test_ledger.py", *GUARD_TESTS, AUTOFL_EDGES),
    ),
    Group(
        "ledger",
        AUTOFL,
        "autofl_core",
        ("autofl_core/campaign/ledger.py",),
        ("tests/autofl/test_ledger.py", "tests/autofl/test_bounded_inputs.py", *GUARD_TESTS, AUTOFL_EDGES),
    ),
    Group(
        "importer",
        AUTOFL,
        "autofl_core",
        ("autofl_core/importer/*.py",),
        (
            *IMPORTER_TESTS,
            "tests/test_importer_contract_shape.py",
            "tests/test_importer_expressions.py",
            "tests/autofl/test_autofl_first_hour.py",
        ),
        deselect=(
            "tests/autofl/test_importer_robustness.py::test_hostile_sources_fail_closed"
            "[source4-too complex to follow statically]",
        ),
    ),
    Group("matcher", DIAGNOSE, "nvfdiag", ("nvfdiag/match/matcher.py",), MATCHER_TESTS),
    Group(
        "refine",
        DIAGNOSE,
        "nvfdiag",
        ("nvfdiag/match/refine.py",),
        ("tests/diagnose/test_matcher.py", EVALS_IN_PROCESS, "tests/test_refine_edges.py"),
    ),
    Group(
        "injection",
        DIAGNOSE,
        "nvfdiag",
        ("nvfdiag/untrusted/injection.py", "nvfdiag/untrusted/rules.py"),
        INJECTION_TESTS,
    ),
)


def stage(work: Path, group: Group) -> None:
    """Lay out `work` for one mutmut run of `group` (see the module docstring)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(REPO / "skills" / group.skill / "scripts" / group.package, work / group.package, ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")
    mutants = work / "mutants"
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, mutants / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, mutants / name)
    private = mutants / "skills" / group.skill / "scripts" / group.package
    shutil.rmtree(private)
    private.symlink_to(Path("..", "..", "..", group.package))  # mutants/skills/<skill>/scripts/<pkg> -> mutants/<pkg>
    # Code that finds the skill's files from its resolved location (nvfdiag/read/jsontext.py: parents[3]/references)
    # resolves to mutants/<pkg>/read, so the skill's references/ must sit two levels above mutants/<pkg> too.
    (work / "references").symlink_to(Path("mutants", "skills", group.skill, "references"))
    (work / "setup.cfg").write_text(_setup_cfg(group), encoding="utf-8")


def _setup_cfg(group: Group) -> str:
    def listing(values) -> str:
        return "".join(f"\n    {value}" for value in values)

    selection = [*group.tests, *(arg for node in group.deselect for arg in ("--deselect", node))]
    return (
        "[mutmut]\n"
        f"source_paths = {group.package}\n"
        f"only_mutate ={listing(group.files)}\n"
        f"pytest_add_cli_args_test_selection ={listing(selection)}\n"
        f"pytest_add_cli_args ={listing(PYTEST_ARGS)}\n"
        f"timeout_multiplier = {TIMEOUT_MULTIPLIER}\n"
        "use_git_change_detection = false\n"
    )


def run_group(work: Path, group: Group, max_children: int, sample: int | None = None) -> Counter:
    """Run mutmut for one staged group (all mutants, or the `sample` percent); return the count per status."""
    mutmut = [sys.executable, "-m", "mutmut"]
    log = work / "mutmut-run.log"
    names = [f"*__mutmut_*{digit}" for digit in SAMPLE_DIGITS[sample]] if sample else []
    with open(log, "wb") as handle:
        done = subprocess.run(
            [*mutmut, "run", "--max-children", str(max_children), *names],
            cwd=work,
            stdout=handle,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(f"mutmut run failed for {group.name} (exit {done.returncode}): {' | '.join(tail)}")
    listing = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    )
    return parse_results(listing.stdout)


def parse_results(text: str) -> Counter:
    """Counter of status -> mutants, plus `survivor:NAME` entries, from `mutmut results --all true`."""
    counts: Counter = Counter()
    for name, status in re.findall(r"^\s+(\S+): (.+?)\s*$", text, re.M):
        if status == "not checked":  # outside a --sample
            continue
        counts[status] += 1
        if status not in DETECTED:
            counts[f"survivor:{name} ({status})"] += 1
    return counts


def score_line(name: str, counts: Counter) -> tuple[str, float]:
    total = sum(n for status, n in counts.items() if not status.startswith("survivor:"))
    killed = sum(counts[status] for status in DETECTED)
    score = killed / total if total else 0.0
    others = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s not in DETECTED and ":" not in s)
    line = f"{name:<10} {killed:>5} / {total:<5} killed  {score:6.1%}  ({counts['timeout']} of them by timeout; "
    return line + f"{others or 'no survivors'})", score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=[g.name for g in GROUPS], help="run only these groups")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant workers (default 2)")
    parser.add_argument("--keep", type=Path, help="stage into this (new) folder and keep it for `mutmut show`")
    parser.add_argument("--survivors", action="store_true", help="list every surviving mutant")
    parser.add_argument(
        "--sample",
        type=int,
        choices=sorted(SAMPLE_DIGITS),
        help="test only this percent of the mutants (those numbered ...0, or ...0 and ...5, ...)",
    )
    args = parser.parse_args(argv)
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        print("mutate.py: error: mutmut is not installed in this interpreter; run make setup", file=sys.stderr)
        return 2
    groups = [g for g in GROUPS if not args.only or g.name in args.only]
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="mutate-"))
    scores = []
    try:
        for group in groups:
            work = scratch / group.name
            if work.exists():
                print(f"mutate.py: error: {work} exists; pass a new --keep folder", file=sys.stderr)
                return 2
            print(
                f"== {group.name}: mutating {', '.join(group.files)} against {len(group.tests)} test files",
                file=sys.stderr,
                flush=True,
            )
            stage(work, group)
            counts = run_group(work, group, args.max_children, args.sample)
            line, score = score_line(group.name, counts)
            scores.append(score)
            print(line, flush=True)
            for entry in sorted(s for s in counts if s.startswith("survivor:")) if args.survivors else []:
                print(f"    {entry.removeprefix('survivor:')}")
    except RuntimeError as exc:
        print(f"mutate.py: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    passed = all(score >= GOAL for score in scores)
    print(f"mutation score goal {GOAL:.0%} per module: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
