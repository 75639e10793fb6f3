"""run_trial mechanics on the fast stand-in job (no NVFLARE): every outcome class and the isolation rules."""

import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from autofl_core.trial import processes, seal
from autofl_core.trial.argv import TrialError, injected_job_name
from autofl_core.trial.execute import TrialSpec, run_trial
from autofl_core.trial.processes import find_token_processes

STANDIN = Path(__file__).resolve().parent / "standin_job" / "job.py"
GROUPS = [["--name"], ["--n_clients"], ["--num_rounds", "-r"], ["--lr"], ["--mode"], ["--dump"], ["--round_seconds"]]


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    job = ws / "job.py"
    job.write_text(STANDIN.read_text())
    return ws


def spec(workspace, temp_parent, *, mode="ok", name="cand-1", extra=(), **overrides):
    values = {
        "python": sys.executable,
        "job_path": workspace / "job.py",
        "workspace": workspace,
        "run_dir": workspace / "autofl_runs" / name,
        "trial_name": name,
        "metric_order": ["accuracy"],
        "budget_args": ["--num_rounds", "3", "--n_clients", "2"],
        "run_args": ["--mode", mode, *extra],
        "flag_groups": GROUPS,
        "name_flag": "--name",
        "num_rounds": 3,
        "timeout": 60.0,
        "no_progress_timeout": 30.0,
        "parent_env": {"PATH": os.environ["PATH"], "TMPDIR": str(temp_parent)},
        "temp_parent": temp_parent,
        "grace_seconds": 2.0,
    }
    values.update(overrides)
    return TrialSpec(**values)


def no_leftovers(result, temp_parent):
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", result.token)) == []
    assert list(temp_parent.iterdir()) == []  # simulator root and private TMPDIR removed


def test_success_with_structured_evidence_and_relative_artifacts(workspace, short_tmp):
    stream = io.StringIO()
    result = run_trial(spec(workspace, short_tmp, extra=["--lr", "0.05"], progress_stream=stream))
    assert result.outcome == "success", result.failure_reason
    assert result.score == pytest.approx(0.9)
    assert (result.metric_name, result.metric_source) == ("accuracy", "structured:metrics_summary.json")
    assert result.metric_artifact == "autofl_runs/cand-1/simulation/server/simulate_job/metrics/metrics_summary.json"
    assert result.artifacts == {
        "run_log": "autofl_runs/cand-1/run.log",
        "simulation": "autofl_runs/cand-1/simulation",
        "simulator_result_name": injected_job_name(workspace, "cand-1"),
    }
    assert (workspace / result.metric_artifact).is_file()
    assert "Finished FedAvg." in (workspace / "autofl_runs/cand-1/run.log").read_text()
    assert result.exit_code == 0 and result.failure_reason == "" and result.runtime_seconds > 0
    assert result.run_command.startswith(f"{sys.executable} {workspace / 'job.py'} --num_rounds 3 --n_clients 2 --name")
    assert "finished 3/3 rounds" in stream.getvalue()
    no_leftovers(result, short_tmp)


def test_progress_never_touches_stdout(workspace, capsys, short_tmp):
    run_trial(spec(workspace, short_tmp, progress_stream=sys.stderr))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "[autofl cand-1] finished 3/3 rounds" in captured.err


class TimedLines(io.StringIO):
    """A non-terminal stream that remembers when each progress line was written."""

    def __init__(self):
        super().__init__()
        self.times = []

    def write(self, text):
        self.times.append((time.monotonic(), text))
        return super().write(text)


def test_progress_lines_appear_while_the_trial_runs_not_only_at_its_end(workspace, short_tmp):
    stream = TimedLines()
    result = run_trial(spec(workspace, short_tmp, extra=["--round_seconds", "1.5"], progress_stream=stream))
    assert result.outcome == "success", result.failure_reason
    ended = time.monotonic()
    lines = [(at, text.strip()) for at, text in stream.times if text.strip()]
    assert lines[-1][1].startswith("[autofl cand-1] finished 3/3 rounds")
    early = [at for at, text in lines if re.search(r"\] round [12]/3", text)]
    assert early and ended - early[0] > 1.5  # shown while at least the last round (1.5 s) was still to come
    assert len(lines) <= 2 * result.runtime_seconds + 2  # about one line a second at most, not one per log line


def test_crash_reports_exit_code_and_last_error(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="crash"))
    assert result.outcome == "crash"
    assert result.failure_reason == "exit_code=3; RuntimeError: client training failed on purpose"
    assert result.score is None and result.exit_code == 3
    assert result.artifacts["simulation"] == "autofl_runs/cand-1/simulation"  # kept for diagnosis
    no_leftovers(result, short_tmp)


@pytest.mark.parametrize("mode", ["nometric", "nan"])
def test_missing_or_non_finite_metric_is_a_crash_with_the_not_found_reason(workspace, mode, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode=mode))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("matching metric not found; metrics=[accuracy]; searched=[")
    assert "simulation/server/simulate_job/metrics/metrics_summary.json" in result.failure_reason
    if mode == "nan":
        assert "rejected non-finite" in result.failure_reason


