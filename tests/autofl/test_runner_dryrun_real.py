"""The runner imports by dry run: a real NVFLARE job whose budget only a run can read starts a campaign, and a
candidate that moves that budget (by a source edit or a run argument) is refused before its trial."""

import shutil

import pytest
from autofl_core.importer import dryrun
from runner_support import run_inproc, source_dir

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)"),
]


def test_a_job_only_a_dry_run_can_budget_starts_and_pins_what_moves_its_budget(computed_budget_campaign, tmp_path):
    import yaml

    workspace = tmp_path / "ws"
    shutil.copytree(computed_budget_campaign, workspace, symlinks=True)
    config = yaml.safe_load((workspace / "autofl.yaml").read_text())
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["fixed_budget"]["num_rounds"]["value"] == 4
    assert config["fixed_budget"]["num_rounds"]["depends_on"] == ["--epochs"]
    done = run_inproc(workspace, "prepare", "--name", "more-epochs", "--hypothesis", "h", "--run-args", "--epochs 5")
    assert done.code == 2 and "--epochs" in done.stderr


def test_a_candidate_edit_that_moves_the_computed_budget_is_refused_before_it_trains(
    computed_budget_campaign, tmp_path
):
    workspace = tmp_path / "ws"
    shutil.copytree(computed_budget_campaign, workspace, symlinks=True)
    assert run_inproc(workspace, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    job = source_dir(workspace, "draft") / "job.py"
    job.write_text(job.read_text().replace("args.epochs * 2", "args.epochs * 3"))
    done = run_inproc(workspace, "evaluate")
    assert done.code == 2
    assert "changes the fixed budget (num_rounds 4 -> 6)" in done.stderr
    assert not list((workspace / "autofl_runs").glob("*draft*"))


def _no_dry_run(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("a dry run was started for an argument-only candidate the import already settled")

    monkeypatch.setattr(dryrun.Session, "start", refuse)
    monkeypatch.setattr(dryrun.Session, "run_many", refuse)


def test_an_argument_only_candidate_the_perturbed_runs_cleared_needs_no_dry_run(
    computed_budget_campaign, tmp_path, monkeypatch
):
    import yaml

    workspace = tmp_path / "ws"
    shutil.copytree(computed_budget_campaign, workspace, symlinks=True)
    config = yaml.safe_load((workspace / "autofl.yaml").read_text())
    assert "--lr" in config["import"]["dry_run"]["tried_options"] and config["import"]["dry_run"]["folder_sha256"]
    assert (
        run_inproc(workspace, "prepare", "--name", "lower-lr", "--hypothesis", "h", "--run-args", "--lr 0.05").code == 0
    )
    _no_dry_run(monkeypatch)
    done = run_inproc(workspace, "evaluate")
    assert done.code in (0, 1), done.stderr
    log = next((workspace / ".nvflare" / "autofl" / "candidates").glob("*/import.log")).read_text()
    assert "fixed budget and objective unchanged (settled by the import's perturbed runs, no dry run)" in log
    assert list((workspace / "autofl_runs").glob("*lower-lr*")), "the candidate's trial ran"


def test_a_run_arg_known_to_move_the_budget_is_still_refused_before_its_trial(
    computed_budget_campaign, tmp_path, monkeypatch
):
    workspace = tmp_path / "ws"
    shutil.copytree(computed_budget_campaign, workspace, symlinks=True)
    assert (
        run_inproc(workspace, "prepare", "--name", "epochs", "--hypothesis", "h", "--run-args", "--lr 0.05").code == 0
    )
    _no_dry_run(monkeypatch)
    done = run_inproc(workspace, "evaluate", "--run-args", "--epochs 5")
    assert done.code == 2 and "--epochs" in done.stderr
    assert not list((workspace / "autofl_runs").glob("*epochs*"))
