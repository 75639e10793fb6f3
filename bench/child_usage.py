"""Run a command and measure ITS OWN peak RSS and CPU, free of the caller's memory.

A child forked from a big process (pytest with hundreds of tests loaded, a benchmark that built a tree)
inherits that process's peak RSS in `ru_maxrss`, because Linux keeps the high-water mark across fork/vfork
and exec. So the command is started from a tiny launcher interpreter, whose own footprint (~10 MiB) is the
only thing the figure can include besides the command itself.

It also reports how many bytes the command read (`rchar` of /proc/PID/io: every read(2), pread(2), readv(2),
whatever the file or pipe), taken while the exited child is still a zombie; None where /proc has no io file.
Only the command's own reads count, not those of processes it starts.

Usage: `run_measured(argv, stdin=b"", cwd=None, env=None, timeout=300) -> Measured`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

_LAUNCHER = """
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its /proc/PID/io is still there
try:
    with open(f"/proc/{proc.pid}/io", encoding="ascii") as handle:
        rchar = int(dict(line.split(": ") for line in handle.read().splitlines())["rchar"])
except (OSError, KeyError, ValueError):
    rchar = None
_pid, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as handle:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "maxrss_kib": usage.ru_maxrss,
               "cpu": usage.ru_utime + usage.ru_stime, "rchar": rchar}, handle)
"""


@dataclass
class Measured:
    returncode: int
    stdout: bytes
    stderr: bytes
    wall_seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    bytes_read: int | None = None


def run_measured(argv: list[str], *, stdin: bytes = b"", cwd=None, env=None, timeout: float = 300) -> Measured:
    """Run `argv` through the launcher; stdout/stderr go to temp files so large outputs never block."""
    with tempfile.TemporaryDirectory() as scratch:
        result_path = os.path.join(scratch, "usage.json")
        with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
            fin.write(stdin)
            fin.seek(0)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-I", "-c", _LAUNCHER, result_path, *map(str, argv)],
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                cwd=cwd,
                env=env,
                timeout=timeout,
                check=False,
            )
            wall = time.perf_counter() - started
            fout.seek(0)
            ferr.seek(0)
            stdout, stderr = fout.read(), ferr.read()
        with open(result_path, encoding="utf-8") as handle:
            usage = json.load(handle)
    return Measured(usage["rc"], stdout, stderr, wall, usage["cpu"], usage["maxrss_kib"] / 1024, usage["rchar"])
