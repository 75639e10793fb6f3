"""Several candidates ready for external execution at once (issue 24 point 7), on the stand-in job in poc mode.

In poc/prod the runner runs and submits nothing, so these tests need no POC system: the baseline and every
candidate's result are recorded by hand (`record --score`), as an agent records a downloaded result.
"""

from __future__ import annotations

import os
import shutil

import pytest
import yaml
from runner_support import (
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    set_bonus,
    source_dir,
    standin_workspace,
    tree_digest,
)

BASELINE_BONUS = "BONUS = 0.0"


@pytest.fixture
def ws(tmp_path):
    return poc_campaign(tmp_path, cap=4)


def poc_campaign(tmp_path, *, cap):
    workspace = standin_workspace(tmp_path)
    assert run_inproc(workspace, "initialize", "--env", "poc", "--max-candidates", str(cap)).code == 0
    assert run_inproc(workspace, "record", "--baseline", "--score", "0.75", "--job-id", "job-0").code == 0
    return workspace


def prepare(workspace, name, *extra):
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"h {name}", *extra)
    assert done.code == 0, done.stderr
    return done


def three_candidates(workspace):
    """lr-a and lr-c change arguments only, bonus edits client.py; all from the baseline."""
    prepare(workspace, "lr-a", "--run-args", "--lr 0.15")
    prepare(workspace, "bonus")
    set_bonus(source_dir(workspace, "bonus"), 0.2)
    prepare(workspace, "lr-c", "--run-args", "--lr 0.4")
    return ["lr-a", "bonus", "lr-c"]


def manifest_path(workspace, name):
    return str(workspace / ".nvflare" / "autofl" / "candidates" / name / "candidate_manifest.json")


def batch_args(workspace, names):
    return [arg for name in names for arg in ("--manifest", manifest_path(workspace, name))]


def record(workspace, name, score, job_id):
    done = run_inproc(
        workspace, "record", "--manifest", manifest_path(workspace, name), "--score", score, "--job-id", job_id
    )
    assert done.code == 0, done.stderr
    return done.envelope


def campaign_files(workspace):
    return tree_digest(workspace, skip=(".nvflare/autofl/campaign_state.json",))


def test_a_poc_batch_makes_every_candidate_ready_and_submits_nothing(ws):
    """Every candidate of the batch becomes ready, one entry each in the order given (where to export it from and
    its job.py command line); nothing runs, the workspace keeps the best; status and the state name them all."""
    names = three_candidates(ws)
    before = (ws / "client.py").read_text()
    done = run_inproc(ws, "evaluate", "--all-prepared")
    assert done.code == 0, done.stderr
    entries = done.envelope["batch"]
    assert [(e["candidate_id"], e["candidate_status"], e["score"]) for e in entries] == [
        (name, "ready_for_external_execution", None) for name in names
    ]
    for entry in entries:
        folder = source_dir(ws, entry["candidate_id"])
        assert entry["export_from"] == str(folder)  # several ready: each from its own folder
        argv, effective = entry["job_argv"], manifest(ws, entry["candidate_id"])["effective_run_args"]
        assert argv[1] == "job.py" and "--num_rounds" in argv  # the fixed budget, then the candidate's args
        assert argv[len(argv) - len(effective) :] == effective
    assert "BONUS = 0.2" in (source_dir(ws, "bonus") / "client.py").read_text()
    assert (ws / "client.py").read_text() == before  # the live job still holds the best
    assert not (ws / "autofl_runs").exists() and [r["name"] for r in ledger_rows(ws)] == ["baseline"]
    assert all(manifest(ws, name)["status"] == "ready_for_external_execution" for name in names)
    assert done.envelope["next_action"] == "submit_candidate"
    assert "Ready for external execution: lr-a, bonus, lr-c." in done.envelope["agent_instruction"]
    assert "explicit yes" in done.envelope["agent_instruction"]
    status = run_inproc(ws, "status")
    listed = {p["candidate_id"]: p for p in status.envelope["pending"]}
    assert list(listed) == names
    for name in names:
        assert listed[name]["status"] == "ready_for_external_execution"
        assert listed[name]["export_from"] == str(source_dir(ws, name))
        assert "explicit yes" in listed[name]["needs"] and "record" in listed[name]["needs"]
        assert listed[name]["job_argv"] == entries[names.index(name)]["job_argv"]


