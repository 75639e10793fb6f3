"""The files and folders job.py's run reads before NVFLARE runs: inputs a budget may come from (`record_file_reads`).

An audit hook notes each file opened for reading, each folder listed and each path `os.path` or `pathlib` tests
(exists, is a folder, its size: `TESTED`) while job.py runs and before its run is recorded, when the job's code (or
a library it called, like `json` or `pandas`) reads it, not NVFLARE or the boot: by path relative to job.py's folder
when inside it (the dry run's cache key holds those files), else absolute. A file of the job's folder the job's code
writes (or renames onto) is noted by its absolute path: what the run reads there is the run's own doing, not the
key's. A process the job's code starts (or forks) reads what the hook cannot see: noted as UNSEEN, as is any read
past MAX_READS. Module code the import machinery (or a traceback's source lines) reads, the interpreter's and
installed packages' folders, and `/dev/null` are not inputs of the job's own.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import linecache
import os
import pathlib
import sys
import sysconfig
import tokenize

from .frames import in_boot, in_job_folder, in_nvflare
from .processes import PROCESS_EVENTS
from .state import STATE

MAX_READS = 64
UNSEEN = "..."  # reads the hook does not see: past MAX_READS, or a process's
READ_EVENTS = ("open", "os.listdir", "os.scandir", "os.rename")
CODE = (".py", ".pyc", ".pyo", ".so", ".pth", ".pyd")
CODE_READERS = (os.path.dirname(importlib.__file__) + os.sep, linecache.__file__, tokenize.__file__)
NOTHING = ("/dev/null",)
TESTED = ("exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getctime", "getatime")
TESTED_EVENT = "autofl.path_tested"  # raised by the wrappers of os.path's tests and of pathlib.Path.stat


def record_file_reads() -> None:
    """Install the audit hook; `STATE["files_read"]` holds what it notes."""
    STATE["files_read"] = set()
    installed = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    STATE["installed"] = tuple(os.path.join(os.path.realpath(p), "") for p in installed if p)
    sys.addaudithook(_note_read)
    for name in TESTED:
        setattr(os.path, name, _audited(getattr(os.path, name)))
    pathlib.Path.stat = _audited(pathlib.Path.stat)


def _audited(test):
    """`test` raising TESTED_EVENT with the path it is given (no audit event says a path was tested)."""

    @functools.wraps(test)
    def audited(path, *args, **kwargs):
        sys.audit(TESTED_EVENT, path)
        return test(path, *args, **kwargs)

    return audited


def _note_read(event: str, args: tuple) -> None:
    if not STATE.get("in_job") or "record" in STATE:
        return
    if event in PROCESS_EVENTS:  # the boot's wrappers of `os.fork` and `fork_exec` raise it for the job's code
        if _by_job(past_boot=True):
            STATE["files_read"].add(UNSEEN)
        return
    if (event not in READ_EVENTS and event != TESTED_EVENT) or not args:
        return
    path, writes = (args[1], True) if event == "os.rename" else (args[0], event == "open" and _writes(args))
    if isinstance(path, os.PathLike):  # a path object tested: its own __fspath__ may raise, as the test then will
        with contextlib.suppress(Exception):
            path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path is None and event != "open":
        path = "."  # `os.listdir()`: the current folder
    if isinstance(path, str) and _by_job(depth=3 if event == TESTED_EVENT else 2):  # not a file descriptor
        _note(os.path.realpath(path), writes, sys._getframe(1).f_code.co_filename)


def _by_job(past_boot: bool = False, depth: int = 2) -> bool:
    """True when, from the read outwards (`depth` frames up: past a wrapper of TESTED), the job's own code comes
    before NVFLARE's or the boot's (`past_boot`: the boot's frames are passed over)."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_filename
        if in_nvflare(name) or (in_boot(name) and not past_boot):
            return False
        if in_job_folder(name):
            return True
        frame = frame.f_back
    return False


def _writes(args: tuple) -> bool:
    """True for an open that reads nothing the file held before: write-only, truncating, or creating it anew."""
    flags = (args + (None, None))[2]
    if not isinstance(flags, int):
        return False
    anew = flags & os.O_CREAT and flags & os.O_EXCL
    return (flags & os.O_ACCMODE) == os.O_WRONLY or bool(flags & os.O_TRUNC or anew)


def _note(path: str, writes: bool, reader: str) -> None:
    code = path.endswith(CODE) and reader.startswith(CODE_READERS)  # an import, a traceback's source line
    if code or path in NOTHING or path.startswith(STATE["installed"]):
        return
    folder = os.path.dirname(os.path.realpath(STATE["job"]))
    inside = path == folder or path.startswith(folder + os.sep)
    if writes and not inside:  # a file elsewhere the job writes: read only when it is opened for reading too
        return
    noted = STATE["files_read"]
    if len(noted) < MAX_READS:
        noted.add(os.path.relpath(path, folder) if inside and not writes else path)
    else:
        noted.add(UNSEEN)
