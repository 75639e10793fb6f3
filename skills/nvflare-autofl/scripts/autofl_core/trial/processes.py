"""Run one child process tree: new session, streamed output, event-driven waits, whole-tree cleanup.

- The child starts in a new session (its own process group) with stdin closed.
- A pump thread blocks (no timeout) on the combined stdout/stderr pipe, appends every chunk to
  the log file, keeps at most `TAIL_BYTES` in memory and hands complete lines to `on_line`;
  a burst of small writes is read in one wake-up (see `OutputPump`).
- A waiter thread blocks in waitid(WNOWAIT) until the child exits (it is not reaped yet, so
  its process-group id cannot be reused during cleanup). The caller's thread sleeps on an
  Event between low-rate `tick` calls (watchdogs), woken early by the exit, by the caller
  (`wake`) or at a watchdog deadline (`due`); nothing polls the child. Every wake-up of a
  sleeping thread costs CPU (about 0.1 ms on the 2-core VM), so the runner wakes rarely (P2).
- Termination (always run once the child exits or a watchdog fires): SIGTERM to the process
  group and to every process whose /proc/<pid>/environ carries the trial token (this is the
  only time /proc is scanned; the environment is read only for processes that started no
  earlier than the child), a grace period, then SIGKILL. Survivors are returned so the
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
from typing import NamedTuple

TAIL_BYTES = 1024 * 1024
READ_BYTES = 65536
SETTLE_BELOW_BYTES = READ_BYTES // 4  # a read this small is a burst just starting, not a flood
SETTLE_SECONDS = 0.2  # how late a line may reach the watchdog and the progress line
DEADLINE_SLACK = 0.01  # a tick at a deadline runs this much after it, so the check sees it passed
MAX_LINE_BYTES = 64 * 1024
ENVIRON_READ_LIMIT = 4 * 1024 * 1024
STAT_READ_LIMIT = 4096
PROC_CHUNK = 64 * 1024


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
    """Copy the child's pipe to the log file; keep a bounded tail; feed complete lines to a callback.

    Blocks in select() on the pipe and a private wake pipe (no timeout). After a small read it lets a burst of
    writes pile up in the pipe for `SETTLE_SECONDS` (a log record is one write; a round logs a dozen within
    milliseconds), so a burst costs one wake-up instead of one per line; large reads never wait, so a flooding
    child is drained at full speed. `finish()` (the child exited) ends the settling, `stop()` ends the pump.
    """

    def __init__(self, fd: int, log_path: Path, on_line: Callable[[str], None] | None):
        super().__init__(name="autofl-output-pump", daemon=True)
        self._fd = fd
        self._log_path = log_path
        self._on_line = on_line
        self._tail = bytearray()
        self._partial = bytearray()
        self._wake_read, self._wake_write = os.pipe()
        self._finishing = False

    def run(self) -> None:
        try:
            with open(self._log_path, "ab", buffering=0) as log:
                self._copy(log)
            if self._partial:
                self._emit(bytes(self._partial))
        finally:
            os.close(self._fd)

    def _copy(self, log) -> None:
        watched = [self._fd, self._wake_read]
        while True:
            ready, _, _ = select.select(watched, [], [])
            if self._wake_read in ready:
                if b"s" in os.read(self._wake_read, 64):  # stop(); otherwise finish(): read on without settling
                    return
                self._finishing = True
            if self._fd not in ready:
                continue
            chunk = os.read(self._fd, READ_BYTES)
            if not chunk:
                return
            log.write(chunk)
            self._keep(chunk)
            if len(chunk) < SETTLE_BELOW_BYTES and not self._finishing:
                select.select([self._wake_read], [], [], SETTLE_SECONDS)  # ends early on finish() or stop()

    def finish(self) -> None:
        """The child exited: copy what is left without settling."""
        self._poke(b"f")

    def stop(self) -> None:
        """Make the pump exit now (used if a stray holder keeps the pipe open after the tree ended)."""
        self._poke(b"s")

    def _poke(self, byte: bytes) -> None:
        os.write(self._wake_write, byte)

    def release(self) -> None:
        """Close the wake pipe (and the output pipe of a pump that never ran); only once the pump is not running."""
        fds = [self._wake_read, self._wake_write] + ([self._fd] if self.ident is None else [])
        for fd in fds:
            os.close(fd)

    def tail(self) -> bytes:
        return bytes(self._tail)

    def _keep(self, chunk: bytes) -> None:
        self._tail += chunk
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]
        if self._on_line is None:
            return
        if b"\n" not in chunk:
            self._partial += chunk
            del self._partial[:-MAX_LINE_BYTES]
            return
        *lines, rest = (bytes(self._partial) + chunk).split(b"\n")
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
    wake: threading.Event | None = None,
    due: Callable[[], float | None] | None = None,
) -> ProcessOutcome:
    """Run argv to completion (or until `tick` returns a stop reason) and clean up the whole tree.

    `tick(now)` runs every `tick_interval` seconds; sooner at the monotonic time `due()` returns (a watchdog
    deadline), and at once whenever `wake` is set (e.g. by `on_line` when a line shows a stall), so a watchdog
    fires at its trigger, not at the next interval.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cpu_before = _own_cpu_seconds()
    started = time.monotonic()
    proc, read_fd = _spawn(argv, cwd, env)
    outcome = ProcessOutcome(returncode=None, tail=b"", started_at=started, ended_at=started, pid=proc.pid)
    born, pump = None, None
    try:  # from here on an exception (e.g. a signal turned into one) still ends the whole tree
        born = _stat(proc.pid).started  # every descendant starts at or after this (clock ticks since boot)
        pump = OutputPump(read_fd, log_path, on_line)
        pump.start()
        wake = threading.Event() if wake is None else wake
        exited = _watch_exit(proc.pid, wake)
        if on_start is not None:
            on_start(proc.pid)
        _supervise(exited, wake, tick, tick_interval, due, outcome)
    finally:
        if pump is not None and pump.ident is not None:
            pump.finish()
        outcome.survivors = terminate_tree(proc.pid, token, grace_seconds, born_after=born)
        outcome.returncode = _reap(proc)
        _drain(pump, read_fd)
        outcome.tail = pump.tail() if pump is not None else b""
        outcome.ended_at = time.monotonic()
        outcome.runner_cpu_seconds = _own_cpu_seconds() - cpu_before
    return outcome


