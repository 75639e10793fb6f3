"""run_trial on real NVFLARE 2.9 simulations: success (max and min), client crash with a secret in the parent env,
a site hanging after the first round, a total timeout, and a job that reports no metric and leaves detached
grandchildren behind."""

import importlib.util
import io
import json
import os
import shutil
import time

import numpy as np
import pytest
from autofl_core.campaign import ledger
from autofl_core.trial.execute import TrialSpec
from autofl_core.trial.processes import find_token_processes
from runner_support import run_trial_settled

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GROUPS = [["--name"], ["--n_clients"], ["--num_rounds"], ["--lr"], ["--local_steps"], ["--workspace"]]
SUMMARY = "autofl_runs/{}/simulation/server/simulate_job/metrics/metrics_summary.json"


def copy_example(repo_root, tmp_path, example):
    workspace = tmp_path / example
    shutil.copytree(repo_root / "examples" / example, workspace)
    return workspace


def spec(python_exe, workspace, temp_parent, name, metric, **overrides):
    values = {
        "python": python_exe,
        "job_path": workspace / "job.py",
        "workspace": workspace,
        "run_dir": workspace / "autofl_runs" / name,
        "trial_name": name,
        "metric_order": [metric],
        "budget_args": ["--num_rounds", "3", "--n_clients", "2"],
        "flag_groups": GROUPS,
        "name_flag": "--name",
        "num_rounds": 3,
        "timeout": 240.0,
        "no_progress_timeout": 60.0,
        "temp_parent": temp_parent,
    }
    values.update(overrides)
    return TrialSpec(**values)


def final_aggregated(workspace, name, metric):
    summary = json.loads((workspace / SUMMARY.format(name)).read_text())
    return next(item["value"] for item in summary["final_aggregated_metrics"] if item["name"] == metric)


