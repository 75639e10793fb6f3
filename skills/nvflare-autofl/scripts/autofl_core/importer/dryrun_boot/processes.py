"""Process control while job.py runs: what ends its run, and what it starts or leaves running after it.

`install` (before job.py runs): a SIGINT ends a run, SIGALRM ends the time after it (`out_of_time`), an audit hook
stops a process job.py starts after its run, `os._exit` in job.py's main thread ends its run as an exit (`Exited`),
and the children job.py forks are noted. After the run, `exit_as_python` does what Python does at exit (threads,
atexit handlers) and `wait_forked` waits for the children, each for at most AFTER_RUN_SECONDS.
"""

from __future__ import annotations

import _posixsubprocess
import atexit
import contextlib
import functools
import os
import signal
import sys
import threading
import time

from .frames import job_frame
from .state import AFTER_RUN_SECONDS, STATE, Stop

PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen"}
PROCESS_EVENTS.add("_posixsubprocess.fork_exec")  # multiprocessing's spawn and forkserver (`_audited_fork_exec`)


# what Python runs after the main code, kept before job.py may replace them (`exit_as_python`)
AT_EXIT = (atexit._run_exitfuncs, threading.enumerate, threading._threading_atexits, threading.Thread.daemon.fget)


class Exited(SystemExit):
    """job.py's main thread called `os._exit` (`_exit_now`): its run ends as an exit, and nothing Python runs at exit
    runs."""


def install() -> None:
    """Set the signal handlers, the audit hook and the wrappers of `fork_exec`, `os._exit` and `os.fork`."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a SIGINT ends a run (no record, never a "raised" one)
    signal.signal(signal.SIGALRM, out_of_time)  # also for a run a thread of job.py makes (`records.record_job`)
    sys.addaudithook(_no_process_after_the_run)
    _posixsubprocess.fork_exec = functools.partial(_audited_fork_exec, _posixsubprocess.fork_exec)
    os._exit = functools.partial(_exit_now, os._exit)
    os.fork = functools.partial(_noted_fork, os.fork)
    os.register_at_fork(after_in_child=lambda: STATE.in_job and setattr(STATE, "forked", True))


def _no_process_after_the_run(event: str, _args) -> None:
    """An audit hook: job.py starting a process after its run stops it (`after` "spawned"): what the process runs
    (another training) is not seen. A child job.py forks before its run writes no record (its parent does)."""
    if event in PROCESS_EVENTS and STATE.in_job and STATE.record is not None:
        STATE.after = {"how": "spawned", "where": job_frame(STATE.job, inner=True), "what": event}
        raise Stop


def _audited_fork_exec(fork_exec, *args):
    """`_posixsubprocess.fork_exec` with an audit event: multiprocessing's spawn and forkserver start a process
    through it alone (no `os` or `subprocess` event)."""
    sys.audit("_posixsubprocess.fork_exec")
    return fork_exec(*args)


def _exit_now(real_exit, code: int) -> None:
    """`os._exit` as job.py's main thread sees it: its run ends as an exit with `code` and is recorded; the real one
    in another thread, a process job.py forked, and outside job.py's run."""
    if STATE.in_job and not STATE.forked and threading.current_thread() is threading.main_thread():
        raise Exited(code)
    real_exit(code)


def out_of_time(_signum, _frame) -> None:
    """The SIGALRM handler: the time after job.py's run is out, and a run under way stops (`after` "unfinished")."""
    if STATE.in_job:
        STATE.after = {"how": "unfinished", "what": f"still running {AFTER_RUN_SECONDS} s after its run"}
        raise Stop


def _noted_fork(real_fork) -> int:
    """`os.fork` noting the children job.py forks during its run (`wait_forked`)."""
    pid = real_fork()
    if pid and STATE.in_job:
        STATE.children.append(pid)
    return pid


def wait_forked() -> None:
    """Wait for the processes job.py forked during its run (a copy of job.py may run the job later) for at most
    AFTER_RUN_SECONDS; one still running then makes `after` "unfinished"."""
    deadline = time.monotonic() + AFTER_RUN_SECONDS
    children, STATE.children = STATE.children, []
    for pid in children:
        with contextlib.suppress(ChildProcessError):  # job.py waited for it
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() >= deadline:
                    STATE.after = STATE.after or {"how": "unfinished", "what": "a process job.py forked still runs"}
                    break
                time.sleep(0.02)


def exit_as_python() -> None:
    """What Python runs after job.py's main code returns or exits: threading's exit calls (a thread pool's), then it
    joins job.py's non-daemon threads (for at most AFTER_RUN_SECONDS, else `after` is "unfinished"), then calls its
    atexit handlers; a run in any is seen, and through what job.py may have replaced (`AT_EXIT`)."""
    run_exitfuncs, enumerate_threads, thread_exits, daemon = AT_EXIT
    for call in reversed(thread_exits):  # a thread pool's: its idle workers end
        call()
    deadline = time.monotonic() + AFTER_RUN_SECONDS
    while alive := [t for t in enumerate_threads() if t is not threading.current_thread() and not daemon(t)]:
        if time.monotonic() >= deadline:
            STATE.after = STATE.after or {"how": "unfinished", "what": f"a thread still running {AFTER_RUN_SECONDS} s"}
            break
        alive[0].join(deadline - time.monotonic())
    run_exitfuncs()  # a raise in a handler is printed, as at Python's exit
