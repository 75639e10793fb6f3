"""The frozen evaluator on a PyTorch recipe job (NVFLARE 2.9 `FedAvgRecipe`, bench/fixtures/pt-fedavg).

The campaign test runs only where torch is importable by the interpreter running pytest (CI does not install
torch; the project does not depend on it): it is skipped with that reason otherwise, and `-ra` prints it. The
same proof with figures is bench/frozen_eval_torch.py. The bench's own skip path is tested without torch.
"""

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from module_loader import load_by_path
from runner_support import REPO, ledger_rows, manifest, run_cli, source_dir

FIXTURE = REPO / "bench" / "fixtures" / "pt-fedavg"
BENCH = REPO / "bench" / "frozen_eval_torch.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "torch is not installed in this interpreter (not a project dependency); see bench/frozen_eval_torch.py"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_pytorch_recipe_job_is_scored_from_its_persisted_model_and_an_inflating_candidate_is_not_kept(tmp_path):
    workspace = tmp_path / "pt-fedavg"
    shutil.copytree(FIXTURE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    done = run_cli(workspace, "initialize", "--evaluator", "evaluate.py", "--max-candidates", "1", timeout=900)
    assert done.code == 0, done.stderr
    assert done.envelope["score_provenance"] == "measured: frozen evaluator on the final global model"
    frozen = json.loads((workspace / "autofl_runs/baseline/evaluation.json").read_text())
    assert frozen["model"].endswith("autofl_runs/baseline/simulation/server/simulate_job/app_server/FL_global_model.pt")
    assert frozen["model_format"] == "pytorch" and frozen["sandbox"]["sealed"] is True
    assert [site["site"] for site in frozen["sites"]] == ["site-1", "site-2", "site-3"]
    assert all(site["n"] == 200 for site in frozen["sites"])
    measured = sum(site["value"] for site in frozen["sites"]) / 3  # equal n: the plain mean
    baseline = ledger_rows(workspace)[0]
    assert baseline["score"] == pytest.approx(measured, abs=1e-6)
    assert baseline["metric_source"] == "measured:frozen_evaluator"

    run_cli(workspace, "prepare", "--name", "inflate", "--hypothesis", "report a better number")
    client = source_dir(workspace, "inflate") / "client.py"
    honest = 'metrics={"accuracy": val_accuracy},'
    assert honest in client.read_text()
    client.write_text(client.read_text().replace(honest, 'metrics={"accuracy": accuracy(net, x_train, y_train)},'))
    done = run_cli(workspace, "evaluate", timeout=900)
    assert done.code == 0, done.stderr
    result = manifest(workspace, "inflate")["result"]
    assert result["score"] == pytest.approx(baseline["score"], abs=1e-6)  # the same model, measured the same
    assert result["reported_score"] > frozen["reported_score"] + 0.03  # the local model on its training data
    assert done.envelope["candidate_status"] == "discard"
    assert done.envelope["metric_divergence"]["reported"] == result["reported_score"]
    assert "metric_divergence: reported" in (workspace / "autofl_report.md").read_text()
    assert honest in (workspace / "client.py").read_text()  # the best source is back


def test_without_torch_the_bench_prints_skip_and_run_all_lists_it_as_skip(tmp_path):
    no_torch = tmp_path / "python-without-torch"
    no_torch.write_text("#!/bin/sh\nexit 1\n")  # `python -c "import torch"` fails, as without torch
    no_torch.chmod(0o755)
    done = subprocess.run([sys.executable, str(BENCH), "--python", str(no_torch)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.rstrip().endswith("SKIP (torch not installed)")

    run_all = load_by_path("bench_run_all", REPO / "bench" / "run_all.py")
    assert "frozen_eval_torch.py" in run_all.BENCHMARKS
    code, skipped = run_all.run_echoing([sys.executable, str(BENCH), "--python", str(no_torch)])
    assert (code, skipped) == (0, "SKIP (torch not installed)")
