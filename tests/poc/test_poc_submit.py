"""Auto-FL `submit` against a real local FLARE system (the session's POC system: server, site-1, site-2).

One campaign on examples/hello-numpy runs entirely through `submit`: a refusal without the user's confirmation
(nothing changed, nothing submitted), the baseline, a keep, a discard whose submit is SIGKILLed mid-wait and
repeated (the repeat reuses the job id: one job of that name on the system), and a crash (a client that raises).
A job whose fixed budget needs three clients fails the preflight, at initialize and at submit (exit 2, one line
naming both numbers, nothing submitted).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from runner_support import REPO, RUNNER, ledger_rows, manifest, source_dir, tree_digest

pytestmark = [pytest.mark.integration, pytest.mark.poc, pytest.mark.slow, pytest.mark.timeout(1500)]

LOCK = (".nvflare/autofl/campaign.lock",)  # holds the pid of the last action that took it


def runner(workspace, *args, env, timeout=600):
    done = subprocess.run(
        [sys.executable, str(RUNNER), args[0], str(workspace / "job.py"), *args[1:]],
        cwd=workspace.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    envelope = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, envelope, done.stderr


def job_names(system) -> list[str]:
    listed = system.nvflare("--format", "json", "job", "list", "--startup-kit", str(system.kit))
    return sorted(job["job_name"] for job in json.loads(listed.stdout)["data"])


def hello_numpy(tmp_path, name="my_job", *, clients=None):
    workspace = tmp_path / name
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    if clients is not None:
        job = workspace / "job.py"
        job.write_text(
            job.read_text().replace('"--n_clients", type=int, default=2', f'"--n_clients", type=int, default={clients}')
        )
    return workspace


def candidate(workspace, name, env, *, run_args=None, edit=None):
    args = ["prepare", "--name", name, "--hypothesis", f"h {name}"] + (["--run-args", run_args] if run_args else [])
    code, _, err = runner(workspace, *args, env=env)
    assert code == 0, err
    if edit:
        edit(source_dir(workspace, name))
    code, envelope, err = runner(workspace, "evaluate", env=env)
    assert code == 0 and envelope["next_action"] == "submit_candidate", err


def test_a_campaign_runs_through_submit(poc_system, tmp_path):
    env, kit = poc_system.env, str(poc_system.kit)
    workspace = hello_numpy(tmp_path)
    code, envelope, err = runner(
        workspace, "initialize", "--env", "poc", "--max-candidates", "3", "--startup-kit", kit, env=env
    )
    assert code == 0, err
    assert envelope["preflight"]["sites"] == ["site-1", "site-2"] and envelope["next_action"] == "submit_baseline"
    jobs_before = job_names(poc_system)

    # no confirmation: refused, nothing changed, nothing submitted
    before = tree_digest(workspace, skip=LOCK)
    code, envelope, err = runner(workspace, "submit", "--baseline", "--startup-kit", kit, env=env)
    assert code == 2 and envelope is None and err.count("\n") == 1 and "--confirm-user-authorized" in err
    assert tree_digest(workspace, skip=LOCK) == before  # and no job: the job list at the end counts every job

    approve = ["--confirm-user-authorized", "--startup-kit", kit]
    code, envelope, err = runner(
        workspace, "submit", "--baseline", *approve, "--authorization", "yes: baseline + 3", env=env
    )
    assert code == 0, err
    submission = envelope["submission"]
    assert (submission["target"], submission["environment"], submission["job_status"]) == (
        "baseline",
        "poc",
        "FINISHED:COMPLETED",
    )
    assert submission["approval"]["authorization"] == "yes: baseline + 3" and submission["reused_job_id"] is False
    assert envelope["baseline_score"] > 0.5 and envelope["next_action"] == "propose_candidate"

    candidate(workspace, "lr-x2", env, run_args="--lr 0.1")
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 0 and envelope["candidate_status"] == "keep", err
    assert (envelope["best_candidate"], envelope["remaining_candidates"]) == ("lr-x2", 2)

    # a discard whose submit is killed mid-wait: the repeat reuses the job id and submits nothing new
    candidate(workspace, "lr-tiny", env, run_args="--lr 0.001")
    record = workspace / ".nvflare" / "autofl" / "external" / "lr-tiny.json"
    first = subprocess.Popen(
        [sys.executable, str(RUNNER), "submit", str(workspace / "job.py"), *approve],
        cwd=workspace.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and '"job_id"' not in (record.read_text() if record.exists() else ""):
        time.sleep(0.5)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    killed_id = json.loads(record.read_text())["submission"]["job_id"]
    assert manifest(workspace, "lr-tiny")["status"] == "ready_for_external_execution"
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 0 and envelope["candidate_status"] == "discard", err
    assert envelope["submission"]["job_id"] == killed_id and envelope["submission"]["reused_job_id"] is True

    def broken(folder):
        client = folder / "client.py"
        client.write_text(
            client.read_text().replace("NUM_FEATURES = 8\n", "NUM_FEATURES = 8\nraise RuntimeError('bug')\n", 1)
        )

    candidate(workspace, "broken", env, edit=broken)
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 1 and envelope["candidate_status"] == "crash", err
    assert envelope["final_response_allowed"] is True and "replicate" not in envelope["agent_instruction"]

    rows = ledger_rows(workspace)
    assert [(r["status"], r["name"]) for r in rows] == [
        ("baseline", "baseline"),
        ("keep", "lr-x2"),
        ("discard", "lr-tiny"),
        ("crash", "broken"),
    ]
    assert all(r["runtime_seconds"] and r["runtime_seconds"] > 0 for r in rows)  # from each job's metadata
    assert "ended FINISHED:EXECUTION_EXCEPTION" in rows[-1]["failure_reason"]
    assert not (workspace / "client.py").read_text().count("raise RuntimeError")  # the best restored
    code, _, err = runner(workspace, "report", env=env)
    assert code == 0, err
    report = json.loads((workspace / "autofl_report.json").read_text())
    assert {e["name"]: e["budget"] for e in report["leaderboard"] if e["score"] is not None} == {
        "baseline": "verified",
        "lr-x2": "verified",
        "lr-tiny": "verified",
    }
    assert report["compute"]["total_seconds"] > 0 and report["compute"]["rows_without_runtime"] == 0
    assert "nvflare job submit" in report["selected"]["rerun_command"]
    # one `job list` after the start (each is a CLI start and an admin login, ~3 s): the refused submit added no
    # job, the killed and repeated one added one
    new_jobs = [name for name in job_names(poc_system) if name not in jobs_before]
    assert sum(name.endswith("_lr-tiny") for name in new_jobs) == 1
    assert len(new_jobs) == 4  # baseline, lr-x2, lr-tiny (once), broken


def test_the_preflight_refuses_a_system_with_other_sites_than_the_budget(poc_system, tmp_path):
    env, kit = poc_system.env, str(poc_system.kit)
    workspace = hello_numpy(tmp_path, "three", clients=3)
    jobs_before = job_names(poc_system)
    code, envelope, err = runner(workspace, "initialize", "--env", "poc", "--startup-kit", kit, env=env)
    assert code == 2 and envelope is None and err.count("\n") == 1
    assert "lists 2 site(s) (site-1, site-2) but the fixed budget has 3 clients" in err
    assert not (workspace / ".nvflare").exists() and not (workspace / "autofl.yaml").exists()
    code, _, err = runner(workspace, "initialize", "--env", "poc", env=env)  # no kit: no preflight
    assert code == 0, err
    before = tree_digest(workspace, skip=LOCK)
    code, _, err = runner(workspace, "submit", "--baseline", "--confirm-user-authorized", "--startup-kit", kit, env=env)
    assert code == 2 and "lists 2 site(s) (site-1, site-2) but the fixed budget has 3 clients" in err
    assert tree_digest(workspace, skip=LOCK) == before and job_names(poc_system) == jobs_before
    missing = runner(
        workspace,
        "submit",
        "--baseline",
        "--confirm-user-authorized",
        "--startup-kit",
        str(tmp_path / "no-kit"),
        env=env,
    )
    assert missing[0] == 2 and "is not a folder" in missing[2]
