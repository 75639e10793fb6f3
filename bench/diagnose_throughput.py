"""P4t: analysis throughput of the detailed diagnose scan on ordinary NVFLARE log text (bar: >= 20 MB/s).

Usage: python bench/diagnose_throughput.py [--quick] [--json] [--repeats N] [--mib N] [--baseline GIT_REF]

The text is real: the logs of the committed healthy NVFLARE 2.9 runs (tests/fixtures/healthy_real,
tests/fixtures/healthy_runs/*, evals/diagnose/files/real/healthy): job stdout, log.txt, log_fl.txt,
error_log.txt and log.json of every site, written as many copies of those run folders into a temporary tree
until it holds --mib MiB (default 4, the default --max-total-bytes). Every copy shifts the digits and hex ids
of its text, so no two copies hold the same line (as later rounds of a long run would not). The evidence is read once with budgets
large enough to read it all, then the detailed scan (pipeline.diagnose: normalization, catalog matching,
tracebacks, injection scan, report) runs --repeats times; the median CPU time gives MB/s (10^6 bytes per
second; the wall-clock figure is printed beside it, since other processes share the machine).
Reading (collect_evidence) is timed and printed too, but it is not part of the bar. Exits 1 when the bar is
missed (--quick: 1 MiB, 3 runs; the verdict is printed but not enforced there).

--baseline GIT_REF also scans the same evidence with the diagnose skill of that commit (taken with `git archive`
into a temporary folder; its nvfdiag may have the staged layout or the flat one of older commits), alternating
with the current one, so before and after are compared side by side in one run (quality.md); the ratio of the
two median CPU times is printed. The load average is printed beside every run: the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-diagnose-job" / "scripts"
RUN_FOLDERS = [
    REPO / "tests" / "fixtures" / "healthy_real",
    REPO / "evals" / "diagnose" / "files" / "real" / "healthy",
    *sorted((REPO / "tests" / "fixtures" / "healthy_runs").glob("*")),
]
BAR_MB_S = 20.0
MIB = 1 << 20


_ID = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{4,}\b")  # hex ids: digits and letters a-f
_CLOCK = re.compile(r"(?m)^(\d{4}-\d{2}-\d{2} )(\d{2})(:\d{2}:\d{2})")
_HEX = "0123456789abcdef"


def vary(text: str, copy: int) -> str:
    """The text of `copy` of a run: hex ids (task, transaction, run ids) rotated and the hour of every record
    shifted, so that copies read like later rounds of a longer run with the same message templates."""
    if copy == 0:
        return text
    hex_ids = str.maketrans(_HEX, "".join(_HEX[(i + copy) % 16] for i in range(16)))
    text = _ID.sub(lambda m: m.group(0).translate(hex_ids), text)
    return _CLOCK.sub(lambda m: f"{m.group(1)}{(int(m.group(2)) + copy) % 24:02d}{m.group(3)}", text)


def build_text_tree(root: Path, size: int) -> int:
    """Copies of the real healthy run folders under `root` until `size` bytes of log text; returns the bytes.
    Each copy varies its ids, numbers and timestamps (see vary) like later rounds of a longer run."""
    sources = [
        path
        for folder in RUN_FOLDERS
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and path.suffix in (".txt", ".json")
        and "simulate_job" not in path.parts
        and not (path.name == "log.json" and (path.parent / "log.txt").is_file())
    ]  # read as log.txt
    written, copy = 0, 0
    while written < size:
        for path in sources:
            rel = path.relative_to(REPO)
            target = root / f"copy-{copy:03d}" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(vary(path.read_text(encoding="utf-8", errors="replace"), copy), encoding="utf-8")
            written += target.stat().st_size
            if written >= size:
                break
        copy += 1
    return written


def load_package(scripts: Path, name: str):
    """The nvfdiag package under `scripts`, imported as `name` (so two versions can live in one process)."""
    spec = importlib.util.spec_from_file_location(
        name, scripts / "nvfdiag" / "__init__.py", submodule_search_locations=[str(scripts / "nvfdiag")]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


# Where a commit's nvfdiag keeps its entry points, newest layout first: the staged packages (match/, pipeline.py)
# or the flat modules of the commits before them (catalog.py, matcher.diagnose).
CATALOG_MODULES = ("match.catalog", "catalog")
DIAGNOSE_MODULES = ("pipeline", "matcher")


def entry_points(scripts: Path, name: str) -> tuple:
    """(the loaded catalog, the diagnose function) of the nvfdiag package under `scripts`, loaded as `name`."""
    package = load_package(scripts, name)

    def module(choices: tuple[str, ...]):
        found = next(m for m in choices if (scripts / "nvfdiag" / (m.replace(".", "/") + ".py")).is_file())
        return importlib.import_module(f"{package.__name__}.{found}")

    return module(CATALOG_MODULES).load_catalog(), module(DIAGNOSE_MODULES).diagnose


def extract_skill(ref: str, into: Path) -> Path:
    """The diagnose skill of commit `ref`, written under `into`; returns its scripts folder."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref, "skills/nvflare-diagnose-job"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "skills" / "nvflare-diagnose-job" / "scripts"


