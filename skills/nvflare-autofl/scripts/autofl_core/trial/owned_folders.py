"""Private folders in a temp directory that carry their owner's record, and the sweep of those whose owner is gone.

A folder `PREFIX` + 8 of [a-z0-9_] (tempfile.mkdtemp, 0700) holds `owner`: the pid of the process that made it,
that process's start time (clock ticks since boot), so a pid used again by another process is not taken for the
owner, and its PID namespace (a pid means nothing in another one: a container sharing the temp directory). The
record is written whole by a rename. The maker removes its folder when it is done; a maker killed by SIGKILL
cannot, so `make` first sweeps the temp directory (once per process and prefix): a folder is removed only when its
name is one `make` gives for that prefix, it is a real folder (never a symlink, never followed) of this user, and
either its `owner` record is a regular file that reads as one made in this PID namespace whose owner is gone (no
such process, a zombie, or another process holding the pid), or it has no `owner` entry at all and was last changed
more than UNRECORDED_SECONDS ago (its maker was killed between making it and renaming the record into it, which
takes microseconds). A folder of a live owner, one still being made, or anything else is left alone. Used for the
dry run's folders (`importer/dryrun.py`) and the sandbox probe's scratch folders (`seal.py`). Usage::

    folder = make(Path(tempfile.gettempdir()), "autofl-probe-")   # the folders of dead owners are removed first
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import tempfile
import time
from pathlib import Path

from ..common import trees
from . import processes

OWNER = "owner"
MAX_OWNER_BYTES = 64
MAX_SCANNED = 100_000  # entries of the temp directory looked at per sweep
UNRECORDED_SECONDS = 600.0  # a folder without a record this old lost its maker before the record was written
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWEPT: set[tuple[str, str]] = set()  # (temp directory, prefix) this process has swept
_GONE = (-1, None)  # what `_owner` gives for a folder whose maker died before writing the record


def pattern(prefix: str) -> re.Pattern:
    """The names `make` gives for `prefix`: what tempfile.mkdtemp appends is 8 of [a-z0-9_]."""
    return re.compile(re.escape(prefix) + r"[a-z0-9_]{8}")


def make(temp_root: Path, prefix: str) -> Path:
    """A new private folder in `temp_root` carrying this process's owner record (leftovers of dead owners with the
    same prefix are removed first, once per process)."""
    if (str(temp_root), prefix) not in _SWEPT:
        _SWEPT.add((str(temp_root), prefix))
        sweep(temp_root, prefix)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=temp_root))
    _state, started = processes.state_and_start(os.getpid())
    partial = folder / f"{OWNER}.tmp"
    partial.write_text(f"{os.getpid()} {'-' if started is None else started} {pid_namespace()}\n", encoding="ascii")
    os.replace(partial, folder / OWNER)  # whole or absent: a sweep never reads half a record
    return folder


def sweep(temp_root: Path, prefix: str) -> list[str]:
    """Remove the folders of `temp_root` made for `prefix` whose owner is gone; the names of those removed."""
    removed, name = [], pattern(prefix)
    try:
        with os.scandir(temp_root) as entries:
            scanned = itertools.islice(entries, MAX_SCANNED)
            names = [entry.name for entry in scanned if name.fullmatch(entry.name)]
    except OSError:
        return removed
    for found in names:
        path = Path(temp_root) / found
        owner = _owner(path)
        if owner is not None and not _alive(*owner) and trees.remove_tree(path):
            removed.append(found)
    return removed


def _owner(folder: Path) -> tuple[int, int | None] | None:
    """(pid, start time or None) from the owner record of `folder`, a real folder of this user, when the record was
    made in this PID namespace; `_GONE` when it has no record and is older than UNRECORDED_SECONDS; None otherwise."""
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:  # gone, a symlink (O_NOFOLLOW), not a folder
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            return None
        try:
            record = os.open(OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd)
        except FileNotFoundError:
            return _GONE if time.time() - info.st_mtime > UNRECORDED_SECONDS else None
        try:
            if not stat.S_ISREG(os.fstat(record).st_mode):
                return None
            text = os.read(record, MAX_OWNER_BYTES + 1)
        finally:
            os.close(record)
    except OSError:
        return None
    finally:
        os.close(fd)
    match = re.fullmatch(rb"([1-9][0-9]{0,9}) ([0-9]{1,20}|-) ([0-9]{1,20}|-)\n", text)
    if match is None or match[3].decode() != pid_namespace():
        return None
    return int(match[1]), None if match[2] == b"-" else int(match[2])


def pid_namespace() -> str:
    """This process's PID namespace (the inode number of /proc/self/ns/pid), "-" where it cannot be read."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def _alive(pid: int, started: int | None) -> bool:
    """True unless process `pid` (started at `started`) is surely gone: no such process (a pid beyond what the
    kernel hands out included), a zombie, or a process that started at another time (the pid was used again). A pid
    held by another user's process counts as alive; the pid of `_GONE` is none."""
    if pid < 1:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    state, now = processes.state_and_start(pid)
    if state in ("Z", "X"):
        return False
    return started is None or now is None or now == started