@pytest.mark.parametrize(
    "order, decisions, best",
    [
        (["bonus", "lr-c", "lr-a"], ["keep", "discard", "keep"], "lr-a"),
        (["lr-a", "bonus", "lr-c"], ["keep", "discard", "discard"], "lr-a"),
        (["lr-c", "bonus", "lr-a"], ["keep", "keep", "keep"], "lr-a"),
    ],
)
def test_record_takes_ready_candidates_in_any_order_each_against_the_best_of_that_moment(ws, order, decisions, best):
    """The order of the records is the order of the decisions: each candidate is compared with the best at the
    moment it is recorded, whatever order the batch was given in."""
    names = three_candidates(ws)
    assert run_inproc(ws, "evaluate", *batch_args(ws, names)).code == 0
    scores = {"lr-a": "0.95", "bonus": "0.9", "lr-c": "0.8"}
    running_best = ("baseline", 0.75)
    for name, decision in zip(order, decisions, strict=True):
        envelope = record(ws, name, scores[name], f"job-{name}")
        assert envelope["candidate_status"] == decision, name
        assert (envelope["compared_with"], envelope["compared_score"]) == running_best
        if decision == "keep":
            running_best = (name, float(scores[name]))
    rows = ledger_rows(ws)
    assert [(r["name"], r["status"]) for r in rows] == [("baseline", "baseline"), *zip(order, decisions, strict=True)]
    assert [r["base_candidate"] for r in rows[1:]] == ["baseline"] * 3
    assert envelope["best_candidate"] == best and envelope["candidate_attempts"] == 3


def test_a_keep_prepared_from_an_older_best_replaces_the_sibling_kept_in_between(ws):
    """Siblings replace each other, as in a batch in simulation: bonus (a source edit) is kept first, then lr-a
    (prepared from the baseline, arguments only) beats it: the best becomes lr-a's own source, without bonus's edit.
    """
    names = three_candidates(ws)
    assert run_inproc(ws, "evaluate", *batch_args(ws, names)).code == 0
    assert record(ws, "bonus", "0.9", "j-1")["candidate_status"] == "keep"
    assert "BONUS = 0.2" in (ws / "client.py").read_text()  # the keep installed bonus in the live job
    kept = record(ws, "lr-a", "0.95", "j-2")
    assert (kept["candidate_status"], kept["compared_with"], kept["best_candidate"]) == ("keep", "bonus", "lr-a")
    assert BASELINE_BONUS in (ws / "client.py").read_text()  # lr-a's own source: the baseline's client.py
    best_client = ws / ".nvflare" / "autofl" / "snapshots" / "best" / "source" / "client.py"
    assert best_client.read_text() == (source_dir(ws, "lr-a") / "client.py").read_text()
    discarded = record(ws, "lr-c", "0.8", "j-3")
    assert (discarded["candidate_status"], discarded["compared_with"]) == ("discard", "lr-a")
    assert BASELINE_BONUS in (ws / "client.py").read_text()
    status = run_inproc(ws, "status")
    assert status.envelope["pending"] == [] and status.envelope["next_action"] != "submit_candidate"
    assert run_inproc(ws, "prepare", "--name", "next", "--hypothesis", "h").code == 0  # from the new best


def test_single_evaluates_make_several_ready_and_the_second_takes_the_first_out_of_the_workspace(ws):
    """One evaluate --manifest with several prepared makes that one ready and applies it (as before); a second
    evaluate makes another ready too: the first leaves the live job and both are exported from their folders."""
    prepare(ws, "bonus")
    set_bonus(source_dir(ws, "bonus"), 0.2)
    prepare(ws, "lr-a", "--run-args", "--lr 0.15")
    first = run_inproc(ws, "evaluate", "--manifest", manifest_path(ws, "bonus"))
    assert first.code == 0, first.stderr
    assert (first.envelope["candidate_status"], first.envelope["export_from"]) == (
        "ready_for_external_execution",
        str(ws),
    )
    assert "BONUS = 0.2" in (ws / "client.py").read_text()
    listed = {p["candidate_id"]: p for p in run_inproc(ws, "status").envelope["pending"]}
    assert (listed["bonus"]["export_from"], listed["lr-a"]["export_from"]) == (str(ws), None)
    assert listed["lr-a"]["needs"] == "evaluate (its run args were given at prepare)"
    second = run_inproc(ws, "evaluate", "--manifest", manifest_path(ws, "lr-a"))
    assert second.code == 0, second.stderr
    assert second.envelope["export_from"] == str(source_dir(ws, "lr-a"))
    assert BASELINE_BONUS in (ws / "client.py").read_text()  # bonus left the live job
    assert manifest(ws, "bonus")["workspace_applied"] is False
    listed = {p["candidate_id"]: p for p in run_inproc(ws, "status").envelope["pending"]}
    assert listed["bonus"]["export_from"] == str(source_dir(ws, "bonus"))
    assert "bonus, lr-a" in second.envelope["agent_instruction"]
    assert record(ws, "lr-a", "0.7", "j-1")["candidate_status"] == "discard"
    assert record(ws, "bonus", "0.9", "j-2")["candidate_status"] == "keep"
    assert "BONUS = 0.2" in (ws / "client.py").read_text()


