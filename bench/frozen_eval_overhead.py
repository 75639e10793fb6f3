"""P9: frozen evaluation overhead per trial, side by side; and P1 unchanged without an evaluator.

Usage: python bench/frozen_eval_overhead.py [--pairs 3] [--python PY] [--quick]

Two campaigns on copies of examples/hello-numpy are initialized (baselines not timed): one plain, one with
`--evaluator evaluate.py` (the example's frozen evaluator). Each round runs, in rotating order, the bare job
(`python job.py <budget> --lr X`), the plain campaign's `evaluate --run-args "--lr X"` and the evaluator
campaign's, all timed end to end. Reported per round: the three walls, P1 of the plain campaign (ratio and
overhead over the bare job), the evaluator campaign's extra wall over the plain one (noisy: two separate
simulations), and the runner's own measurement of the frozen evaluation step (`measure_seconds` in
`autofl_runs/<trial>/evaluation.json`: the frozen-file hashes, the model lookup and the evaluator processes of
both sites) with the CPU its evaluator processes used (load-independent). Bars: P9 median `measure_seconds` <= 1 s; P1 (plain campaign) ratio <= 1.03 and overhead <= 0.5 s.
`--quick` runs one round on the sub-second stand-in campaign with its stand-in evaluator (a smoke run: the step is
judged against a loose 5 s).
Prints a table and `RESULT: PASS|FAIL`; exits 1 when a bar is missed.
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
STANDIN_EVALUATOR = REPO / "tests" / "autofl" / "standin_evaluator"
BUDGET = ["--n_clients", "2", "--num_rounds", "3"]
MAX_MEASURE, MAX_RATIO, MAX_OVERHEAD = 1.0, 1.03, 0.5
QUICK_MAX_MEASURE = 5.0  # the smoke run only shows the step works; the bar is judged on the example job
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def runner(python: str, job: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([python, str(RUNNER), args[0], str(job), *args[1:]], capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall


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


def workspace(scratch: Path, name: str, quick: bool) -> Path:
    folder = scratch / name
    shutil.copytree(STANDIN if quick else EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if quick:
        for path in STANDIN_EVALUATOR.glob("*.py"):
            shutil.copy(path, folder / path.name)
    return folder / "job.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    )
    parser.add_argument("--quick", action="store_true", help="one round on the stand-in job (smoke test)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.pairs
    evaluator = "evaluate_model.py" if args.quick else "evaluate.py"
    with tempfile.TemporaryDirectory(prefix="bench-p9-") as scratch_text:
        scratch = Path(scratch_text)
        plain, frozen = workspace(scratch, "plain", args.quick), workspace(scratch, "frozen", args.quick)
        runner(args.python, plain, "initialize", "--uncapped")
        runner(args.python, frozen, "initialize", "--uncapped", "--evaluator", evaluator)
        rows = []
        for index in range(rounds):
            lr = f"{0.06 + 0.01 * index:.2f}"
            name = f"lr-{lr}"
            for job in (plain, frozen):
                runner(args.python, job, "prepare", "--name", name, "--hypothesis", "benchmark")
            kinds = ["bare", "plain", "frozen"]
            walls = {}
            for kind in kinds[index % 3 :] + kinds[: index % 3]:
                if kind == "bare":
                    walls[kind] = bare(args.python, plain, lr, scratch, index)
                else:
                    job = plain if kind == "plain" else frozen
                    walls[kind] = runner(args.python, job, "evaluate", "--run-args", f"--lr {lr}")
            record = json.loads((frozen.parent / "autofl_runs" / name / "evaluation.json").read_text())
            cpu = sum(site["cpu_seconds"] for site in record["sites"])
            rows.append((walls["bare"], walls["plain"], walls["frozen"], record["measure_seconds"], cpu))
    measure = float(f"{statistics.median(r[3] for r in rows):.3f}")
    ratio = float(f"{statistics.median(p / b for b, p, *_ in rows):.3f}")
    overhead = float(f"{statistics.median(p - b for b, p, *_ in rows):+.2f}")
    extra = float(f"{statistics.median(f - p for _, p, f, *_ in rows):+.2f}")
    cpu = float(f"{statistics.median(r[4] for r in rows):.3f}")
    print("round  bare_s  plain_s  frozen_s  P1_ratio  P1_overhead_s  frozen-plain_s  measure_s  evaluator_cpu_s")
    for index, (b, p, f, m, e) in enumerate(rows):
        print(
            f"{index:>5}  {b:6.2f}  {p:7.2f}  {f:8.2f}  {p / b:8.3f}  {p - b:+13.2f}  {f - p:+14.2f}  {m:9.3f}  {e:15.3f}"
        )
    print(
        f"P9: median frozen evaluation step {measure:.3f} s per trial (bar {MAX_MEASURE}); its evaluator processes "
        f"used {cpu:.3f} s of CPU (all sites, sandbox included: what the step costs on an idle machine); evaluator "
        f"campaign's evaluate minus the plain one {extra:+.2f} s (two separate simulations: noisy)"
    )
    print(
        f"P1 without an evaluator: median ratio {ratio:.3f} (bar {MAX_RATIO}), overhead {overhead:+.2f} s (bar {MAX_OVERHEAD})"
    )
    if args.quick:
        ok = measure <= QUICK_MAX_MEASURE
        print(f"quick smoke run: only the evaluation step is judged, against {QUICK_MAX_MEASURE} s")
    else:
        ok = measure <= MAX_MEASURE and ratio <= MAX_RATIO and overhead <= MAX_OVERHEAD
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
