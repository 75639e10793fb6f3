"""The interface agents already know and the answers they need at each step (issue 22), on the stand-in job.

`prepare --run-args` records a candidate's arguments; evaluate/record/replicate envelopes say what happened; the
live progress line shows the value the ledger records; noise advice fires for gains that may be luck; the
report always has every section; SKILL.md's approval scope names every action that runs a simulation.
"""

from __future__ import annotations

import ast
import json
import re
import shutil

import pytest
from autofl_core.runner.report import markdown
from runner_support import (
    REPO,
    initialized_standin,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    set_bonus,
    source_dir,
    standin_workspace,
    tree_digest,
)

pytestmark = pytest.mark.slow
SKILL = REPO / "skills" / "nvflare-autofl"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One initialized stand-in campaign (baseline 0.75), copied for each test."""
    return initialized_standin(tmp_path_factory.mktemp("interface"), "--max-candidates", "5")


@pytest.fixture
def ws(base, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(base, workspace)
    return workspace


def _state(workspace) -> dict:
    return json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())


# --- 1. prepare --run-args ----------------------------------------------------------------------------


def test_prepare_run_args_are_recorded_and_evaluate_runs_them(ws):
    prepared = run_cli(ws, "prepare", "--name", "lr-up", "--hypothesis", "h", "--run-args", "--lr 0.15")
    assert prepared.code == 0, prepared.stderr
    assert prepared.envelope["next_action"] == "evaluate_candidate" == _state(ws)["next_action"]
    assert "run `evaluate`" in prepared.envelope["agent_instruction"]
    record = manifest(ws, "lr-up")
    assert (record["status"], record["run_args"], record["effective_run_args"]) == (
        "prepared",
        ["--lr", "0.15"],
        [
            "--lr",
            "0.15",
        ],
    )
    done = run_cli(ws, "evaluate")
    assert (done.code, done.envelope["candidate_status"]) == (0, "keep"), done.stderr
    row = ledger_rows(ws)[-1]
    assert (row["candidate_kind"], row["diff_summary"], row["score"]) == ("argument_only", "run args: --lr 0.15", 0.8)
    assert row["run_command"].endswith("--lr 0.15")
    assert json.loads((ws / ".nvflare/autofl/campaign.json").read_text())["best_run_args"] == ["--lr", "0.15"]


def test_prepare_validates_run_args_exactly_as_evaluate_does(ws):
    before = tree_digest(ws)
    refusals = {}
    for args in ("--num_rounds 5", "-r 5", "--lr=fast", "--name mine", "--nope 1", "--use_bonus=1"):
        at_prepare = run_inproc(ws, "prepare", "--name", "x", "--hypothesis", "h", "--run-args", args)
        assert at_prepare.code == 2 and at_prepare.envelope is None, args
        assert tree_digest(ws) == before, f"a refused prepare writes nothing ({args})"
        refusals[args] = at_prepare.stderr
    assert "fixed-budget option --num_rounds" in refusals["-r 5"]
    assert run_inproc(ws, "prepare", "--name", "y", "--hypothesis", "h").code == 0
    set_bonus(source_dir(ws, "y"), 0.01)
    for args, message in refusals.items():
        at_evaluate = run_inproc(ws, "evaluate", "--run-args", args)
        assert (at_evaluate.code, at_evaluate.stderr) == (2, message), args
    assert manifest(ws, "y")["status"] == "prepared"


def test_prepare_and_evaluate_run_args_that_differ_are_refused_naming_both(ws):
    assert run_cli(ws, "prepare", "--name", "c", "--hypothesis", "h", "--run-args", "--lr 0.15").code == 0
    lock = (".nvflare/autofl/campaign.lock",)  # names its last holder (a pid), not campaign state
    before = tree_digest(ws, skip=lock)
    refused = run_cli(ws, "evaluate", "--run-args", "--lr 0.3")
    assert refused.code == 2 and refused.envelope is None
    assert "'--lr 0.15'" in refused.stderr and "'--lr 0.3'" in refused.stderr and refused.stderr.count("\n") == 1
    assert tree_digest(ws, skip=lock) == before
    same = run_cli(ws, "evaluate", "--run-args", "--lr=0.15")  # the same values in another spelling
    assert (same.code, same.envelope["candidate_status"]) == (0, "keep"), same.stderr


def test_evaluate_run_args_keep_working_and_a_source_edit_still_comes_first(ws):
    assert run_inproc(ws, "prepare", "--name", "src", "--hypothesis", "h").code == 0
    assert _state(ws)["next_action"] == "edit_candidate", "nothing recorded: the agent edits the copy"
    set_bonus(source_dir(ws, "src"), 0.02)
    done = run_inproc(ws, "evaluate", "--run-args", "--local_steps 10")
    assert done.envelope["candidate_status"] == "keep"
    assert ledger_rows(ws)[-1]["candidate_kind"] == "source_edit"


# --- 3. the envelope says what happened ---------------------------------------------------------------


def test_evaluate_envelope_reports_score_best_and_delta_at_ledger_precision(ws):
    assert run_inproc(ws, "prepare", "--name", "tiny", "--hypothesis", "h").code == 0
    set_bonus(source_dir(ws, "tiny"), 0.003)  # 0.753 - 0.75 is 0.0030000000000000027 in floating point
    kept = run_inproc(ws, "evaluate").envelope
    assert {key: kept[key] for key in ("candidate_status", "score", "best_score", "best_candidate")} == {
        "candidate_status": "keep",
        "score": 0.753,
        "best_score": 0.753,
        "best_candidate": "tiny",
    }
    assert (kept["compared_with"], kept["compared_score"]) == ("baseline", 0.75)
    assert repr(kept["delta"]) == "0.003" and kept["noise_verdict"] == "unverified"
    assert run_inproc(ws, "prepare", "--name", "worse", "--hypothesis", "h", "--run-args", "--lr 0.05").code == 0
    worse = run_inproc(ws, "evaluate").envelope
    assert (worse["candidate_status"], worse["score"], worse["best_candidate"]) == ("discard", 0.703, "tiny")
    assert repr(worse["delta"]) == "-0.05" and worse["noise_verdict"] is None
    assert run_inproc(ws, "prepare", "--name", "broken", "--hypothesis", "h").code == 0
    (source_dir(ws, "broken") / "client.py").write_text("raise SystemExit(3)\n")
    crashed = run_inproc(ws, "evaluate")
    assert crashed.code == 1
    assert (crashed.envelope["candidate_status"], crashed.envelope["score"], crashed.envelope["delta"]) == (
        "crash",
        None,
        None,
    )
    assert crashed.envelope["best_score"] == 0.753


def test_record_envelope_reports_what_happened(tmp_path):
    workspace = standin_workspace(tmp_path)
    assert run_inproc(workspace, "initialize", "--env", "poc", "--max-candidates", "3").code == 0
    assert run_inproc(workspace, "record", "--baseline", "--score", "0.75").code == 0
    assert run_inproc(workspace, "prepare", "--name", "ext", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    assert run_inproc(workspace, "evaluate").envelope["candidate_status"] == "ready_for_external_execution"
    done = run_inproc(workspace, "record", "--score", "0.8123", "--job-id", "j-1").envelope
    assert (done["candidate_status"], done["score"], done["best_score"], done["best_candidate"]) == (
        "keep",
        0.8123,
        0.8123,
        "ext",
    )
    assert (done["compared_with"], repr(done["delta"]), done["noise_verdict"]) == ("baseline", "0.0623", None)


def test_replicate_envelope_reports_each_rerun_against_the_best(ws):
    done = run_inproc(ws, "replicate", "--count", "1")
    assert done.code == 0, done.stderr
    [rerun] = done.envelope["replicates"]
    assert (rerun["score"], rerun["delta"], rerun["seed"]) == (0.75, 0.0, None)
    assert (done.envelope["best_candidate"], done.envelope["best_score"]) == ("baseline", 0.75)
    assert done.envelope["noise_verdict"] is None, "the best is the baseline: it has no gain to judge"
    assert done.envelope["seed_option"] is None
    assert (
        "identical reruns" in done.envelope["replicate_note"] and "not that the gain" in done.envelope["replicate_note"]
    )


# --- 4. live progress shows the value the ledger records ----------------------------------------------


def test_progress_lines_show_the_recorded_value_and_label_site_values(tmp_path):
    workspace = standin_workspace(tmp_path)
    done = run_cli(workspace, "initialize", "--max-candidates", "2")
    assert done.code == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("[autofl baseline]")]
    assert lines[-1].endswith("server aggregated accuracy=0.75 (round 3, the value the ledger records)"), lines
    assert ledger_rows(workspace)[0]["score"] == 0.75
    for line in lines:
        for label in re.findall(r"\| ([^|]*?)accuracy=", line):
            assert label in ("server aggregated ", "site-1 ", "site-2 ", "server best "), line


# --- 6. noise advice that fires -----------------------------------------------------------------------


def test_a_small_unmeasured_gain_asks_for_one_replicate_and_the_report_marks_it(ws):
    assert run_inproc(ws, "prepare", "--name", "tiny", "--hypothesis", "h").code == 0
    set_bonus(source_dir(ws, "tiny"), 0.004)
    done = run_inproc(ws, "evaluate").envelope
    instruction = done["agent_instruction"]
    assert "run `replicate --count 1` before more candidates build on it" in instruction
    assert "smaller than the run-to-run spread typical for accuracy" in instruction
    assert "replicates are identical reruns" in instruction and "not that the gain would survive" in instruction
    context = _state(ws)["noise_context"]
    assert (context["best_gain"], context["best_gain_over"], context["best_gain_verdict"]) == (
        0.004,
        "baseline",
        "unverified",
    )
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["selected"]["noise"] == "unverified" and report["what_helped"]["improvements"][0]["noise"] == (
        "unverified"
    )
    assert "(+0.004000 over `baseline`, unverified)" in (ws / "autofl_report.md").read_text()
    replicated = run_inproc(ws, "replicate", "--count", "1").envelope
    assert replicated["noise_verdict"] == "beyond noise", "an identical rerun measured a spread of 0"
    assert "replicate --count 1" not in replicated["agent_instruction"]


def test_a_large_gain_needs_no_replicate_advice(ws):
    assert run_inproc(ws, "prepare", "--name", "big", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_inproc(ws, "evaluate").envelope
    assert done["noise_verdict"] is None and "replicate" not in done["agent_instruction"]


def test_a_gain_below_one_evaluation_sample_is_unverified(tmp_path):
    workspace = standin_workspace(tmp_path)
    client = workspace / "client.py"
    client.write_text(client.read_text().replace("BONUS = 0.0\n", "BONUS = 0.0\nEVAL_SIZE = 40\n"))
    assert run_inproc(workspace, "initialize", "--max-candidates", "3").code == 0
    context = _state(workspace)["noise_context"]
    assert context["metric_resolution"] == 0.025
    assert "an evaluation set of 40 samples" in context["resolution_source"]
    assert run_inproc(workspace, "prepare", "--name", "sub", "--hypothesis", "h").code == 0
    set_bonus(source_dir(workspace, "sub"), 0.015)  # above the typical spread (0.01), below one sample (0.025)
    done = run_inproc(workspace, "evaluate").envelope
    assert done["noise_verdict"] == "unverified"
    assert "smaller than one evaluation sample (resolution 0.025000)" in done["agent_instruction"]
    assert "Metric resolution: 0.025000" in (workspace / "autofl_report.md").read_text()


# --- 11. the report has every section -----------------------------------------------------------------


def test_the_report_has_every_section_even_when_empty(ws):
    text = (ws / "autofl_report.md").read_text()
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == list(markdown.SECTIONS)
    for empty in ("Literature: none recorded.", "Families: none recorded", "Nothing beat the baseline."):
        assert empty in text
    assert run_inproc(ws, "prepare", "--name", "lr", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    assert run_inproc(ws, "evaluate").code == 0
    run_inproc(ws, "record", "--literature", "--hypothesis", "FedProx [src: Li 2020]", "--family", "fedprox")
    fuller = (ws / "autofl_report.md").read_text()
    assert [line[3:] for line in fuller.splitlines() if line.startswith("## ")] == list(markdown.SECTIONS)
    assert "Literature: none recorded." not in fuller


# --- 5 and 8. what SKILL.md tells the agent -------------------------------------------------------------


def test_skill_md_approval_scope_names_every_action_that_runs_a_simulation():
    actions = SKILL / "scripts" / "autofl_core" / "runner" / "actions"
    running = set()
    for path in actions.glob("*.py"):
        tree = ast.parse(path.read_text())
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
        trial_runners = {("campaign_trial", "run"), ("batch_trials", "run_all"), ("batch_trials", "run_in_turn")}
        if any((getattr(c.func.value, "id", ""), c.func.attr) in trial_runners for c in calls):
            running.add(path.stem)
    assert running == {"initialize", "evaluate", "replicate"}
    section = (SKILL / "SKILL.md").read_text().split("## 1. Permissions")[1].split("## 2.")[0]
    for action in running:
        assert f"`{action}`" in section


def test_skill_md_lists_the_conventional_families_and_any_slug_is_accepted(ws):
    from autofl_core.runner.actions import suggest

    text = (SKILL / "SKILL.md").read_text()
    listed = re.search(r"`--family` names the kind of idea: (.*?) \(any other", text, re.DOTALL).group(1)
    assert re.findall(r"`([a-z-]+)`", listed) == list(suggest.FAMILIES)
    done = run_inproc(ws, "prepare", "--name", "own", "--hypothesis", "h", "--family", "my-own-family")
    assert done.code == 0 and manifest(ws, "own")["algorithm_family"] == "my-own-family"


def test_evaluate_candidate_never_hides_a_sandbox_denial_or_a_missing_baseline():
    from autofl_core.campaign.ledger import LedgerRow
    from autofl_core.runner import state as state_mod

    pending = {"reason": "pending_candidates", "next_action": "edit_candidate", "baseline_status": "complete"}
    scored = [LedgerRow(status="baseline", score=0.75)]
    assert state_mod.lifecycle_override(pending, scored, "sim", argument_only_pending=True) == "evaluate_candidate"
    assert state_mod.lifecycle_override(pending, scored, "sim", argument_only_pending=False) is None
    denied = scored + [LedgerRow(status="infrastructure_retry", score=None)]
    assert state_mod.lifecycle_override(pending, denied, "sim", argument_only_pending=True) == (
        "await_simulation_runner_approval"
    )
    stopped = dict(pending, reason="manual_stop_pending_candidate", next_action="abandon_candidate")
    assert state_mod.lifecycle_override(stopped, scored, "sim", argument_only_pending=True) is None
