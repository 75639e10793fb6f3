"""The namespace's init (PID 1): build the seal, run the command, end every other process when it ends, watch
the limits while it runs, and leave with the command's status."""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from .limits import record_breach
from .protections import EXIT_NOT_RUN, YES
from .sealing import Seal
from .watcher import WATCH_SECONDS, Watcher

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def exit_like(status: int) -> None:
    """Leave with the same exit code or signal as the waited-for child."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # these two take no handler, so have none to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else EXIT_NOT_RUN)


def seal_and_run(seal: Seal, command: list[str]) -> None:
    """Build the seal and run the command: as PID 1, fork it and end everything else when it ends; without a PID
    namespace, become the command (same pid, same process group)."""
    seal.build()
    seal.drop_capabilities()
    seal.arm_watcher()
    seal.write_status()
    unmet = [name for name in seal.plan.get("required", []) if seal.status.get(name) != YES]
    if unmet:
        sys.stderr.write(f"autofl: the trial was not run: {', '.join(unmet)} unavailable\n")
        os._exit(EXIT_NOT_RUN)
    try:
        os.chdir(seal.plan.get("cwd") or "/")  # after the view is laid: the old cwd would be the live folder
    except OSError as error:
        sys.stderr.write(f"autofl: the trial was not run: cannot enter its workspace ({error})\n")
        os._exit(EXIT_NOT_RUN)
    if not command:
        os._exit(0)
    if os.getpid() != 1:
        exec_command(command)
    child = os.fork()
    if child == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        exec_command(command)
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: _signal_namespace(number))
    status = _reap_until(child, seal.watcher)
    _signal_namespace(signal.SIGKILL)
    if seal.status_pipe is not None:  # PID 1 cannot die of its own signal: the launcher mirrors the status
        os.write(seal.status_pipe, str(status).encode("ascii"))
    exit_like(status)


def exec_command(command: list[str]) -> None:
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"autofl: cannot run {command[0]}: {error}\n")
    os._exit(127)


def _signal_namespace(sig: int) -> None:
    """From PID 1: signal every other process of the namespace (kill(-1) never reaches outside it)."""
    try:
        os.kill(-1, sig)
    except ProcessLookupError:
        pass


def _reap_until(child: int, watcher: Watcher | None = None) -> int:
    if watcher is not None:
        return _reap_watching(child, watcher)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return status


def _reap_watching(child: int, watcher: Watcher) -> int:
    """Reap like `_reap_until`, waking every WATCH_SECONDS (or when the command exits) to check the limits; a
    limit crossed ends every process of the namespace, and its record goes to the reason file."""
    try:
        exited = [os.pidfd_open(child)]
    except (OSError, AttributeError):
        exited = []  # the exit is then seen at the next wake-up
    breached = None
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            except InterruptedError:
                continue
            if pid == 0:
                break
            if pid == child:
                if breached is None and watcher.disk:  # a temp mount may be full: the job then failed on ENOSPC
                    record_breach(watcher.breach(time.monotonic(), final=True))
                return status
        if breached is None:
            breached = watcher.breach(time.monotonic())
            if breached is not None:
                record_breach(breached)
                _signal_namespace(signal.SIGKILL)
                continue
        select.select(exited, [], [], WATCH_SECONDS)
