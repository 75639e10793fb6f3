"""P1/P2 benchmark: a trial through `run_trial` vs the bare `python job.py`, interleaved A/B pairs.

Usage: python bench/runner_overhead.py [--pairs 3] [--job examples/hello-numpy/job.py] [--python PY] [--quick]

Each pair runs the bare job (its own fresh NVFLARE_SIMULATOR_WORKSPACE_ROOT, output to a
file) and the same job through `run_trial` (isolated root, streamed run.log, watchdogs,
result copy, metric extraction, cleanup), alternating which goes first. Reported: median
wall times, the median per-pair ratio and absolute overhead (P1), and the runner's own CPU
while the child runs (getrusage(RUSAGE_SELF) delta around the supervised run, all runner
threads, not the child) per minute of trial (P2). The CPU of the whole run_trial call
(including the result copy and metric extraction after the child exited) is shown for
information; its wall time is part of the P1 overhead. Prints a table and
`RESULT: PASS|FAIL`; exits 1 when a bar is missed.

Bars: ratio <= 1.03, overhead <= 0.5 s, runner CPU <= 0.1 s per minute of trial.
`--quick` runs one pair of the sub-second stand-in job as a smoke test: only the absolute
overhead bar is judged (the ratio and per-minute CPU of a 0.2 s job measure fixed start-up
costs, not the runner).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "nvflare-autofl" / "scripts"))

from autofl_core.trial.execute import TrialSpec, run_trial  # noqa: E402

DEFAULT_JOB = REPO / "examples" / "hello-numpy" / "job.py"
STANDIN_JOB = REPO / "tests" / "autofl" / "standin_job" / "job.py"
BUDGET = ["--num_rounds", "3", "--n_clients", "2"]
GROUPS = [["--name"], ["--n_clients"], ["--num_rounds"], ["--lr"], ["--local_steps"], ["--workspace"]]
MAX_RATIO, MAX_OVERHEAD, MAX_CPU_PER_MIN = 1.03, 0.5, 0.1


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bare_run(python: str, job: Path, scratch: Path, index: int) -> float:
    """Wall seconds of `python job.py BUDGET` with its own simulator root; output goes to a file."""
    env = dict(os.environ, NVFLARE_SIMULATOR_WORKSPACE_ROOT=str(scratch / f"bare-root-{index}"))
    with open(scratch / f"bare-{index}.log", "wb") as log:
        started = time.perf_counter()
        rc = subprocess.run([python, str(job), *BUDGET], cwd=job.parent, env=env, stdout=log, stderr=log).returncode
        wall = time.perf_counter() - started
    if rc != 0:
        raise SystemExit(f"bare run {index} failed with exit code {rc}; see {scratch / f'bare-{index}.log'}")
    return wall


def trial_run(python: str, job: Path, scratch: Path, index: int) -> tuple[float, float, float, float]:
    """(wall s, runner CPU s while the child ran, trial runtime s, CPU s of the whole run_trial call)."""
    spec = TrialSpec(
        python=python,
        job_path=job,
        workspace=job.parent,
        run_dir=scratch / "runs" / f"pair-{index}",
        trial_name=f"bench-{index}",
        metric_order=["accuracy"],
        budget_args=list(BUDGET),
        flag_groups=GROUPS,
        name_flag="--name",
        num_rounds=3,
        temp_parent=scratch,
    )
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    result = run_trial(spec)
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    if result.outcome != "success":
        raise SystemExit(f"trial {index} did not succeed: {result.failure_reason}")
    return wall, result.runner_cpu_seconds, result.runtime_seconds, cpu


def measure(python: str, job: Path, pairs: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="autofl-bench-") as tmp:
        scratch = Path(tmp)
        for index in range(pairs):
            if index % 2 == 0:
                bare = bare_run(python, job, scratch, index)
                wall, cpu, runtime, total_cpu = trial_run(python, job, scratch, index)
            else:
                wall, cpu, runtime, total_cpu = trial_run(python, job, scratch, index)
                bare = bare_run(python, job, scratch, index)
            per_min = cpu / max(runtime, 1e-9) * 60
            rows.append({"bare": bare, "trial": wall, "cpu_per_min": per_min, "total_cpu": total_cpu})
            print(f"pair {index + 1}/{pairs}: bare {bare:.3f} s, trial {wall:.3f} s", file=sys.stderr, flush=True)
    return rows


def summarize(rows: list[dict], quick: bool) -> tuple[list[tuple[str, str, str, str]], bool]:
    ratio = statistics.median(r["trial"] / r["bare"] for r in rows)
    overhead = statistics.median(r["trial"] - r["bare"] for r in rows)
    cpu = statistics.median(r["cpu_per_min"] for r in rows)
    shown = {"ratio": f"{ratio:.4f}", "overhead": f"{overhead:.3f}", "cpu": f"{cpu:.4f}"}
    # each bar is judged on the printed figure, so the table and its verdict always agree
    checks = [
        ("median bare wall (s)", f"{statistics.median(r['bare'] for r in rows):.3f}", "", ""),
        ("median trial wall (s)", f"{statistics.median(r['trial'] for r in rows):.3f}", "", ""),
        ("median ratio", shown["ratio"], f"<= {MAX_RATIO}", _verdict(float(shown["ratio"]) <= MAX_RATIO, quick)),
        (
            "median overhead (s)",
            shown["overhead"],
            f"<= {MAX_OVERHEAD}",
            _verdict(float(shown["overhead"]) <= MAX_OVERHEAD, False),
        ),
        (
            "runner CPU (s/min)",
            shown["cpu"],
            f"<= {MAX_CPU_PER_MIN}",
            _verdict(float(shown["cpu"]) <= MAX_CPU_PER_MIN, quick),
        ),
        ("run_trial CPU total (s)", f"{statistics.median(r['total_cpu'] for r in rows):.4f}", "", ""),
    ]
    passed = all(row[3] in ("", "PASS", "n/a (quick)") for row in checks)
    return checks, passed


def _verdict(ok: bool, skipped: bool) -> str:
    if skipped:
        return "n/a (quick)"
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="interleaved A/B pairs (default 3; 1 with --quick)")
    parser.add_argument("--job", type=Path, default=None, help="job.py to measure (default examples/hello-numpy)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that has nvflare installed")
    parser.add_argument("--quick", action="store_true", help="smoke run on the sub-second stand-in job")
    args = parser.parse_args(argv)
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 3)
    if pairs < 1:
        parser.error("--pairs must be at least 1")
    job = (args.job or (STANDIN_JOB if args.quick else DEFAULT_JOB)).resolve()
    if not job.is_file():
        parser.error(f"job not found: {job}")
    rows = measure(args.python, job, pairs)
    checks, passed = summarize(rows, args.quick)
    print(f"runner overhead: {job.relative_to(REPO) if job.is_relative_to(REPO) else job}, {pairs} pair(s)")
    print(f"{'figure':<24} {'value':>10}  {'bar':<10} result")
    for name, value, bar, verdict in checks:
        print(f"{name:<24} {value:>10}  {bar:<10} {verdict}")
    print(f"RESULT: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
