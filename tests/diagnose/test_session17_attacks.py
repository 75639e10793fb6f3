"""Attacks on session 17's diagnose changes (h17atd); each hole's test failed on 71d81b3 (the tight-budget one
on 28dcdc9, this branch's first bound fix).

- A JSON file inside a job's folder of a POC workspace (the job's own code can write there) shaped like job meta
  chose the job the whole workspace was read as (`jobscope.stated_job`): written into the failing job's folder and
  naming another job, or written by a healthy job about itself, it scoped the real failure away. Only a statement
  from outside every job's folder scopes, and a file in a job's folder speaks only for that job
  (`structured.note_job`).
- Such a file naming another job also made the CLI answer's job id a second id, so the report dropped the job id
  the user's `job meta` answer stated.
- The scoped reading was a second full reading: the run read up to twice --max-total-bytes ("whole run" in the
  spec). The job is now learnt from the given JSON files and a listing of the folders, and the one reading of the
  evidence gets what that left.

The workspace is the real NVFLARE 2.9.0 POC run of evals/diagnose/files/real/poc (three jobs: hello-numpy healthy,
import-error and user-code-exception failed); the job meta shape is NVFLARE's (`job_id`, `name`, `status`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import bounded
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC = REPO / "evals" / "diagnose" / "files" / "real" / "poc"
JOBS = dict(line.split() for line in (POC / "job_ids.txt").read_text().splitlines())
HEALTHY, FAILED = JOBS["hello-numpy"], JOBS["import-error"]
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4 * 1024 * 1024, "max_files": 200}
CATALOG = cat.load_catalog()
SCOPED = "so only its folders and lines were read"
SLACK = 4 * LIMITS["max_files"]  # each file read may probe a byte before its tail and one past its end, twice


def _collect(*paths, job_id=None, **limits):
    return collect_evidence([str(p) for p in paths], job_id=job_id, **{**LIMITS, **limits})


def _report(*paths, job_id=None):
    return validated(diagnose(_collect(*paths, job_id=job_id), CATALOG, job_id=job_id))


@pytest.fixture
def workspace(tmp_path) -> Path:
    copy = tmp_path / "prod_00"
    shutil.copytree(POC / "workspace" / "prod_00", copy)
    return copy


def _meta_like(folder: Path, name: str, job_id: str, **extra) -> None:
    (folder / name).write_text(json.dumps({"job_id": job_id, "name": "hello-numpy", **extra}), encoding="utf-8")


def test_a_file_in_the_failing_jobs_folder_naming_another_job_does_not_scope_the_failure_away(workspace):
    _meta_like(workspace / "site-1" / FAILED, "status.json", HEALTHY, status="FINISHED:COMPLETED")
    ev = _collect(workspace)
    assert not any(SCOPED in note for note in ev.not_read), ev.not_read
    assert _report(workspace)["matched_pattern"] == "IMPORT_ERROR"


def test_a_healthy_jobs_summary_of_itself_does_not_choose_the_job(workspace):
    """A job's code may write a run summary into its own folder; that is not the user naming the job."""
    _meta_like(workspace / "site-1" / HEALTHY, "run_summary.json", HEALTHY, status="FINISHED:COMPLETED")
    ev = _collect(workspace)
    assert not any(SCOPED in note for note in ev.not_read), ev.not_read
    assert _report(workspace)["matched_pattern"] == "IMPORT_ERROR"


def test_a_file_in_a_job_folder_naming_another_job_does_not_unseat_the_answers_job_id(workspace):
    _meta_like(workspace / "site-1" / FAILED, "status.json", HEALTHY, status="FINISHED:COMPLETED")
    report = _report(POC / "envelopes" / "import-error.meta.json", workspace)
    assert report["job_id"] == FAILED and report["job_status"] == "FINISHED:EXECUTION_EXCEPTION"
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert not any("<job_id>" in command for command in report["follow_up_commands"]), report["follow_up_commands"]


def test_the_answers_outside_the_workspace_still_scope_it(workspace):
    """Guard: the CLI answers the user saved (outside every job's folder) still choose the job."""
    report = _report(*(POC / "envelopes" / f"hello-numpy.{kind}.json" for kind in ("meta", "logs")), workspace)
    assert report["matched_pattern"] == "UNKNOWN" and report["job_id"] == HEALTHY


def test_a_job_folders_own_meta_still_states_its_job(workspace):
    """Guard: a file in a job's folder naming that job is still a statement of the job id and status."""
    _meta_like(workspace / "site-1" / FAILED, "meta.json", FAILED, status="FINISHED:EXECUTION_EXCEPTION")
    report = _report(workspace)
    assert report["job_id"] == FAILED and report["job_status"] == "FINISHED:EXECUTION_EXCEPTION"


