"""The two rules sealedrun3's misses asked for, on other real NVFLARE 2.9 runs (session 16).

Promises guarded:
- the job CLI's own answers decide log visibility and the job status: `job logs <id> --site <site>` answering
  `LOG_NOT_FOUND` ("Job logs are not available for site '<site>'. — <reason>") states that site's logs are absent
  (the site the command asked for, else the one the message names; `not_streamed` when the reason says the stream
  was not available), so a failure that depends on that site is PARTIAL_LOG_VISIBILITY; the status a failed
  `job wait` carries (`data.status`, `data.job_meta.status`), a `job meta` answer's and the diagnosed job's row of a
  `job list` answer are the job status, which is then not reported missing. Limits: an error code about something
  else (JOB_NOT_FOUND) or a message naming no valid site states nothing about a site; a `job list` row of another
  job gives no status; the user's --job-status wins;
- a client script that ended without sending its task's result and raised nothing (NVFLARE's in-process executor:
  `trainer thread exited before producing a result for task '<task>'`) is not USER_CODE_EXCEPTION chosen from the
  server's echo, and its traceback is not reported missing, when the output holding that record was read whole and
  no traceback runs through the job's code: the answer is UNKNOWN and likely_cause says what the records show.
  Limits: the server's view alone still reports the client traceback missing; a client that raised stays
  USER_CODE_EXCEPTION (its traceback is in stdout and the site log); a record read only in part decides nothing.

The real captures are in tests/fixtures/diagnose_session16_2.9 (make_fixtures.py rebuilds them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match import ended
from nvfdiag.pipeline import diagnose
from nvfdiag.read import cli_answers
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "diagnose_session16_2.9"
POC = REAL / "poc-site1-raises"
RETURNS = REAL / "sim-site2-returns"
RAISES = REAL / "sim-site1-raises"
WORKSPACE = Path("workspace") / "fedavg-numpy"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
JOB_STATUS_MISSING = "the job status (terminal state of the job)"


def read(*paths, max_bytes=LIMITS["max_bytes"]):
    return ev.collect_evidence([str(p) for p in paths], job_id=None, **{**LIMITS, "max_bytes": max_bytes})


def report_of(*paths, job_status=None, max_bytes=LIMITS["max_bytes"]):
    found = read(*paths, max_bytes=max_bytes)
    return validated(diagnose(found, CATALOG, mode="auto", job_id=None, job_status=job_status))


def envelope(name: str) -> dict:
    return json.loads((POC / name).read_text(encoding="utf-8"))


def other(report, pattern):
    return next((c for c in report["other_candidates"] if c["pattern"] == pattern), None)


# --- 1. the job CLI's answers: absent site logs ------------------------------------------------------------------


def test_log_not_found_answer_states_the_site_logs_are_not_streamed():
    assert read(POC / "job_logs_site-1.json").site_status == {"site-1": "not_streamed"}


def test_failure_depending_on_that_site_is_partial_log_visibility():
    report = report_of(POC / "job_wait.json", POC / "job_logs_all.json", POC / "job_logs_site-1.json")
    assert report["matched_pattern"] == "PARTIAL_LOG_VISIBILITY"
    assert report["confidence"] == "low"
    assert "site-1 (not_streamed)" in report["likely_cause"]
    assert "PARTIAL_LOG_VISIBILITY" in report["findings"]
    assert other(report, "USER_CODE_EXCEPTION") is not None


def test_collected_answer_names_the_site_the_command_asked_for():
    command = ["nvflare", "--format", "json", "job", "logs", "937ba185", "--site", "site-1"]
    found = ev.evidence_from_envelopes([{"command": command, "envelope": envelope("job_logs_site-1.json")}])
    assert found.site_status == {"site-1": "not_streamed"}


def test_answer_without_the_servers_reason_is_unavailable():
    answer = envelope("job_logs_site-1.json")
    answer["message"] = "Job logs are not available for site 'site-1'."
    assert cli_answers.absent_log(answer) == ("site-1", "")
    found = ev.evidence_from_envelopes([answer])
    assert found.site_status == {"site-1": "unavailable"}


@pytest.mark.parametrize(
    "change",
    [
        {"error_code": "JOB_NOT_FOUND", "message": "Job '937ba185' does not exist. — searched study 'default'"},
        {"message": "Job logs are not available for site 'site 1; rm -rf'."},
        {"message": "Job logs are not available for site ''."},
    ],
)
def test_other_answers_state_nothing_about_a_site(change):
    answer = {**envelope("job_logs_site-1.json"), **change}
    assert ev.evidence_from_envelopes([answer]).site_status == {}


def test_the_site_the_command_asked_for_wins_over_the_message():
    command = ["nvflare", "job", "logs", "937ba185", "--site", "site-2"]
    assert cli_answers.absent_log(envelope("job_logs_site-1.json"), command) == ("site-2", "")


# --- 2. the job CLI's answers: the job status --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["job_wait.json", "job_meta.json", "job_list.json"])
def test_a_stated_job_status_is_read_and_not_reported_missing(name):
    report = report_of(POC / "job_logs_all.json", POC / name)
    assert report["job_status"] == "FINISHED:EXECUTION_EXCEPTION"
    assert JOB_STATUS_MISSING not in report["missing_evidence"]


def test_without_a_status_answer_the_status_is_missing():
    report = report_of(POC / "job_logs_all.json", POC / "job_logs_site-1.json")
    assert report["job_status"] is None
    assert JOB_STATUS_MISSING in report["missing_evidence"]


def test_failed_wait_status_from_job_meta_when_data_status_is_absent():
    answer = envelope("job_wait.json")
    del answer["data"]["status"]
    found = ev.evidence_from_envelopes([answer])
    assert (found.job_id, found.job_status) == (answer["data"]["job_id"], "FINISHED:EXECUTION_EXCEPTION")


def test_job_list_row_of_another_job_gives_no_status(tmp_path):
    listed = envelope("job_list.json")
    listed["data"] = [{**row, "job_id": "0b6c5a60-0000-4000-8000-000000000000"} for row in listed["data"]]
    (tmp_path / "job_list.json").write_text(json.dumps(listed), encoding="utf-8")
    report = report_of(POC / "job_logs_all.json", tmp_path / "job_list.json")
    assert report["job_status"] is None


def test_the_users_job_status_wins():
    report = report_of(POC / "job_logs_all.json", POC / "job_wait.json", job_status="FINISHED:ABORTED")
    assert report["job_status"] == "FINISHED:ABORTED"


# --- 3. a client script that ended without a result and raised nothing -------------------------------------------


@pytest.mark.parametrize(
    "paths",
    [
        ("stdout.txt", WORKSPACE),  # the whole stdout of python job.py and the SimEnv workspace
        ("stdout.txt",),  # the stdout alone
    ],
)
def test_script_that_ended_without_sending_is_unknown_with_what_the_records_show(paths):
    report = report_of(*(RETURNS / p for p in paths))
    assert report["matched_pattern"] == "UNKNOWN"
    assert "CLIENT_TRACEBACK_MISSING" not in report["findings"]
    cause = report["likely_cause"]
    assert "trainer thread exited before producing a result" in cause
    assert "raised no exception" in cause and "task 'train'" in cause
    assert "converge" not in cause  # the evidence says nothing of why the script ended


def test_the_site_whose_log_holds_the_record_is_named():
    report = report_of(RETURNS / "stdout.txt", RETURNS / WORKSPACE)
    assert "training script of site-2 ended" in report["likely_cause"]
    demoted = other(report, "USER_CODE_EXCEPTION")
    assert demoted is not None and demoted["reason"] == ended.REASON


@pytest.mark.parametrize(
    "path",
    [
        WORKSPACE / "server",  # the server's view alone
        WORKSPACE,  # NVFLARE's log files: an ImportError the script died of goes to the console only
    ],
)
def test_without_the_whole_console_output_the_client_traceback_is_missing(path):
    report = report_of(RETURNS / path)
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert "CLIENT_TRACEBACK_MISSING" in report["findings"]
    assert "stdout" in " ".join(report["missing_evidence"])
    assert "trainer thread exited" not in report["likely_cause"]


@pytest.mark.parametrize("paths", [("stdout.txt", WORKSPACE), (WORKSPACE / "site-1" / "log.txt",)])
def test_client_that_raised_stays_user_code_exception(paths):
    report = report_of(*(RAISES / p for p in paths))
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert report["confidence"] == "high"
    assert "ValueError" in report["likely_cause"]
    assert "trainer thread exited" not in report["likely_cause"]


def test_a_traceback_through_the_jobs_code_anywhere_keeps_the_rule_off():
    report = report_of(RETURNS / "stdout.txt", RAISES / "stdout.txt")
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert "trainer thread exited" not in report["likely_cause"]


def test_a_record_read_only_in_part_decides_nothing():
    stdout = RETURNS / "stdout.txt"
    part = read(stdout, max_bytes=6000)
    assert any("trainer thread exited" in line.text for line in part.lines)  # the record is in what was read
    assert [s.status for s in part.sources] == ["truncated"]
    assert read(stdout).sources[0].status == "complete"
    assert "trainer thread exited" in report_of(stdout)["likely_cause"]
    assert "trainer thread exited" not in report_of(stdout, max_bytes=6000)["likely_cause"]


def test_a_script_that_died_of_an_import_error_it_printed_to_the_console_is_import_error():
    """TaskScriptRunner re-raises an ImportError without logging it or aborting: the executor says the trainer
    thread exited, and only the console holds `Exception in thread client_api_in_process_trainer:` and the
    traceback (an earlier real run, evals/diagnose/files/real/import-error)."""
    run = REPO / "evals" / "diagnose" / "files" / "real" / "import-error"
    with_console = report_of(run / "stdout.txt", run / "workspace" / "import-error")
    assert with_console["matched_pattern"] == "IMPORT_ERROR"
    assert "trainer thread exited" not in with_console["likely_cause"]
    logs_only = report_of(run / "workspace" / "import-error")
    assert "CLIENT_TRACEBACK_MISSING" in logs_only["findings"]
    assert "trainer thread exited" not in logs_only["likely_cause"]
