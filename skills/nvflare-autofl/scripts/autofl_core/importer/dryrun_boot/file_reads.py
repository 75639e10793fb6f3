"""The files and folders job.py's run reads before NVFLARE runs: inputs a budget may come from (`record_file_reads`).

An audit hook notes each file opened for reading and each folder listed while job.py runs and before its run is
recorded, when the job's code (or a library it called, like `json` or `pandas`) reads it, not NVFLARE or the boot:
by path relative to job.py's folder when inside it (the dry run's cache key holds those files), else absolute. Module code (`.py`, `.pyc`, extensions), the interpreter's and installed packages' folders, and `/proc`,
`/sys`, `/dev` are not inputs of the job's own. At most MAX_READS paths; one more is noted as `...`.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from .frames import in_boot, in_job_folder, in_nvflare
from .state import STATE

MAX_READS = 64
READ_EVENTS = ("open", "os.listdir", "os.scandir")
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT
CODE = (".py", ".pyc", ".pyo", ".so", ".pth", ".pyd")
SYSTEM = ("/proc/", "/sys/", "/dev/")


def record_file_reads() -> None:
    """Install the audit hook; `STATE["files_read"]` holds what it notes."""
    STATE["files_read"] = set()
    installed = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    STATE["installed"] = tuple(os.path.join(os.path.realpath(p), "") for p in installed if p)
    sys.addaudithook(_note_read)


def _note_read(event: str, args: tuple) -> None:
    if event not in READ_EVENTS or not STATE.get("in_job") or "record" in STATE or not args:
        return
    path = args[0]
    if event == "open" and _writes(args):
        return
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path is None and event != "open":
        path = "."  # `os.listdir()`: the current folder
    if isinstance(path, str) and _by_job():  # not a file descriptor
        _note(os.path.realpath(path))


def _by_job() -> bool:
    """True when, from the read outwards, the job's own code comes before NVFLARE's or the boot's."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if in_boot(name) or in_nvflare(name):
            return False
        if in_job_folder(name):
            return True
        frame = frame.f_back
    return False


def _writes(args: tuple) -> bool:
    mode, flags = (args + (None, None))[1:3]
    return any(c in mode for c in "wax+") if isinstance(mode, str) else isinstance(flags, int) and bool(flags & WRITES)


def _note(path: str) -> None:
    if path.endswith(CODE) or path.startswith(SYSTEM) or path.startswith(STATE["installed"]):
        return
    folder = os.path.dirname(os.path.realpath(STATE["job"]))
    inside = path == folder or path.startswith(folder + os.sep)
    noted = STATE["files_read"]
    if len(noted) < MAX_READS:
        noted.add(os.path.relpath(path, folder) if inside else path)
    else:
        noted.add("...")
