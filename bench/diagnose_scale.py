"""P4: diagnose_job.py over 1 GiB of logs in 40 files (a SimEnv-like tree of 20 sites) finds the planted cause.

Usage: python bench/diagnose_scale.py [--quick] [--json] [--repeats N]

Builds a SimEnv-like workspace in a temporary folder, `<job>/{server,site-1..site-19}/{log.txt,log_fl.txt}`
= 40 files of realistic NVFLARE log lines, at 0.25, 0.5 and 1 GiB, and plants one failure of each kind the
quality bar names, one after the other in the same tree:
  end     site-7/log.txt ends in a ModuleNotFoundError traceback             -> IMPORT_ERROR must be matched
  middle  the middle of site-12/log.txt (about 26 MiB at 1 GiB) holds a CUDA out-of-memory traceback, followed
          by hours of retries; its tail shows only a later round timeout     -> CUDA_OOM must be matched
For each it runs the CLI as a subprocess (median of --repeats runs) and measures wall and CPU time, the child's
own peak RSS (os.wait4, see child_usage.py) and the report size. Bars: the planted pattern is matched, <= 2 s
wall, <= 150 MiB, report <= 64 KiB, flat growth (1 GiB CPU time and memory <= 1.5x the 0.25 GiB figures; CPU
time, because on the shared machine other processes move the wall clock more than the tree size does). Prints a table
(or one JSON document with --json) and exits 1 when a bar is missed or a run fails. The tree is removed.
`--quick` uses 8/16/32 MiB trees and one run each: a smoke run in seconds; its timing verdicts are printed but
not enforced (time on a shared machine is too noisy at that size). Files sit in the page cache when measured.
`build_tree` and `plant` are also used by tests/diagnose/test_scale_reading.py on CI-sized trees.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from child_usage import run_measured

SCRIPT = Path(__file__).resolve().parents[1] / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
GIB, MIB = 1 << 30, 1 << 20
FULL_LEVELS = (GIB // 4, GIB // 2, GIB)
QUICK_LEVELS = (8 * MIB, 16 * MIB, 32 * MIB)
BAR_SECONDS, BAR_RSS_MIB, BAR_REPORT_BYTES, BAR_FLAT = 2.0, 150.0, 64 * 1024, 1.5
JOB = "bench-job"
PARTICIPANTS = ["server"] + [f"site-{i}" for i in range(1, 20)]
FILES = ("log.txt", "log_fl.txt")  # equal halves of a participant's share
EXPECTED = {"end": "IMPORT_ERROR", "middle": "CUDA_OOM"}
END_SITE, MIDDLE_SITE = "site-7", "site-12"


def _line(index: int, site: str) -> str:
    ctx = f"[identity={site}, run=simulate_job, peer=server, task_name=train, task_id={index:08x}]"
    kinds = (
        ("FedAvg", "INFO", f"Round {index % 50} started."),
        ("ClientRunner", "INFO", f"{ctx} - got task assignment: name=train, id={index:08x}"),
        ("Communicator", "DEBUG", f"{ctx} - received 5242880 bytes in {index % 97} ms"),
        ("InTimeAccumulateWeightedAggregator", "INFO", f"{ctx} - Contribution from {site} ACCEPTED by the aggregator."),
        ("CoreCell", "INFO", f"{site}: heartbeat ok, latency {index % 13} ms"),
    )
    logger, level, message = kinds[index % len(kinds)]
    return (
        f"2026-06-02 11:{(index // 60) % 60:02d}:{index % 60:02d},{index % 1000:03d} - {logger} - {level} - {message}\n"
    )


def _block(site: str, size: int = MIB) -> bytes:
    out, index, total = [], 0, 0
    while total < size:
        text = _line(index, site).encode()
        out.append(text)
        total += len(text)
        index += 1
    return b"".join(out)[:size].rsplit(b"\n", 1)[0] + b"\n"


IMPORT_FAILURE = (
    f"2026-06-02 12:00:01,000 - ClientRunner - ERROR - [identity={END_SITE}, run=simulate_job] - "
    "exception in task train\n"
    "Traceback (most recent call last):\n"
    f'  File "/tmp/nvflare/simulation/{JOB}/{END_SITE}/simulate_job/app_{END_SITE}/custom/client.py", line 7, in <module>\n'
    "    import sklearn_extra_missing\n"
    "ModuleNotFoundError: No module named 'sklearn_extra_missing'\n"
)
OOM_FAILURE = (
    f"2026-06-02 09:14:07,311 - ClientRunner - ERROR - [identity={MIDDLE_SITE}, run=simulate_job] - "
    "exception in task train\n"
    "Traceback (most recent call last):\n"
    f'  File "/tmp/nvflare/simulation/{JOB}/{MIDDLE_SITE}/simulate_job/app_{MIDDLE_SITE}/custom/client.py", line 61, in train\n'
    "    loss = model(batch).sum()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)\n"
)
LATER_TIMEOUT = (
    f"2026-06-02 14:59:58,002 - FedAvg - WARNING - [identity={MIDDLE_SITE}, run=simulate_job] - "
    f"task round_41 timed out waiting for {MIDDLE_SITE}\n"
)


def _write_filled(path: Path, size: int, block: bytes, middle: bytes = b"", tail: bytes = b"") -> None:
    """Write `size` bytes of `block` text with `middle` at about half and `tail` at the very end."""
    with open(path, "wb") as handle:
        _fill(handle, size // 2 - len(middle), block)
        handle.write(middle)
        _fill(handle, size - size // 2 - len(tail), block)
        handle.write(tail)


def _fill(handle, count: int, block: bytes) -> None:
    while count > 0:
        piece = block[:count]
        if len(piece) < len(block):
            piece = piece.rsplit(b"\n", 1)[0] + b"\n" if b"\n" in piece else b"\n" * len(piece)
        handle.write(piece)
        count -= len(piece)


def build_tree(root: Path, total: int) -> int:
    """Write the healthy 40-file tree totalling about `total` bytes under `root`; return the byte count."""
    per_file = total // (len(PARTICIPANTS) * len(FILES))
    for site in PARTICIPANTS:
        block = _block(site)
        folder = root / JOB / site
        folder.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            _write_filled(folder / name, per_file, block)
    (root / JOB / "server" / "simulate_job").mkdir(exist_ok=True)  # SimEnv marker folder (no file)
    return per_file * len(PARTICIPANTS) * len(FILES)


def plant(root: Path, kind: str) -> Path:
    """Plant failure `kind` ("end" or "middle") into a tree from build_tree, undoing the other kind first.

    The planted file is made the oldest of the tree, so a reader that goes newest first reaches it last.
    """
    end_log, middle_log = root / JOB / END_SITE / "log.txt", root / JOB / MIDDLE_SITE / "log.txt"
    size = middle_log.stat().st_size
    _write_filled(
        middle_log,
        size,
        _block(MIDDLE_SITE),
        OOM_FAILURE.encode() if kind == "middle" else b"",
        LATER_TIMEOUT.encode() if kind == "middle" else b"",
    )
    _write_filled(end_log, size, _block(END_SITE), tail=IMPORT_FAILURE.encode() if kind == "end" else b"")
    planted = end_log if kind == "end" else middle_log
    oldest = min(path.stat().st_mtime for path in (root / JOB).rglob("log*.txt"))
    os.utime(planted, (oldest - 3600, oldest - 3600))
    return planted


def run_once(tree: Path, python: str) -> dict:
    """One CLI run: wall time, the child's own peak RSS and CPU (see child_usage.py) and the report."""
    run = run_measured([python, str(SCRIPT), str(tree)])
    report, stderr = run.stdout, run.stderr.decode(errors="replace")
    problem, parsed = None, {}
    if run.returncode != 0:
        problem = f"exit {run.returncode}: {stderr.strip()[:200]}"
    else:
        try:
            parsed = json.loads(report)
            if sum(s["bytes_read"] for s in parsed["evidence_sources"] if s["kind"] == "log") > 4194304:
                problem = "the log sources read more than --max-total-bytes"
        except (ValueError, KeyError, TypeError) as exc:
            problem = f"report is not the expected JSON: {exc}"
    return {
        "wall": run.wall_seconds,
        "cpu": run.cpu_seconds,
        "rss_mib": run.peak_rss_mib,
        "report_bytes": len(report),
        "problem": problem,
        "pattern": parsed.get("matched_pattern"),
    }


