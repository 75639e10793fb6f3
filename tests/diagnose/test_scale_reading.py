"""Big evidence: every file is covered before any is read deeper, and errors in unread middles are found.

The trees come from bench/diagnose_scale.py (the P4 benchmark builds the same tree at 1 GiB); here they are
sized for CI: 40 files of 1 MiB, four times the default total budget, and one 26 MiB log.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest
from module_loader import load_by_path
from nvfdiag.match.catalog import load_catalog
from nvfdiag.pipeline import diagnose
from nvfdiag.read import budget, middle
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
load_by_path("child_usage", REPO / "bench" / "child_usage.py")  # the benchmark's sibling import
SCALE = load_by_path("diagnose_scale", REPO / "bench" / "diagnose_scale.py")
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
MIB = 1 << 20


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    SCALE.build_tree(root, 40 * MIB)
    return root


def run_cli(python_exe: str, *args) -> dict:
    result = subprocess.run(
        [python_exe, str(SCALE.SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return validated(result.stdout)


def log_sources(report: dict) -> list[dict]:
    return [s for s in report["evidence_sources"] if s["kind"] == "log"]


def test_a_failure_at_the_end_of_the_last_file_read_is_found(tree, python_exe):
    planted = SCALE.plant(tree, "end")
    report = run_cli(python_exe, tree)
    assert report["matched_pattern"] == "IMPORT_ERROR"
    sources = log_sources(report)
    assert len(sources) == 40 and not [s for s in sources if s["status"] == "skipped_limit"]
    assert all(s["status"] == "truncated" and s["size"] == MIB and 4096 <= s["bytes_read"] < MIB for s in sources)
    assert sum(s["bytes_read"] for s in sources) <= LIMITS["max_total_bytes"]
    assert "EVIDENCE_LIMIT_REACHED" not in report["findings"]
    planted_source = next(s for s in sources if s["path"] == str(planted))
    assert planted_source["regions"][-1][1] == MIB  # its tail was read, so the traceback at the very end was seen
    assert report["signals"][0]["source"] == str(planted)


def test_a_failure_in_the_middle_of_a_log_whose_tail_shows_a_later_timeout_is_found(tree, python_exe):
    planted = SCALE.plant(tree, "middle")
    report = run_cli(python_exe, tree)
    assert report["matched_pattern"] == "CUDA_OOM"
    source = next(s for s in log_sources(report) if s["path"] == str(planted))
    offset = planted.read_bytes().index(b"torch.OutOfMemoryError")
    head, *windows, tail = source["regions"]
    assert head[0] == 0 and tail[1] == MIB and any(start <= offset < end for start, end in windows)
    assert source["bytes_read"] == sum(end - start for start, end in source["regions"])


def test_an_error_in_the_middle_of_one_26_mib_log_is_found_within_the_budget(tmp_path):
    log = tmp_path / "site-3" / "log.txt"
    log.parent.mkdir()
    block = SCALE._block("site-3")
    SCALE._write_filled(log, 26 * MIB, block, SCALE.OOM_FAILURE.encode(), SCALE.LATER_TIMEOUT.encode())
    evidence = collect_evidence([str(log)], job_id=None, **LIMITS)
    source = next(s for s in evidence.sources if s.path == str(log))
    assert source.bytes_read <= LIMITS["max_total_bytes"] and len(source.regions) >= 3
    report = diagnose(evidence, load_catalog(), mode="simulation")
    assert report["matched_pattern"] == "CUDA_OOM"
    oom = next(s for s in report["signals"] if s["pattern"] == "CUDA_OOM")
    assert oom["line"] is None and "OutOfMemoryError" in oom["excerpt"]  # a middle line has no known number


def test_middle_lines_keep_their_place_between_head_and_tail(tmp_path):
    log = tmp_path / "log.txt"
    SCALE._write_filled(log, 4 * MIB, SCALE._block("site-1"), SCALE.OOM_FAILURE.encode(), b"the last line\n")
    evidence = collect_evidence([str(log)], job_id=None, **LIMITS)
    assert [part for part, _ in itertools.groupby(line.part for line in evidence.lines)] == [0, 2, 1]
    assert evidence.lines[-1].text == "the last line"
    window = [line.text for line in evidence.lines if line.part == 2]
    assert any("OutOfMemoryError" in text for text in window)
    assert all(text.startswith(("2026-", "Traceback", "  ", "torch.")) for text in window)  # no cut lines


def test_budget_is_shared_tail_first_and_never_exceeded():
    shares = budget.plan_shares([MIB] * 40, max_bytes=262144, budget=4 * MIB, max_files=200)
    assert len(set(shares)) == 1 and sum(shares) <= 4 * MIB - 4 * MIB // 8  # an eighth kept for middle windows
    assert budget.head_tail(shares[0], MIB) == (16384, shares[0] - 16384)
    assert budget.plan_shares([100, 200], max_bytes=150, budget=10_000, max_files=200) == [100, 150 - 0]
    small_then_big = budget.plan_shares([1000, 50 * MIB, 50 * MIB], max_bytes=MIB, budget=MIB, max_files=200)
    assert small_then_big[0] == 1000 and small_then_big[1] == small_then_big[2] > 4096
    assert budget.plan_shares([MIB] * 5, max_bytes=MIB, budget=10_000, max_files=200) == [4096, 4096, 558, None, None]
    assert budget.plan_shares([10, 10, 10], max_bytes=100, budget=100, max_files=2) == [10, 10, None]


def test_windows_merge_clip_and_prefer_the_earliest_hits():
    hits = [10_000, 11_000, 100_000, 200_000, 300_000, 400_000, 500_000]
    windows = middle.plan_windows(hits, 5_000, 450_000, limit=4)
    assert windows[0] == (5_000, 11_000 + middle.WINDOW_AFTER) and len(windows) == 4
    assert windows[-1][0] == 300_000 - middle.WINDOW_BEFORE and windows[-1][1] <= 450_000
    assert middle.looks_troubled(b"x Traceback (most recent call last):") and middle.looks_troubled(b"- CRITICAL -")
    assert not middle.looks_troubled(b"2026-06-02 11:00:00,000 - FedAvg - INFO - Round 3 started.\n")


def test_middle_scan_is_bounded(tmp_path, monkeypatch):
    log = tmp_path / "log.txt"
    SCALE._write_filled(log, 20 * MIB, SCALE._block("site-1"), SCALE.OOM_FAILURE.encode())
    monkeypatch.setattr(middle, "SCAN_PER_BUDGET_BYTE", 1)  # 4 MiB of middle may be scanned: not enough
    evidence = collect_evidence([str(log)], job_id=None, **LIMITS)
    assert not any("OutOfMemoryError" in line.text for line in evidence.lines)
    assert len(next(s for s in evidence.sources if s.path == str(log)).regions) == 2


def test_report_stays_small_with_many_windows(tree, python_exe):
    SCALE.plant(tree, "middle")
    report = run_cli(python_exe, tree, "--format", "json")
    assert len(json.dumps(report, indent=2)) <= 64 * 1024
