"""P5 (importer, dry run): `import_job(..., dry_run=True)` cold <= 3 s, warm (cached) <= 0.15 s.

Usage: python bench/importer_dryrun.py [--quick]

Times the import with a dry run in-process on runnable jobs: the project's example job, the dry-run fixtures
(tests/fixtures/jobs/dryrun) and 14 jobs of the NVFLARE example corpus (tests/fixtures/nvflare_examples). *cold*: no cached
record (the sandbox starts, imports NVFLARE, runs job.py and the perturbed runs), wall time and CPU seconds (this
process plus the sandboxed processes: on a shared machine the CPU figure is the stable one); *warm*: the records
come from the on-disk cache in a fresh process state (memo cleared). A run that raised or exited is not kept on
disk (the next command runs it again: the user may have fixed what it raised on), so its warm figure is a cold one,
judged by the cold bar.
Examples run with the arguments SOURCES.json gives them. Median of 3 cold and 10 warm runs (1 and 3 with
--quick). Prints a table and PASS/FAIL; exit 1 on a missed bar (never with --quick). Skips (exit 0) where the host
cannot seal a dry run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from autofl_core.importer import api, dryrun  # noqa: E402

COLD_BAR, WARM_BAR = 3.0, 0.15
EXAMPLES = (  # the first 14 of the NVFLARE example corpus (all 71 would make this bench five times as long)
    "hello-collab",
    "hello-cyclic",
    "hello-dp",
    "hello-jax",
    "hello-lightning",
    "hello-lr",
    "hello-numpy",
    "hello-numpy-cross-val",
    "hello-pt",
    "hello-tabular-stats",
    "pt-ccwf-swarm",
    "pt-fedjob-fedavg",
    "xgb-fedxgb",
    "xgb-job-tree",
)
JOBS = [
    REPO / "tests" / "fixtures" / "jobs" / "hello_numpy" / "job.py",
    *sorted((REPO / "tests" / "fixtures" / "jobs" / "dryrun").glob("*/job.py")),
    *(REPO / "tests" / "fixtures" / "nvflare_examples" / name / "job.py" for name in EXAMPLES),
]

SOURCES = REPO / "tests" / "fixtures" / "nvflare_examples" / "SOURCES.json"


def base_args(job: Path) -> list[str]:
    """The arguments the corpus runs an example with (its documented ones, e.g. where its data is)."""
    if job.parent.parent.name != "nvflare_examples":
        return []
    return json.loads(SOURCES.read_text())["jobs"][job.parent.name].get("args", [])


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def cpu_seconds() -> float:
    """CPU of this process and its waited-for descendants (the sandbox, the boot and its forked runs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats; report only")
    options = parser.parse_args(argv)
    if not dryrun.available():
        print("importer dry run: this host cannot seal a dry run (no namespaces); nothing to measure")
        return 0
    cold_repeats, warm_repeats = (1, 3) if options.quick else (3, 10)
    misses = 0
    print(f"{'job':<40} {'cold':>7} {'cpu':>6} {'warm':>7}  dry run")
    with tempfile.TemporaryDirectory(prefix="autofl-bench-cache-") as cache:
        original = dryrun._cache_dir
        for job in JOBS:
            name = f"{job.parent.parent.name}/{job.parent.name}"[:40]
            args = base_args(job)
            colds, cpus = [], []
            for index in range(cold_repeats):
                folder = Path(cache) / f"{job.parent.name}-{index}"
                folder.mkdir(mode=0o700)
                dryrun._cache_dir = lambda folder=folder: folder
                dryrun._MEMO.clear()
                before = cpu_seconds()
                colds.append(timed(lambda job=job, args=args: api.import_job(job, base_args=args, dry_run=True)))
                cpus.append(cpu_seconds() - before)
            warms = []
            for _ in range(warm_repeats):
                dryrun._MEMO.clear()
                warms.append(timed(lambda job=job, args=args: api.import_job(job, base_args=args, dry_run=True)))
            config = api.import_job(job, base_args=args, dry_run=True)
            cold, warm = statistics.median(colds), statistics.median(warms)
            status = (config["import"].get("dry_run") or {}).get("status", "not run (no nvflare import)")
            run_again = status in ("raised", "exited")  # not kept on disk: every command runs it cold
            ok = cold <= COLD_BAR and warm <= (COLD_BAR if run_again else WARM_BAR)
            misses += not ok
            verdict = ("ok" if ok else "MISS") + (" (run again each command: the cold bar)" if run_again else "")
            cpu = statistics.median(cpus)
            print(f"{name:<40} {cold:>6.2f}s {cpu:>5.2f}s {warm:>6.3f}s  {status}; {verdict}")
        dryrun._cache_dir = original
    print(f"importer dry run: {len(JOBS) - misses}/{len(JOBS)} within cold <= {COLD_BAR} s and warm <= {WARM_BAR} s")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if options.quick:
        return 0
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
