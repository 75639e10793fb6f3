"""One signal per distinct fact: the same exception line seen in several files and sites is one merged row."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nvfdiag.match.catalog import load_catalog
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
FIXTURE = REPO / "evals" / "diagnose" / "files" / "synthetic" / "merged-oom"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)"


def run(*texts_by_source: tuple[str, str | None, list[str]]) -> dict:
    evidence = Evidence()
    for source, site, texts in texts_by_source:
        evidence.sources.append(Source(source, "log", site, "complete", 100))
        evidence.lines += [Line(source, site, number, text) for number, text in enumerate(texts, 1)]
    return validated(diagnose(evidence, load_catalog(), mode="simulation"))


def test_the_real_shaped_oom_run_gives_one_row_with_every_place(python_exe):
    result = subprocess.run(
        [python_exe, str(CLI), str(FIXTURE / "stdout.txt"), str(FIXTURE / "workspace" / "gpu-job")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout)
    assert report["matched_pattern"] == "CUDA_OOM"
    oom_rows = [s for s in report["signals"] if s["pattern"] == "CUDA_OOM"]
    assert len(oom_rows) == 1
    row = oom_rows[0]
    assert row["count"] == 6 and len(row["seen_in"]) == 6
    assert {p["site"] for p in row["seen_in"]} == {None, "site-1", "site-2"}
    assert {Path(p["source"]).name for p in row["seen_in"]} == {"stdout.txt", "log.txt", "error_log.txt"}
    assert (row["source"], row["line"]) == (row["seen_in"][0]["source"], row["seen_in"][0]["line"])
    texts = [s["excerpt"] for s in report["signals"]]
    assert len(texts) == len(set(zip(texts, [s["pattern"] for s in report["signals"]], strict=True)))


def test_markdown_says_how_often_and_where_a_fact_was_seen(python_exe):
    result = subprocess.run(
        [
            python_exe,
            str(CLI),
            str(FIXTURE / "stdout.txt"),
            str(FIXTURE / "workspace" / "gpu-job"),
            "--format",
            "markdown",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    row = next(line for line in result.stdout.splitlines() if line.startswith("| `CUDA_OOM`"))
    assert "6 times, 6 places" in row and "site-1, site-2" in row and "error_log.txt" in row


def test_log_prefixes_do_not_make_a_fact_distinct():
    record = f"2026-06-02 11:03:10,001 - ClientRunner - ERROR - [identity=site-1, run=simulate_job] - {OOM}"
    console = f"2026-06-02 11:03:10,050 - ERROR - {OOM}"
    report = run(
        ("site-1/log.txt", "site-1", [record]),
        ("stdout.txt", None, [console, OOM]),
        ("site-2/log.txt", "site-2", [OOM]),
    )
    rows = [s for s in report["signals"] if s["pattern"] == "CUDA_OOM"]
    assert len(rows) == 1 and rows[0]["count"] == 4 and rows[0]["source"] == "site-1/log.txt"


def test_different_facts_stay_apart_and_repeats_are_counted_not_listed():
    other = OOM.replace("2.00 GiB", "6.00 GiB")
    retries = [f"2026-06-02 11:{i // 60:02d}:{i % 60:02d},000 - X - ERROR - {OOM}" for i in range(100)]
    report = run(("site-1/log.txt", "site-1", [*retries, other]))
    rows = [s for s in report["signals"] if s["pattern"] == "CUDA_OOM"]
    assert [row["count"] for row in rows] == [100, 1]
    assert len(rows[0]["seen_in"]) == 8 and [p["line"] for p in rows[0]["seen_in"]] == list(range(1, 9))
    assert report["omitted"]["signals"] == 0
