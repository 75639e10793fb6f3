"""`make bench`: run every benchmark in this folder, one after another, and summarise PASS/FAIL.

Usage: python bench/run_all.py [--quick]

Each benchmark is a standalone script that prints its own table and exits 1 when it misses a bar.
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
    "prune_campaign.py",
    "prune_replay.py",
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
        rc = subprocess.run(command).returncode
        outcomes.append((name, rc, time.monotonic() - started))
    print("\nbenchmark               result  wall")
    for name, rc, wall in outcomes:
        print(f"{name:<23} {'PASS' if rc == 0 else 'FAIL':<7} {wall:6.1f} s")
    return 0 if all(rc == 0 for _, rc, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