def test_the_cap_counts_every_ready_candidate_and_a_larger_batch_changes_nothing(tmp_path):
    """With one candidate ready under a cap of 3, a batch of 3 is refused before anything changes (exit 2 naming
    the numbers); a batch of 2 fits; then one more candidate is refused."""
    workspace = poc_campaign(tmp_path, cap=3)
    names = three_candidates(workspace)
    prepare(workspace, "lr-d", "--run-args", "--lr 0.3")
    assert run_inproc(workspace, "evaluate", "--manifest", manifest_path(workspace, "lr-d")).code == 0
    before = campaign_files(workspace)
    refused = run_inproc(workspace, "evaluate", *batch_args(workspace, names))
    assert refused.code == 2
    assert (
        "the batch has 3 candidates but only 2 of the cap of 3 remain (1 held by the candidates ready for external "
        "execution: lr-d)" in refused.stderr
    )
    assert campaign_files(workspace) == before
    fits = run_inproc(workspace, "evaluate", *batch_args(workspace, names[:2]))
    assert fits.code == 0, fits.stderr
    # the three ready candidates use the whole cap before any is recorded
    assert fits.envelope["remaining_candidates"] == 0 and fits.envelope["candidate_attempts"] == 0
    before = campaign_files(workspace)
    last = run_inproc(workspace, "evaluate", "--manifest", manifest_path(workspace, "lr-c"))
    assert last.code == 2 and "this candidate needs one place but only 0 of the cap of 3 remain" in last.stderr
    assert campaign_files(workspace) == before
    for name, score in (("lr-d", "0.8"), ("bonus", "0.9"), ("lr-a", "0.85")):
        record(workspace, name, score, f"j-{name}")
    final = run_inproc(workspace, "status").envelope
    assert (final["candidate_attempts"], final["remaining_candidates"]) == (3, 0)


def creators(workspace):
    """mod-a and mod-b each edit client.py (better, then better still) and create a helper file of their own."""
    for name, bonus in (("mod-a", 0.1), ("mod-b", 0.2)):
        prepare(workspace, name)
        set_bonus(source_dir(workspace, name), bonus)
        (source_dir(workspace, name) / f"helper_{name.replace('-', '_')}.py").write_text(f"EXTRA = {bonus}\n")


def edit_paths(workspace):
    return yaml.safe_load((workspace / "autofl.yaml").read_text())["trust"]["allowed_edit_paths"]


def test_siblings_that_create_files_may_be_ready_at_once_and_the_later_keep_removes_the_earlier_ones_files(ws):
    """Two ready candidates that both create files, both kept in the order recorded: the live job and the
    contract equal the last best (mod-b's helper, not mod-a's), and the next candidate starts from it."""
    creators(ws)
    done = run_inproc(ws, "evaluate", "--all-prepared")
    assert done.code == 0, done.stderr
    assert not (ws / "helper_mod_a.py").exists()  # several ready: exported from their folders, the job untouched
    record(ws, "mod-a", "0.8", "j-a")
    assert (ws / "helper_mod_a.py").read_text() == "EXTRA = 0.1\n" and "helper_mod_a.py" in edit_paths(ws)
    record(ws, "mod-b", "0.9", "j-b")
    assert [(r["name"], r["status"]) for r in ledger_rows(ws)][1:] == [("mod-a", "keep"), ("mod-b", "keep")]
    assert not (ws / "helper_mod_a.py").exists() and (ws / "helper_mod_b.py").read_text() == "EXTRA = 0.2\n"
    assert "helper_mod_a.py" not in edit_paths(ws) and "helper_mod_b.py" in edit_paths(ws)
    assert "BONUS = 0.2" in (ws / "client.py").read_text()
    prepare(ws, "next")
    assert sorted(p.name for p in source_dir(ws, "next").glob("helper_*.py")) == ["helper_mod_b.py"]


@pytest.mark.parametrize("point", ["finalize:installed_recorded", "finalize:workspace_restored"])
def test_a_runner_killed_while_the_later_keep_settles_files_is_finished_by_the_next_action(ws, point):
    """SIGKILL during the second keep, after the files were settled or the workspace restored: the next action
    replays the journal and ends in the same live job, contract and ledger as an uninterrupted run."""
    creators(ws)
    assert run_inproc(ws, "evaluate", "--all-prepared").code == 0
    record(ws, "mod-a", "0.8", "j-a")
    killed = run_cli(
        ws,
        "record",
        "--manifest",
        manifest_path(ws, "mod-b"),
        "--score",
        "0.9",
        "--job-id",
        "j-b",
        env={**os.environ, "AUTOFL_FAULT_AT": point},
    )
    assert killed.code == -9, killed.stderr[-500:]
    assert run_inproc(ws, "status").code == 0
    assert [(r["name"], r["status"]) for r in ledger_rows(ws)][1:] == [("mod-a", "keep"), ("mod-b", "keep")]
    assert not (ws / "helper_mod_a.py").exists() and (ws / "helper_mod_b.py").exists()
    assert "helper_mod_a.py" not in edit_paths(ws) and "helper_mod_b.py" in edit_paths(ws)