def test_no_progress_watchdog_kills_the_tree(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="hang_after_round", no_progress_timeout=2.0))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("no progress: no new progress marker for 2s")
    assert result.watchdog == result.failure_reason
    assert result.runtime_seconds < 15 and result.termination_seconds < 10
    no_leftovers(result, short_tmp)


def test_partial_aggregation_watchdog(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="partial", no_progress_timeout=2.0))
    assert result.outcome == "crash"
    assert "partial aggregation did not advance" in result.failure_reason
    no_leftovers(result, short_tmp)


def test_total_timeout(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="hang_silent", timeout=2.0))
    assert result.outcome == "crash"
    assert result.failure_reason == "timeout: trial exceeded the 2s total timeout"
    assert result.runtime_seconds < 12 and result.termination_seconds < 10
    no_leftovers(result, short_tmp)


def test_stall_watchdog(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="stall"))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("simulator stall: server log shows")
    assert result.runtime_seconds < 15 and result.termination_seconds < 10
    no_leftovers(result, short_tmp)


def test_detached_grandchild_is_gone_after_a_successful_trial(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="grandchild"))
    assert result.outcome == "success" and result.survivors == []
    no_leftovers(result, short_tmp)


def test_secrets_in_the_parent_environment_are_invisible_to_the_job(workspace, tmp_path, short_tmp):
    dump = tmp_path / "seen.json"
    parent = {"PATH": os.environ["PATH"], "AWS_SECRET_ACCESS_KEY": "s3cr3t", "MY_DATA": "/data", "HOME": "/h"}
    result = run_trial(
        spec(workspace, short_tmp, extra=["--dump", str(dump)], parent_env=parent, env_passthrough=["MY_DATA"])
    )
    assert result.outcome == "success"
    seen = json.loads(dump.read_text())
    assert "AWS_SECRET_ACCESS_KEY" not in seen and "s3cr3t" not in dump.read_text()
    assert seen["MY_DATA"] == "/data" and seen["HOME"] == "/h"
    assert seen["AUTOFL_TRIAL_TOKEN"] == result.token
    root = Path(seen["NVFLARE_SIMULATOR_WORKSPACE_ROOT"])
    assert root.name == "sim" and root.parent.name == "out" and root.parent.parent.parent == short_tmp
    assert seen["TMPDIR"] == seen["TMP"] == seen["TEMP"] == str(root.parent / "tmp")


def test_sandbox_socket_denial_is_an_infrastructure_retry(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="sandbox"))
    assert result.outcome == "infrastructure_retry"
    assert "socket permission failure" in result.failure_reason


def test_a_hang_after_a_sandbox_socket_denial_is_an_infrastructure_retry_too(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="sandbox_hang", no_progress_timeout=2.0))
    assert result.outcome == "infrastructure_retry"
    assert result.watchdog.startswith("no progress:")  # the watchdog stopped it; the cause is the sandbox
    assert "socket permission failure" in result.failure_reason
    no_leftovers(result, short_tmp)


def test_printed_path_outside_the_root_is_ignored(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="print_outside"))
    assert result.outcome == "success"
    assert result.artifacts["simulator_result_name"] == injected_job_name(workspace, "cand-1")


def test_without_name_flag_the_printed_path_or_single_changed_child_is_used(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="two_results", name_flag=None))
    assert result.artifacts["simulator_result_name"] == "standin"  # printed direct child disambiguates
    result = run_trial(spec(workspace, short_tmp, mode="print_outside", name_flag=None, extra=["--name", "x"]))
    assert result.outcome == "success"
    assert result.artifacts["simulator_result_name"] == "x"  # the single changed child


def test_without_name_flag_an_ambiguous_root_fails_closed(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="ambiguous", name_flag=None))
    assert result.outcome == "crash"
    assert "ambiguous simulator result directories ['standin', 'standin-other']" in result.failure_reason
    assert "simulation" not in result.artifacts
    result = run_trial(spec(workspace, short_tmp, mode="ambiguous", name_flag=None, expected_result_names=["standin"]))
    assert result.artifacts["simulator_result_name"] == "standin"  # the expected root breaks the tie


def test_no_result_dir_is_an_actionable_crash(workspace, short_tmp):
    result = run_trial(spec(workspace, short_tmp, mode="no_result", uses_simenv=False))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("no simulator result directory")
    assert "NVFLARE_SIMULATOR_WORKSPACE_ROOT" in result.failure_reason