def _count_reads(monkeypatch) -> list[int]:
    counted = [0]
    real_read = os.read

    def read(fd, n):
        data = real_read(fd, n)
        counted[0] += len(data)
        return data

    monkeypatch.setattr(bounded.os, "read", read)
    return counted


def test_the_scoped_reading_stays_within_the_whole_runs_byte_budget(monkeypatch):
    """The spec's --max-total-bytes is for the whole run: learning the stated job is not a second budget."""
    answers = [POC / "envelopes" / f"hello-numpy.{kind}.json" for kind in ("meta", "logs")]
    budget = 600_000  # below the ~730 kB the answers and the workspace hold
    counted = _count_reads(monkeypatch)
    ev = _collect(*answers, POC / "workspace" / "prod_00", max_total_bytes=budget)
    assert counted[0] <= budget + SLACK, counted[0]
    assert any(SCOPED in note for note in ev.not_read), ev.not_read


def test_a_tight_budget_still_reads_only_the_stated_job():
    """The job is learnt from the answers and a listing of the folders, so a workspace larger than the budget is
    still read as the healthy job the answers name (not diagnosed from another job's ModuleNotFoundError)."""
    answers = [POC / "envelopes" / f"hello-numpy.{kind}.json" for kind in ("meta", "logs")]
    found = _collect(*answers, POC / "workspace" / "prod_00", max_total_bytes=450_000)  # the whole tree is ~730 kB
    report = validated(diagnose(found, CATALOG))
    assert report["matched_pattern"] == "UNKNOWN", report["likely_cause"]
    assert report["job_id"] == HEALTHY


def test_the_scoped_reading_of_a_small_workspace_is_whole(monkeypatch):
    """Guard: at the default budget the real POC run is read whole as the stated job, within the budget."""
    answers = [POC / "envelopes" / f"hello-numpy.{kind}.json" for kind in ("meta", "logs")]
    counted = _count_reads(monkeypatch)
    ev = _collect(*answers, POC / "workspace" / "prod_00")
    assert any(SCOPED in note for note in ev.not_read), ev.not_read
    assert not any(source.truncated for source in ev.sources)
    assert counted[0] <= LIMITS["max_total_bytes"] + SLACK, counted[0]


# --- a POC system that started is no sign that no job ran -----------------------------------------------------------


def _poc_start_ok() -> dict:
    """NVFLARE 2.9's `nvflare --format json poc start` ok answer (poc_commands: the result dict of a started
    system plus _build_poc_port_diagnostics)."""
    preflight = {
        "checked": True,
        "host": "127.0.0.1",
        "scope": "loopback",
        "ports": [8002, 8003],
        "conflicts": [],
        "message": "no loopback port conflicts found",
        "note": "Preflight checks loopback port availability only; poc start may still fail if another local bind "
        "address conflicts.",
    }
    data = {
        "status": "running",
        "server_url": "grpc://localhost:8002",
        "server_address": "localhost:8002",
        "admin_address": "localhost:8003",
        "default_port": 8002,
        "default_server_port": 8002,
        "default_admin_port": 8003,
        "wait": True,
        "no_wait": False,
        "ready_timeout": 30,
        "ready": True,
        "clients": ["site-1", "site-2"],
        "console_logs": {"server": "/tmp/nvflare/poc/example_project/prod_00/server/poc_console.log"},
        "port_conflict": False,
        "port_preflight": preflight,
        "warnings": [],
    }
    return {"schema_version": "1", "status": "ok", "exit_code": 0, "data": data}


def test_a_started_poc_system_keeps_the_job_follow_ups_and_does_not_claim_nothing_is_missing(tmp_path):
    """A running POC system (`ready: true`) is where jobs run: its answer does not show that none was submitted."""
    answer = tmp_path / "poc_start.json"
    answer.write_text(json.dumps(_poc_start_ok()), encoding="utf-8")
    report = _report(answer)
    assert any(" job meta " in command for command in report["follow_up_commands"]), report["follow_up_commands"]
    assert any("job status" in sentence for sentence in report["missing_evidence"]), report["missing_evidence"]
    assert "with no gap" not in report["next_action"], report["next_action"]


def test_a_refused_poc_start_still_gets_no_job_command():
    """Guard: the refusal (the real poc-not-prepared answer) keeps session 17's rule."""
    report = _report(REPO / "evals" / "diagnose" / "files" / "real" / "poc-not-prepared" / "poc_start.json")
    assert not any(" job " in command for command in report["follow_up_commands"]), report["follow_up_commands"]
