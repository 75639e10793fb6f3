"""Process supervision: bounded tail, whole-tree termination (incl. detached grandchildren), grace then SIGKILL."""

import json
import os
import subprocess
import sys
import threading
import time
import uuid

from autofl_core.trial import processes
from autofl_core.trial.processes import TAIL_BYTES, find_token_processes, run_process, terminate_tree


def env(token_value):
    return {"PATH": "/usr/bin:/bin", "AUTOFL_TRIAL_TOKEN": token_value}


def run(tmp_path, code, token_value, **kwargs):
    return run_process(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env(token_value),
        log_path=tmp_path / "run.log",
        token=("AUTOFL_TRIAL_TOKEN", token_value),
        **kwargs,
    )


def stop_after(seconds):
    started = time.monotonic()
    return lambda now: "stop" if now - started > seconds else None


def test_output_is_streamed_to_the_log_and_only_a_bounded_tail_is_kept(tmp_path):
    lines = []
    code = "import sys\nfor i in range(3 * 1024):\n    sys.stdout.write(('x' * 1023) + '\\n')\nprint('END', file=sys.stderr)"
    outcome = run(tmp_path, code, "tok-tail", on_line=lines.append)
    assert outcome.returncode == 0
    assert (tmp_path / "run.log").stat().st_size == 3 * 1024 * 1024 + 4
    assert len(outcome.tail) == TAIL_BYTES
    assert outcome.tail.endswith(b"END\n")
    assert len(lines) == 3 * 1024 + 1 and lines[-1] == "END"


def test_detached_grandchildren_are_killed_after_a_normal_exit(tmp_path):
    code = (
        "import os, subprocess, time\n"
        "subprocess.Popen(['setsid', 'sleep', '300'])\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)\n"
    )
    outcome = run(tmp_path, code, "tok-grandchild", grace_seconds=3.0)
    assert outcome.returncode == 0
    assert outcome.survivors == []
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", "tok-grandchild")) == []


def test_tick_stop_reason_kills_the_tree_quickly(tmp_path):
    code = "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\nprint('Round 0 started.', flush=True)\ntime.sleep(300)"
    outcome = run(tmp_path, code, "tok-tick", tick=stop_after(1.0), tick_interval=0.2)
    assert outcome.stop_reason == "stop"
    assert outcome.ended_at - outcome.stop_triggered_at < 10.0
    assert outcome.returncode == -15
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", "tok-tick")) == []


def test_sigterm_ignoring_process_is_sigkilled_after_the_grace_period(tmp_path):
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(300)\n"
    )
    outcome = run(tmp_path, code, "tok-ignore", tick=stop_after(1.0), tick_interval=0.2, grace_seconds=1.0)
    assert outcome.returncode == -9
    assert outcome.survivors == []
    assert outcome.ended_at - outcome.stop_triggered_at < 10.0


def test_a_failing_line_callback_never_breaks_capture(tmp_path):
    def explode(line):
        raise RuntimeError("display bug")

    outcome = run(tmp_path, "print('a'); print('b')", "tok-callback", on_line=explode)
    assert outcome.returncode == 0
    assert (tmp_path / "run.log").read_text() == "a\nb\n"


def test_on_start_receives_the_child_pid(tmp_path):
    seen = []
    outcome = run(tmp_path, "pass", "tok-start", on_start=seen.append)
    assert seen == [outcome.pid]


