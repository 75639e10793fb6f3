"""P4: diagnose_job.py over 1 GiB of logs in 40 files (a SimEnv-like tree) stays fast, small and flat.

Usage: python bench/diagnose_scale.py [--quick] [--json] [--repeats N]

Builds a SimEnv-like workspace in a temporary folder (`<job>/{server,site-1..site-9}/{log.txt, log.txt.1,
log_fl.txt, error_log.txt}` = 40 files of real, realistic NVFLARE log lines with a client ImportError near the
end) at 0.25, 0.5 and 1 GiB, runs the CLI as a subprocess on each (median of --repeats runs), and measures
wall and CPU time, the child's own peak RSS (os.wait4) and the report size, plus the time of the
evidence reading alone (in-process) to show where the time goes. Bars: <= 2 s, <= 150 MiB, report <= 64 KiB,
flat growth (1 GiB time and memory <= 1.5x the 0.25 GiB figures). Prints a table (or one JSON document with
--json) and exits 1 when a bar is missed or a run fails. The tree is removed afterwards.
`--quick` uses 8/16/32 MiB trees and one run each: a smoke run in a few seconds; its timing verdicts are
printed but only failed runs, memory and report size can fail it (time on a shared machine is too noisy).
Files are written with real bytes and sit in the page cache when measured (a warm-cache figure).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from child_usage import run_measured

SCRIPT = Path(__file__).resolve().parents[1] / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
GIB, MIB = 1 << 30, 1 << 20
FULL_LEVELS = (GIB // 4, GIB // 2, GIB)
QUICK_LEVELS = (8 * MIB, 16 * MIB, 32 * MIB)
BAR_SECONDS, BAR_RSS_MIB, BAR_REPORT_BYTES, BAR_FLAT = 2.0, 150.0, 64 * 1024, 1.5
PARTICIPANTS = ["server"] + [f"site-{i}" for i in range(1, 10)]
FILES = {"log.txt": 0.4, "log.txt.1": 0.3, "log_fl.txt": 0.2, "error_log.txt": 0.1}  # share of a participant


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
    return f"2026-06-02 11:{(index // 60) % 60:02d}:{index % 60:02d},{index % 1000:03d} - {logger} - {level} - {message}\n"


def _block(site: str, size: int = MIB) -> bytes:
    out, index = [], 0
    total = 0
    while total < size:
        text = _line(index, site).encode()
        out.append(text)
        total += len(text)
        index += 1
    return b"".join(out)[:size].rsplit(b"\n", 1)[0] + b"\n"


FAILURE = (
    "2026-06-02 12:00:01,000 - ClientRunner - ERROR - [identity=site-1, run=simulate_job] - "
    "[USER_CODE_EXCEPTION] exception in task train\n"
    "Traceback (most recent call last):\n"
    '  File "/tmp/nvflare/simulation/bench-job/site-1/simulate_job/app_site-1/custom/client.py", line 7, in <module>\n'
    "    import sklearn_extra_missing\n"
    "ModuleNotFoundError: No module named 'sklearn_extra_missing'\n"
)


def build_tree(root: Path, total: int) -> int:
    """Write the 40-file tree totalling about `total` bytes; return the exact byte count."""
    written = 0
    per_participant = total // len(PARTICIPANTS)
    for site in PARTICIPANTS:
        block = _block(site)
        folder = root / "bench-job" / site
        folder.mkdir(parents=True, exist_ok=True)
        for name, share in FILES.items():
            size = int(per_participant * share)
            tail = FAILURE.encode() if site in ("site-1", "server") and name in ("log.txt", "error_log.txt") else b""
            with open(folder / name, "wb") as handle:
                remaining = size - len(tail)
                while remaining > 0:
                    piece = block[:remaining]
                    handle.write(piece)
                    remaining -= len(piece)
                handle.write(tail)
            written += size
    (root / "bench-job" / "server" / "simulate_job").mkdir(exist_ok=True)  # SimEnv marker folder (no file)
    return written


def run_once(tree: Path, python: str) -> dict:
    """One CLI run: wall time, the child's own peak RSS and CPU (see child_usage.py) and the report."""
    run = run_measured([python, str(SCRIPT), str(tree)])
    wall, report, stderr = run.wall_seconds, run.stdout, run.stderr.decode(errors="replace")
    problem = None
    if run.returncode != 0:
        problem = f"exit {run.returncode}: {stderr.strip()[:200]}"
    else:
        try:
            parsed = json.loads(report)
            if any(s["bytes_read"] > 262144 for s in parsed["evidence_sources"] if s["kind"] == "log"):
                problem = "a log source read more than --max-bytes"
        except (ValueError, KeyError, TypeError) as exc:
            problem = f"report is not the expected JSON: {exc}"
            parsed = {}
    return {"wall": wall, "cpu": run.cpu_seconds, "rss_mib": run.peak_rss_mib,
            "report_bytes": len(report), "problem": problem,
            "pattern": parsed.get("matched_pattern") if problem is None else None}


