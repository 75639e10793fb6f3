"""Bounded reads of small input files (the ledger, the campaign documents): one rule for every reader.

Usage::

    data = read_regular(path, limit)   # bytes, or None when the file does not exist
    document = read_json(path)         # a JSON object (dict), or None when the file does not exist
    document = read_json_or_none(path) # the same, but None too when it cannot be read (an optional document)
    value = read_json_value(path, limit, allow_nan=True)  # any JSON value (a trial's metrics files)
    value = parse_json(data)           # JSON text already in hand (a JSONL line, a child's output)
    tail = read_tail(path, limit)      # the last `limit` bytes of a regular file (a log), or None
    is_number(value); is_finite(value); is_integer(value)   # a JSON number / finite number / integer (no bool)

Only regular files are read: a FIFO is opened non-blocking and refused, a device (/dev/zero) is refused before
any byte is read, and a file larger than `limit` is refused from its size alone. Raises BoundedReadError whose
message is a short phrase ("is a directory", "is larger than 16 MiB", ...) for the caller to put in context.
`read_json` is the one reader of every campaign JSON document (campaign.json, the state, manifests, the snapshot
record, the finalize journal, the trial marker, trial.json; each is a JSON object): at most `MAX_DOCUMENT_BYTES`,
and a damaged file, whatever the damage, is one BoundedReadError. `read_json_value` and `parse_json` apply the
same rule to the JSON a trial leaves (NVFLARE's metrics files, the sandbox's status), where NaN may be allowed.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024  # every campaign document (JSON, autofl.yaml); the ledger has its own limit


class BoundedReadError(ValueError):
    """The path exists but cannot be read as a bounded regular file; str() is a short phrase."""


def read_regular(path: str | os.PathLike, limit: int, *, through_link: bool = True) -> bytes | None:
    """The bytes of the regular file at `path` (None when it does not exist); at most `limit` bytes. With
    `through_link=False` a link as the last part of `path` is refused in the same call that opens it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if through_link else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):  # a file component in the path: it does not exist either
        return None
    except IsADirectoryError:
        raise BoundedReadError("is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not through_link:
            raise BoundedReadError("is a link") from None
        raise BoundedReadError(f"cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise BoundedReadError("is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise BoundedReadError("is not a regular file")
        if info.st_size > limit:
            raise BoundedReadError(f"is larger than {_size(limit)}")
        data = _read_up_to(fd, limit + 1)
    except OSError as exc:
        raise BoundedReadError(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # the file grew after fstat
        raise BoundedReadError(f"is larger than {_size(limit)}")
    return data


def read_json(path: str | os.PathLike, limit: int = MAX_DOCUMENT_BYTES) -> dict | None:
    """The JSON object at `path` (None when the file does not exist), read as `read_regular` reads.

    Raises BoundedReadError for a file that is not a bounded regular file, "is not valid JSON" for one that is
    not UTF-8 JSON (too deeply nested, or holding NaN/Infinity, included), "is not a JSON object" for any other
    JSON value.
    """
    document = read_json_value(path, limit)
    if document is not None and not isinstance(document, dict):
        raise BoundedReadError("is not a JSON object")
    return document


def read_json_or_none(path: str | os.PathLike) -> dict | None:
    """`read_json` for a reader that can do without the document: None when it is missing or cannot be read."""
    try:
        return read_json(path)
    except BoundedReadError:
        return None


def read_json_value(path: str | os.PathLike, limit: int = MAX_DOCUMENT_BYTES, *, allow_nan: bool = False) -> object:
    """Any JSON value at `path` (None when the file does not exist, or holds `null`), read as `read_regular` reads."""
    data = read_regular(path, limit)
    return None if data is None else parse_json(data, allow_nan=allow_nan)


def parse_json(data: bytes | str, *, allow_nan: bool = False) -> object:
    """The JSON value of `data` (UTF-8); BoundedReadError "is not valid JSON" for anything else (too deeply
    nested, or holding NaN/Infinity unless `allow_nan`, included)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if allow_nan:
            return json.loads(text)
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise BoundedReadError("is not valid JSON") from None


def _no_constant(word: str):
    """NaN and Infinity are not JSON (every campaign document is written with allow_nan=False): damage."""
    raise ValueError(f"{word} is not a JSON number")


def read_tail(path: str | os.PathLike, limit: int) -> bytes | None:
    """The last `limit` bytes of the regular file at `path` (None when it does not exist), for logs of any size."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise BoundedReadError(f"cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BoundedReadError("is not a regular file")
        os.lseek(fd, max(info.st_size - limit, 0), os.SEEK_SET)
        return _read_up_to(fd, limit)
    except OSError as exc:
        raise BoundedReadError(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _read_up_to(fd: int, count: int) -> bytes:
    parts = []
    while count > 0:
        part = os.read(fd, min(count, 1 << 20))
        if not part:
            break
        parts.append(part)
        count -= len(part)
    return b"".join(parts)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


# --- kinds of JSON values (a bool is no number) ---------------------------------------------------------------
def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: object) -> bool:
    return is_number(value) and math.isfinite(value)


def is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
