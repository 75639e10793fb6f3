"""P3: campaign_guard on large ledgers: 10k rows <= 0.3 s, 100k rows <= 1.5 s, linear in rows.

Usage: python bench/guard_scale.py [--quick]

Builds deterministic ledgers (1 % literature rows, every status, labelled and unlabelled literature
batches) in a temporary folder, times ledger parsing and `compute_state` in-process and the
`campaign_guard.py` CLI as a subprocess (median of 3 each; the bars apply to the CLI), checks the CLI prints the same state, and
prints a table with PASS/FAIL against the bars. Exit 1 on a missed bar or a wrong state.
`--quick` (1k and 10k rows) is a smoke run: the timing verdicts are printed but only a wrong state fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "skills" / "nvflare-autofl" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from autofl_core.campaign import guard, ledger  # noqa: E402

BARS = {10_000: 0.3, 100_000: 1.5}  # seconds, campaign_guard.py CLI wall time
LINEAR_RATIO_LIMIT = 20.0  # fastest time(10x rows) / fastest time(rows): 10 is linear, a quadratic scan ~100
REPEATS = 3


def build_rows(count: int, seed: int = 7) -> list[dict]:
    """A plausible long campaign: baseline first, 1 % literature rows, mixed statuses and batches."""
    rng = random.Random(seed)
    rows = [{"status": "baseline", "name": "baseline", "score": 0.5, "metric_name": "accuracy"}]
    best, event = 0.5, 0
    while len(rows) < count:
        i = len(rows)
        if i % 100 == 0:
            event += 1
            rows.append(
                {
                    "status": "literature",
                    "name": f"lit-{event}",
                    "literature_event_id": f"lit-{event:04d}",
                    "algorithm_family": f"family{event % 7}",
                }
            )
            continue
        roll = rng.random()
        kind = "source_edit" if rng.random() < 0.5 else "argument_only"
        label = f"lit-{event:04d}" if event and kind == "source_edit" and rng.random() < 0.5 else ""
        row = {
            "name": f"c{i}",
            "candidate_kind": kind,
            "algorithm_family": f"family{rng.randrange(5)}",
            "literature_event_id": label,
            "runtime_seconds": 17 + rng.random(),
        }
        if roll < 0.08:
            row.update(status="crash", failure_reason="exit_code=1")
        elif roll < 0.1:
            row.update(status="infrastructure_retry", failure_reason="sandbox denied sockets")
        elif roll < 0.12:
            best += 0.00001
            row.update(status="keep", score=best)
        else:
            row.update(status="discard", score=best - rng.random() * 0.1)
        rows.append(row)
    return rows


def timed(action, repeats: int = REPEATS) -> tuple[float, float, object]:
    """(median, fastest, last result) of `repeats` runs; the fastest is the least noisy cost estimate."""
    timings, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), min(timings), result


def measure(count: int, folder: Path) -> dict:
    """Time parse, compute_state and the CLI on a `count`-row ledger; check the CLI prints the same state."""
    path = folder / f"results_{count}.tsv"
    path.write_text(ledger.format_ledger(build_rows(count)))
    settings = guard.GuardSettings()
    parse_s, parse_fastest, rows = timed(lambda: ledger.read_rows(path))
    state_s, state_fastest, state = timed(lambda: guard.compute_state(rows, settings, stop_files_present=[]))
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTOFL_")}
    command = [sys.executable, str(SCRIPTS / "campaign_guard.py"), str(path), "--mode", "max"]
    cli_s, _fastest, done = timed(
        lambda: subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder, timeout=600)
    )
    printed = json.loads(done.stdout) if done.returncode == 0 else {}
    for key in ("updated_at", "results", "mode"):
        printed.pop(key, None)
    return {
        "rows": count,
        "literature": sum(1 for row in rows if row.status == "literature"),
        "parse_s": parse_s,
        "state_s": state_s,
        "fastest_s": parse_fastest + state_fastest,
        "cli_s": cli_s,
        "same_state": printed == state,
    }


def report(results: list[dict]) -> list[str]:
    """Print the table; return the failures (missed bars, wrong state, non-linear scaling)."""
    print(
        f"{'rows':>8} {'literature':>10} {'parse s':>8} {'state s':>8} {'CLI s':>8} {'bar s':>6} {'same state':>10}  verdict"
    )
    failures = []
    for result in results:
        bar = BARS.get(result["rows"])
        ok = bar is None or round(result["cli_s"], 3) <= bar  # judged as printed (3 decimals)
        verdict = "-" if bar is None else ("PASS" if ok else "FAIL")
        print(
            f"{result['rows']:>8} {result['literature']:>10} {result['parse_s']:>8.3f} {result['state_s']:>8.3f} "
            f"{result['cli_s']:>8.3f} {bar if bar else '-':>6} {str(result['same_state']):>10}  {verdict}"
        )
        if not ok:
            failures.append(f"{result['rows']} rows: CLI {result['cli_s']:.3f} s > {bar} s")
        if not result["same_state"]:
            failures.append(f"{result['rows']} rows: CLI state differs from compute_state")
    ratio = round(results[1]["fastest_s"] / max(results[0]["fastest_s"], 1e-9), 1)  # judged as printed
    linear = ratio <= LINEAR_RATIO_LIMIT
    print(
        f"scaling x10 rows -> x{ratio:.1f} time (parse+state, fastest of {REPEATS}; limit {LINEAR_RATIO_LIMIT}): "
        f"{'PASS' if linear else 'FAIL'}"
    )
    if not linear:
        failures.append(f"not linear: x{ratio:.1f}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run on 1k and 10k rows; timing is advisory")
    args = parser.parse_args(argv)
    sizes = (1_000, 10_000) if args.quick else (10_000, 100_000)
    with tempfile.TemporaryDirectory(prefix="guard_scale_") as tmp:
        failures = report([measure(count, Path(tmp)) for count in sizes])
    if args.quick:
        failures = [failure for failure in failures if "state differs" in failure]
        print("quick run: timing verdicts are advisory")
    print("RESULT: " + ("PASS" if not failures else "FAIL (" + "; ".join(failures) + ")"))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