def time_evidence_read(tree: Path) -> float:
    """Seconds for `collect_evidence` alone with the CLI defaults (which share of the wall is reading)."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    from nvfdiag.evidence import collect_evidence

    started = time.perf_counter()
    collect_evidence([str(tree)], job_id=None, max_bytes=262144, max_total_bytes=4194304, max_files=200)
    return time.perf_counter() - started


def measure(levels, repeats: int, python: str) -> list[dict]:
    rows = []
    for total in levels:
        base = Path(tempfile.mkdtemp(prefix="nvfdiag-bench-"))
        try:
            print(f"building {total / GIB:.3g} GiB tree ...", file=sys.stderr, flush=True)
            size = build_tree(base, total)
            runs = [run_once(base, python) for _ in range(repeats)]
            read_s = statistics.median(time_evidence_read(base) for _ in range(repeats))
        finally:
            shutil.rmtree(base, ignore_errors=True)
        problems = [run["problem"] for run in runs if run["problem"]]
        rows.append({"gib": round(size / GIB, 4), "files": len(PARTICIPANTS) * len(FILES),
                     "wall_s": round(statistics.median(run["wall"] for run in runs), 3),
                     "cpu_s": round(statistics.median(run["cpu"] for run in runs), 3), "read_s": round(read_s, 3),
                     "rss_mib": round(max(run["rss_mib"] for run in runs), 1),
                     "report_bytes": max(run["report_bytes"] for run in runs),
                     "pattern": runs[0]["pattern"], "problem": problems[0] if problems else None})
    return rows


def verdicts(rows: list[dict], quick: bool) -> list[dict]:
    """Each bar with its figure and PASS/FAIL; `enforced` is False for timing bars in --quick."""
    first, last = rows[0], rows[-1]
    checks = [("runs succeed", all(r["problem"] is None for r in rows), "; ".join(r["problem"] or "ok" for r in rows), True)]
    checks.append(("wall <= 2 s", max(r["wall_s"] for r in rows) <= BAR_SECONDS, f"{max(r['wall_s'] for r in rows):.3f} s", not quick))
    checks.append(("peak RSS <= 150 MiB", max(r["rss_mib"] for r in rows) <= BAR_RSS_MIB, f"{max(r['rss_mib'] for r in rows):.1f} MiB", True))
    checks.append(("report <= 64 KiB", max(r["report_bytes"] for r in rows) <= BAR_REPORT_BYTES, f"{max(r['report_bytes'] for r in rows)} B", True))
    time_ratio = last["wall_s"] / first["wall_s"] if first["wall_s"] else float("inf")
    rss_ratio = last["rss_mib"] / first["rss_mib"] if first["rss_mib"] else float("inf")
    checks.append(("flat time (largest/smallest <= 1.5)", time_ratio <= BAR_FLAT, f"{time_ratio:.2f}x", not quick))
    checks.append(("flat memory (largest/smallest <= 1.5)", rss_ratio <= BAR_FLAT, f"{rss_ratio:.2f}x", True))
    return [{"bar": name, "ok": ok, "figure": figure, "enforced": enforced} for name, ok, figure, enforced in checks]


def print_table(rows: list[dict], checks: list[dict]) -> None:
    print(f"{'size':>9} {'files':>5} {'wall':>8} {'cpu':>8} {'read':>8} {'peak RSS':>10} {'report':>9}  pattern")
    for r in rows:
        print(f"{r['gib']:>7.3f}Gi {r['files']:>5} {r['wall_s']:>7.3f}s {r['cpu_s']:>7.3f}s {r['read_s']:>7.3f}s "
              f"{r['rss_mib']:>7.1f}MiB {r['report_bytes']:>8}B  {r['pattern']}")
    print("(wall/cpu: the CLI child; read: evidence collection alone, in-process)")
    print()
    for c in checks:
        mark = ("PASS" if c["ok"] else "FAIL") + ("" if c["enforced"] else " (not enforced in --quick)")
        print(f"{c['bar']:<40} {c['figure']:<24} {mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="8/16/32 MiB trees, one run each (smoke run)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--repeats", type=int, default=None, help="runs per size (median); default 3, --quick 1")
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
        print(json.dumps({"benchmark": "P4 diagnose_scale", "quick": args.quick, "rows": rows, "checks": checks,
                          "result": "PASS" if passed else "FAIL"}, sort_keys=True))
    else:
        print_table(rows, checks)
        print(f"\nP4 diagnose_scale: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
