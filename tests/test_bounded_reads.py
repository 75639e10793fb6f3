"""Bounded reads, measured: the bytes actually read (read(2) calls, /proc/thread-self/io) stay within the limit.

Inputs are sparse files far bigger than every limit (1 GiB and more, a few MiB on disk), so a reader that
takes the whole file, whatever way it reads, is caught by the byte count long before memory matters. Covers
both skills' bounded readers (`nvfdiag/read/bounded.py`, `autofl_core/common/bounded.py`) and their callers (evidence
collection, `--collect` artifacts, stdin, the ledger, the stored campaign state). The CLI-level figures
(bytes read and peak RSS of the child) are in tests/diagnose/test_malformed_input.py and
tests/autofl/test_bounded_inputs.py.
"""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path

import pytest
from autofl_core.campaign import guard_inputs, ledger
from autofl_core.common import bounded as autofl_bounded
from module_loader import load_by_path
from nvfdiag.read import bounded as diag_bounded
from nvfdiag.read import collect, evidence, middle
from read_meter import ReadMeter

GIB, MIB, KIB = 1 << 30, 1 << 20, 1 << 10
LOG_LINE = b"2026-06-02 11:03:10,000 - ClientRunner - ERROR - [identity=site-1] - boom\n"


def sparse_file(path: Path, size: int, text: bytes = LOG_LINE) -> Path:
    """A file of `size` bytes: 1 MiB of `text` lines at each end, a hole (zeros) in between."""
    block = (text * (MIB // len(text) + 1))[:MIB]
    with open(path, "wb") as handle:
        handle.write(block)
        handle.truncate(size - MIB)
        handle.seek(size - MIB)
        handle.write(block)
    return path


def test_meter_counts_a_whole_file_read(tmp_path):
    path = sparse_file(tmp_path / "big.log", 8 * MIB)
    with ReadMeter() as meter:
        path.read_bytes()
    assert 8 * MIB <= meter.bytes < 8 * MIB + 4 * KIB


# --- nvflare-diagnose-job ------------------------------------------------------------------------------


def test_head_tail_reader_reads_only_its_limit(tmp_path):
    path = sparse_file(tmp_path / "huge.log", GIB)
    with ReadMeter() as meter:
        chunk = diag_bounded.read_head_tail(str(path), 262144)
    assert chunk.truncated and chunk.bytes_read == 262144
    assert meter.bytes <= 262144 + 1  # head + tail + the byte before the tail (does the tail start a line?)


def test_head_tail_reader_reads_a_small_file_once(tmp_path):
    path = tmp_path / "small.log"
    path.write_bytes(LOG_LINE * 100)
    with ReadMeter() as meter:
        chunk = diag_bounded.read_head_tail(str(path), 262144)
    assert not chunk.truncated and chunk.bytes_read == len(LOG_LINE) * 100
    assert meter.bytes <= chunk.bytes_read + 1  # plus the probe for growth since fstat


def test_evidence_collection_reads_within_the_total_budget(tmp_path):
    folder = tmp_path / "workspace"
    for site in ("server", "site-1", "site-2"):
        (folder / site).mkdir(parents=True)
        sparse_file(folder / site / "log.txt", GIB)
        (folder / site / "error_log.txt").write_bytes(LOG_LINE * 10)
    kwargs = {"job_id": None, "max_bytes": 262144, "max_total_bytes": 600 * KIB, "max_files": 200}
    with ReadMeter() as meter:
        found = evidence.collect_evidence([str(folder)], **kwargs)
    read = sum(source.bytes_read for source in found.sources)
    assert 500 * KIB < read <= 600 * KIB  # what is kept: the budget (an eighth of it held back for middle windows)
    # what is read: the budget, plus the middle scan for error words (at most SCAN_PER_BUDGET_BYTE x the budget, in
    # 4 MiB blocks that are never kept), plus a few probe bytes per file. Three 1 GiB files would be 3 GiB.
    # (the last scan block of a file may run past the scan allowance: one SCAN_BLOCK per file at most)
    assert meter.bytes <= 600 * KIB * (2 + middle.SCAN_PER_BUDGET_BYTE) + 3 * middle.SCAN_BLOCK + 16 * KIB


def test_collected_artifacts_are_read_bounded(tmp_path):
    temp = tmp_path / "download"
    temp.mkdir()
    logs = {site: str(sparse_file(temp / f"{site}.log", GIB)) for site in ("site-1", "site-2")}
    with ReadMeter() as meter:
        out = collect._read_artifacts({"client_logs": logs}, str(temp))
    assert [item["site"] for item in out] == ["site-1", "site-2"] and all(item["truncated"] for item in out)
    assert meter.bytes <= 2 * (collect.ARTIFACT_MAX_BYTES + 1)


class EndlessStdin(io.RawIOBase):
    """`total` bytes of log lines, produced on demand (nothing is held but the block asked for)."""

    def __init__(self, total: int):
        self.left = total

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        self.left -= size
        return (LOG_LINE * (size // len(LOG_LINE) + 1))[:size]


def test_stdin_keeps_only_head_and_tail(repo_root):
    path = repo_root / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    script = load_by_path("diagnose_job_script", path)
    tracemalloc.start()
    try:
        text = script.read_stdin_bounded(EndlessStdin(64 * MIB), 262144)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(text) <= script.STDIN_HEAD + 1 + 262144
    assert peak < 8 * MIB, f"{peak / MIB:.1f} MiB held while reading 64 MiB of stdin"


# --- nvflare-autofl -------------------------------------------------------------------------------------


def test_oversized_file_is_refused_before_any_byte_is_read(tmp_path):
    path = sparse_file(tmp_path / "results.tsv", GIB)
    with ReadMeter() as meter, pytest.raises(autofl_bounded.BoundedReadError, match="larger than"):
        autofl_bounded.read_regular(path, 16 * MIB)
    assert meter.bytes == 0


def test_regular_reader_reads_a_fitting_file_once(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_bytes(b"x" * 100_000)
    with ReadMeter() as meter:
        assert len(autofl_bounded.read_regular(path, 16 * MIB)) == 100_000
    assert meter.bytes <= 100_000


def test_a_file_that_grew_after_fstat_is_read_only_to_the_limit(tmp_path, monkeypatch):
    path = sparse_file(tmp_path / "results.tsv", GIB)
    real_fstat = os.fstat

    def stale_fstat(fd):  # the size seen before the file grew
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 10, *info[7:]))

    monkeypatch.setattr(autofl_bounded.os, "fstat", stale_fstat)
    with ReadMeter() as meter, pytest.raises(autofl_bounded.BoundedReadError, match="larger than"):
        autofl_bounded.read_regular(path, MIB)
    assert meter.bytes <= MIB + 4  # the limit plus the one-byte probe (the meter's own count can drift a byte)


def test_ledger_callers_refuse_a_huge_ledger_unread(tmp_path):
    path = sparse_file(tmp_path / "results.tsv", ledger.MAX_LEDGER_BYTES + GIB, text=b"keep\tx\n")
    with ReadMeter() as meter:
        with pytest.raises(ledger.LedgerError, match="larger than 512 MiB"):
            ledger.read_rows(path)
        with pytest.raises(ledger.LedgerError, match="larger than 512 MiB"):
            ledger.append_row(path, {"status": "keep", "name": "x"})
    assert meter.bytes == 0


def test_stored_state_reader_refuses_a_huge_state_unread(tmp_path):
    state = tmp_path / guard_inputs.STATE_RELATIVE_PATH
    state.parent.mkdir(parents=True)
    sparse_file(state, GIB, text=b'{"mode": "max"}\n')
    with ReadMeter() as meter, pytest.raises(guard_inputs.InputError, match="larger than"):
        guard_inputs.stored_mode(tmp_path)
    assert meter.bytes == 0
