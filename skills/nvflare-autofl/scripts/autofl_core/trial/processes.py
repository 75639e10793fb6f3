"""Run one child process tree: new session, streamed output, event-driven waits, whole-tree cleanup.

- The child starts in a new session (its own process group) with stdin closed.
- A pump thread blocks on the combined stdout/stderr pipe, appends every chunk to the log
  file, keeps at most `TAIL_BYTES` in memory and hands complete lines to `on_line`.
- A waiter thread blocks in waitid(WNOWAIT) until the child exits (it is not reaped yet, so
  its process-group id cannot be reused during cleanup). The caller's thread sleeps on an
  Event between low-rate `tick` calls (watchdogs); nothing polls the child.
- Termination (always run once the child exits or a watchdog fires): SIGTERM to the process
  group and to every process whose /proc/<pid>/environ carries the trial token (this is the
  only time /proc is scanned), a grace period, then SIGKILL. Survivors are returned so the
  caller can fail loudly. Limitation: a process that re-executes itself with a scrubbed
  environment *and* leaves the process group cannot be found.

Usage: outcome = run_process(argv, cwd=ws, env=env, log_path=p, token=(TOKEN_VAR, tok))
"""

from __future__ import annotations

import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TAIL_BYTES = 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
ENVIRON_READ_LIMIT = 4 * 1024 * 1024


@dataclass
class ProcessOutcome:
    """What happened to one child run; times are time.monotonic() values."""

    returncode: int | None
    tail: bytes
    started_at: float
    ended_at: float
    stop_reason: str | None = None
    stop_triggered_at: float | None = None
    survivors: list[int] = field(default_factory=list)
    pid: int | None = None
    runner_cpu_seconds: float = 0.0


class OutputPump(threading.Thread):
    """Copy the child's pipe to the log file; keep a bounded tail; feed complete lines to a callback."""

    def __init__(self, fd: int, log_path: Path, on_line: Callable[[str], None] | None):
        super().__init__(name="autofl-output-pump", daemon=True)
        self._fd = fd
        self._log_path = log_path
        self._on_line = on_line
        self._tail = bytearray()
        self._partial = bytearray()
        self._stop_requested = threading.Event()

    def run(self) -> None:
        with open(self._log_path, "ab", buffering=0) as log:
            while True:
                ready, _, _ = select.select([self._fd], [], [], 1.0)
                if not ready:
                    if self._stop_requested.is_set():
                        break
                    continue
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    break
                log.write(chunk)
                self._keep(chunk)
        if self._partial:
            self._emit(bytes(self._partial))
        os.close(self._fd)

    def stop(self) -> None:
        """Ask the pump to exit once the pipe is idle (used if a stray holder keeps it open)."""
        self._stop_requested.set()

    def tail(self) -> bytes:
        return bytes(self._tail)

    def _keep(self, chunk: bytes) -> None:
        self._tail += chunk
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]
        if self._on_line is None:
            return
        self._partial += chunk
        *lines, rest = bytes(self._partial).split(b"\n")
        self._partial = bytearray(rest[-MAX_LINE_BYTES:])
        for line in lines:
            self._emit(line[:MAX_LINE_BYTES])

    def _emit(self, line: bytes) -> None:
        try:
            self._on_line(line.decode("utf-8", errors="replace").rstrip("\r"))
        except Exception:  # a display/watchdog bug must never break output capture
            self._on_line = None


