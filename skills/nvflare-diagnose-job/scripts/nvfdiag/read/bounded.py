"""Bounded, read-only file reading: head plus tail (budget.head_tail), binary sniffing, line splitting.

Usage:
    chunk = read_head_tail("/path/log.txt", limit=262144)   # never reads more than `limit` bytes
    for number, text in chunk_lines(chunk): ...              # number is None for tail lines
    for part in chunk_parts(chunk): ...                      # head, middle windows (middle.py), tail

A file is opened read-only with O_NOFOLLOW and O_NONBLOCK (a FIFO never blocks us) and must be a regular
file. Nothing is ever written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from .budget import HEAD_BYTES, head_tail

MAX_LINE_CHARS = 16 * 1024  # longer lines are clipped (a 50 MB single line is never held whole)


class ReadFailure(Exception):
    """The file could not be read; `status` is a Source status (missing, permission_denied, unavailable)."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Window:
    """Bytes read from the middle of a file (middle.py); `starts_line` is False when data[0] is mid-line."""

    offset: int
    data: bytes
    starts_line: bool = False


@dataclass
class Chunk:
    """The bytes read from one file: `head` from offset 0, `tail` from the end when bytes were skipped,
    and middle `windows` (in file order) added by the error pre-filter."""

    head: bytes
    tail: bytes = b""
    tail_starts_line: bool = True
    truncated: bool = False
    binary: bool = False
    size: int | None = None
    windows: list[Window] = field(default_factory=list)

    @property
    def bytes_read(self) -> int:
        return len(self.head) + len(self.tail) + sum(len(w.data) for w in self.windows)

    @property
    def middle(self) -> tuple[int, int]:
        """The unread [start, end) byte range between head and tail (empty when nothing was skipped)."""
        if not self.truncated or self.size is None or not self.tail:
            return (0, 0)
        return (len(self.head), self.size - len(self.tail))

    def regions(self) -> list[tuple[int, int]]:
        """Byte ranges [start, end) read from the file, in file order."""
        out = [(0, len(self.head))] if self.head else []
        out += [(w.offset, w.offset + len(w.data)) for w in self.windows]
        if self.tail and self.size is not None:
            out.append((self.size - len(self.tail), self.size))
        return out


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
    fd = open_regular(path)
    try:
        return _read_chunk(fd, limit)
    except OSError as exc:  # e.g. EIO from a failing disk or a /proc file: this file is unavailable, not fatal
        raise ReadFailure("unavailable", exc.strerror or "read error") from exc
    finally:
        os.close(fd)


def _read_chunk(fd: int, limit: int) -> Chunk:
    size = os.fstat(fd).st_size
    head_len, tail_len = head_tail(limit, size)
    head = os.read(fd, min(head_len, HEAD_BYTES)) if head_len else b""
    if b"\x00" in head:
        return Chunk(head=head, binary=True, size=size)
    if not tail_len:
        rest = _read_exact(fd, limit - len(head))
        extra = os.read(fd, 1)  # the file may have grown since fstat
        return Chunk(head=head + rest, truncated=bool(extra), size=size)
    os.lseek(fd, size - tail_len - 1, os.SEEK_SET)
    before = os.read(fd, 1)
    tail = _read_exact(fd, tail_len)
    if b"\x00" in tail[:HEAD_BYTES]:
        return Chunk(head=head, binary=True, size=size)
    return Chunk(head=head, tail=tail, tail_starts_line=before == b"\n", truncated=True, size=size)


def open_regular(path: str) -> int:
    """A read-only descriptor of the regular file `path` (no symlink, FIFO or device); ReadFailure otherwise."""
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
    return [pair for part in chunk_parts(chunk) for pair in part]


def chunk_parts(chunk: Chunk) -> list[list[tuple[int | None, str]]]:
    """(line number or None, text) pairs per region read: head, each middle window, tail (empty parts kept)."""
    parts = [list(enumerate(_split(chunk.head), start=1))]
    for window in chunk.windows:
        parts.append([(None, text) for text in _split(window.data, window.starts_line, whole_last=False)])
    if chunk.tail:
        parts.append([(None, text) for text in _split(chunk.tail, chunk.tail_starts_line)])
    return parts


def _split(data: bytes, starts_line: bool = True, whole_last: bool = True) -> list[str]:
    """Lines of `data`; a first fragment (not `starts_line`) and, unless `whole_last`, an unterminated last
    fragment are dropped: a line cut by the read bounds is never shown half."""
    if not data:
        return []
    pieces = data.decode("utf-8", errors="replace").split("\n")  # one decode: a cut character stays U+FFFD
    if pieces[-1] == "" or not whole_last:
        pieces.pop()
    if not starts_line:
        pieces = pieces[1:]
    if b"\r" in data:
        pieces = [piece.rstrip("\r") for piece in pieces]
    return [piece if len(piece) <= MAX_LINE_CHARS else piece[:MAX_LINE_CHARS] for piece in pieces]


def clip_line(text: str) -> str:
    """Bound one line to MAX_LINE_CHARS characters (keeps the start, which carries the log prefix)."""
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS]
