"""The boot's requests: set up once (NVFLARE imported and patched), then fork one child per run asked for.

    --serve JOB.py      # stdin: {"runs": [{"out": PATH, "args": [...], "env": {...}}]} lines; stdout: "done" each

Each run is a child forked after NVFLARE is imported and patched, at most PARALLEL at a time; the boot ends itself
(and with it the sandbox) as soon as its requests' pipe closes while a run is under way.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys

from . import processes, stand_ins
from .entry_points import install_fedjob, install_recipes
from .env_reads import record_env_reads
from .file_reads import record_file_reads
from .parsers import record_parsers
from .run import read_record, run_once
from .state import STATE

PARALLEL = max(1, min(4, os.cpu_count() or 1))


def main(argv: list[str]) -> int:
    """`--serve JOB` reads `{"runs": [{"out", "args", "env"}, ...]}` lines on stdin and answers `done` to each."""
    processes.install()
    job = os.path.abspath(argv[1])
    STATE.job = job
    sys.path.insert(0, os.path.dirname(job))
    stand_ins.install()
    record_parsers()
    record_env_reads()
    record_file_reads()
    install_fedjob()  # NVFLARE's entry points record instead: the FedJob API's, the deploying envs', the recipes'
    install_recipes()
    STATE.nvflare_install = _nvflare_install()
    for line in sys.stdin:
        _runs(json.loads(line)["runs"], job)
        sys.stdout.write("done\n")
        sys.stdout.flush()
    os._exit(0)  # nothing to clean up: the sandbox's init ends the rest, and interpreter teardown costs ~0.5 s


def _nvflare_install() -> list[str]:
    """`SIZE:MTIME_NS:PATH` of NVFLARE's package file and of its installed METADATA: what another install of
    NVFLARE changes (a kept record is served only while they hold)."""
    import importlib.metadata

    import nvflare

    paths = [nvflare.__file__]
    with contextlib.suppress(Exception):  # an install without metadata: its package file alone
        files = importlib.metadata.distribution("nvflare").files or []
        paths += [str(f.locate()) for f in files if f.name == "METADATA" and f.parent.name.endswith(".dist-info")]
    marks = []
    for path in paths:
        with contextlib.suppress(OSError):
            info = os.stat(path)
            marks.append(f"{info.st_size}:{info.st_mtime_ns}:{os.path.abspath(path)}")
    return marks


def _runs(requests: list[dict], job: str) -> None:
    """Run every request in its own child, at most PARALLEL at a time; then import here what they imported
    (NVFLARE's recipe modules, framework stand-ins), so later children start with it."""
    running: list[int] = []
    for request in requests:
        if len(running) >= PARALLEL:
            _wait(running.pop(0))
        running.append(_fork(request["out"], job, request["args"], request["env"]))
    for pid in running:
        _wait(pid)
    for name in [name for request in requests for name in read_record(request["out"]).get("imported") or []]:
        with contextlib.suppress(BaseException):  # a preload is only an optimization
            __import__(name)


def _fork(out: str, job: str, args: list[str], env: dict) -> int:
    """Start one run in a child forked from this process (NVFLARE already imported and patched); its pid. The run
    goes first in a grandchild with only the usual stand-ins; when it did not record a job and NVFLARE's own code
    asked for a module this interpreter lacks, the child runs it again with those stood in."""

    def run() -> None:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # job.py never reads the request pipe nor writes into the answers
            os.dup2(quiet, fd)
        before = set(sys.modules)
        os.waitpid(_child(lambda: run_once(out, job, args, before, env)), 0)
        if read_record(out).get("absent"):
            STATE.optional = True
            run_once(out, job, args, before, env)

    return _child(run)


def _child(run) -> int:
    """The pid of a child forked to call `run()` and end."""
    pid = os.fork()
    if pid == 0:
        try:
            run()
        finally:
            os._exit(0)
    return pid


def _wait(pid: int) -> None:
    """Wait for a run; end the boot (and with it the sandbox) as soon as the requests' pipe closes: the caller
    is gone (killed, interrupted) and nobody will read this run's record."""
    try:
        ended = [os.pidfd_open(pid)]  # readable when the run ends: no polling delay
    except (AttributeError, OSError):  # an older kernel or Python: look every 50 ms
        ended = []
    try:
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if sys.stdin in select.select([sys.stdin, *ended], [], [], None if ended else 0.05)[0]:
                os.killpg(0, signal.SIGKILL)  # at end of file: every run and the boot (the init ends the rest)
    finally:
        for fd in ended:
            os.close(fd)
