"""Whose code runs (the boot's, job.py's, NVFLARE's, a library's), read from the stack, and the line a record names.

The boot's own frames (every file of this package) are never the caller: a question asked from inside the boot is
answered for the code that called into it.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from .state import STATE

BOOT_FOLDER = os.path.dirname(__file__) + os.sep  # as the package's code objects name their files


def in_boot(filename: str) -> bool:
    """True for a file of this package (the boot's program included)."""
    return filename.startswith(BOOT_FOLDER)


def caller(skipped) -> str:
    """The file of the innermost frame on the stack outside the boot and the files `skipped` names ("" if none)."""
    frame = sys._getframe(1)
    while frame is not None and (in_boot(frame.f_code.co_filename) or skipped(frame.f_code.co_filename)):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def in_nvflare(filename: str) -> bool:
    """True for a file of the installed nvflare package."""
    return filename.startswith(STATE.nvflare_dirs)


def in_job_folder(filename: str) -> bool:
    """True for one of the job's own files: below job.py's folder, outside a folder of installed packages."""
    folder = os.path.dirname(STATE.job) + os.sep
    inside = filename[len(folder) :].split(os.sep)
    return filename.startswith(folder) and not {"site-packages", "dist-packages"} & set(inside)


def from_job(skipped) -> bool:
    """True when the innermost frame outside the boot and `skipped` files is job.py's or a module's beside it."""
    return os.path.dirname(caller(skipped)) == os.path.dirname(STATE.job)


def called_from_nvflare() -> bool:
    """True when the caller of the function that asks (an argparse parse, a stand-in's `__bool__` or attribute) is
    NVFLARE's own code, not job.py, its modules or another library."""
    return in_nvflare(caller(lambda name: name == argparse.__file__))  # exactly: a job's `hooks_argparse.py` asks too


def job_frame(job: str, tb=None, inner: bool = False) -> dict | None:
    """The innermost frame inside job.py, else inside a module beside it (`inner`: inside either), of the current
    stack or of `tb`."""
    folder = os.path.dirname(job)
    frames = traceback.extract_tb(tb) if tb is not None else traceback.extract_stack()
    own = [f for f in frames if f.filename == job]
    beside = [f for f in frames if os.path.dirname(f.filename) == folder and not in_boot(f.filename)]
    frame = ((beside if inner else own) or beside or [None])[-1]
    return None if frame is None else _frame(frame, os.path.relpath(frame.filename, folder))


def nvflare_frame(tb) -> dict | None:
    """The innermost frame of `tb` inside the nvflare package, its file named from `nvflare/`."""
    frames = [f for f in traceback.extract_tb(tb) if in_nvflare(f.filename)]
    if not frames:
        return None
    root = next(d for d in STATE.nvflare_dirs if frames[-1].filename.startswith(d))
    return _frame(frames[-1], "nvflare" + os.sep + frames[-1].filename[len(root) :])


def _frame(frame: traceback.FrameSummary, file: str) -> dict:
    return {"file": file, "line": frame.lineno, "text": (frame.line or "").strip()}