def test_old_nvflare_that_ignores_the_override_gets_the_upgrade_hint(workspace, tmp_path, short_tmp):
    fake = tmp_path / "python-old-nvflare"
    # the version probe is an isolated helper (`python -I -c ...`); everything else runs the real interpreter
    fake.write_text(f'#!/bin/sh\nif [ "$1 $2" = "-I -c" ]; then echo 2.8.1; exit 0; fi\nexec {sys.executable} "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    result = run_trial(spec(workspace, short_tmp, mode="no_result", python=str(fake)))
    assert result.outcome == "crash"
    assert "nvflare 2.8.1 predates 2.9.0" in result.failure_reason
    assert "upgrade to nvflare>=2.9.0" in result.failure_reason


def test_conflicting_budget_is_rejected_before_anything_runs_or_is_written(workspace, short_tmp):
    with pytest.raises(TrialError) as info:
        run_trial(spec(workspace, short_tmp, base_args=["-r", "5"]))
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"
    assert not (workspace / "autofl_runs").exists()
    assert list(short_tmp.iterdir()) == []


def test_unusable_run_dir_is_rejected_before_anything_runs(workspace, short_tmp):
    with pytest.raises(TrialError) as info:
        run_trial(spec(workspace, short_tmp, run_dir=workspace / "job.py" / "runs"))
    assert info.value.code == "AUTOFL_INVALID_TRIAL_REQUEST"
    assert "output folder" in str(info.value)
    assert list(short_tmp.iterdir()) == []


def test_unstartable_interpreter_is_a_crash_not_a_traceback(workspace, tmp_path, short_tmp):
    result = run_trial(spec(workspace, short_tmp, python=str(tmp_path / "no-such-python")))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("could not start the trial:")


@pytest.mark.slow
def test_a_child_printing_50_mb_keeps_the_runner_memory_bounded(workspace, short_tmp):
    tracemalloc.start()
    try:
        result = run_trial(spec(workspace, short_tmp, mode="flood"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (workspace / "autofl_runs/cand-1/run.log").stat().st_size > 50_000_000  # every byte streamed
    assert result.outcome == "success", result.failure_reason
    assert (result.score, result.metric_source[:18]) == (0.5, "text:run.log:line=")  # scanned the whole log
    assert result.artifacts["simulator_result_name"] == injected_job_name(workspace, "cand-1")
    assert peak < 8 * 1024 * 1024, f"runner peak {peak / 2**20:.1f} MiB while the child printed 50 MB"
    no_leftovers(result, short_tmp)


@pytest.mark.slow
def test_processes_that_survive_termination_fail_the_trial_loudly(workspace, short_tmp, monkeypatch, capsys):
    # A host without PID namespaces (no sandbox launcher), where the runner alone ends the trial's processes.
    monkeypatch.setattr(seal, "launcher_argv", lambda _python, _plan, argv: argv)
    monkeypatch.setattr(processes, "_signal_all", lambda *args: None)  # every kill "fails"
    result = run_trial(spec(workspace, short_tmp, mode="grandchild", grace_seconds=0.5))
    monkeypatch.undo()
    try:
        assert result.outcome == "crash" and result.score is None
        assert len(result.survivors) >= 2  # the setsid sleep and the double-forked grandchild
        assert result.failure_reason == f"processes survived termination (pids {result.survivors}); kill them by hand"
        assert f"processes survived termination: {result.survivors}" in capsys.readouterr().err
    finally:
        assert processes.terminate_tree(None, ("AUTOFL_TRIAL_TOKEN", result.token), grace_seconds=2.0) == []
    no_leftovers(result, short_tmp)


ORPHANING_RUNNER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autofl_core.trial.execute import TrialSpec, run_trial
ws, marker, tmp = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
run_trial(TrialSpec(python=sys.executable, job_path=ws / "job.py", workspace=ws, run_dir=ws / "autofl_runs" / "c1",
                    trial_name="c1", metric_order=["accuracy"], run_args=["--mode", "hang_silent"],
                    token="persisted-token-c1", temp_parent=tmp,
                    on_start=lambda pid, token: marker.write_text(f"{pid} {token}")))
"""


def descends_from(pid: int, ancestor: int) -> bool:
    """`pid` is `ancestor` or one of its descendants (the job's own processes, which it may have started by now)."""
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


@pytest.mark.slow
def test_a_killed_runner_leaves_a_trial_that_its_persisted_token_finds_and_ends(workspace, tmp_path, short_tmp):
    scripts = Path(__file__).resolve().parents[2] / "skills" / "nvflare-autofl" / "scripts"
    marker = tmp_path / "started"
    args = [sys.executable, "-c", ORPHANING_RUNNER, str(scripts), str(workspace), str(marker), str(short_tmp)]
    runner = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token = ("AUTOFL_TRIAL_TOKEN", "persisted-token-c1")
    try:
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child_pid = int(marker.read_text().split()[0])
        runner.send_signal(signal.SIGKILL)  # the runner dies mid-trial, as in Do better 7
        runner.wait(timeout=10)
        found = find_token_processes(token)  # still running, found by the persisted token alone
        assert child_pid in found and all(descends_from(pid, child_pid) for pid in found), (child_pid, found)
    finally:
        survivors = processes.terminate_tree(None, token, grace_seconds=2.0)
        runner.kill()
        runner.wait()
    assert survivors == [] and find_token_processes(token) == []
