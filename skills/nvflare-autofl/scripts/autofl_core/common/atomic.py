"""Atomic file writes: a temp file in the target folder, fsync, then os.replace.

The new file keeps the permission bits of the file it replaces; a new file gets the usual 0o666 minus the umask
(a bare mkstemp file would be 0o600, surprising anyone who shares the workspace or the rendered skill files).
`writes()` counts the files this process replaced, so a reader's cache can tell that something was written since.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

try:
    from . import faults
except ImportError:  # loaded alone by path (the build scripts in shared/ and evals/): no test hooks there
    faults = None

_WRITES = [0]


def writes() -> int:
    """How many files this process has replaced so far (a reader's cache keys on it)."""
    return _WRITES[0]


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a partial one."""
    target = Path(path)
    if faults is not None:
        faults.checkpoint(f"write:{target.name}")
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    finally:
        _WRITES[0] += 1  # also after an error: the target may have been replaced


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, document: object) -> None:
    """Write `document` as sorted, indented JSON with a trailing newline."""
    write_text(path, json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n")


def _mode_for(target: Path) -> int:
    """Permission bits for the new file: those of the file being replaced, else 0o666 minus the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read from /proc (Linux) so other threads never see it changed; else set and restore."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