def measure(levels, repeats: int, python: str) -> list[dict]:
    rows = []
    for total in levels:
        base = Path(tempfile.mkdtemp(prefix="nvfdiag-bench-"))
        try:
            print(f"building {total / GIB:.3g} GiB tree ...", file=sys.stderr, flush=True)
            size = build_tree(base, total)
            for kind in ("end", "middle"):
                plant(base, kind)
                runs = [run_once(base, python) for _ in range(repeats)]
                rows.append(_row(size, kind, runs))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return rows


def _row(size: int, kind: str, runs: list[dict]) -> dict:
    problems = [run["problem"] for run in runs if run["problem"]]
    wrong = [run["pattern"] for run in runs if run["pattern"] != EXPECTED[kind]]
    if wrong and not problems:
        problems.append(f"matched {wrong[0]}, expected {EXPECTED[kind]}")
    return {
        "gib": round(size / GIB, 4),
        "files": len(PARTICIPANTS) * len(FILES),
        "failure": kind,
        "wall_s": round(statistics.median(run["wall"] for run in runs), 3),
        "cpu_s": round(statistics.median(run["cpu"] for run in runs), 3),
        "rss_mib": round(max(run["rss_mib"] for run in runs), 1),
        "report_bytes": max(run["report_bytes"] for run in runs),
        "pattern": runs[0]["pattern"],
        "problem": problems[0] if problems else None,
    }


