"""`runner_support.run_job_settled`: a job run bare (no runner) gets the runner's one retry after NVFLARE's own
stall, every process of a stalled run ends (also one in a session of its own), and anything else is the first
run's outcome."""

import os
import sys
import textwrap
import time

import pytest
from runner_support import run_job_settled

# A stand-in job: each run appends to runs.txt; the first `stalls` runs start a detached helper (a session of its
# own, as NVFLARE's simulator does), print the simulator's own stall line and wait forever.
JOB = textwrap.dedent(
    """
    import os, subprocess, sys, time
    runs = open("runs.txt", "a+")
    runs.write("run\\n")
    runs.close()
    count = len(open("runs.txt").read().split())
    if count <= int(sys.argv[1]):
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open(f"helper-{count}.pid", "w").write(str(helper.pid))
        print("2026-12-06 22:03:02,262 - ERROR - Communication error with client site-1: [Errno 104] "
              "Connection reset by peer", flush=True)
        time.sleep(600)
    print(f"run {count} done", flush=True)
    sys.exit(int(sys.argv[2]))
    """
)


def run(tmp_path, stalls: int, code: int = 0):
    (tmp_path / "job.py").write_text(JOB)
    return run_job_settled([sys.executable, "job.py", str(stalls), str(code)], tmp_path, dict(os.environ), timeout=60)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def test_a_stalled_bare_job_is_ended_and_run_once_more(tmp_path):
    started = time.monotonic()
    code, output = run(tmp_path, stalls=1)
    assert (code, output, (tmp_path / "runs.txt").read_text()) == (0, "run 2 done\n", "run\nrun\n")
    assert time.monotonic() - started < 30, "the stalled run was not ended as its stall line came"
    assert not alive(int((tmp_path / "helper-1.pid").read_text())), "a process of the stalled run outlived it"


def test_a_bare_job_that_stalls_twice_fails_with_its_output(tmp_path):
    with pytest.raises(AssertionError, match=r"stalled twice.*\n.*Communication error with client site-1"):
        run(tmp_path, stalls=2)
    assert (tmp_path / "runs.txt").read_text() == "run\nrun\n"
    assert not any(alive(int((tmp_path / f"helper-{n}.pid").read_text())) for n in (1, 2))


def test_a_bare_job_without_a_stall_runs_once_and_keeps_its_exit_code(tmp_path):
    assert run(tmp_path, stalls=0, code=3) == (3, "run 1 done\n")
    assert (tmp_path / "runs.txt").read_text() == "run\n"
