"""`make bench`: run every benchmark in this folder, one after another, and summarise PASS/FAIL.

Usage: python bench/run_all.py [--quick]

Each benchmark is a standalone script that prints its own table and exits 1 when it misses a bar. One that cannot
run here (frozen_eval_torch.py without torch) prints a line with `SKIP (reason)` and exits 0: the summary lists it
as SKIP with that reason, never as PASS.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = (
    "diagnose_scale.py",
    "diagnose_throughput.py",
    "guard_scale.py",
    "importer_speed.py",
    "importer_dryrun.py",
    "runner_overhead.py",
    "evaluate_overhead.py",
    "lifecycle_speed.py",
    "demo_campaign.py",
    "batch_parallel.py",
    "frozen_eval_overhead.py",
    "prune_campaign.py",
    "prune_replay.py",
    "frozen_eval_torch.py",  # needs torch in this interpreter; SKIP (torch not installed) otherwise
)
REAL_ONLY = ("demo_campaign.py",)  # needs real simulations end to end; no quick variant


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (smoke run)")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    outcomes = []
    for name in BENCHMARKS:
        if args.quick and name in REAL_ONLY:
            print(f"== {name}: skipped in --quick (real simulations only)", flush=True)
            continue
        command = [sys.executable, str(here / name)] + (["--quick"] if args.quick else [])
        print(f"== {name}", flush=True)
        started = time.monotonic()
        rc, skipped = run_echoing(command)
        outcomes.append((name, rc, skipped, time.monotonic() - started))
    print("\nbenchmark               result  wall")
    for name, rc, skipped, wall in outcomes:
        result = "FAIL" if rc != 0 else "SKIP" if skipped else "PASS"
        print(f"{name:<23} {result:<7} {wall:6.1f} s{'  ' + skipped if skipped and rc == 0 else ''}")
    return 0 if all(rc == 0 for _, rc, _, _ in outcomes) else 1


def run_echoing(command: list[str]) -> tuple[int, str]:
    """Run one benchmark, echoing its output; (exit code, its `SKIP (reason)` text or "")."""
    skipped = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1) as process:
        for line in process.stdout:
            print(line, end="", flush=True)
            if "SKIP (" in line:
                skipped = line[line.index("SKIP (") :].strip()
    return process.returncode, skipped


if __name__ == "__main__":
    sys.exit(main())
