"""Atomic file writes: a temp file in the target folder, fsync, then os.replace."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a partial one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, document: object) -> None:
    """Write `document` as sorted, indented JSON with a trailing newline."""
    write_text(path, json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n")
