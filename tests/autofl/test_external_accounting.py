"""Honest accounting and instructions that fit poc/prod, on the stand-in job (no POC system needed).

A downloaded job is written as `nvflare job download` leaves it (top-level meta.json with NVFLARE's duration,
workspace/metrics/ with the summary and per-round records naming the sites), and recorded with
`record --artifacts`, as an agent (or `submit`) records it.
"""

from __future__ import annotations

import json

import pytest
from autofl_core.campaign import instructions
from autofl_core.trial import job_meta
from runner_support import ledger_rows, manifest, run_inproc, source_dir, standin_workspace, tree_digest

LOCK = (".nvflare/autofl/campaign.lock",)  # holds the pid of the last action that took it


def download(folder, *, score, duration="0:00:16.790725", rounds=3, sites=("site-1", "site-2"), job_id="job"):
    """A downloaded job folder: meta.json (status, duration), the metrics summary and round records."""
    metrics = folder / "workspace" / "metrics"
    metrics.mkdir(parents=True)
    (folder / "meta.json").write_text(
        json.dumps({"job_id": job_id, "status": "FINISHED:COMPLETED", "duration": duration, "name": "standin"})
    )
    (metrics / "metrics_summary.json").write_text(
        json.dumps({"final_round": rounds - 1, "final_aggregated_metrics": [{"name": "accuracy", "value": score}]})
    )
    records = [
        {
            "round": r,
            "aggregated_metrics": [{"name": "accuracy", "value": score}],
            "sites": [{"name": s} for s in sites],
        }
        for r in range(rounds)
    ]
    (metrics / "round_metrics.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return folder


def poc(tmp_path, *initialize_args):
    workspace = standin_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--env", "poc", *initialize_args)
    assert done.code == 0, done.stderr
    return workspace


def record_baseline(tmp_path, workspace, **fields):
    folder = download(tmp_path / "dl-baseline", job_id="job-0", **{"score": 0.75, **fields})
    done = run_inproc(workspace, "record", "--baseline", "--artifacts", str(folder), "--job-id", "job-0")
    assert done.code == 0, done.stderr
    return done


def manifest_of(workspace, name) -> str:
    return str(source_dir(workspace, name).parent / "candidate_manifest.json")


def ready_candidate(workspace, name, run_args):
    assert (
        run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"h {name}", "--run-args", run_args).code == 0
    )
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0, done.stderr
    return done


def report(workspace) -> dict:
    done = run_inproc(workspace, "report")
    assert done.code == 0, done.stderr
    return json.loads((workspace / "autofl_report.json").read_text())


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("0:00:16.790725", 16.791),
        ("1 day, 2:03:04", 93784.0),
        ("3 days, 0:00:01.5", 259201.5),
        ("N/A", None),
        ("", None),
    ],
)
def test_nvflare_durations_parse_to_seconds(text, seconds):
    assert job_meta.parse_duration(text) == seconds


def test_external_runs_count_their_job_durations_and_the_baseline_budget_is_verified(tmp_path):
    """The job's duration in its downloaded meta.json is the row's runtime (compute spent), and the external
    baseline's budget is verified from its download like a candidate's."""
    workspace = poc(tmp_path, "--max-candidates", "2")
    record_baseline(tmp_path, workspace)
    ready_candidate(workspace, "lr-a", "--lr 0.15")
    folder = download(tmp_path / "dl-a", score=0.8, duration="0:00:21.5", job_id="job-1")
    done = run_inproc(workspace, "record", "--artifacts", str(folder), "--job-id", "job-1")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep", done.stderr
    rows = ledger_rows(workspace)
    assert [(r["name"], r["runtime_seconds"]) for r in rows] == [("baseline", 16.791), ("lr-a", 21.5)]
    assert manifest(workspace, "lr-a")["result"]["runtime_seconds"] == 21.5
    ready_candidate(workspace, "lr-b", "--lr 0.3")
    failed = run_inproc(workspace, "record", "--failure-reason", "site-2 ran out of memory", "--job-id", "job-2")
    assert failed.code == 0 and failed.envelope["final_response_allowed"] is True
    data = report(workspace)
    assert data["compute"]["total_seconds"] == pytest.approx(38.291)
    assert data["compute"]["rows_without_runtime"] == 1  # the crash was recorded without a download
    budgets = {entry["name"]: entry["budget"] for entry in data["leaderboard"]}
    assert budgets["baseline"] == "verified" and budgets["lr-a"] == "verified"
    markdown = (workspace / "autofl_report.md").read_text()
    assert "| baseline | baseline | 0.750000 | budget verified |" in markdown


def test_an_external_baseline_with_another_client_count_is_refused(tmp_path):
    workspace = poc(tmp_path)
    folder = download(tmp_path / "dl", score=0.75, sites=("site-1", "site-2", "site-3"))
    done = run_inproc(workspace, "record", "--baseline", "--artifacts", str(folder))
    assert done.code == 2 and "3 clients took part, the fixed budget is 2" in done.stderr
    assert ledger_rows(workspace) == []


