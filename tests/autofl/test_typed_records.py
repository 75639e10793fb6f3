"""The runner's typed records give back the files they were read from, byte for byte: every candidate manifest of a
campaign written by an earlier main (tests/fixtures/autofl_campaign_main) and of a stand-in campaign with a keep, a
discard, a crash replay, a batch, an abandoned and a prepared candidate; plus the record's update rules."""

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
from runner_support import REPO, initialized_standin, run_inproc, set_bonus, source_dir

FIXTURE = REPO / "tests" / "fixtures" / "autofl_campaign_main"
WRITTEN_AT, WRITTEN_WITH = "/tmp/core_fixture_ws", "/work/wt/core/.venv/bin/python"


def _fixture_copy(tmp_path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(FIXTURE, workspace)
    for path in workspace.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".tsv", ".yaml"):
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(WRITTEN_AT, str(workspace)).replace(WRITTEN_WITH, sys.executable))
    return workspace


def _every_manifest_written_back_is_the_same_bytes(workspace: Path) -> list[str]:
    """Read each manifest through the store, write it back through the store; returns the ids checked."""
    from autofl_core.runner.open_campaign import Campaign
    from autofl_core.runner.store import manifests

    campaign = Campaign.open(str(workspace / "job.py"))
    checked = []
    for manifest in campaign.manifests():
        path = campaign.paths.manifest(manifest.candidate_id)
        before = path.read_bytes()
        manifests.write(campaign.paths, manifests.read(campaign.paths, manifest.candidate_id))
        assert path.read_bytes() == before, manifest.candidate_id
        document = json.loads(before)
        assert manifests.CandidateManifest.from_json(document).to_json() == document
        checked.append(manifest.candidate_id)
    return checked


def _the_ledger_written_back_is_the_same_bytes(workspace: Path) -> list[str]:
    """Parse results.tsv into records and format them again, through the record and through a writer's dicts;
    returns each row's status and name."""
    from autofl_core.campaign import ledger

    path = workspace / "results.tsv"
    text = path.read_text(encoding="utf-8")
    records = ledger.read_rows(path)
    assert ledger.HEADER + "\n" + "".join(record.to_line() + "\n" for record in records) == text
    assert ledger.format_ledger([record.to_row() for record in records]) == text
    for record in records:
        assert ledger.LedgerRow.from_row(record.to_row()) == record
        assert list(record.to_row()) == list(ledger.COLUMNS)
    return [f"{record.status} {record.name}" for record in records]


def test_every_ledger_row_of_the_campaign_of_an_earlier_main_round_trips(tmp_path):
    rows = _the_ledger_written_back_is_the_same_bytes(_fixture_copy(tmp_path))
    assert len(rows) == len((FIXTURE / "results.tsv").read_text().splitlines()) - 1
    assert {row.split()[0] for row in rows} >= {"baseline", "keep", "discard"}


def test_every_manifest_of_the_campaign_of_an_earlier_main_round_trips(tmp_path):
    workspace = _fixture_copy(tmp_path)
    assert sorted(_every_manifest_written_back_is_the_same_bytes(workspace)) == [
        "bonus-up",
        "dropped",
        "lr-low",
        "pending-one",
    ]


@pytest.mark.slow
def test_every_manifest_of_a_standin_campaign_round_trips(tmp_path):
    workspace = initialized_standin(tmp_path, "--max-candidates", "9")

    def prepare(name, *extra):
        done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"h {name}", *extra)
        assert done.code == 0, done.stderr

    def break_client(name):
        client = source_dir(workspace, name) / "client.py"
        client.write_text(client.read_text() + "\nraise RuntimeError('boom')\n")

    prepare("lr-a", "--run-args", "--lr 0.15")
    assert run_inproc(workspace, "evaluate").code == 0
    for name in ("boom", "boom-again"):  # the second is a crash replay of the first
        prepare(name)
        break_client(name)
        assert run_inproc(workspace, "evaluate").code == 1
    prepare("bonus")
    set_bonus(source_dir(workspace, "bonus"), 0.2)
    prepare("lr-c", "--run-args", "--lr 0.4")
    done = run_inproc(workspace, "evaluate", "--all-prepared")  # a batch: each manifest records it
    assert done.code == 0, done.stderr
    prepare("dropped", "--run-args", "--lr 0.2")
    assert run_inproc(workspace, "abandon").code == 0
    prepare("waiting", "--run-args", "--lr 0.3")
    found = _every_manifest_written_back_is_the_same_bytes(workspace)
    assert sorted(found) == ["bonus", "boom", "boom-again", "dropped", "lr-a", "lr-c", "waiting"]
    rows = _the_ledger_written_back_is_the_same_bytes(workspace)
    assert {row.split()[0] for row in rows} >= {"baseline", "keep", "crash"}
    again = json.loads((workspace / ".nvflare/autofl/candidates/boom-again/candidate_manifest.json").read_text())
    assert again["crash_replay"]["replay_of"] == "boom"
    assert json.loads((workspace / ".nvflare/autofl/candidates/bonus/candidate_manifest.json").read_text())["batch"]


def _fixture_manifest(name: str = "pending-one") -> dict:
    path = FIXTURE / ".nvflare/autofl/candidates" / name / "candidate_manifest.json"
    return json.loads(path.read_text())