def test_the_workspace_must_equal_the_best_before_a_later_keep(ws):
    """An installed file is managed like every file of the best: edited in the live job, the next record is
    refused (exit 2, nothing changed) until the edit is undone."""
    creators(ws)
    assert run_inproc(ws, "evaluate", "--all-prepared").code == 0
    record(ws, "mod-a", "0.8", "j-a")
    (ws / "helper_mod_a.py").write_text("EXTRA = 0.1  # mine now\n")
    before = campaign_files(ws)
    done = run_inproc(ws, "record", "--manifest", manifest_path(ws, "mod-b"), "--score", "0.9", "--job-id", "j-b")
    assert done.code == 2 and "the workspace differs from the best snapshot (helper_mod_a.py)" in done.stderr
    assert campaign_files(ws) == before


def test_abandon_takes_one_ready_candidate_and_the_final_report_waits_for_every_one(tmp_path):
    """abandon needs --manifest among several and drops one without counting it; the final report is refused
    while any candidate is ready, and allowed once the last one is recorded."""
    workspace = poc_campaign(tmp_path, cap=2)
    names = three_candidates(workspace)
    assert run_inproc(workspace, "evaluate", *batch_args(workspace, names[:2])).code == 0
    assert run_inproc(workspace, "evaluate", "--manifest", manifest_path(workspace, "lr-c")).code == 2  # cap
    guess = run_inproc(workspace, "abandon")
    assert guess.code == 2 and "pass --manifest" in guess.stderr
    done = run_inproc(workspace, "abandon", "--manifest", manifest_path(workspace, "lr-c"))
    assert done.code == 0 and done.envelope["candidate_status"] == "abandoned"
    assert done.envelope["candidate_attempts"] == 0 and done.envelope["next_action"] == "submit_candidate"
    assert run_inproc(workspace, "report").code == 2
    record(workspace, "lr-a", "0.8", "j-1")
    blocked = run_inproc(workspace, "report")
    assert blocked.code == 2 and "bonus" in blocked.stderr
    last = record(workspace, "bonus", "0.9", "j-2")
    assert last["final_response_allowed"] is True
    assert run_inproc(workspace, "report").code == 0


def test_record_refuses_a_ready_candidate_whose_folder_changed_after_evaluate(ws):
    """What is recorded must be what was submitted: an edit of a ready candidate's folder refuses its record."""
    names = three_candidates(ws)
    assert run_inproc(ws, "evaluate", *batch_args(ws, names)).code == 0
    set_bonus(source_dir(ws, "bonus"), 0.5)
    before = campaign_files(ws)
    done = run_inproc(ws, "record", "--manifest", manifest_path(ws, "bonus"), "--score", "0.9")
    assert done.code == 2 and "changed since it was evaluated" in done.stderr
    assert campaign_files(ws) == before


def test_parallel_is_refused_where_the_runner_runs_nothing(ws):
    three_candidates(ws)
    before = campaign_files(ws)
    done = run_inproc(ws, "evaluate", "--all-prepared", "--parallel", "2")
    assert done.code == 2 and "--parallel" in done.stderr and "in poc" in done.stderr
    assert campaign_files(ws) == before


def test_a_moved_workspace_keeps_its_ready_candidates(ws, tmp_path):
    """export_from follows the workspace (paths are stored relative), so a moved campaign still says where."""
    names = three_candidates(ws)
    assert run_inproc(ws, "evaluate", *batch_args(ws, names)).code == 0
    moved = tmp_path / "moved"
    shutil.move(ws, moved)
    listed = run_inproc(moved, "status").envelope["pending"]
    assert [p["export_from"] for p in listed] == [str(source_dir(moved, name)) for name in names]
    assert record(moved, "bonus", "0.9", "j-1")["candidate_status"] == "keep"


def test_prepare_names_the_candidate_still_waiting_for_its_external_run(ws):
    """A candidate made ready (awaiting its poc/prod run) blocks a new prepare with one line naming it and its status."""
    prepare(ws, "bonus")
    set_bonus(source_dir(ws, "bonus"), 0.2)
    assert run_inproc(ws, "evaluate", "--manifest", manifest_path(ws, "bonus")).code == 0
    done = run_inproc(ws, "prepare", "--name", "later", "--hypothesis", "h later")
    assert done.code == 2 and done.stderr.startswith(
        "candidate bonus is ready_for_external_execution; record or abandon"
    )
