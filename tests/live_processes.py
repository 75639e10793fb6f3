"""Test support: the live processes running a given Python script (read from /proc), and a pid that ran and ended."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autofl_core.trial import processes


def running(script: Path) -> list[int]:
    """Live processes running `python -I script` (not zombies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        state, _start = processes.state_and_start(int(entry.name))
        if argv[2:3] == [str(script).encode()] and state not in (None, "Z", "X"):
            found.append(int(entry.name))
    return found


def dead_pid() -> int:
    """The pid of a process that ran and was reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
