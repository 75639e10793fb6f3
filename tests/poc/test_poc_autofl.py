"""Auto-FL `--env poc` against a real local FLARE system: the documented flow of
references/poc-and-production.md runs exactly as written (bash, with `AUTOFL` and the POC workspace set):
`initialize --env poc --startup-kit` (preflight), `submit --baseline`, a candidate made ready by `evaluate`, its
`submit` (export, `nvflare job submit`, wait, download, record), then keep/restore."""

import json
import re
import shutil
import subprocess

import pytest
from runner_support import REPO, ledger_rows, manifest

# real jobs on a real POC system: minutes each on a loaded machine, more than the suite-wide 300 s hang guard
pytestmark = [pytest.mark.integration, pytest.mark.poc, pytest.mark.slow, pytest.mark.timeout(1200)]
DOC = REPO / "skills" / "nvflare-autofl" / "references" / "poc-and-production.md"


def documented_flow() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 1, "the POC reference holds exactly one runnable flow"
    return blocks[0]


def test_documented_poc_flow_runs_as_written(poc_system, tmp_path):
    project = tmp_path / "project"
    skill = tmp_path / ".agents" / "skills" / "nvflare-autofl"
    shutil.copytree(REPO / "skills" / "nvflare-autofl", skill, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "examples" / "hello-numpy", project / "my_job", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**poc_system.env, "AUTOFL": str(skill)}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", documented_flow()],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workspace = project / "my_job"
    rows = ledger_rows(workspace)
    assert [(r["status"], r["name"]) for r in rows] == [("baseline", "baseline"), ("keep", "lr-x2")]
    assert rows[0]["metric_source"] == "structured:metrics_summary.json" and 0.5 < rows[0]["score"] < rows[1]["score"]
    # the runner's own download, kept in the run's folder; each row's runtime is its job's duration
    assert rows[1]["metric_artifact"].startswith("autofl_runs/lr-x2/download/") and rows[1]["metric_artifact"].endswith(
        "workspace/metrics/metrics_summary.json"
    )
    assert all(row["runtime_seconds"] > 0 for row in rows)
    record = manifest(workspace, "lr-x2")
    assert (
        record["status"] == "keep" and record["artifacts"]["job_id"] and record["effective_run_args"] == ["--lr", "0.1"]
    )
    state = json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())
    assert (state["reason"], state["final_response_allowed"]) == ("candidate_cap_exhausted", True)
    assert not (workspace / "autofl_runs" / "lr-x2" / "simulation").exists()  # the runner only exported the job
    submitted = poc_system.nvflare("--format", "json", "job", "list", "--startup-kit", str(poc_system.kit))
    assert record["artifacts"]["job_id"] in submitted.stdout
