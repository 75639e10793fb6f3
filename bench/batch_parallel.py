"""P7: a batch of three argument-only candidates on the example job, in parallel vs one by one (issue 24).

Usage: python bench/batch_parallel.py [--python PY] [--quick]

One campaign is initialized on a copy of examples/hello-numpy (baseline not timed) and copied three times (a
campaign may move folders). Side by side, in one run: one candidate evaluated alone (`one trial`), a batch of
three evaluated with `--parallel 1` (one by one) and the same batch with the default slots (parallel); each
timed end to end through the CLI (`prepare` untimed). Reported: the wall times, parallel / one trial and one by
one / one trial, and the runner's CPU per trial minute in the parallel batch (the largest `runner_cpu_seconds`
of its trials, which covers the whole batch since the runner's CPU is counted per process, over the sum of its
trials' minutes; it also holds the result copy and scoring of the trials that ended first, which one by one
fall outside any trial's window; the one trial's own figure is printed beside it). Bars: parallel <= 1.5x one trial; runner CPU <= 0.1 s per trial minute (P2). Prints a table
and `RESULT: PASS|FAIL`; exits 1 when a bar is missed. `--quick` uses the sub-second stand-in campaign job as a
smoke run: its trials are too short for the ratio to mean anything, so only that everything ran is judged.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
STANDIN = REPO / "tests" / "autofl" / "standin_campaign"
MAX_RATIO, MAX_CPU_PER_MIN = 1.5, 0.1
RATES = ("0.03", "0.07", "0.09")
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def runner(python: str, job: Path, *args: str) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([python, str(RUNNER), args[0], str(job), *args[1:]], capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall, json.loads(done.stdout)


def timed_batch(python: str, workspace: Path, rates: tuple[str, ...], *extra: str) -> tuple[float, dict]:
    """Prepare one argument-only candidate per rate (untimed), then evaluate them as one batch (timed)."""
    job = workspace / "job.py"
    paths = []
    for rate in rates:
        _wall, envelope = runner(
            python, job, "prepare", "--name", f"lr-{rate}", "--hypothesis", "p7", "--run-args", f"--lr {rate}"
        )
        paths += ["--manifest", envelope["candidate_manifest"]]
    if len(rates) == 1:
        return runner(python, job, "evaluate", *paths)
    return runner(python, job, "evaluate", *paths, *extra)


def runner_cpu_per_minute(workspace: Path, rates: tuple[str, ...]) -> float:
    trials = [json.loads((workspace / "autofl_runs" / f"lr-{r}" / "trial.json").read_text()) for r in rates]
    minutes = sum(t["runtime_seconds"] for t in trials) / 60
    return max(t["runner_cpu_seconds"] for t in trials) / max(minutes, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    )
    parser.add_argument("--quick", action="store_true", help="the stand-in job (smoke test)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch_text:
        scratch = Path(scratch_text)
        first = scratch / "init"
        shutil.copytree(STANDIN if args.quick else EXAMPLE, first, ignore=shutil.ignore_patterns("__pycache__"))
        runner(args.python, first / "job.py", "initialize", "--uncapped")
        spaces = {}
        for kind in ("one", "sequential", "parallel"):
            spaces[kind] = scratch / kind
            shutil.copytree(first, spaces[kind], symlinks=True)
        one, _ = timed_batch(args.python, spaces["one"], RATES[:1])
        sequential, _ = timed_batch(args.python, spaces["sequential"], RATES, "--parallel", "1")
        parallel, envelope = timed_batch(args.python, spaces["parallel"], RATES)
        cpu = runner_cpu_per_minute(spaces["parallel"], RATES)
        cpu_one = runner_cpu_per_minute(spaces["one"], RATES[:1])
    # judged on the printed figures, so the printed figures and the verdict agree
    ratio = float(f"{parallel / one:.2f}")
    serial_ratio = float(f"{sequential / one:.2f}")
    cpu = float(f"{cpu:.3f}")
    slots = envelope["parallel"]
    print("run                  wall_s  x one trial")
    print(f"one trial          {one:8.2f}  {1.0:10.2f}")
    print(f"batch one by one   {sequential:8.2f}  {serial_ratio:10.2f}")
    print(f"batch parallel ({slots}) {parallel:8.2f}  {ratio:10.2f}")
    print(
        f"parallel {ratio:.2f}x one trial (bar {MAX_RATIO}), one by one {serial_ratio:.2f}x, runner CPU {cpu:.3f} "
        f"s per trial minute (bar {MAX_CPU_PER_MIN}; one trial alone: {cpu_one:.3f})"
    )
    ran = all(e["score"] is not None for e in envelope["batch"]) and len(envelope["batch"]) == len(RATES)
    if args.quick:
        ok = ran
        print("quick smoke run: only that every candidate of the batch was scored is judged")
    else:
        ok = ran and ratio <= MAX_RATIO and cpu <= MAX_CPU_PER_MIN
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