def run_process(
    argv: list[str],
    *,
    cwd: Path | str,
    env: dict[str, str],
    log_path: Path,
    token: tuple[str, str],
    on_line: Callable[[str], None] | None = None,
    tick: Callable[[float], str | None] | None = None,
    tick_interval: float = 1.0,
    grace_seconds: float = 5.0,
    on_start: Callable[[int], None] | None = None,
) -> ProcessOutcome:
    """Run argv to completion (or until `tick` returns a stop reason) and clean up the whole tree."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    cpu_before = _own_cpu_seconds()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    pump = OutputPump(read_fd, log_path, on_line)
    outcome = ProcessOutcome(returncode=None, tail=b"", started_at=started, ended_at=started, pid=proc.pid)
    try:  # from here on an exception (e.g. a signal turned into one) still ends the whole tree
        pump.start()
        exited = threading.Event()
        threading.Thread(
            target=_wait_without_reaping, args=(proc.pid, exited), name="autofl-waiter", daemon=True
        ).start()
        if on_start is not None:
            on_start(proc.pid)
        _supervise(exited, tick, tick_interval, outcome)
    finally:
        outcome.survivors = terminate_tree(proc.pid, token, grace_seconds)
        try:
            outcome.returncode = proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:  # the child itself survived SIGKILL: reported in survivors
            outcome.returncode = None
        if pump.ident is None:  # never started: the pipe is still ours to close
            os.close(read_fd)
        else:
            pump.join(timeout=5.0)
            if pump.is_alive():
                pump.stop()
                pump.join(timeout=2.0)
        outcome.tail = pump.tail()
        outcome.ended_at = time.monotonic()
        outcome.runner_cpu_seconds = _own_cpu_seconds() - cpu_before
    return outcome


def _own_cpu_seconds() -> float:
    """CPU of this process (all its threads, not the children): what supervising a trial costs."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _wait_without_reaping(pid: int, exited: threading.Event) -> None:
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass
    exited.set()


def _supervise(
    exited: threading.Event, tick: Callable[[float], str | None] | None, interval: float, outcome: ProcessOutcome
) -> None:
    """Sleep on the exit event; wake every `interval` seconds only to run the watchdog tick."""
    if tick is None:
        exited.wait()
        return
    while not exited.wait(timeout=interval):
        now = time.monotonic()
        reason = tick(now)
        if reason:
            outcome.stop_reason = reason
            outcome.stop_triggered_at = now
            return


def terminate_tree(
    pgid: int | None, token: tuple[str, str], grace_seconds: float = 5.0, kill_seconds: float = 3.0
) -> list[int]:
    """SIGTERM the process group and every token carrier, wait, SIGKILL the rest; return survivors.

    Pass `pgid=None` for an orphaned trial of a dead runner (Do better 7): its group id may have been
    reused since, so only processes carrying the trial token are signalled.
    """
    needle = f"\0{token[0]}={token[1]}\0".encode()
    targets = _tree_members(pgid, needle)
    if not targets:
        return []
    _signal_all(pgid, targets, signal.SIGTERM)
    targets = _wait_gone(pgid, needle, grace_seconds)
    if not targets:
        return []
    _signal_all(pgid, targets, signal.SIGKILL)
    return _wait_gone(pgid, needle, kill_seconds, resignal=signal.SIGKILL)


def find_token_processes(token: tuple[str, str]) -> list[int]:
    """Live processes (not zombies) whose environment carries `token` (name, value); for orphan recovery."""
    needle = f"\0{token[0]}={token[1]}\0".encode()
    return _tree_members(None, needle)


def _wait_gone(pgid: int | None, needle: bytes, seconds: float, resignal: signal.Signals | None = None) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        members = _tree_members(pgid, needle)
        if not members or time.monotonic() >= deadline:
            return members
        if resignal is not None:  # catch processes forked between scans
            _signal_all(pgid, members, resignal)
        time.sleep(0.2)


def _signal_all(pgid: int | None, pids: list[int], sig: signal.Signals) -> None:
    if pgid is not None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _tree_members(pgid: int | None, needle: bytes) -> list[int]:
    """Scan /proc once: live pids in process group `pgid` or carrying `needle` in their environment."""
    me = os.getpid()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        state, group = _stat(pid)
        if state is None or state in "ZX":
            continue
        if (pgid is not None and group == pgid) or _carries(pid, needle):
            found.append(pid)
    return sorted(found)


def _stat(pid: int) -> tuple[str | None, int | None]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None, None
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 3:
        return None, None
    return fields[0].decode(), int(fields[2])


def _carries(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read(ENVIRON_READ_LIMIT)
    except OSError:
        return False
    return needle in b"\0" + data + b"\0"