def test_an_update_writes_what_it_set_and_keeps_what_it_did_not_know():
    """A field a manifest lacked is written once an update sets it (workspace_applied set to its default
    included); one it still lacks stays absent; keys this runner does not know are written back as read."""
    from autofl_core.runner.store.manifests import CandidateManifest

    document = dict(_fixture_manifest(), later_field={"kept": [1, 2]})
    assert "workspace_applied" not in document and "patch_stats" not in document
    manifest = CandidateManifest.from_json(document)
    assert manifest.workspace_applied is True and manifest.patch_stats is None  # the defaults, read
    assert manifest.to_json() == document
    updated = manifest.replace(status="running", workspace_applied=True)
    assert updated.to_json() == dict(document, status="running", workspace_applied=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.status = "keep"


def test_crash_replay_and_batch_are_written_only_while_they_hold_a_value():
    from autofl_core.runner.store.manifests import CandidateManifest

    document = _fixture_manifest()
    replayed = CandidateManifest.from_json(document).replace(crash_replay={"replay_of": "x"}, batch=None)
    assert replayed.to_json() == dict(document, crash_replay={"replay_of": "x"})
    assert replayed.replace(crash_replay=None).to_json() == document


def test_nested_records_read_as_attributes_and_update_alone():
    from autofl_core.runner.store.manifests import CandidateManifest, ManifestResult

    document = _fixture_manifest("bonus-up")
    manifest = CandidateManifest.from_json(document)
    assert (manifest.result.score, manifest.result.budget["status"]) == (0.85, "verified")
    assert manifest.artifacts.run == "autofl_runs/bonus-up" and manifest.artifacts.job_id is None
    assert manifest.run_args == () and manifest.touched == ["client.py"]
    moved = manifest.replace(artifacts=manifest.artifacts.replace(job_id="j-1"))
    assert moved.to_json()["artifacts"] == dict(document["artifacts"], job_id="j-1")
    fresh = ManifestResult.of(score=None, failure_reason="x")
    assert fresh.to_json() == {"score": None, "failure_reason": "x"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda m: m["result"].update(score="high"), "result.score must be a number or null"),
        (lambda m: m["artifacts"].update(run=3), "artifacts.run must be a path or null"),
        (lambda m: m.update(workspace_applied="yes"), "workspace_applied must be true or false"),
        (lambda m: m.update(status="kept"), "unknown status 'kept'"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_refused_with_its_field(tmp_path, change, problem):
    from autofl_core.runner.open_campaign import Campaign
    from autofl_core.runner.outcome import CampaignError
    from autofl_core.runner.store import manifests

    workspace = _fixture_copy(tmp_path)
    path = workspace / ".nvflare/autofl/candidates/bonus-up/candidate_manifest.json"
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))
    campaign = Campaign.open(str(workspace / "job.py"))
    with pytest.raises(CampaignError, match=f"not a valid candidate manifest \\({problem}\\); restore it"):
        manifests.read(campaign.paths, "bonus-up")


def test_a_ledger_row_is_frozen_and_checked_where_it_is_built():
    """A writer's row (a list of files, a score as text) becomes the record the file reads back; a row the
    ledger cannot hold is refused before anything is written."""
    from autofl_core.campaign import ledger

    record = ledger.LedgerRow.from_row(
        {
            "status": "keep",
            "name": "a",
            "score": "0.5",
            "changed_files": ["client.py", "job.py"],
            "diff_summary": "x\ty",
        }
    )
    assert (record.score, record.runtime_seconds, record.changed_files, record.diff_summary) == (
        0.5,
        None,
        "client.py,job.py",
        "x y",
    )
    line = record.to_line()
    assert ledger.parse(ledger.HEADER + "\n" + line + "\n") == [record]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.score = 0.9
    for row, problem in (
        ({"status": "kept"}, "invalid ledger status 'kept'"),
        ({"status": "keep", "colour": "red"}, "unknown ledger column"),
        ({"status": "keep", "score": float("nan")}, "score must be finite"),
    ):
        with pytest.raises(ledger.LedgerError, match=problem):
            ledger.LedgerRow.from_row(row)


def test_a_trial_result_is_frozen_and_a_crash_is_a_new_result():
    """What trial/ hands the runner cannot be changed behind its back: the steps after a run (limits, tampering,
    the frozen evaluator) make a new result."""
    from autofl_core.trial.execute import TrialResult

    ran = TrialResult(
        outcome="success",
        score=0.8,
        metric_name="accuracy",
        metric_source="structured:metrics_summary.json",
        metric_artifact="",
        failure_reason="",
        exit_code=0,
        runtime_seconds=1.0,
        run_command="python job.py",
        argv=["python", "job.py"],
        artifacts={},
        budget={"status": "verified"},
    )
    crashed = ran.crashed("memory limit reached", budget=None)
    assert (crashed.outcome, crashed.score, crashed.failure_reason, crashed.budget) == (
        "crash",
        None,
        "memory limit reached",
        None,
    )
    assert (ran.outcome, ran.score, ran.budget) == ("success", 0.8, {"status": "verified"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ran.score = 0.9