def processes_with(tag: str) -> list[int]:
    """Host PIDs whose command line holds `tag`."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                found += [int(entry)] if tag.encode() in handle.read() else []
        except OSError:
            continue
    return found


def assert_clean(result, temp_parent):
    assert result.survivors == []
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", result.token)) == []
    assert list(temp_parent.iterdir()) == []  # simulator root and private TMPDIR (NVFLARE's job export) removed


def test_hello_numpy_success_scores_from_metrics_summary(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    stream = io.StringIO()
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "baseline", "accuracy", progress_stream=stream))
    assert result.outcome == "success", result.failure_reason
    assert (result.metric_name, result.metric_source) == ("accuracy", "structured:metrics_summary.json")
    assert result.metric_artifact == SUMMARY.format("baseline")
    assert result.score == final_aggregated(workspace, "baseline", "accuracy")
    assert 0.5 < result.score <= 1.0
    row = ledger.format_row({"status": "baseline", "name": "baseline", "score": result.score})
    assert row.split("\t")[2] == f"{result.score:.6f}"  # a plain finite float the ledger accepts
    assert result.exit_code == 0 and result.runtime_seconds > 1
    assert "Finished FedAvg." in (workspace / "autofl_runs/baseline/run.log").read_text()
    assert "finished 3/3 rounds" in stream.getvalue() and "round 2/3" in stream.getvalue()
    assert_clean(result, short_tmp)
    # The example leaves room for tuning: a NumPy replay of its FedAvg reproduces the real score, and the
    # same replay shows a tuned --lr/--local_steps scoring clearly higher than the defaults.
    replay = accuracy_replay(workspace / "client.py")
    assert replay(0.05, 5) == pytest.approx(result.score, rel=1e-9)
    assert replay(1.0, 20) > result.score + 0.1


def test_numpy_loss_success_lower_is_better(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "numpy-loss")
    result = run_trial_settled(
        spec(python_exe, workspace, short_tmp, "baseline", "loss", mode="min", run_args=["--lr", "0.1"])
    )
    assert result.outcome == "success", result.failure_reason
    assert (result.metric_name, result.metric_source) == ("loss", "structured:metrics_summary.json")
    assert result.score == final_aggregated(workspace, "baseline", "loss")
    summary = json.loads((workspace / SUMMARY.format("baseline")).read_text())
    assert summary["key_metric"]["mode"] == "min"
    rounds = workspace / "autofl_runs/baseline/simulation/server/simulate_job/metrics/round_metrics.jsonl"
    losses = [json.loads(line)["aggregated_metrics"][0]["value"] for line in rounds.read_text().splitlines()]
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0]  # training lowers the loss
    assert_clean(result, short_tmp)
    # The example leaves room for tuning: a NumPy replay of its FedAvg reproduces the real score, and
    # the same replay shows the default --lr scoring far worse than the candidate's --lr 0.1.
    replay = fedavg_replay(workspace / "client.py")
    assert replay(0.1) == pytest.approx(result.score, rel=1e-9)
    assert replay(0.05) > 2 * replay(0.1)


def load_client(client_path):
    spec_ = importlib.util.spec_from_file_location(f"example_client_{client_path.parent.name}", client_path)
    client = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(client)
    return client


def accuracy_replay(client_path):
    """Final aggregated accuracy of hello-numpy (2 equal-weight sites, 3 rounds) recomputed without NVFLARE."""
    client = load_client(client_path)
    data = [client.site_data(site) for site in ("site-1", "site-2")]

    def final_accuracy(lr, steps):
        weights = np.zeros(client.NUM_FEATURES + 1)
        for _ in range(3):
            accuracies = [client.accuracy(weights, x, y) for x, y in data]
            weights = sum(client.train(weights, x, y, lr, steps) for x, y in data) / len(data)
        return sum(accuracies) / len(accuracies)

    return final_accuracy


def fedavg_replay(client_path):
    """Final aggregated loss of numpy-loss (2 equal-weight sites, 3 rounds, 5 steps) recomputed without NVFLARE."""
    client = load_client(client_path)
    data = [client.site_data(site) for site in ("site-1", "site-2")]

    def final_loss(lr):
        weights = [0.0] * (client.NUM_FEATURES + 1)
        for _ in range(3):
            losses = [client.mse(weights, x, y) for x, y in data]
            weights = sum(client.train(weights, x, y, lr, 5) for x, y in data) / len(data)
        return sum(losses) / len(losses)

    return final_loss


def test_client_crash_is_a_crash_and_secrets_never_reach_the_client(
    repo_root, python_exe, tmp_path, monkeypatch, short_tmp
):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    client = workspace / "client.py"
    seen = tmp_path / "seen"
    seen.mkdir()
    text = client.read_text()
    text = text.replace(
        "    flare.init()\n",
        "    import json, os\n"
        f"    with open(os.path.join({str(seen)!r}, str(os.getpid()) + '.json'), 'w') as handle:\n"
        "        json.dump(dict(os.environ), handle)\n"
        "    flare.init()\n",
    )
    text = text.replace(
        "        acc = accuracy(w, x, y)\n",
        "        acc = accuracy(w, x, y)\n"
        "        if model.current_round >= 1:\n"
        "            raise RuntimeError('injected client failure')\n",
    )
    client.write_text(text)
    monkeypatch.setenv("AUTOFL_TEST_SECRET_TOKEN", "do-not-leak-42")
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "broken", "accuracy"))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith(f"exit_code={result.exit_code}") and result.exit_code != 0
    assert result.score is None
    dumps = list(seen.iterdir())
    assert len(dumps) == 2  # both simulated clients started and recorded what they see
    for dump in dumps:
        environment = json.loads(dump.read_text())
        assert "AUTOFL_TEST_SECRET_TOKEN" not in environment
        assert "do-not-leak-42" not in dump.read_text()
        assert environment["AUTOFL_TRIAL_TOKEN"] == result.token
    assert "injected client failure" in (workspace / "autofl_runs/broken/run.log").read_text()
    assert_clean(result, short_tmp)


def test_site_hanging_after_first_round_trips_the_partial_aggregation_watchdog_and_kills_the_tree(
    repo_root, python_exe, tmp_path, short_tmp
):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    client = workspace / "client.py"
    client.write_text(
        client.read_text().replace(
            "        acc = accuracy(w, x, y)\n",
            "        acc = accuracy(w, x, y)\n"
            "        if model.current_round >= 1 and site == 'site-2':\n"
            "            import time\n"
            "            time.sleep(600)\n",
        )
    )
    # 30 s without progress: on a loaded machine site-1's own round may take longer than 8 s between markers
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "hang", "accuracy", no_progress_timeout=30.0))
    assert result.outcome == "crash"
    # site-1 finished round 1, so the server logged `Aggregated 1/2 results` and then nothing advanced; the
    # reason names the site the round waits for (NVFLARE's `Sampled clients` minus the `peer=` that arrived)
    assert result.failure_reason == (
        "no progress: partial aggregation did not advance for 30s, waiting for site-2's result "
        "(simulator no-progress timeout)"
    )
    assert "Aggregated 1/2 results" in (workspace / "autofl_runs/hang/run.log").read_text()
    assert result.watchdog == result.failure_reason
    assert result.termination_seconds is not None and result.termination_seconds < 10.0
    assert result.runtime_seconds < 150
    assert_clean(result, short_tmp)


def test_total_timeout_kills_a_running_simulation(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    # 200 rounds run for minutes, so the 20 s timeout strikes mid-run even when a loaded machine (a parallel
    # suite) takes 10 s or more to start the simulation (7 s with 3 rounds was too short there)
    rounds = {"budget_args": ["--num_rounds", "200", "--n_clients", "2"], "num_rounds": 200}
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "slow", "accuracy", timeout=20.0, **rounds))
    assert result.outcome == "crash" and result.score is None
    assert result.failure_reason == result.watchdog == "timeout: trial exceeded the 20s total timeout"
    assert result.termination_seconds is not None and result.termination_seconds < 10.0
    assert 20.0 <= result.runtime_seconds < 20.0 + 1.0 + 10.0  # one watchdog tick, then termination
    assert "Start FedAvg." in (workspace / "autofl_runs/slow/run.log").read_text()  # it was mid-run
    assert_clean(result, short_tmp)


def test_no_metric_is_a_crash_and_detached_grandchildren_are_gone(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    pids = tmp_path / "pids"
    pids.mkdir()
    tag = f"autofl-detached-{os.getpid()}-{time.time_ns()}"  # in the detached processes' command lines
    client = workspace / "client.py"
    text = client.read_text().replace("accuracy=", "quality=").replace('metrics={"accuracy"', 'metrics={"quality"')
    text = text.replace(
        "    x, y = site_data(site)\n",
        "    x, y = site_data(site)\n"
        "    import os, subprocess, sys\n"
        f"    TAG = {tag!r}\n"
        "    null = subprocess.DEVNULL\n"
        "    nap = [sys.executable, '-c', 'import time; time.sleep(300)', TAG]\n"
        "    sleeper = subprocess.Popen(['setsid', *nap], stdin=null, stdout=null, stderr=null)\n"
        f"    pids = {str(pids)!r}\n"
        "    open(os.path.join(pids, site + '-setsid'), 'w').write(str(sleeper.pid))\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            open(os.path.join(pids, site + '-forked'), 'w').write(str(os.getpid()))\n"
        "            os.execv(sys.executable, nap)\n"
        "        os._exit(0)\n",
    )
    assert "quality=" in text and "setsid" in text
    client.write_text(text)
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "nometric", "accuracy"))
    assert result.outcome == "crash" and result.exit_code == 0 and result.score is None
    assert result.failure_reason.startswith(
        "matching metric not found; metrics=[accuracy]; searched=[simulation/server/simulate_job/metrics/"
        "metrics_summary.json"
    )
    assert "run.log" in result.failure_reason
    assert "quality=" in (workspace / "autofl_runs/nometric/run.log").read_text()
    spawned = [int(path.read_text()) for path in sorted(pids.iterdir())]
    assert len(spawned) == 4  # two detached processes per site (PIDs of the trial's own PID namespace)
    assert processes_with(tag) == []  # looked up by their command line: host PIDs differ
    assert_clean(result, short_tmp)


SOCKET_DENIAL_SHIM = """
import errno, socket
_original = socket.socket.bind
def _refuse(self, *args):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    return _original(self, *args)
socket.socket.bind = _refuse
"""


def test_sandbox_socket_denial_of_a_real_simulation_is_an_infrastructure_retry(
    repo_root, python_exe, tmp_path, short_tmp
):
    """A sitecustomize shim denies TCP binds with EPERM, as a seccomp/seatbelt network sandbox does."""
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SOCKET_DENIAL_SHIM)
    parent = {"PATH": os.environ["PATH"], "PYTHONPATH": str(shim)}
    result = run_trial_settled(spec(python_exe, workspace, short_tmp, "sandboxed", "accuracy", parent_env=parent))
    assert result.outcome == "infrastructure_retry", result.failure_reason
    assert result.failure_reason.startswith("simulation denied by the host sandbox: socket permission failure")
    assert result.score is None and result.exit_code != 0
    log = (workspace / "autofl_runs/sandboxed/run.log").read_text()
    assert "s.bind(" in log and "PermissionError: [Errno 1] Operation not permitted" in log  # NVFLARE's own frame
    assert_clean(result, short_tmp)


def test_hello_numpy_under_limits_it_fits_in_scores_as_without_them(repo_root, python_exe, tmp_path, short_tmp):
    """Memory, disk and process limits a real simulation fits in change nothing of its result (R10)."""
    from autofl_core.common.trial_limits import GIB, TrialLimits

    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    capped = TrialLimits(memory=2 * GIB, disk=2 * GIB, processes=1024)
    result = run_trial_settled(
        spec(python_exe, workspace, short_tmp, "capped", "accuracy", limits=capped, stage_files={})
    )
    assert result.outcome == "success", result.failure_reason
    assert result.score == pytest.approx(accuracy_replay(workspace / "client.py")(0.05, 5), rel=1e-9)  # as uncapped
    held = result.sandbox["limits"]
    assert [held[kind]["value"] for kind in ("memory", "disk", "processes")] == [2 * GIB, 2 * GIB, 1024]
    assert result.sandbox["limits_unenforced"] == []
    assert_clean(result, short_tmp)


def test_hello_numpy_over_its_memory_limit_is_a_crash_naming_the_limit(repo_root, python_exe, tmp_path, short_tmp):
    from autofl_core.common.trial_limits import MIB, TrialLimits

    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    tight = TrialLimits(memory=64 * MIB)
    result = run_trial_settled(
        spec(python_exe, workspace, short_tmp, "tight", "accuracy", limits=tight, stage_files={})
    )
    assert result.outcome == "crash" and result.score is None
    assert result.failure_reason.startswith("memory limit 64 MiB exceeded by "), result.failure_reason
    assert_clean(result, short_tmp)
