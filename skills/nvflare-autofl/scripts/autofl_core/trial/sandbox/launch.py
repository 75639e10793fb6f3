"""Run one plan: the seal's namespaces, then the namespace's init (forked, or this process without a PID
namespace); the launcher forwards signals to init and leaves with the command's status."""

from __future__ import annotations

import os
import signal
import sys

from .limits import watch_setup
from .pid_one import FORWARDED, exec_command, exit_like, seal_and_run
from .protections import EXIT_NOT_RUN, YES
from .sealing import Seal


def run(plan: dict, command: list[str]) -> None:
    """Seal `plan` and run `command` in it; never returns (the command's status, 127, or 126: not run)."""
    seal = Seal(plan)
    seal.open_status()
    seal.disk_fds = watch_setup(seal) if seal.limits else []
    if not seal.unshare():
        seal.arm_watcher()
        seal.write_status()
        if plan.get("required"):
            sys.stderr.write("autofl: the trial was not run: namespaces are unavailable\n")
            os._exit(EXIT_NOT_RUN)
        os.chdir(plan.get("cwd") or "/")
        if not command:
            os._exit(0)
        exec_command(command)
    if seal.status["pid_namespace"] != YES:
        seal_and_run(seal, command)  # no PID namespace: this process sets up the mounts, then becomes the command
    read_end, write_end = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read_end)
        seal.status_pipe = write_end
        seal_and_run(seal, command)
    os.close(write_end)
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: os.kill(init, number))
    while True:
        try:
            _pid, status = os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
    reported = os.read(read_end, 32).decode("ascii", "replace")
    exit_like(int(reported) if reported.isdigit() else status)
