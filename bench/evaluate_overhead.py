"""P1/P2 through the runner: `run_job_campaign.py evaluate` of an argument-only candidate vs the bare job.

Usage: python bench/evaluate_overhead.py [--pairs 3] [--python PY] [--quick]

A campaign is initialized on a copy of examples/hello-numpy (baseline not timed). Each pair runs the bare job
(`python job.py <budget> --lr X`, its own NVFLARE_SIMULATOR_WORKSPACE_ROOT) and the same configuration as a
candidate through the CLI (`prepare` untimed, then `evaluate --run-args "--lr X"` timed end to end: start-up,
validation, re-import, trial, finalize, plot, report), alternating which goes first. Reported: medians, the
median per-pair ratio and absolute overhead (P1), and the runner's own CPU while the child ran per minute of
trial (P2, `runner_cpu_seconds` of the trial's `trial.json`; the plotting library is imported meanwhile by a
separate worker process, see campaign/plot_worker.py). Python's bytecode cache is on for both sides, as on a user's
machine (this container disables it). Prints a table and `RESULT: PASS|FAIL`; exits 1 when a bar is missed.
Bars: ratio <= 1.03, overhead <= 0.5 s, runner CPU <= 0.1 s per minute of trial.
`--quick` uses the sub-second stand-in campaign job as a smoke run: its trial is too short to hide the plotting
library's import (about 1 s) behind it, so only a looser overhead bar of 2.5 s is judged there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
STANDIN = REPO / "tests" / "autofl" / "standin_campaign"
BUDGET = ["--n_clients", "2", "--num_rounds", "3"]
MAX_RATIO, MAX_OVERHEAD, MAX_CPU_PER_MIN = 1.03, 0.5, 0.1
QUICK_MAX_OVERHEAD = 2.5


ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def runner(python: str, job: Path, *args: str) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([python, str(RUNNER), args[0], str(job), *args[1:]], capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall, json.loads(done.stdout)


def bare(python: str, job: Path, lr: str, scratch: Path, index: int) -> float:
    env = dict(ENV, NVFLARE_SIMULATOR_WORKSPACE_ROOT=str(scratch / f"bare-{index}"))
    with open(scratch / f"bare-{index}.log", "wb") as log:
        started = time.perf_counter()
        rc = subprocess.run(
            [python, str(job), *BUDGET, "--lr", lr], cwd=job.parent, env=env, stdout=log, stderr=log
        ).returncode
        wall = time.perf_counter() - started
    if rc != 0:
        raise SystemExit(f"bare run {index} failed with exit code {rc}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    )
    parser.add_argument("--quick", action="store_true", help="one pair on the stand-in job (smoke test)")
    args = parser.parse_args(argv)
    pairs = 1 if args.quick else args.pairs
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as scratch_text:
        scratch = Path(scratch_text)
        workspace = scratch / "ws"
        shutil.copytree(STANDIN if args.quick else EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        job = workspace / "job.py"
        runner(args.python, job, "initialize", "--uncapped")
        rows = []
        for index in range(pairs):
            lr = f"{0.06 + 0.01 * index:.2f}"
            name = f"lr-{lr}"
            runner(args.python, job, "prepare", "--name", name, "--hypothesis", "benchmark")
            order = ("bare", "evaluate") if index % 2 == 0 else ("evaluate", "bare")
            walls = {}
            for kind in order:
                if kind == "bare":
                    walls[kind] = bare(args.python, job, lr, scratch, index)
                else:
                    walls[kind], _envelope = runner(args.python, job, "evaluate", "--run-args", f"--lr {lr}")
            trial = json.loads((workspace / "autofl_runs" / name / "trial.json").read_text())
            cpu_per_min = trial["runner_cpu_seconds"] / max(trial["runtime_seconds"], 1e-9) * 60
            rows.append((walls["bare"], walls["evaluate"], cpu_per_min))
    # judged on the printed figures (the summary line below), so the printed figures and the verdict agree
    ratio = float(f"{statistics.median(e / b for b, e, _ in rows):.3f}")
    overhead = float(f"{statistics.median(e - b for b, e, _ in rows):+.2f}")
    cpu = float(f"{statistics.median(c for _, _, c in rows):.3f}")
    print("pair  bare_s  evaluate_s  ratio   overhead_s  runner_cpu_s/min")
    for index, (b, e, c) in enumerate(rows):
        print(f"{index:>4}  {b:6.2f}  {e:10.2f}  {e / b:6.3f}  {e - b:+10.2f}  {c:16.3f}")
    print(
        f"median ratio {ratio:.3f} (bar {MAX_RATIO}), overhead {overhead:+.2f} s (bar {MAX_OVERHEAD}), "
        f"runner CPU {cpu:.3f} s/min (bar {MAX_CPU_PER_MIN})"
    )
    if args.quick:
        ok = overhead <= QUICK_MAX_OVERHEAD
        print(f"quick smoke run: only the overhead is judged, against {QUICK_MAX_OVERHEAD} s")
    else:
        ok = overhead <= MAX_OVERHEAD and ratio <= MAX_RATIO and cpu <= MAX_CPU_PER_MIN
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
