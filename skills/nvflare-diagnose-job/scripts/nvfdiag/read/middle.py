"""Find error regions in the unread middle of big logs with a bytes-level pre-filter; read windows around them.

Usage:
    if looks_troubled(chunk.head + chunk.tail): ...            # head/tail show an error: scan this file first
    windows, scanned = read_middle_windows(path, chunk, scan_limit=..., byte_limit=...)

The pre-filter is a few compiled bytes patterns, each with a literal prefix so the regex engine skips ahead at
memchr speed (`Traceback`, `Error`/`ERROR`/`Exception`, `timeout`/`timed out`, `Killed`, `FATAL`/`CRITICAL`);
it runs over fixed-size blocks read into one reused buffer, so memory stays flat whatever the file size.
Windows start WINDOW_BEFORE bytes before a hit and end WINDOW_AFTER bytes after it (a traceback's exception
line comes last, an ERROR record first); overlapping windows merge. The earliest hits win: in a log that
retries for hours the first error is the likely root cause. Read-only: files are opened like bounded.py does.
"""

from __future__ import annotations

import os
import re

from .bounded import Chunk, Window, open_regular

PATTERNS = (
    re.compile(rb"Traceback"),
    re.compile(rb"E(?:rror|RROR|xception|XCEPTION)"),
    re.compile(rb"ime(?:out|d out)"),
    re.compile(rb"Killed"),
    re.compile(rb"AL(?<=FATAL|TICAL)"),
)
SCAN_PER_BUDGET_BYTE = 32  # middles scanned per run: at most 32 x --max-total-bytes (128 MiB by default)
SCAN_BLOCK = 4 * 1024 * 1024
OVERLAP = 16  # longer than any pattern match, so a hit across two blocks is still seen
WINDOW_BEFORE = 6 * 1024
WINDOW_AFTER = 10 * 1024
MAX_WINDOWS = 4  # per file
HITS_PER_PATTERN = 8  # per block: enough to place MAX_WINDOWS windows


def looks_troubled(data: bytes) -> bool:
    """True when `data` holds anything the pre-filter looks for (an error, traceback, timeout or kill)."""
    return any(pattern.search(data) for pattern in PATTERNS)


def hits_in(buffer, base: int, start: int, end: int) -> list[int]:
    """Sorted absolute offsets of the first HITS_PER_PATTERN hits of each pattern in buffer[start:end]."""
    hits = []
    for pattern in PATTERNS:
        pos = start
        for _ in range(HITS_PER_PATTERN):
            match = pattern.search(buffer, pos, end)
            if match is None:
                break
            hits.append(base + match.start())
            pos = match.end()
    return sorted(hits)


def plan_windows(hits: list[int], start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Merged [a, b) windows around `hits`, clipped to [start, end), at most `limit`, earliest first."""
    windows: list[tuple[int, int]] = []
    for hit in hits:
        low, high = max(start, hit - WINDOW_BEFORE), min(end, hit + WINDOW_AFTER)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], high))
        elif len(windows) < limit:
            windows.append((low, high))
    return windows


def scan_middle(fd: int, start: int, end: int, scan_limit: int) -> tuple[list[tuple[int, int]], int]:
    """Windows around the earliest pre-filter hits in [start, end) of `fd`, and the bytes scanned."""
    buffer = bytearray(min(SCAN_BLOCK + OVERLAP, max(0, end - start)))
    view = memoryview(buffer)
    hits: list[int] = []
    pos = start
    while pos < end and pos - start < scan_limit:
        count = _read_into(fd, view[: min(len(buffer), end - pos)], pos)
        if count <= 0:
            break
        hits += hits_in(buffer, pos, 0, count)
        windows = plan_windows(hits, start, end, MAX_WINDOWS)
        if len(windows) >= MAX_WINDOWS:
            return windows, pos + count - start
        pos += max(1, count - OVERLAP) if pos + count < end else count
    return plan_windows(hits, start, end, MAX_WINDOWS), min(pos, end) - start


def _read_into(fd: int, view: memoryview, offset: int) -> int:
    """Fill `view` from `offset` of `fd` without allocating a new buffer where the OS allows it."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = data
    return len(data)


def read_middle_windows(path: str, chunk: Chunk, *, scan_limit: int, byte_limit: int) -> tuple[list[Window], int]:
    """Scan the unread middle of `path` (as read into `chunk`) and read windows around errors in it.

    At most `scan_limit` bytes are scanned and `byte_limit` bytes of windows read. Returns the windows and the
    number of bytes scanned. Raises bounded.ReadFailure when the file cannot be opened.
    """
    start, end = chunk.middle
    if end <= start or byte_limit <= 0:
        return [], 0
    fd = open_regular(path)
    try:
        planned, scanned = scan_middle(fd, start, end, scan_limit)
        windows = []
        for low, high in planned:
            high = min(high, low + byte_limit)
            if high <= low:
                break
            before = os.pread(fd, 1, low - 1) if low > 0 else b"\n"
            data = os.pread(fd, high - low, low)
            windows.append(Window(low, data, starts_line=before == b"\n"))
            byte_limit -= len(data)
        return windows, scanned
    except OSError:
        return [], 0
    finally:
        os.close(fd)