def _spawn(argv: list[str], cwd: Path | str, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """Start argv in a new session, stdin closed, stdout and stderr on one pipe; returns (process, read end)."""
    read_fd, write_fd = os.pipe()
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
    return proc, read_fd


def _reap(proc: subprocess.Popen) -> int | None:
    try:
        return proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:  # the child itself survived SIGKILL: reported in survivors
        return None


def _drain(pump: OutputPump | None, read_fd: int) -> None:
    """Let the pump copy what is left in the pipe; stop it if a stray holder keeps the pipe open."""
    if pump is None:  # never created: the pipe is still ours to close
        os.close(read_fd)
        return
    if pump.ident is not None:
        pump.join(timeout=5.0)
        if pump.is_alive():
            pump.stop()
            pump.join(timeout=2.0)
    if not pump.is_alive():  # a pump still blocked keeps its wake pipe (it never reads a reused descriptor)
        pump.release()


def _own_cpu_seconds() -> float:
    """CPU of this process (all its threads, not the children): what supervising a trial costs."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _watch_exit(pid: int, wake: threading.Event) -> threading.Event:
    """An event set (and `wake` set too) once the child exited; a thread blocks in waitid without reaping it."""
    exited = threading.Event()

    def wait() -> None:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass
        exited.set()
        wake.set()

    threading.Thread(target=wait, name="autofl-waiter", daemon=True).start()
    return exited


def _supervise(
    exited: threading.Event,
    wake: threading.Event,
    tick: Callable[[float], str | None] | None,
    interval: float,
    due: Callable[[], float | None] | None,
    outcome: ProcessOutcome,
) -> None:
    """Sleep until the child exits; wake every `interval` seconds, at the time `due()` names if that is sooner,
    or when `wake` is set, to run the tick."""
    if tick is None:
        exited.wait()
        return
    while True:
        timeout = interval
        deadline = due() if due is not None else None
        if deadline is not None:  # a watchdog deadline: check just after it, not at the next interval
            timeout = min(interval, max(0.0, deadline - time.monotonic()) + DEADLINE_SLACK)
        wake.wait(timeout=timeout)
        wake.clear()  # cleared before the exit check, so an exit after it still ends the next wait at once
        if exited.is_set():
            return
        now = time.monotonic()
        reason = tick(now)
        if reason:
            outcome.stop_reason = reason
            outcome.stop_triggered_at = now
            return


def terminate_tree(
    pgid: int | None,
    token: tuple[str, str],
    grace_seconds: float = 5.0,
    kill_seconds: float = 3.0,
    *,
    born_after: int | None = None,
) -> list[int]:
    """SIGTERM the process group and every token carrier, wait, SIGKILL the rest; return survivors.

    Pass `pgid=None` for an orphaned trial of a dead runner (Do better 7): its group id may have been
    reused since, so only processes carrying the trial token are signalled. `born_after` (the trial child's
    start time from /proc/<pid>/stat, in clock ticks since boot) skips the environment of every process that
    started before it: none of them can descend from the child, so the scan reads one small file per process.
    """
    needle = f"\0{token[0]}={token[1]}\0".encode()
    targets = _tree_members(pgid, needle, born_after)
    if not targets:
        return []
    _signal_all(pgid, targets, signal.SIGTERM)
    targets = _wait_gone(pgid, needle, born_after, grace_seconds)
    if not targets:
        return []
    _signal_all(pgid, targets, signal.SIGKILL)
    return _wait_gone(pgid, needle, born_after, kill_seconds, resignal=signal.SIGKILL)


def find_token_processes(token: tuple[str, str]) -> list[int]:
    """Live processes (not zombies) whose environment carries `token` (name, value); for orphan recovery."""
    needle = f"\0{token[0]}={token[1]}\0".encode()
    return _tree_members(None, needle, None)


def _wait_gone(
    pgid: int | None, needle: bytes, born_after: int | None, seconds: float, resignal: signal.Signals | None = None
) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        members = _tree_members(pgid, needle, born_after)
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


def _tree_members(pgid: int | None, needle: bytes, born_after: int | None) -> list[int]:
    """Scan /proc once: live pids in process group `pgid` or carrying `needle` in their environment."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        info = _stat(pid)
        if info.state is None or info.state in "ZX":
            continue
        if pgid is not None and info.group == pgid:
            found.append(pid)
        elif (born_after is None or info.started is None or info.started >= born_after) and _carries(pid, needle):
            found.append(pid)
    return sorted(found)


class _Stat(NamedTuple):
    state: str | None
    group: int | None
    started: int | None


def state_and_start(pid: int) -> tuple[str | None, int | None]:
    """The state letter (`Z`: a zombie) and the start time (clock ticks since boot) of `pid`; (None, None) when
    it cannot be read (gone)."""
    info = _stat(pid)
    return info.state, info.started


def _stat(pid: int) -> _Stat:
    """State, process group and start time (clock ticks since boot) from /proc/<pid>/stat."""
    data = _read_proc(f"/proc/{pid}/stat", STAT_READ_LIMIT)
    fields = data[data.rfind(b")") + 2 :].split() if data else []
    if len(fields) < 20:
        return _Stat(None, None, None)
    return _Stat(fields[0].decode(), int(fields[2]), int(fields[19]))


def _carries(pid: int, needle: bytes) -> bool:
    data = _read_proc(f"/proc/{pid}/environ", ENVIRON_READ_LIMIT)
    return data is not None and needle in b"\0" + data + b"\0"


def _read_proc(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a /proc file (None when it cannot be read: gone, or not ours)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, min(PROC_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
