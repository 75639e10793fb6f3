"""A dry run's private folder in the temp directory: made with its owner's record, swept once the owner is gone.

A dry run works in a folder `autofl-dryrun-run-XXXXXXXX` (0700) of the temp directory that holds `owner`: the pid of
the process that made it, that process's start time (clock ticks since boot), so a pid used again by another
process is not taken for the owner, and its PID namespace (a pid means nothing in another one: a container
sharing the temp directory). The session removes its folder when it closes; a caller killed by SIGKILL
cannot, so `make` first sweeps the temp directory (once per process): a folder is removed only when its name is
one `make` gives, it is a real folder (never a symlink, never followed) of this user, its `owner` record is a
regular file that reads as one made in this PID namespace, and that owner is gone (no such process, a zombie, or another process holding the
pid). A folder still being made (no record yet), one of a live run, or anything else is left alone. Usage::

    folder = make(Path(tempfile.gettempdir()))   # the folders of dead owners are removed first
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import tempfile
from pathlib import Path

from ..common import trees
from ..trial import processes

PREFIX = "autofl-dryrun-run-"
NAME = re.compile(re.escape(PREFIX) + r"[a-z0-9_]{8}")  # what tempfile.mkdtemp appends: 8 of [a-z0-9_]
OWNER = "owner"
MAX_OWNER_BYTES = 64
MAX_SCANNED = 100_000  # entries of the temp directory looked at per sweep
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWEPT: set[str] = set()  # temp directories this process has swept


def make(temp_root: Path) -> Path:
    """A new private folder in `temp_root` carrying this process's owner record (leftovers of dead owners are
    removed first, once per process)."""
    if str(temp_root) not in _SWEPT:
        _SWEPT.add(str(temp_root))
        sweep(temp_root)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=temp_root))
    _state, started = processes.state_and_start(os.getpid())
    partial = folder / f"{OWNER}.tmp"
    partial.write_text(f"{os.getpid()} {'-' if started is None else started} {_pid_namespace()}\n", encoding="ascii")
    os.replace(partial, folder / OWNER)  # whole or absent: a sweep never reads half a record
    return folder


def sweep(temp_root: Path) -> list[str]:
    """Remove the dry-run folders of `temp_root` whose owner is gone; the names of those removed."""
    removed = []
    try:
        with os.scandir(temp_root) as entries:
            scanned = itertools.islice(entries, MAX_SCANNED)
            names = [entry.name for entry in scanned if NAME.fullmatch(entry.name)]
    except OSError:
        return removed
    for name in names:
        path = Path(temp_root) / name
        owner = _owner(path)
        if owner is not None and not _alive(*owner) and trees.remove_tree(path):
            removed.append(name)
    return removed


def _owner(folder: Path) -> tuple[int, int | None] | None:
    """(pid, start time or None) from the owner record of `folder`, a real folder of this user, when the record was
    made in this PID namespace; None otherwise."""
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:  # gone, a symlink (O_NOFOLLOW), not a folder
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            return None
        record = os.open(OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd)
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
    if match is None or match[3].decode() != _pid_namespace():
        return None
    return int(match[1]), None if match[2] == b"-" else int(match[2])


def _pid_namespace() -> str:
    """This process's PID namespace (the inode number of /proc/self/ns/pid), "-" where it cannot be read."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def _alive(pid: int, started: int | None) -> bool:
    """True unless process `pid` (started at `started`) is surely gone: no such process, a zombie, or a process
    that started at another time (the pid was used again). A pid held by another user's process counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state, now = processes.state_and_start(pid)
    if state in ("Z", "X"):
        return False
    return started is None or now is None or now == started
