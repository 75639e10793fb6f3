"""run_trial on real NVFLARE 2.9 simulations: success (max and min), client crash, hang after the first round."""

import io
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from autofl_core.processes import find_token_processes
from autofl_core.trial import TrialSpec, run_trial

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GROUPS = [["--name"], ["--n_clients"], ["--num_rounds"], ["--lr"], ["--local_steps"], ["--workspace"]]
SUMMARY = "autofl_runs/{}/simulation/server/simulate_job/metrics/metrics_summary.json"


def copy_example(repo_root, tmp_path, example):
    workspace = tmp_path / example
    shutil.copytree(repo_root / "examples" / example, workspace)
    return workspace


@pytest.fixture
def short_tmp():
    """A short temp parent (Unix socket paths under the private TMPDIR must stay short)."""
    folder = Path(tempfile.mkdtemp(prefix="a3-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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


def assert_clean(result, temp_parent):
    assert result.survivors == []
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", result.token)) == []
    assert list(temp_parent.iterdir()) == []  # simulator root and private TMPDIR (NVFLARE's job export) removed


def test_hello_numpy_success_scores_from_metrics_summary(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    stream = io.StringIO()
    result = run_trial(spec(python_exe, workspace, short_tmp, "baseline", "accuracy", progress_stream=stream))
    assert result.outcome == "success", result.failure_reason
    assert (result.metric_name, result.metric_source) == ("accuracy", "structured:metrics_summary.json")
    assert result.metric_artifact == SUMMARY.format("baseline")
    assert result.score == final_aggregated(workspace, "baseline", "accuracy")
    assert 0.5 < result.score <= 1.0
    assert result.exit_code == 0 and result.runtime_seconds > 1
    assert "Finished FedAvg." in (workspace / "autofl_runs/baseline/run.log").read_text()
    assert "finished 3/3 rounds" in stream.getvalue() and "round 2/3" in stream.getvalue()
    assert_clean(result, short_tmp)


def test_numpy_loss_success_lower_is_better(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "numpy-loss")
    result = run_trial(spec(python_exe, workspace, short_tmp, "baseline", "loss", mode="min", run_args=["--lr", "0.1"]))
    assert result.outcome == "success", result.failure_reason
    assert (result.metric_name, result.metric_source) == ("loss", "structured:metrics_summary.json")
    assert result.score == final_aggregated(workspace, "baseline", "loss")
    summary = json.loads((workspace / SUMMARY.format("baseline")).read_text())
    assert summary["key_metric"]["mode"] == "min"
    rounds = (workspace / "autofl_runs/baseline/simulation/server/simulate_job/metrics/round_metrics.jsonl")
    losses = [json.loads(line)["aggregated_metrics"][0]["value"] for line in rounds.read_text().splitlines()]
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0]  # training lowers the loss
    assert_clean(result, short_tmp)


def test_client_crash_is_a_crash_and_secrets_never_reach_the_client(repo_root, python_exe, tmp_path, monkeypatch, short_tmp):
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
    result = run_trial(spec(python_exe, workspace, short_tmp, "broken", "accuracy"))
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


def test_hang_after_first_round_trips_no_progress_watchdog_and_kills_the_tree(repo_root, python_exe, tmp_path, short_tmp):
    workspace = copy_example(repo_root, tmp_path, "hello-numpy")
    client = workspace / "client.py"
    client.write_text(
        client.read_text().replace(
            "        acc = accuracy(w, x, y)\n",
            "        acc = accuracy(w, x, y)\n"
            "        if model.current_round >= 1:\n"
            "            import time\n"
            "            time.sleep(600)\n",
        )
    )
    result = run_trial(spec(python_exe, workspace, short_tmp, "hang", "accuracy", no_progress_timeout=8.0))
    assert result.outcome == "crash"
    assert result.failure_reason.startswith("no progress:")
    assert result.watchdog == result.failure_reason
    assert result.termination_seconds is not None and result.termination_seconds < 10.0
    assert result.runtime_seconds < 90
    assert_clean(result, short_tmp)
