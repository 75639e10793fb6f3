"""Auto-FL `submit` on a production-shaped system: a project provisioned with `nvflare provision` whose server
(`fl-hub`), sites (`hospital-a`, `hospital-b`), admin (`ops@acme.org`), project name and ports are all unlike POC's
defaults, started participant by participant with their own start scripts. A campaign in `--env prod` runs
through `submit` as in POC: nothing in the runner assumes POC's names or layout."""

import json
import shutil
import subprocess
import sys

import pytest
from runner_support import REPO, RUNNER, ledger_rows

SITES = ["hospital-a", "hospital-b"]  # as tests/poc/conftest.py provisions them
pytestmark = [pytest.mark.integration, pytest.mark.poc, pytest.mark.slow, pytest.mark.timeout(1500)]


def runner(workspace, *args, env):
    done = subprocess.run(
        [sys.executable, str(RUNNER), args[0], str(workspace / "job.py"), *args[1:]],
        cwd=workspace.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def test_a_prod_campaign_on_a_provisioned_project_runs_through_submit(provisioned_system, tmp_path):
    env, kit = provisioned_system.env, str(provisioned_system.kit)
    workspace = tmp_path / "my_job"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    code, envelope, err = runner(
        workspace, "initialize", "--env", "prod", "--max-candidates", "1", "--startup-kit", kit, env=env
    )
    assert code == 0, err
    assert envelope["preflight"]["sites"] == SITES
    approve = ["--confirm-user-authorized", "--startup-kit", kit, "--authorization", "ops: baseline and one candidate"]
    code, envelope, err = runner(workspace, "submit", "--baseline", *approve, env=env)
    assert code == 0, err
    assert (envelope["submission"]["environment"], envelope["submission"]["job_status"]) == (
        "prod",
        "FINISHED:COMPLETED",
    )
    assert (
        code == 0
        and runner(workspace, "prepare", "--name", "lr-x2", "--hypothesis", "h", "--run-args", "--lr 0.1", env=env)[0]
        == 0
    )
    assert runner(workspace, "evaluate", env=env)[0] == 0
    code, envelope, err = runner(workspace, "submit", *approve, env=env)
    assert code == 0 and envelope["candidate_status"] == "keep", err
    assert envelope["final_response_allowed"] is True and envelope["submission"]["sites"] == SITES
    rows = ledger_rows(workspace)
    assert [(r["status"], r["name"]) for r in rows] == [("baseline", "baseline"), ("keep", "lr-x2")]
    assert all(r["runtime_seconds"] > 0 for r in rows)
    code, _, err = runner(workspace, "report", env=env)
    assert code == 0, err
    report = json.loads((workspace / "autofl_report.json").read_text())
    assert [e["budget"] for e in report["leaderboard"]] == ["verified", "verified"]  # both sites seen in what ran
