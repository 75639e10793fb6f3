"""Bounded, read-only file reading: head (first 16 KiB) plus tail, binary sniffing, line splitting.

Usage:
    chunk = read_head_tail("/path/log.txt", limit=262144)   # never reads more than `limit` bytes
    for number, text in chunk_lines(chunk): ...              # number is None for tail lines

A file is opened read-only with O_NOFOLLOW and O_NONBLOCK (a FIFO never blocks us) and must be a regular
file. Nothing is ever written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

HEAD_BYTES = 16 * 1024
MAX_LINE_CHARS = 16 * 1024  # longer lines are clipped (a 50 MB single line is never held whole)


class ReadFailure(Exception):
    """The file could not be read; `status` is a Source status (missing, permission_denied, unavailable)."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Chunk:
    """The bytes read from one file: `head` from offset 0, `tail` from the end when bytes were skipped."""

    head: bytes
    tail: bytes = b""
    tail_starts_line: bool = True
    truncated: bool = False
    binary: bool = False

    @property
    def bytes_read(self) -> int:
        return len(self.head) + len(self.tail)


def chunk_from_bytes(data: bytes, limit: int) -> Chunk:
    """Apply the same head+tail bound to bytes already in memory (stdin, CLI output)."""
    head = data[: min(HEAD_BYTES, limit)]
    if b"\x00" in head:
        return Chunk(head=head, binary=True)
    if len(data) <= limit:
        return Chunk(head=data)
    tail_len = limit - len(head)
    if tail_len <= 0:
        return Chunk(head=head, truncated=True)
    start = len(data) - tail_len
    return Chunk(head=head, tail=data[start:], tail_starts_line=data[start - 1 : start] == b"\n", truncated=True)


def read_head_tail(path: str, limit: int) -> Chunk:
    """Read at most `limit` bytes of `path`: all of it when it fits, else head + tail."""
    fd = _open_regular(path)
    try:
        return _read_chunk(fd, limit)
    except OSError as exc:  # e.g. EIO from a failing disk or a /proc file: this file is unavailable, not fatal
        raise ReadFailure("unavailable", exc.strerror or "read error") from exc
    finally:
        os.close(fd)


def _read_chunk(fd: int, limit: int) -> Chunk:
    size = os.fstat(fd).st_size
    head = os.read(fd, min(HEAD_BYTES, limit))
    if b"\x00" in head:
        return Chunk(head=head, binary=True)
    if size <= limit:
        rest = _read_exact(fd, limit - len(head))
        extra = os.read(fd, 1)  # the file may have grown since fstat
        return Chunk(head=head + rest, truncated=bool(extra))
    tail_len = limit - len(head)
    if tail_len <= 0:
        return Chunk(head=head, truncated=True)
    os.lseek(fd, size - tail_len - 1, os.SEEK_SET)
    before = os.read(fd, 1)
    tail = _read_exact(fd, tail_len)
    return Chunk(head=head, tail=tail, tail_starts_line=before == b"\n", truncated=True)


def _open_regular(path: str) -> int:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise ReadFailure("missing", "file not found") from exc
    except PermissionError as exc:
        raise ReadFailure("permission_denied", "permission denied") from exc
    except OSError as exc:
        raise ReadFailure("unavailable", exc.strerror or "cannot open") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ReadFailure("unavailable", "not a regular file")
    return fd


def _read_exact(fd: int, count: int) -> bytes:
    parts = []
    while count > 0:
        block = os.read(fd, min(count, 1 << 20))
        if not block:
            break
        parts.append(block)
        count -= len(block)
    return b"".join(parts)


def chunk_lines(chunk: Chunk) -> list[tuple[int | None, str]]:
    """Decode a chunk into (line number or None, text) pairs; invalid UTF-8 becomes U+FFFD."""
    out: list[tuple[int | None, str]] = []
    head_lines = _split(chunk.head)
    for index, text in enumerate(head_lines, start=1):
        out.append((index, text))
    if chunk.tail:
        tail_lines = _split(chunk.tail)
        if not chunk.tail_starts_line and tail_lines:
            tail_lines = tail_lines[1:]  # starts mid-line: drop the fragment
        out.extend((None, text) for text in tail_lines)
    return out


def _split(data: bytes) -> list[str]:
    if not data:
        return []
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    return [clip_line(piece.rstrip(b"\r").decode("utf-8", errors="replace")) for piece in pieces]


def clip_line(text: str) -> str:
    """Bound one line to MAX_LINE_CHARS characters (keeps the start, which carries the log prefix)."""
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS]
