"""The files and folders job.py's run reads before NVFLARE runs: inputs a budget may come from (`record_file_reads`).

An audit hook notes each file opened for reading, each folder listed and each path `os.path` or `pathlib` tests
(exists, is a folder, its size: `TESTED`) while job.py runs and before its run is recorded, when the job's code (or
a library it called, like `json`, `pandas` or NVFLARE's own helpers) reads it, not the boot: by path relative to
job.py's folder when inside it (the dry run's cache key holds those files), else absolute. A file of the job's
folder the job's code writes (or renames onto) and then reads is noted by its absolute path: what the run reads
there is the run's own doing, not the key's; a write alone reads nothing. A process the job's code starts (or
forks) reads what the hook cannot see: noted as UNSEEN, as is any read past MAX_READS. Module code the import
system reads, lists or caches (or a traceback's source lines), the folders `os.makedirs` tests while it creates
them, the interpreter's, installed packages' and the boot's folders, NVFLARE's own reads of its settings
(`~/.nvflare`) and `/dev/null` are not inputs of the job's own.
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

from .frames import BOOT_FOLDER, in_boot, in_job_folder, in_nvflare
from .processes import PROCESS_EVENTS
from .state import STATE

MAX_READS = 64
UNSEEN = "..."  # reads the hook does not see: past MAX_READS, or a process's
READ_EVENTS = ("open", "os.listdir", "os.scandir", "os.rename")
CODE = (".py", ".pyc", ".pyo", ".so", ".pth", ".pyd")
CODE_READERS = (os.path.dirname(importlib.__file__) + os.sep, linecache.__file__, tokenize.__file__)
IMPORT_SYSTEM = "<frozen importlib._bootstrap"  # the frozen import system: finds, reads and caches modules only
LISTINGS = ("os.listdir", "os.scandir")
NOTHING = ("/dev/null",)
TESTED = ("exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getctime", "getatime")
TESTED_EVENT = "autofl.path_tested"  # raised by the wrappers of os.path's tests and of pathlib.Path.stat
_MAKEDIRS = os.makedirs.__code__  # the tests it makes decide only which folders it creates
NVFLARE_HOME = os.path.join(os.path.expanduser("~"), ".nvflare", "")  # NVFLARE's own settings (POC workspace...)


def record_file_reads() -> None:
    """Install the audit hook; `STATE.files_read` holds what it notes."""
    installed = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values(), BOOT_FOLDER}
    STATE.installed_dirs = tuple(os.path.join(os.path.realpath(p), "") for p in installed if p)
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
    if not STATE.in_job or STATE.record is not None:
        return
    if event in PROCESS_EVENTS:  # the boot's wrappers of `os.fork` and `fork_exec` raise it for the job's code
        if _by_job(past_boot=True):
            STATE.files_read.add(UNSEEN)
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
    tested = event == TESTED_EVENT
    if tested and sys._getframe(2).f_code is _MAKEDIRS:  # the folders it creates: a write
        return
    if isinstance(path, str) and _by_job(depth=3 if tested else 2):  # not a file descriptor
        path, reader = os.path.realpath(path), sys._getframe(1).f_code.co_filename
        settings = os.path.join(path, "").startswith(NVFLARE_HOME) and _through_nvflare(3 if tested else 2)
        if not settings and not _module_code(reader, path, event in LISTINGS or writes):
            _note(path, writes)


def _module_code(reader: str, path: str, lists_or_writes: bool) -> bool:
    """True for module code an import or a traceback's source line reads, and for a folder the frozen import system
    lists or a bytecode cache it writes (any other file it is asked to read stays an input)."""
    if reader.startswith(IMPORT_SYSTEM):
        return lists_or_writes or path.endswith(CODE)
    return path.endswith(CODE) and reader.startswith(CODE_READERS)


def _by_job(past_boot: bool = False, depth: int = 2) -> bool:
    """True when, from the read outwards (`depth` frames up: past a wrapper of TESTED), the job's own code comes
    before the boot's (`past_boot`: the boot's frames are passed over); NVFLARE's frames are passed over like any
    library's (a helper of NVFLARE's the job calls reads for the job)."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_filename
        if in_boot(name) and not past_boot:
            return False
        if in_job_folder(name):
            return True
        frame = frame.f_back
    return False


def _through_nvflare(depth: int) -> bool:
    """True when, from the read outwards, NVFLARE's code comes before the job's (NVFLARE reads for itself)."""
    frame = sys._getframe(depth)
    while frame is not None and not in_job_folder(frame.f_code.co_filename):
        if in_nvflare(frame.f_code.co_filename):
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


def _note(path: str, writes: bool) -> None:
    if path in NOTHING or path.startswith(STATE.installed_dirs):
        return
    folder = os.path.dirname(os.path.realpath(STATE.job))
    inside = path == folder or path.startswith(folder + os.sep)
    if writes:  # read only when it is opened for reading too; a job file written, when read after
        STATE.written.update([path] if inside else [])
        return
    noted = STATE.files_read
    if len(noted) < MAX_READS:
        noted.add(os.path.relpath(path, folder) if inside and path not in STATE.written else path)
    else:
        noted.add(UNSEEN)