def measure(size: int, repeats: int, baseline: str | None = None) -> dict:
    sys.path.insert(0, str(SCRIPTS))
    from nvfdiag import pipeline
    from nvfdiag.match import catalog
    from nvfdiag.read import evidence

    scans = [("current", pipeline.diagnose, catalog.load_catalog())]
    base = Path(tempfile.mkdtemp(prefix="nvfdiag-p4t-"))
    try:
        if baseline:
            old_catalog, old_diagnose = entry_points(extract_skill(baseline, base / "baseline"), "nvfdiag_baseline")
            scans.append((baseline, old_diagnose, old_catalog))
        build_text_tree(base / "text", size)
        started = time.perf_counter()
        found = evidence.collect_evidence(
            [str(base / "text")], job_id=None, max_bytes=1 << 30, max_total_bytes=1 << 30, max_files=100_000
        )
        read_s = time.perf_counter() - started
        text_bytes = sum(len(line.text.encode("utf-8")) + 1 for line in found.lines)
        cpu = {label: [] for label, _, _ in scans}
        wall = {label: [] for label, _, _ in scans}
        reports, load = {}, [os.getloadavg()[0]]
        for _ in range(repeats):
            for label, diagnose, known in scans:  # alternate, so both see the same load
                started, started_cpu = time.perf_counter(), time.process_time()
                reports[label] = diagnose(found, known)
                cpu[label].append(time.process_time() - started_cpu)
                wall[label].append(time.perf_counter() - started)
        load.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = [_row(label, cpu[label], wall[label], text_bytes, reports[label]) for label, _, _ in scans]
    row = {
        "mib": round(text_bytes / MIB, 2),
        "lines": len(found.lines),
        "files": len(found.sources),
        "read_s": round(read_s, 3),
        "read_mb_per_s": round(text_bytes / 1e6 / read_s, 1),
        "load_avg_1min": [round(value, 2) for value in load],
        **rows[0],
    }
    if baseline:
        row["baseline"] = {"ref": baseline, **rows[1]}
        row["speedup"] = round(rows[1]["scan_s"] / rows[0]["scan_s"], 2)
        row["same_report"] = reports["current"] == reports[baseline]
    return row


def _row(label: str, cpu: list[float], wall: list[float], text_bytes: int, report: dict) -> dict:
    scan_s, wall_s = statistics.median(cpu), statistics.median(wall)
    return {
        "scan_s": round(scan_s, 3),
        "scan_wall_s": round(wall_s, 3),
        "mb_per_s": round(text_bytes / 1e6 / scan_s, 1),
        "wall_mb_per_s": round(text_bytes / 1e6 / wall_s, 1),
        "pattern": report["matched_pattern"],
        "findings": report["findings"],
        "suspicious": len(report["suspicious_content"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 MiB, 3 runs, bar not enforced (smoke run)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--repeats", type=int, default=None, help="scans to time (median); default 5, --quick 3")
    parser.add_argument("--mib", type=float, default=None, help="MiB of log text; default 4, --quick 1")
    parser.add_argument("--baseline", metavar="GIT_REF", help="also scan with the diagnose skill of this commit")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    size = int((args.mib or (1 if args.quick else 4)) * MIB)
    if repeats < 1 or size < 1:
        print("diagnose_throughput.py: error: --repeats and --mib must be positive", file=sys.stderr)
        return 2
    try:
        row = measure(size, repeats, args.baseline)
    except subprocess.CalledProcessError:
        print(
            f"diagnose_throughput.py: error: git cannot read commit {args.baseline!r}; give a commit of this "
            "repository (e.g. HEAD~3)",
            file=sys.stderr,
        )
        return 2
    clean = row["pattern"] == "UNKNOWN" and row["suspicious"] == 0
    ok = row["mb_per_s"] >= BAR_MB_S and clean
    passed = ok or (args.quick and clean)
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": "P4t diagnose_throughput",
                    "quick": args.quick,
                    "row": row,
                    "bar_mb_per_s": BAR_MB_S,
                    "ok": ok,
                    "result": "PASS" if passed else "FAIL",
                },
                sort_keys=True,
            )
        )
    else:
        print(
            f"{'':>12} {'text':>9} {'lines':>7} {'files':>5} {'read':>8} {'scan CPU':>9} {'MB/s':>6} {'scan wall':>9} "
            f"{'MB/s':>6}  pattern, suspicious"
        )
        versions = [("current", row)] + ([(row["baseline"]["ref"], row["baseline"])] if "baseline" in row else [])
        for label, scan in versions:
            print(
                f"{label[:12]:>12} {row['mib']:>6.2f}MiB {row['lines']:>7} {row['files']:>5} {row['read_s']:>7.3f}s "
                f"{scan['scan_s']:>8.3f}s {scan['mb_per_s']:>6.1f} {scan['scan_wall_s']:>8.3f}s "
                f"{scan['wall_mb_per_s']:>6.1f}  {scan['pattern']}, {scan['suspicious']}"
            )
        print(
            f"(medians; reading alone: {row['read_mb_per_s']} MB/s wall; load average (1 min) before and after: "
            f"{row['load_avg_1min'][0]}, {row['load_avg_1min'][1]} on {os.cpu_count()} cores. The bar applies to the "
            "scan's CPU time: on a shared machine the wall clock also counts other processes)"
        )
        if "baseline" in row:
            print(
                f"speed-up over {row['baseline']['ref']}: x{row['speedup']} (CPU, same evidence, runs alternated); "
                f"same report: {row['same_report']}"
            )
        verdict = "PASS" if ok else "FAIL"
        print(
            f"\nscan >= {BAR_MB_S:.0f} MB/s on healthy real logs, nothing flagged: {verdict}"
            + ("" if not args.quick else " (not enforced in --quick)")
        )
        print(f"P4t diagnose_throughput: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