def verdicts(rows: list[dict], quick: bool) -> list[dict]:
    """Each bar with its figure and PASS/FAIL; `enforced` is False for timing bars in --quick."""
    checks = [
        (
            "planted cause matched, runs succeed",
            all(r["problem"] is None for r in rows),
            "; ".join(f"{r['failure']}: {r['problem'] or r['pattern']}" for r in rows[-2:]),
            True,
        )
    ]
    worst = max(r["wall_s"] for r in rows)
    checks.append(("wall <= 2 s", worst <= BAR_SECONDS, f"{worst:.3f} s", not quick))
    rss = max(r["rss_mib"] for r in rows)
    checks.append(("peak RSS <= 150 MiB", rss <= BAR_RSS_MIB, f"{rss:.1f} MiB", True))
    size = max(r["report_bytes"] for r in rows)
    checks.append(("report <= 64 KiB", size <= BAR_REPORT_BYTES, f"{size} B", True))
    for kind in ("end", "middle"):
        first, last = [r for r in rows if r["failure"] == kind][0], [r for r in rows if r["failure"] == kind][-1]
        # rounded as printed (2 decimals), so a figure and its verdict always agree
        cpu_ratio = round(last["cpu_s"] / first["cpu_s"], 2) if first["cpu_s"] else float("inf")
        wall_ratio = round(last["wall_s"] / first["wall_s"], 2) if first["wall_s"] else float("inf")
        rss_ratio = round(last["rss_mib"] / first["rss_mib"], 2) if first["rss_mib"] else float("inf")
        checks.append(
            (
                f"flat CPU time, {kind} (largest/smallest <= 1.5)",
                cpu_ratio <= BAR_FLAT,
                f"{cpu_ratio:.2f}x (wall {wall_ratio:.2f}x)",
                not quick,
            )
        )
        checks.append(
            (f"flat memory, {kind} (largest/smallest <= 1.5)", rss_ratio <= BAR_FLAT, f"{rss_ratio:.2f}x", True)
        )
    return [{"bar": name, "ok": ok, "figure": figure, "enforced": enforced} for name, ok, figure, enforced in checks]


def print_table(rows: list[dict], checks: list[dict]) -> None:
    print(f"{'size':>9} {'files':>5} {'failure':>7} {'wall':>8} {'cpu':>8} {'peak RSS':>10} {'report':>9}  pattern")
    for r in rows:
        print(
            f"{r['gib']:>7.3f}Gi {r['files']:>5} {r['failure']:>7} {r['wall_s']:>7.3f}s {r['cpu_s']:>7.3f}s "
            f"{r['rss_mib']:>7.1f}MiB {r['report_bytes']:>8}B  {r['pattern']}"
        )
    print("(wall/cpu/RSS: the CLI child process)")
    print()
    for c in checks:
        mark = ("PASS" if c["ok"] else "FAIL") + ("" if c["enforced"] else " (not enforced in --quick)")
        print(f"{c['bar']:<46} {c['figure']:<40} {mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="8/16/32 MiB trees, one run each (smoke run)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument(
        "--repeats", type=int, default=None, help="runs per size and failure (median); default 3, --quick 1"
    )
    args = parser.parse_args(argv)
    if not SCRIPT.is_file():
        print(f"diagnose_scale.py: error: {SCRIPT} not found; run from a complete checkout", file=sys.stderr)
        return 2
    repeats = args.repeats or (1 if args.quick else 3)
    if repeats < 1:
        print("diagnose_scale.py: error: --repeats must be >= 1", file=sys.stderr)
        return 2
    rows = measure(QUICK_LEVELS if args.quick else FULL_LEVELS, repeats, sys.executable)
    checks = verdicts(rows, args.quick)
    passed = all(c["ok"] for c in checks if c["enforced"])
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": "P4 diagnose_scale",
                    "quick": args.quick,
                    "rows": rows,
                    "checks": checks,
                    "result": "PASS" if passed else "FAIL",
                },
                sort_keys=True,
            )
        )
    else:
        print_table(rows, checks)
        print(f"\nP4 diagnose_scale: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