def test_orphan_recovery_by_token_only(tmp_path):
    token_value = f"tok-orphan-{uuid.uuid4().hex}"  # unique: another test run on this machine may hold its own
    orphan = subprocess.Popen(["sleep", "300"], env=env(token_value), start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        # until the child has exec'd, /proc shows the forking parent's environment (no token): wait for it, bounded
        deadline = time.monotonic() + 60
        while find_token_processes(("AUTOFL_TRIAL_TOKEN", token_value)) != [orphan.pid]:
            assert time.monotonic() < deadline, "the orphan never showed its token"
            time.sleep(0.05)
        assert terminate_tree(None, ("AUTOFL_TRIAL_TOKEN", token_value), grace_seconds=2.0) == []
        assert orphan.wait(timeout=5) == -15
    finally:
        orphan.kill()
        orphan.wait()


def test_child_runs_in_its_own_session_with_argv_passed_literally(tmp_path):
    hostile = ["$(touch pwned)", "; touch pwned2", "a b", "'\"*"]
    code = "import os, sys, json; print(json.dumps([os.getsid(0), os.getpgid(0), sys.argv[1:]]))"
    outcome = run_process(
        [sys.executable, "-c", code, *hostile],
        cwd=tmp_path,
        env=env("tok-session"),
        log_path=tmp_path / "run.log",
        token=("AUTOFL_TRIAL_TOKEN", "tok-session"),
    )
    assert outcome.returncode == 0
    sid, pgid, args = json.loads((tmp_path / "run.log").read_text())
    assert sid == pgid == outcome.pid and sid != os.getsid(0)
    assert args == hostile
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.log"]  # no shell ever ran the strings


# --- cheap supervision (P2): nothing polls, /proc is read sparingly -------------------------------------------


def test_the_pump_blocks_on_the_pipe_instead_of_waking_every_second(tmp_path, monkeypatch):
    calls = []
    real_select = processes.select.select

    def counting_select(readers, writers, errors, *timeout):
        calls.append((list(readers), timeout[0] if timeout else None))
        return real_select(readers, writers, errors, *timeout)

    monkeypatch.setattr(processes.select, "select", counting_select)
    code = "import time\nprint('a', flush=True)\ntime.sleep(2.5)\nprint('b', flush=True)"
    outcome = run(tmp_path, code, "tok-block")
    assert outcome.returncode == 0 and (tmp_path / "run.log").read_text() == "a\nb\n"
    waits_for_output = [timeout for readers, timeout in calls if len(readers) == 2]
    settles = [timeout for readers, timeout in calls if len(readers) == 1]
    assert waits_for_output and all(timeout is None for timeout in waits_for_output)  # never wakes on its own
    assert all(timeout == processes.SETTLE_SECONDS for timeout in settles) and len(settles) <= 2  # after a, b


def test_a_burst_of_lines_is_read_in_few_wake_ups_and_a_flood_without_waiting(tmp_path):
    class Counting(processes.OutputPump):
        def _keep(self, chunk):
            self.chunks = getattr(self, "chunks", 0) + 1
            super()._keep(chunk)

    read_fd, write_fd = os.pipe()
    lines = []
    pump = Counting(read_fd, tmp_path / "run.log", lines.append)
    pump.start()
    for index in range(50):  # 50 separate writes within about 50 ms: one log record each
        os.write(write_fd, f"line {index}\n".encode())
        time.sleep(0.001)
    started = time.monotonic()
    for _ in range(64):  # then 4 MiB in full 64 KiB writes: drained without a settle per read
        os.write(write_fd, b"y" * 65535 + b"\n")
    flood_seconds = time.monotonic() - started
    os.close(write_fd)
    pump.join(timeout=30.0)
    pump.release()
    assert lines[:50] == [f"line {index}" for index in range(50)] and len(lines) == 114
    assert pump.chunks < 50 + 64  # lines of the burst shared reads (one read per line without settling)
    assert flood_seconds < 64 * processes.SETTLE_SECONDS / 2  # settling after each flood read would take 12.8 s


def test_a_stopped_pump_ends_although_a_stray_holder_keeps_the_pipe_open(tmp_path):
    read_fd, write_fd = os.pipe()
    pump = processes.OutputPump(read_fd, tmp_path / "run.log", None)
    pump.start()
    try:
        os.write(write_fd, b"kept\n")
        time.sleep(0.2)
        pump.stop()
        pump.join(timeout=5.0)
        assert not pump.is_alive()
        pump.release()
        assert (tmp_path / "run.log").read_bytes() == b"kept\n" and pump.tail() == b"kept\n"
    finally:
        os.close(write_fd)


def test_wake_runs_the_tick_at_once_instead_of_at_the_next_interval(tmp_path):
    wake = threading.Event()
    seen = []

    def on_line(line):
        if "STALL" in line:
            seen.append(time.monotonic())
            wake.set()

    def tick(now):
        return "stall seen" if seen else None

    code = "import time\nprint('STALL', flush=True)\ntime.sleep(300)"
    outcome = run(tmp_path, code, "tok-wake", on_line=on_line, tick=tick, tick_interval=60.0, wake=wake)
    assert outcome.stop_reason == "stall seen"
    assert outcome.stop_triggered_at - seen[0] < 5.0  # the 60 s tick interval was not waited for
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", "tok-wake")) == []


def _started_after(ticks: int, environ: dict, seconds: float = 60.0) -> subprocess.Popen:
    """A `sleep` process whose start time (clock ticks since boot) is later than `ticks`: one started within the
    same tick is replaced, until the clock moved on (generous bound: a loaded machine may take long to fork)."""
    deadline = time.monotonic() + seconds
    while True:
        proc = subprocess.Popen(["sleep", "300"], env=environ, start_new_session=True)
        if processes._stat(proc.pid).started > ticks or time.monotonic() > deadline:
            return proc
        proc.kill()
        proc.wait()
        time.sleep(0.01)


def _wait_until_exec(needle: bytes, *pids: int, seconds: float = 60.0) -> None:
    """Until a child has exec'd, /proc shows the forking parent's environment (no token): wait for each, bounded."""
    deadline = time.monotonic() + seconds
    while not all(processes._carries(pid, needle) for pid in pids):
        assert time.monotonic() < deadline, "a child never showed its token"
        time.sleep(0.01)


def test_processes_older_than_the_trial_are_not_read_for_the_token(tmp_path):
    token_value = f"tok-old-{uuid.uuid4().hex}"
    old = subprocess.Popen(["sleep", "300"], env=env(token_value), start_new_session=True)
    try:
        born = processes._stat(old.pid).started
        younger = _started_after(born, env(token_value))  # start times count clock ticks: wait for a later one
        try:
            later = processes._stat(younger.pid).started
            assert later > born
            needle = f"\0AUTOFL_TRIAL_TOKEN={token_value}\0".encode()
            _wait_until_exec(needle, old.pid, younger.pid)
            assert processes._tree_members(None, needle, later) == [younger.pid]
            assert processes._tree_members(None, needle, born) == sorted([old.pid, younger.pid])
            assert processes._tree_members(None, needle, None) == sorted([old.pid, younger.pid])
        finally:
            younger.kill()
            younger.wait()
    finally:
        old.kill()
        old.wait()
