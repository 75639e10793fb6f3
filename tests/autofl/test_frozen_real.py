"""The frozen evaluator on real NVFLARE 2.9 (hello-numpy, NumpyFedAvgRecipe): the runner finds the model the
server persisted (`server/simulate_job/models/server.npy`), runs `examples/hello-numpy/evaluate.py` on it per
site, sealed, and scores the trial with the n-weighted mean; a candidate that inflates its reported accuracy is
measured like any other and not kept."""

import json
import shutil

import pytest
from runner_support import REPO, ledger_rows, manifest, run_cli, source_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_hello_numpy_scored_by_its_frozen_evaluator_and_an_inflating_candidate_is_not_kept(tmp_path):
    workspace = tmp_path / "hello-numpy"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    done = run_cli(workspace, "initialize", "--evaluator", "evaluate.py", "--max-candidates", "2", timeout=600)
    assert done.code == 0, done.stderr
    assert done.envelope["score_provenance"] == "measured: frozen evaluator on the final global model"
    evaluation = json.loads((workspace / "autofl_runs/baseline/evaluation.json").read_text())
    assert evaluation["model"].endswith("autofl_runs/baseline/simulation/server/simulate_job/models/server.npy")
    assert evaluation["model_format"] == "numpy" and evaluation["sandbox"]["sealed"] is True
    assert [site["site"] for site in evaluation["sites"]] == ["site-1", "site-2"]
    assert all(site["n"] == 400 for site in evaluation["sites"])
    measured = sum(site["value"] for site in evaluation["sites"]) / 2  # equal n: the plain mean
    baseline = ledger_rows(workspace)[0]
    assert baseline["score"] == pytest.approx(measured, abs=1e-6)
    assert baseline["metric_source"] == "measured:frozen_evaluator"
    assert evaluation["reported_score"] == pytest.approx(0.7525, abs=1e-4)  # the clients' training-set accuracy

    done = run_cli(workspace, "prepare", "--name", "inflate", "--hypothesis", "report a better number")
    client = source_dir(workspace, "inflate") / "client.py"
    client.write_text(
        client.read_text().replace('metrics={"accuracy": acc}', 'metrics={"accuracy": min(1.0, acc + 0.2)}')
    )
    done = run_cli(workspace, "evaluate", timeout=600)
    assert done.code == 0, done.stderr
    assert done.envelope["candidate_status"] == "discard"  # the same model: the same measured score, a tie
    result = manifest(workspace, "inflate")["result"]
    assert result["score"] == pytest.approx(baseline["score"], abs=1e-6)
    assert result["reported_score"] > evaluation["reported_score"] + 0.15
    assert done.envelope["metric_divergence"]["reported"] == result["reported_score"]
    assert "metric_divergence: reported" in (workspace / "autofl_report.md").read_text()
    assert 'metrics={"accuracy": acc}' in (workspace / "client.py").read_text()  # the best source is back
