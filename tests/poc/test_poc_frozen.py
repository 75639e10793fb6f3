"""Frozen evaluation on a real local FLARE system (the session's POC system: server, site-1, site-2).

A campaign on examples/hello-numpy with its frozen evaluator (`evaluate.py`) runs through `submit`: each run
(baseline, candidates) is submitted and downloaded, then waits for its evaluation job (`next_action`
`submit_evaluation`, no ledger row, no keep/discard yet, no hand-reported score taken); `submit --evaluation` builds
that job from the runner's frozen copy and the downloaded global model, runs it at the sites and records the
n-weighted measured score (`measured:frozen_evaluator`, per-site values, the job's own report kept beside it). A
better learning rate is kept on its measured score; a candidate that inflates its reported metric is measured like
the best, discarded and flagged (`metric_divergence`); its evaluation submit is SIGKILLed mid-wait and repeated,
which reuses the job id (one evaluation job of that name on the system).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from runner_support import REPO, RUNNER, assert_documents_valid, ledger_rows, manifest, source_dir

pytestmark = [pytest.mark.integration, pytest.mark.poc, pytest.mark.slow, pytest.mark.timeout(1800)]

MEASURED = "measured:frozen_evaluator"


def runner(workspace, *args, env, timeout=900):
    done = subprocess.run(
        [sys.executable, str(RUNNER), args[0], str(workspace / "job.py"), *args[1:]],
        cwd=workspace.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    envelope = json.loads(done.stdout) if done.stdout.strip() else None
    if envelope is not None:
        assert_documents_valid(workspace, envelope)  # envelope, state, manifests and report against their schemas
    return done.returncode, envelope, done.stderr


def job_names(system) -> list[str]:
    listed = system.nvflare("--format", "json", "job", "list", "--startup-kit", str(system.kit))
    return sorted(job["job_name"] for job in json.loads(listed.stdout)["data"])


def evaluation_record(workspace, name) -> dict:
    return json.loads((workspace / "autofl_runs" / name / "evaluation.json").read_text())


def assert_measured(workspace, name, row):
    """The row's score is the n-weighted mean of the sites' answers of its evaluation job; the report is kept."""
    record = evaluation_record(workspace, name)
    sites = {site["site"]: site for site in record["sites"]}
    assert sorted(sites) == ["site-1", "site-2"] and all(site["n"] == 400 for site in sites.values())
    weighted = sum(site["value"] * site["n"] for site in sites.values()) / sum(site["n"] for site in sites.values())
    assert row["metric_source"] == MEASURED and row["score"] == pytest.approx(weighted, abs=1e-6)
    assert record["reported_score"] is not None and record["evaluation_job"]["job_status"] == "FINISHED:COMPLETED"
    return record


def test_a_campaign_with_a_frozen_evaluator_is_measured_by_evaluation_jobs(poc_system, tmp_path):
    env, kit = poc_system.env, str(poc_system.kit)
    workspace = tmp_path / "my_job"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    code, envelope, err = runner(
        workspace,
        "initialize",
        "--env",
        "poc",
        "--evaluator",
        "evaluate.py",
        "--max-candidates",
        "2",
        "--startup-kit",
        kit,
        env=env,
    )
    assert code == 0, err
    assert envelope["next_action"] == "submit_baseline" and "--evaluation" in envelope["frozen_evaluation_note"]
    approve = ["--confirm-user-authorized", "--startup-kit", kit]

    # the baseline: its training job, then its evaluation job
    code, envelope, err = runner(workspace, "submit", "--baseline", *approve, env=env)
    assert code == 0, err
    assert envelope["next_action"] == "submit_evaluation" and "baseline" in envelope["agent_instruction"]
    assert envelope["evaluation_pending"]["target"] == "baseline" and ledger_rows(workspace) == []
    code, envelope, err = runner(workspace, "submit", "--baseline", *approve, env=env)  # not twice
    assert code == 2 and "awaits its evaluation job" in err
    code, envelope, err = runner(workspace, "submit", "--baseline", "--evaluation", *approve, env=env)
    assert code == 0, err
    assert envelope["submission"]["target"] == "evaluation of baseline"
    assert envelope["score_provenance"] == "measured: frozen evaluator on the final global model"
    baseline = ledger_rows(workspace)[0]
    assert baseline["status"] == "baseline" and envelope["next_action"] == "propose_candidate"
    assert_measured(workspace, "baseline", baseline)

    # a better learning rate: measured, then kept
    code, _, err = runner(
        workspace, "prepare", "--name", "lr-x2", "--hypothesis", "h", "--run-args", "--lr 0.1", env=env
    )
    assert code == 0, err
    code, envelope, err = runner(workspace, "evaluate", env=env)
    assert code == 0 and envelope["next_action"] == "submit_candidate", err
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 0 and "candidate_status" not in envelope, err
    assert envelope["next_action"] == "submit_evaluation" and len(ledger_rows(workspace)) == 1
    assert manifest(workspace, "lr-x2")["status"] == "ready_for_external_execution"
    download = workspace / envelope["submission"]["download"]
    code, _, err = runner(workspace, "record", "--artifacts", str(download), env=env)  # no hand-reported score
    assert code == 2 and "submit --evaluation" in err and len(ledger_rows(workspace)) == 1
    code, envelope, err = runner(workspace, "submit", "--evaluation", *approve, env=env)
    assert code == 0 and envelope["candidate_status"] == "keep", err
    kept = ledger_rows(workspace)[-1]
    assert_measured(workspace, "lr-x2", kept)
    assert kept["score"] > baseline["score"] and envelope["best_candidate"] == "lr-x2"
    result = manifest(workspace, "lr-x2")["result"]
    assert result["metric_source"] == MEASURED and result["reported_score"] is not None
    assert set(result["evaluation"]["sites"]) == {"site-1", "site-2"}

    # a candidate that inflates its reported metric: measured like the best, not kept, flagged
    code, _, err = runner(workspace, "prepare", "--name", "inflate", "--hypothesis", "h", env=env)
    assert code == 0, err
    client = source_dir(workspace, "inflate") / "client.py"
    client.write_text(
        client.read_text().replace('metrics={"accuracy": acc}', 'metrics={"accuracy": min(1.0, acc + 0.3)}')
    )
    code, envelope, err = runner(workspace, "evaluate", env=env)
    assert code == 0 and envelope["next_action"] == "submit_candidate", err
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 0 and envelope["next_action"] == "submit_evaluation", err
    record = workspace / ".nvflare" / "autofl" / "external" / "inflate.json"
    first = subprocess.Popen(
        [sys.executable, str(RUNNER), "submit", str(workspace / "job.py"), "--evaluation", *approve],
        cwd=workspace.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        document = json.loads(record.read_text())
        if (document.get("evaluation_submission") or {}).get("job_id"):
            break
        time.sleep(0.5)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    killed_id = json.loads(record.read_text())["evaluation_submission"]["job_id"]
    code, envelope, err = runner(workspace, "submit", "--evaluation", *approve, env=env)
    assert code == 0 and envelope["candidate_status"] == "discard", err
    assert envelope["submission"]["job_id"] == killed_id and envelope["submission"]["reused_job_id"] is True
    assert sum(name.endswith("_inflate_eval") for name in job_names(poc_system)) == 1
    discarded = ledger_rows(workspace)[-1]
    assert_measured(workspace, "inflate", discarded)
    inflated = manifest(workspace, "inflate")["result"]
    assert inflated["reported_score"] > result["reported_score"]  # its own report beats the best's ...
    assert discarded["score"] <= kept["score"]  # ... its measured score does not
    assert inflated["metric_divergence"]["reported"] == inflated["reported_score"]
    assert envelope["best_candidate"] == "lr-x2"
    assert [(r["status"], r["name"]) for r in ledger_rows(workspace)] == [
        ("baseline", "baseline"),
        ("keep", "lr-x2"),
        ("discard", "inflate"),
    ]
