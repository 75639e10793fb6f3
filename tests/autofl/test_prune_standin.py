"""Pruning on the stand-in jobs (no NVFLARE): a trial stopped by its round judge, a pruned candidate of a
campaign (`initialize --prune`), a batch with one member pruned and one kept, and what status, report, plot and
instruction say."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from autofl_core.campaign import prune
from autofl_core.trial.execute import TrialSpec, run_trial
from autofl_core.trial.processes import find_token_processes
from runner_support import ledger_records, run_inproc, standin_workspace

STANDIN_JOB = Path(__file__).resolve().parent / "standin_job" / "job.py"
GROUPS = [["--name"], ["--n_clients"], ["--num_rounds", "-r"], ["--curve"], ["--round_seconds"]]
ROUNDS = 6
BEST = {0: 0.5, 1: 0.7, 2: 0.8, 3: 0.85, 4: 0.88, 5: 0.9}


def trial_spec(workspace: Path, temp_parent: Path, curve: str, judge) -> TrialSpec:
    return TrialSpec(
        python=sys.executable,
        job_path=workspace / "job.py",
        workspace=workspace,
        run_dir=workspace / "autofl_runs" / "cand",
        trial_name="cand",
        metric_order=["accuracy"],
        budget_args=["--num_rounds", str(ROUNDS), "--n_clients", "2"],
        run_args=["--curve", curve, "--round_seconds", "1.0"],
        flag_groups=GROUPS,
        name_flag="--name",
        num_rounds=ROUNDS,
        timeout=60.0,
        no_progress_timeout=30.0,
        parent_env={"PATH": os.environ["PATH"], "TMPDIR": str(temp_parent)},
        temp_parent=temp_parent,
        grace_seconds=2.0,
        round_judge=judge,
    )


@pytest.fixture
def job_ws(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "job.py").write_text(STANDIN_JOB.read_text())
    return workspace


class Judge:
    """The real rule against BEST, remembering every curve it was shown."""

    def __init__(self):
        self.seen: list[dict] = []

    def __call__(self, curve):
        self.seen.append(dict(curve))
        decision = prune.decide(curve, BEST, [], mode="max", band=None, total_rounds=ROUNDS)
        return decision.reason if decision.prune else None


def test_a_trial_whose_curve_trails_is_stopped_mid_run_as_pruned(job_ws, short_tmp):
    judge = Judge()
    result = run_trial(trial_spec(job_ws, short_tmp, "0.1,0.1,0.1,0.1,0.1,0.1", judge))
    assert result.outcome == "pruned", result.failure_reason
    assert result.failure_reason.startswith("pruned at round "), result.failure_reason
    stopped_at = int(result.failure_reason.split()[3])
    reference = BEST[stopped_at - 1]
    assert (
        result.failure_reason
        == f"pruned at round {stopped_at} of 6: 0.1 vs best {reference:g}, margin {0.1 * reference:.4g}"
    )
    assert 3 <= stopped_at < ROUNDS  # never before half the budget, never at the last round
    assert result.score is None and result.watchdog == result.failure_reason
    run_log = (job_ws / "autofl_runs" / "cand" / "run.log").read_text()
    assert "Finished FedAvg." not in run_log  # the job was stopped before its last round
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", result.token)) == []  # the whole tree ended
    assert list(short_tmp.iterdir()) == []
    copied = job_ws / "autofl_runs" / "cand" / "simulation" / "server" / "simulate_job" / "metrics"
    assert len((copied / "round_metrics.jsonl").read_text().splitlines()) in (stopped_at, stopped_at + 1)  # partial
    assert judge.seen[-1] == {index: 0.1 for index in range(stopped_at)}


def test_a_trial_whose_curve_keeps_up_runs_to_the_end(job_ws, short_tmp):
    judge = Judge()
    result = run_trial(trial_spec(job_ws, short_tmp, "0.45,0.68,0.79,0.86,0.9,0.92", judge))
    assert result.outcome == "success", result.failure_reason
    assert judge.seen and judge.seen[-1]  # it was asked, with the rounds read so far


# --- a campaign on the stand-in recipe job ------------------------------------------------------------------


def slow_standin(tmp_path: Path, name: str = "ws") -> Path:
    """The campaign stand-in with a 6-round budget and 1 s rounds (a trial that can be stopped mid-run)."""
    workspace = standin_workspace(tmp_path, name)
    job = workspace / "job.py"
    job.write_text(
        job.read_text().replace(
            '"--num_rounds", "-r", type=int, default=3', '"--num_rounds", "-r", type=int, default=6'
        )
    )
    client = workspace / "client.py"
    client.write_text(client.read_text().replace("BONUS = 0.0\n", "BONUS = 0.0\nROUND_SECONDS = 1.0\n"))
    return workspace


def prepare(workspace: Path, name: str, run_args: str) -> None:
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"h {name}", "--run-args", run_args)
    assert done.code == 0, done.stderr


@pytest.mark.slow
def test_a_hopeless_candidate_is_pruned_and_recorded_as_a_discard(tmp_path):
    workspace = slow_standin(tmp_path)
    done = run_inproc(workspace, "initialize", "--prune", "--max-candidates", "4")
    assert done.code == 0, done.stderr
    baseline = ledger_records(workspace)[0]
    assert baseline.status == "baseline" and baseline.score is not None  # never pruned (nothing to compare)
    status = run_inproc(workspace, "status")
    assert status.envelope["pruning"]["enabled"] is True and status.envelope["pruning"]["k"] == 2

    prepare(workspace, "lr-far", "--lr 0.9")  # 0.15 against the baseline's 0.75 at every round
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0, done.stderr
    assert done.envelope["candidate_status"] == "discard"
    row = ledger_records(workspace)[-1]
    assert row.name == "lr-far" and row.status == "discard" and row.score is None
    assert prune.is_pruned(row), row
    assert " of 6: 0.1" in row.failure_reason and "vs best 0.7" in row.failure_reason
    assert row.runtime_seconds and row.runtime_seconds < baseline.runtime_seconds  # compute counted
    trial = json.loads((workspace / "autofl_runs" / "lr-far" / "trial.json").read_text())
    assert trial["outcome"] == "pruned"

    state = json.loads((workspace / ".nvflare" / "autofl" / "campaign_state.json").read_text())
    assert state["candidate_attempts"] == 1  # a pruned candidate counts toward the cap
    assert "was pruned" in state["agent_instruction"] and "move the next hypothesis away" in state["agent_instruction"]
    report = (workspace / "autofl_report.md").read_text()
    assert "pruned at round" in report and prune.NO_FINAL_MODEL in report

    prepare(workspace, "lr-near", "--lr 0.25")  # 0.8: better at every round, runs to the end and is kept
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep", done.stderr
    state = json.loads((workspace / ".nvflare" / "autofl" / "campaign_state.json").read_text())
    assert "was pruned" not in state["agent_instruction"]


@pytest.mark.slow
def test_without_prune_the_same_candidate_runs_its_full_budget(tmp_path):
    workspace = slow_standin(tmp_path)
    assert run_inproc(workspace, "initialize", "--max-candidates", "4").code == 0
    assert run_inproc(workspace, "status").envelope["pruning"]["enabled"] is False
    prepare(workspace, "lr-far", "--lr 0.9")
    done = run_inproc(workspace, "evaluate")
    assert done.envelope["candidate_status"] == "discard"
    row = ledger_records(workspace)[-1]
    assert row.score == pytest.approx(0.15) and not prune.is_pruned(row)


@pytest.mark.slow
def test_in_a_batch_each_member_is_pruned_on_its_own_and_frees_its_slot(tmp_path):
    workspace = slow_standin(tmp_path)
    assert run_inproc(workspace, "initialize", "--prune", "--max-candidates", "4").code == 0
    prepare(workspace, "far", "--lr 0.9")
    prepare(workspace, "near", "--lr 0.25")
    prepare(workspace, "after", "--lr 0.22")  # waits for a slot: it takes the pruned one's
    done = run_inproc(workspace, "evaluate", "--all-prepared", "--parallel", "2")
    assert done.code == 0, done.stderr
    rows = {row.name: row for row in ledger_records(workspace)}
    assert prune.is_pruned(rows["far"]) and rows["far"].status == "discard"
    assert rows["near"].status == "keep" and rows["near"].score == pytest.approx(0.8)
    assert not prune.is_pruned(rows["after"]) and rows["after"].score is not None
    assert rows["far"].runtime_seconds < rows["near"].runtime_seconds
    # the slot was freed at once: the third trial started when the pruned one ended, not after `near`
    started = {name: _started(workspace, name) for name in ("far", "near", "after")}
    assert started["after"] < started["near"] + rows["near"].runtime_seconds - 1.0


def _started(workspace: Path, name: str) -> float:
    """When the trial's run.log was created (its first line), from the file's birth or first write time."""
    log = workspace / "autofl_runs" / name / "run.log"
    return log.stat().st_mtime - json.loads((log.parent / "trial.json").read_text())["runtime_seconds"]


def test_the_judge_is_given_to_candidates_only(tmp_path):
    from autofl_core.runner import pruning
    from autofl_core.runner.open_campaign import Campaign

    workspace = standin_workspace(tmp_path)
    assert run_inproc(workspace, "initialize", "--prune").code == 0
    campaign = Campaign.open(str(workspace / "job.py"))
    assert callable(pruning.judge_for(campaign, "candidate"))
    for kind in ("baseline", "replicate", None):
        assert pruning.judge_for(campaign, kind) is None


def test_a_measured_noise_band_tightens_the_margin_of_the_judge(tmp_path):
    """Identical reruns measure a band of ~0: the margin falls from the conservative 10 % to the 2 % floor, and
    the replicate's curve joins the reference."""
    from autofl_core.runner import pruning
    from autofl_core.runner.open_campaign import Campaign

    workspace = standin_workspace(tmp_path)  # 3 rounds; the baseline's curve is 0.73, 0.74, 0.75
    assert run_inproc(workspace, "initialize", "--prune").code == 0
    trailing = {0: 0.70, 1: 0.70}  # 0.03-0.04 behind: inside 10 %, outside 2 %
    judge = pruning.judge_for(Campaign.open(str(workspace / "job.py")), "candidate")
    assert judge(trailing) is None
    done = run_inproc(workspace, "replicate", "--count", "1")
    assert done.code == 0, done.stderr
    judge = pruning.judge_for(Campaign.open(str(workspace / "job.py")), "candidate")
    assert judge(trailing) == "pruned at round 2 of 3: 0.7 vs best 0.74, margin 0.0148"
    assert judge({0: 0.73, 1: 0.74}) is None


