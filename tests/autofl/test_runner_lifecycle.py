"""The campaign runner's lifecycle on the stand-in job: initialize, prepare, evaluate (keep / discard / crash),
abandon, record, suggest, status, with every written document checked against its schema."""

import json
import shutil

import pytest
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


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--max-candidates", "5")


def candidate(workspace, name, *, bonus=None, run_args=None, edit=None, **prepare):
    extra = [item for key, value in prepare.items() for item in (f"--{key.replace('_', '-')}", value)]
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"try {name}", *extra)
    assert done.code == 0, done.stderr
    if bonus is not None:
        set_bonus(source_dir(workspace, name), bonus)
    if edit:
        edit(source_dir(workspace, name))
    args = ["--run-args", run_args] if run_args else []
    return run_inproc(workspace, "evaluate", *args)


def test_initialize_writes_the_campaign_and_scores_the_baseline(ws):
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"]["max_candidates"] == 5 and meta["settings"]["results"] == "results.tsv"
    assert meta["best_candidate"] == "baseline" and meta["best_score"] == 0.75 and meta["best_run_args"] == []
    best = json.loads((ws / ".nvflare/autofl/snapshots/best/snapshot.json").read_text())
    assert sorted(best["files"]) == ["client.py", "job.py", "standin_flare.py"]
    assert (ws / ".nvflare/autofl/snapshots/best/source/client.py").read_bytes() == (ws / "client.py").read_bytes()
    rows = ledger_rows(ws)
    assert [(r["status"], r["name"], r["score"]) for r in rows] == [("baseline", "baseline", 0.75)]
    assert rows[0]["metric_source"] == "structured:metrics_summary.json"
    assert "--n_clients 2 --num_rounds 3 --name autofl_" in rows[0]["run_command"]
    for name in ("autofl.yaml", "progress.txt", "autofl_report.md", "autofl_report.json"):  # the suite: text plot
        assert (ws / name).stat().st_size > 0
    state = json.loads((ws / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["next_action"] == "propose_candidate" and state["baseline_score"] == 0.75


def test_prepare_copies_the_best_source_and_writes_a_prepared_manifest(ws):
    done = run_inproc(ws, "prepare", "--name", "lr-up", "--hypothesis", "faster", "--family", "tuning")
    assert done.code == 0
    assert done.envelope["candidate_source"] == str(source_dir(ws, "lr-up"))
    assert done.envelope["next_action"] == "edit_candidate" and done.envelope["final_response_allowed"] is False
    copy = tree_digest(source_dir(ws, "lr-up"))
    assert copy == tree_digest(ws / ".nvflare/autofl/snapshots/best/source")
    record = manifest(ws, "lr-up")
    assert (record["status"], record["algorithm_family"], record["base_candidate"]) == (
        "prepared",
        "tuning",
        "baseline",
    )


def test_keep_installs_the_new_best_and_discard_restores_it_exactly(ws):
    kept = candidate(ws, "bonus", bonus=0.02)
    assert (kept.code, kept.envelope["candidate_status"]) == (0, "keep")
    assert "BONUS = 0.02" in (ws / "client.py").read_text()
    best_source = ws / ".nvflare/autofl/snapshots/best/source"
    assert (best_source / "client.py").read_bytes() == (ws / "client.py").read_bytes()
    before = tree_digest(
        ws,
        skip=(
            ".nvflare",
            "autofl_runs",
            "results.tsv",
            "progress.png",
            "progress.txt",
            "autofl_report.md",
            "autofl_report.json",
        ),
    )

    def worse_and_new_file(folder):
        set_bonus(folder, -0.3)
        (folder / "helper_mod.py").write_text("VALUE = 1\n")

    discarded = candidate(ws, "worse", edit=worse_and_new_file)
    assert (discarded.code, discarded.envelope["candidate_status"]) == (0, "discard")
    after = tree_digest(
        ws,
        skip=(
            ".nvflare",
            "autofl_runs",
            "results.tsv",
            "progress.png",
            "progress.txt",
            "autofl_report.md",
            "autofl_report.json",
        ),
    )
    assert after == before and not (ws / "helper_mod.py").exists()
    rows = ledger_rows(ws)
    assert [(r["status"], r["name"]) for r in rows] == [
        ("baseline", "baseline"),
        ("keep", "bonus"),
        ("discard", "worse"),
    ]
    assert rows[2]["changed_files"] == "client.py,helper_mod.py" and rows[2]["candidate_kind"] == "source_edit"
    assert rows[2]["base_candidate"] == "bonus" and rows[2]["candidate_manifest"].endswith(
        "worse/candidate_manifest.json"
    )
    patch = (ws / ".nvflare/autofl/candidates/worse/candidate.patch").read_text()
    assert "-BONUS = 0.02" in patch and "+BONUS = -0.3" in patch and "+++ b/helper_mod.py" in patch


def test_kept_created_file_joins_the_trust_contract(ws):
    def with_module(folder):
        (folder / "tuning_helpers.py").write_text("EXTRA = 0.03\n")
        client = folder / "client.py"
        client.write_text(
            client.read_text().replace("BONUS = 0.0", "from tuning_helpers import EXTRA\n\nBONUS = EXTRA")
        )

    done = candidate(ws, "module", edit=with_module)
    assert done.envelope["candidate_status"] == "keep"
    assert (ws / "tuning_helpers.py").read_text() == "EXTRA = 0.03\n"
    import yaml

    config = yaml.safe_load((ws / "autofl.yaml").read_text())
    assert "tuning_helpers.py" in config["trust"]["allowed_edit_paths"]
    assert manifest(ws, "module")["created_files"] == ["tuning_helpers.py"]


def test_crash_restores_the_best_and_exits_1_with_the_root_cause(ws):
    before = (ws / "client.py").read_bytes()

    def broken(folder):
        client = folder / "client.py"
        client.write_text(client.read_text() + "\nraise ValueError('shape mismatch on purpose')\n")

    done = candidate(ws, "broken", edit=broken)
    assert (done.code, done.envelope["candidate_status"]) == (1, "crash")
    assert (ws / "client.py").read_bytes() == before
    row = ledger_rows(ws)[-1]
    assert row["status"] == "crash" and row["score"] is None
    assert row["failure_reason"].startswith("exit_code=1; ValueError: shape mismatch on purpose")
    assert done.envelope["candidate_attempts"] == 1


def test_identical_crash_is_counted_and_carries_replay_provenance(ws):
    def broken(folder):
        client = folder / "client.py"
        client.write_text(client.read_text() + "\nraise RuntimeError('boom')\n")

    candidate(ws, "boom", edit=broken)
    again = candidate(ws, "boom-again", edit=broken)
    assert again.code == 1 and again.envelope["candidate_attempts"] == 2
    replay = manifest(ws, "boom-again")["crash_replay"]
    assert replay["replay_of"] == "boom" and "RuntimeError: boom" in replay["previous_failure_reason"]
    assert replay["execution_fingerprint"] == manifest(ws, "boom")["execution_fingerprint"]


def test_a_tie_at_ledger_precision_is_a_discard(ws):
    """Do better 1: 0.7500000004 prints as the stored 0.750000, so it does not beat the baseline."""

    def tie(folder):
        client = folder / "client.py"
        text = client.read_text()
        client.write_text(
            text.replace("    return round(score + (0.05 if args.use_bonus else 0.0), 6)", "    return 0.7500000004")
        )

    done = candidate(ws, "tie", edit=tie)
    assert done.envelope["candidate_status"] == "discard"
    assert ledger_rows(ws)[-1]["score"] == 0.75


def test_best_is_source_plus_arguments(ws):
    """Do better 2: a kept argument-only change stays in force for every later candidate."""
    assert candidate(ws, "lr-up", run_args="--lr 0.2").envelope["candidate_status"] == "keep"
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert meta["best_run_args"] == ["--lr", "0.2"]
    done = candidate(ws, "bonus", bonus=0.02)
    assert done.envelope["candidate_status"] == "keep"
    record = manifest(ws, "bonus")
    assert record["run_args"] == [] and record["effective_run_args"] == ["--lr", "0.2"]
    assert ledger_rows(ws)[-1]["score"] == pytest.approx(0.87)  # 0.85 from --lr 0.2, +0.02 from the edit
    override = candidate(ws, "more", run_args="--lr=0.25 --local_steps 10 --use_bonus")  # its own --lr wins
    assert manifest(ws, "more")["effective_run_args"] == ["--lr", "0.25", "--local_steps", "10", "--use_bonus"]
    assert override.envelope["candidate_status"] == "keep"  # 0.8 - 0.05 + 0.10 + 0.02 + 0.05 = 0.92 > 0.87
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["best_command"].endswith("job.py --n_clients 2 --num_rounds 3 --lr 0.25 --local_steps 10 --use_bonus")


def test_suggestions_are_centred_on_the_best_and_never_repeat(ws):
    first = run_inproc(ws, "suggest", "--limit", "20").envelope["suggestions"]
    assert {"name": "lr-x2", "run_args": ["--lr", "0.2"]}.items() <= first[0].items()
    assert candidate(ws, "lr-x2", run_args="--lr 0.2").envelope["candidate_status"] == "keep"
    second = run_inproc(ws, "suggest", "--limit", "20").envelope["suggestions"]
    lr_values = [s["run_args"][1] for s in second if s["run_args"][0] == "--lr"]
    assert lr_values == ["0.4", "0.1", "0.8", "0.05"]  # x2, x1/2, x4, x1/4 around the kept 0.2
    assert "lr-x2" not in {s["name"] for s in second}  # names already used are not offered again
    assert not any(s["run_args"] == ["--lr", "0.2"] for s in second)
    limited = run_inproc(ws, "suggest", "--limit", "2").envelope["suggestions"]
    assert len(limited) == 2 and limited == second[:2]


def test_abandon_is_never_counted_and_reports_the_count(ws):
    run_inproc(ws, "prepare", "--name", "draft", "--hypothesis", "h")
    done = run_inproc(ws, "abandon")
    assert done.code == 0 and done.envelope["abandoned_candidates"] == 1
    assert done.envelope["candidate_attempts"] == 0 and manifest(ws, "draft")["status"] == "abandoned"
    assert run_inproc(ws, "abandon").code == 2  # nothing pending any more
    assert run_inproc(ws, "prepare", "--name", "draft", "--hypothesis", "h").code == 2  # the name stays used


def test_cap_exhaustion_makes_the_campaign_final(tmp_path):
    workspace = standin_workspace(tmp_path)
    run_inproc(workspace, "initialize", "--max-candidates", "2")
    candidate(workspace, "one", run_args="--lr 0.2")
    done = candidate(workspace, "two", bonus=-0.5)
    assert done.envelope["reason"] == "candidate_cap_exhausted" and done.envelope["final_response_allowed"] is True
    assert done.envelope["next_action"] == "final_report" and done.envelope["remaining_candidates"] == 0
    refused = run_inproc(workspace, "prepare", "--name", "three", "--hypothesis", "h")
    assert refused.code == 2 and "campaign is final" in refused.stderr


def test_cap_increase_needs_approval_and_is_audited(tmp_path):
    workspace = standin_workspace(tmp_path)
    run_inproc(workspace, "initialize", "--max-candidates", "1")
    meta_path = workspace / ".nvflare/autofl/campaign.json"
    before = meta_path.read_bytes()
    refused = run_inproc(workspace, "initialize", "--max-candidates", "3")
    assert refused.code == 2 and "needs the user's approval" in refused.stderr and meta_path.read_bytes() == before
    assert run_inproc(workspace, "initialize", "--uncapped").code == 2
    approved = run_inproc(workspace, "initialize", "--max-candidates", "3", "--confirm-user-approved-cap-change")
    assert approved.code == 0 and approved.envelope["candidate_cap"] == 3
    assert approved.envelope["settings_changed"] == ["max_candidates"]
    retry = run_inproc(workspace, "initialize", "--max-candidates", "3", "--confirm-user-approved-cap-change")
    assert retry.code == 0 and "settings_changed" not in retry.envelope  # idempotent on retry
    no_increase = run_inproc(workspace, "status", "--max-candidates", "2", "--confirm-user-approved-cap-change")
    assert no_increase.code == 2 and "not a cap increase" in no_increase.stderr
    lowered = run_inproc(workspace, "status", "--max-candidates", "2")
    assert lowered.code == 0 and lowered.envelope["candidate_cap"] == 2
    changes = json.loads(meta_path.read_text())["cap_changes"]
    assert [(c["old"], c["new"], c["user_approved"]) for c in changes] == [(1, 3, True), (3, 2, False)]
    uncapped = run_inproc(workspace, "status", "--uncapped", "--confirm-user-approved-cap-change")
    assert uncapped.envelope["candidate_cap_source"] == "uncapped" and uncapped.envelope["remaining_candidates"] is None


def test_mutable_setting_changes_are_audited_and_immutable_ones_refused(ws):
    """Do better 4: `evaluate --timeout 60` changes the campaign setting only with an audit entry."""
    run_inproc(ws, "prepare", "--name", "t", "--hypothesis", "h")
    set_bonus(source_dir(ws, "t"), 0.01)
    done = run_inproc(ws, "evaluate", "--timeout", "60")
    assert done.envelope["settings_changed"] == ["timeout"]
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"]["timeout"] == 60
    assert [(c["action"], c["setting"], c["old"], c["new"]) for c in meta["setting_changes"]] == [
        ("evaluate", "timeout", 900.0, 60.0)
    ]
    before = (ws / ".nvflare/autofl/campaign.json").read_bytes()
    for flags in (["--metric", "loss"], ["--env", "poc"], ["--results", "other.tsv"], ["--base-args", "--lr 0.3"]):
        refused = run_inproc(ws, "status", *flags)
        assert refused.code == 2 and "cannot change within a campaign" in refused.stderr, flags
    rejected = run_inproc(ws, "evaluate", "--plateau-threshold", "3")  # nothing pending: rejected
    assert rejected.code == 2
    assert (ws / ".nvflare/autofl/campaign.json").read_bytes() == before  # a rejected action persists nothing


def test_literature_events_and_linked_candidates(ws):
    first = run_inproc(
        ws, "record", "--literature", "--hypothesis", "FedProx [src: Li 2020]; try proximal term", "--family", "fedprox"
    )
    assert first.envelope["literature_event_id"] == "lit-0001"
    assert first.envelope["next_action"] == "develop_literature_batch"
    assert first.envelope["required_exploration"] == "source_backed_exploration"
    second = run_inproc(ws, "record", "--literature", "--hypothesis", "another paper")
    assert second.envelope["literature_event_id"] == "lit-0002"
    unknown = run_inproc(ws, "prepare", "--name", "x", "--hypothesis", "h", "--literature-event", "lit-0009")
    assert unknown.code == 2 and "lit-0009" in unknown.stderr
    run_inproc(ws, "prepare", "--name", "args-only", "--hypothesis", "h", "--literature-event", "lit-0001")
    refused = run_inproc(ws, "evaluate", "--run-args", "--lr 0.2")
    assert refused.code == 2 and "must edit source" in refused.stderr
    set_bonus(source_dir(ws, "args-only"), 0.01)
    done = run_inproc(ws, "evaluate")
    row = ledger_rows(ws)[-1]
    assert (row["literature_event_id"], row["candidate_kind"]) == ("lit-0001", "source_edit")
    state = json.loads(done.envelope and (ws / ".nvflare/autofl/campaign_state.json").read_text())
    assert (
        state["exploration_batch"]["literature_event_id"] == "lit-0001" and state["exploration_batch"]["completed"] == 1
    )


def test_literature_rows_count_by_status_only(ws):
    """Do better 5: a candidate whose name mentions literature is an ordinary attempt."""
    done = candidate(ws, "literature-review-tweak", bonus=0.01)
    assert done.envelope["candidate_attempts"] == 1
    state = json.loads((ws / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["exploration_batch"] is None and state["plateau"]["last_literature_event_index"] == -1


def test_stop_file_with_and_without_a_pending_candidate(ws):
    run_inproc(ws, "prepare", "--name", "pending", "--hypothesis", "h")
    (ws / "STOP_AUTOFL").write_text("")
    status = run_inproc(ws, "status").envelope
    assert (status["reason"], status["next_action"], status["final_response_allowed"]) == (
        "manual_stop_pending_candidate",
        "abandon_candidate",
        False,
    )
    blocked = run_inproc(ws, "evaluate")
    assert blocked.code == 2 and "stop file" in blocked.stderr
    assert run_inproc(ws, "abandon").code == 0
    final = run_inproc(ws, "status").envelope
    assert (final["reason"], final["next_action"], final["final_response_allowed"]) == (
        "manual_stop_file",
        "final_report",
        True,
    )
    assert run_inproc(ws, "prepare", "--name", "more", "--hypothesis", "h").code == 2


def test_status_rewrites_the_state_only_on_a_real_change(ws):
    state_path = ws / ".nvflare/autofl/campaign_state.json"
    before = state_path.read_bytes()
    assert run_inproc(ws, "status").code == 0
    assert state_path.read_bytes() == before  # only updated_at would differ
    (ws / ".nvflare/autofl/STOP").write_text("")
    run_inproc(ws, "status")
    assert json.loads(state_path.read_text())["stop_files"] == [".nvflare/autofl/STOP"]


def test_a_ledger_change_restamps_the_state_even_when_nothing_else_changed(ws):
    """The state's updated_at is when the last action that added ledger rows finished (the report's wall time)."""
    from autofl_core.runner import state as state_mod
    from autofl_core.runner.open_campaign import Campaign

    state_path = ws / ".nvflare/autofl/campaign_state.json"
    before = state_path.read_bytes()
    later = dict(json.loads(before), updated_at="2099-01-01T00:00:00Z")
    campaign = Campaign.open(ws / "job.py")
    assert state_mod.write(campaign, later) is False and state_path.read_bytes() == before
    assert state_mod.write(campaign, later, stamp=True) is True
    assert json.loads(state_path.read_text()) == later


def test_moved_workspace_keeps_working(ws, tmp_path):
    """Do better 3: campaign files hold workspace-relative paths; a copied campaign continues where it was."""
    candidate(ws, "lr-up", run_args="--lr 0.2")
    moved = tmp_path / "elsewhere" / "moved ws"
    shutil.copytree(ws, moved)
    shutil.rmtree(ws)
    for path in [moved / ".nvflare/autofl/candidates/lr-up/candidate_manifest.json", moved / "results.tsv"]:
        text = path.read_text()
        assert str(ws) not in text.replace(json.dumps(str(ws))[1:-1], "") or path.name.endswith(".json")
    meta = json.loads((moved / ".nvflare/autofl/campaign.json").read_text())
    assert str(ws) not in json.dumps(meta["settings"])
    status = run_inproc(moved, "status")
    assert status.code == 0 and status.envelope["results"] == str(moved / "results.tsv")
    done = candidate(moved, "bonus", bonus=0.02)
    assert done.code == 0 and done.envelope["candidate_status"] == "keep"
    assert manifest(moved, "bonus")["effective_run_args"] == ["--lr", "0.2"]


def test_poc_mode_marks_ready_and_records_external_results(tmp_path):
    workspace = standin_workspace(tmp_path)
    init = run_inproc(workspace, "initialize", "--env", "poc", "--max-candidates", "3")
    assert init.envelope["next_action"] == "submit_baseline" and not (workspace / "autofl_runs").exists()
    assert run_inproc(workspace, "prepare", "--name", "early", "--hypothesis", "h").code == 2
    assert run_inproc(workspace, "record", "--baseline", "--score", "0.75", "--job-id", "job-1").code == 0
    run_inproc(workspace, "prepare", "--name", "bonus", "--hypothesis", "h")
    set_bonus(source_dir(workspace, "bonus"), 0.02)
    ready = run_inproc(workspace, "evaluate", "--run-args", "--lr 0.2")
    assert ready.code == 0 and ready.envelope["next_action"] == "submit_candidate"
    assert manifest(workspace, "bonus")["status"] == "ready_for_external_execution"
    assert "BONUS = 0.02" in (workspace / "client.py").read_text()  # materialized for the external submission
    downloaded = tmp_path / "download" / "server" / "simulate_job" / "metrics"
    downloaded.mkdir(parents=True)
    (downloaded / "metrics_summary.json").write_text(
        json.dumps({"final_aggregated_metrics": [{"name": "accuracy", "value": 0.87}]})
    )
    done = run_inproc(workspace, "record", "--artifacts", str(tmp_path / "download"), "--job-id", "job-2")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep" and done.envelope["job_id"] == "job-2"
    row = ledger_rows(workspace)[-1]
    assert (row["status"], row["score"], row["metric_source"]) == ("keep", 0.87, "structured:metrics_summary.json")
    assert manifest(workspace, "bonus")["artifacts"]["job_id"] == "job-2"
    run_inproc(workspace, "prepare", "--name", "worse", "--hypothesis", "h")
    set_bonus(source_dir(workspace, "worse"), -0.2)
    run_inproc(workspace, "evaluate")
    crashed = run_inproc(workspace, "record", "--failure-reason", "site-2 ran out of memory")
    assert crashed.code == 0 and crashed.envelope["candidate_status"] == "crash"
    assert "BONUS = 0.02" in (workspace / "client.py").read_text()  # the best is restored exactly


def test_unscored_baseline_exits_1_and_is_retried_after_a_repair(tmp_path):
    workspace = standin_workspace(tmp_path)
    client = workspace / "client.py"
    good = client.read_text()
    client.write_text(good + "\nraise ImportError('missing dependency for the baseline')\n")
    first = run_inproc(workspace, "initialize")
    assert first.code == 1 and first.envelope["next_action"] == "repair_baseline"
    assert first.envelope["baseline_status"] == "pending"
    assert run_inproc(workspace, "prepare", "--name", "x", "--hypothesis", "h").code == 2
    client.write_text(good)
    retry = run_inproc(workspace, "initialize")
    assert retry.code == 0 and retry.envelope["baseline_retried"] is True
    assert [r["name"] for r in ledger_rows(workspace)] == ["baseline", "baseline_retry_1"]
    assert retry.envelope["baseline_score"] == 0.75 and retry.envelope["next_action"] == "propose_candidate"


def test_sandbox_denial_is_an_infrastructure_retry_with_exit_75(ws):
    def sandboxed(folder):
        client = folder / "client.py"
        client.write_text(
            client.read_text() + "\nraise PermissionError('[Errno 1] Operation not permitted: socket bind')\n"
        )

    done = candidate(ws, "sandboxed", edit=sandboxed)
    assert done.code == 75 and done.envelope["next_action"] == "await_simulation_runner_approval"
    assert done.envelope["candidate_attempts"] == 0 and manifest(ws, "sandboxed")["status"] == "prepared"
    assert ledger_rows(ws)[-1]["status"] == "infrastructure_retry"


def test_cli_prints_one_envelope_and_one_line_errors(ws):
    done = run_cli(ws, "status")
    assert done.code == 0 and done.envelope["next_action"] == "propose_candidate"
    missing = run_cli(ws, "status", job="nope.py")
    assert missing.code == 2 and missing.stderr.count("\n") == 1 and "does not exist" in missing.stderr
    bad = run_cli(ws, "launch")
    assert bad.code == 2 and bad.stderr.count("\n") == 1 and "invalid choice" in bad.stderr
    nothing = run_cli(ws, "evaluate")
    assert (
        nothing.code == 2
        and nothing.stderr == "Auto-FL evaluate failed: there is no pending candidate; run prepare first\n"
    )


def test_export_only_job_cannot_run_in_simulation(tmp_path):
    workspace = tmp_path / "export"
    shutil.copytree(REPO / "tests" / "fixtures" / "jobs" / "export_only", workspace)
    refused = run_inproc(workspace, "initialize")
    assert refused.code == 2 and "only exports the job" in refused.stderr and "--env poc" in refused.stderr
    assert not (workspace / ".nvflare").exists() and not (workspace / "autofl.yaml").exists()
    poc = run_inproc(workspace, "initialize", "--env", "poc")
    assert poc.code == 0 and poc.envelope["next_action"] == "submit_baseline"


def test_an_interpreter_without_nvflare_is_refused_before_anything_is_written(tmp_path):
    workspace = standin_workspace(tmp_path)
    refused = run_inproc(workspace, "initialize", "--python", "/usr/bin/false")
    assert refused.code == 2 and "--python /usr/bin/false cannot import nvflare" in refused.stderr
    missing = run_inproc(workspace, "initialize", "--python", str(tmp_path / "no-such-python"))
    assert missing.code == 2 and "cannot be started" in missing.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["client.py", "job.py", "standin_flare.py"]


def test_harmless_job_py_edit_keeps_the_fixed_budget(ws):
    """The budget digest covers values, not source lines: moving the recipe call down a few lines is fine."""

    def shift(folder):
        job = folder / "job.py"
        job.write_text(job.read_text().replace("def main():\n", "# a comment\n\n\ndef main():\n    # tuned\n"))

    done = candidate(ws, "shifted", edit=shift)
    assert done.code == 0 and done.envelope["candidate_status"] == "discard"  # same score: a tie
    assert "fixed budget and objective unchanged" in (ws / ".nvflare/autofl/candidates/shifted/import.log").read_text()