def test_status_carries_the_best_and_ready_candidates_use_the_cap(tmp_path):
    """`status` shows best_candidate and best_score; a candidate ready for external execution is counted in
    remaining_candidates as soon as it is ready (the cap check agrees)."""
    workspace = poc(tmp_path, "--max-candidates", "2")
    record_baseline(tmp_path, workspace)
    status = run_inproc(workspace, "status").envelope
    assert (status["best_candidate"], status["best_score"], status["remaining_candidates"]) == ("baseline", 0.75, 2)
    for name, lr in (("lr-a", "0.15"), ("lr-b", "0.3"), ("lr-c", "0.4")):
        prepared = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "h", "--run-args", f"--lr {lr}")
        assert prepared.code == 0, prepared.stderr
    made_ready = run_inproc(workspace, "evaluate", "--manifest", manifest_of(workspace, "lr-a"))
    assert made_ready.code == 0 and made_ready.envelope["remaining_candidates"] == 1
    assert run_inproc(workspace, "status").envelope["remaining_candidates"] == 1
    second = run_inproc(workspace, "evaluate", "--manifest", manifest_of(workspace, "lr-b"))
    assert second.code == 0 and second.envelope["remaining_candidates"] == 0
    third = run_inproc(workspace, "evaluate", "--manifest", manifest_of(workspace, "lr-c"))
    assert third.code == 2 and "only 0 of the cap of 2 remain" in third.stderr
    folder = download(tmp_path / "dl-a", score=0.8, job_id="job-1")
    done = run_inproc(
        workspace,
        "record",
        "--manifest",
        manifest_of(workspace, "lr-a"),
        "--artifacts",
        str(folder),
        "--job-id",
        "job-1",
    )
    assert done.code == 0 and done.envelope["remaining_candidates"] == 0  # one attempt, one still ready
    status = run_inproc(workspace, "status").envelope
    assert (status["best_candidate"], status["best_score"]) == ("lr-a", 0.8)


def test_poc_campaigns_are_never_asked_for_a_replicate(tmp_path):
    """An uncapped simulation is asked once for `replicate`; the same state in poc is not (replicate runs
    simulations only), and the report's noise section says so."""
    workspace = poc(tmp_path, "--uncapped")
    record_baseline(tmp_path, workspace)
    state = json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())
    assert instructions.replicate_advice(state) is not None  # a simulation would be asked
    assert "replicate" not in state["agent_instruction"]
    assert "replicate" not in run_inproc(workspace, "status").envelope["agent_instruction"]


def test_the_poc_report_reruns_the_best_by_export_and_submission(tmp_path):
    """The report's rerun block in poc exports through the recipe's flags and submits with the admin kit."""
    workspace = poc(tmp_path, "--max-candidates", "1")
    record_baseline(tmp_path, workspace)
    ready_candidate(workspace, "lr-a", "--lr 0.15")
    folder = download(tmp_path / "dl-a", score=0.8, job_id="job-1")
    assert run_inproc(workspace, "record", "--artifacts", str(folder), "--job-id", "job-1").code == 0
    data = report(workspace)
    command = data["selected"]["rerun_command"]
    assert "--lr 0.15 --export --export-dir" in command and "nvflare job submit -j" in command
    assert '--startup-kit "$ADMIN_STARTUP_KIT"' in command
    markdown = (workspace / "autofl_report.md").read_text()
    assert "`replicate` runs simulations only" in markdown


def test_submit_refuses_without_confirmation_or_kit_and_changes_nothing(tmp_path):
    """Each refusal is exit 2 with one line, before anything is read from a FLARE system or written."""
    workspace = poc(tmp_path, "--max-candidates", "1")
    kit = tmp_path / "admin-kit"
    kit.mkdir()
    before = tree_digest(workspace, skip=LOCK)
    for args, words in (
        (("--baseline", "--startup-kit", str(kit)), "--confirm-user-authorized"),
        (("--baseline", "--confirm-user-authorized"), "--startup-kit KIT or --kit-id ID"),
        (("--baseline", "--confirm-user-authorized", "--startup-kit", str(kit), "--kit-id", "k"), "not both"),
        (("--baseline", "--confirm-user-authorized", "--kit-id", "k", "--limit", "2"), "--limit does not apply"),
    ):
        done = run_inproc(workspace, "submit", *args)
        assert done.code == 2 and words in done.stderr and "\n" not in done.stderr.strip(), (args, done.stderr)
    assert tree_digest(workspace, skip=LOCK) == before


def test_submit_and_kits_belong_to_poc_and_prod(tmp_path):
    workspace = standin_workspace(tmp_path)
    kit = tmp_path / "admin-kit"
    kit.mkdir()
    refused = run_inproc(workspace, "initialize", "--startup-kit", str(kit))
    assert refused.code == 2 and "apply to --env poc|prod" in refused.stderr
    assert not (workspace / ".nvflare").exists()
    assert run_inproc(workspace, "initialize").code == 0
    done = run_inproc(workspace, "submit", "--baseline", "--confirm-user-authorized", "--startup-kit", str(kit))
    assert done.code == 2 and "in simulation evaluate runs the candidate itself" in done.stderr


def test_submit_refuses_a_baseline_whose_job_folder_drifted(tmp_path):
    workspace = poc(tmp_path)
    kit = tmp_path / "admin-kit"
    kit.mkdir()
    (workspace / "client.py").write_text((workspace / "client.py").read_text() + "\n# edited by hand\n")
    before = tree_digest(workspace, skip=LOCK)
    done = run_inproc(workspace, "submit", "--baseline", "--confirm-user-authorized", "--startup-kit", str(kit))
    assert done.code == 2 and "differs from the campaign's snapshot (client.py)" in done.stderr
    assert tree_digest(workspace, skip=LOCK) == before