@pytest.mark.slow
def test_with_a_frozen_evaluator_a_pruned_candidate_is_not_evaluated_and_the_report_says_why(tmp_path):
    workspace = slow_standin(tmp_path)
    evaluator = Path(__file__).resolve().parent / "standin_evaluator"
    for path in evaluator.glob("*.py"):
        (workspace / path.name).write_text(path.read_text())
    done = run_inproc(workspace, "initialize", "--prune", "--evaluator", "evaluate_model.py", "--max-candidates", "4")
    assert done.code == 0, done.stderr
    assert (workspace / "autofl_runs" / "baseline" / "evaluation.json").is_file()  # the baseline was measured
    prepare(workspace, "lr-far", "--lr 0.9")
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0, done.stderr
    not_measured = {"score": None, "model": None, "not_measured": prune.NO_FINAL_MODEL}
    assert done.envelope["evaluation"] == not_measured and done.envelope["reported_score"] is None
    row = ledger_records(workspace)[-1]
    assert prune.is_pruned(row) and row.status == "discard" and row.score is None
    run_dir = workspace / "autofl_runs" / "lr-far"
    assert not (run_dir / "evaluation.json").exists()  # stopped before its last round: no final model to measure
    trial = json.loads((run_dir / "trial.json").read_text())
    assert trial["outcome"] == "pruned" and trial["evaluation"] == not_measured
    manifest = json.loads((workspace / ".nvflare/autofl/candidates/lr-far/candidate_manifest.json").read_text())
    assert manifest["result"]["evaluation"] == not_measured
    report = (workspace / "autofl_report.md").read_text()
    assert prune.NO_FINAL_MODEL in report
