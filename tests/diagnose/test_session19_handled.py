"""A traceback after which the same participant went on is handled (session 19, h19hnd).

Promises guarded, on real NVFLARE 2.9.0 runs:
- a client script that logs an exception it caught (logging.exception: an ERROR record and a traceback relayed as
  INFO records) and then trains every round is no cause at high: the traceback is handled because NVFLARE assigned
  that client a task after it (ClientRunner's `got task assignment`) whose result the server accepted from that peer
  (`peer=<client>`, `peer_rc=OK`, the same task id). The rows resting only on such tracebacks are listed apart with
  handled.WENT_ON_REASON (careful.CarefulReading.demote);
- stays as before: a site that raised in round 1 after a healthy round 0 (its earlier accepted result does not count;
  its in-flight task was assigned before the traceback), while the other site's work went on; a real user-code
  failure; progress text the job's own script printed after a real crash (relayed under TaskScriptRunner's logger).
Limit: python job.py's console alone names no participant in its records (2.9's concise format), so the rule
cannot apply to it.

The healthy capture is tests/fixtures/diagnose_session19_2.9/sim-handled-label-map (make_fixtures.py rebuilds it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match import handled
from nvfdiag.match.tracebacks import Traceback
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "tests" / "fixtures" / "diagnose_session19_2.9" / "sim-handled-label-map"
RAISES = REPO / "tests" / "fixtures" / "diagnose_session16_2.9" / "sim-site1-raises"
USER_FAILURE = REPO / "evals" / "diagnose" / "files" / "real" / "user-code-exception"
WORKSPACE = Path("workspace") / "fedavg-numpy"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
USER = "USER_CODE_EXCEPTION"
DATA = "DATA_PATH_NOT_FOUND"
ACCEPTED_ROUND_0 = "2bfa294f-55da-4a79-952d-47e5a1651012"  # site-1's round-0 task in sim-site1-raises


def report_of(*paths):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(diagnose(found, CATALOG, mode="auto", job_id=None, job_status=None))


def went_on(report) -> list[str]:
    return [c["pattern"] for c in report["other_candidates"] if c["reason"] == handled.WENT_ON_REASON]


def test_the_capture_is_a_healthy_run_whose_client_logged_a_caught_exception():
    stdout = (HEALTHY / "stdout.txt").read_text()
    assert "Finished FedAvg." in stdout
    for site in ("site-1", "site-2"):
        log = (HEALTHY / WORKSPACE / site / "log.txt").read_text()
        assert "ERROR - no label map label_map.json, using the default labels" in log
        assert "FileNotFoundError: [Errno 2] No such file or directory: 'label_map.json'" in log
        assert log.count("task result sent to server") == 2


def test_the_site_logs_alone_name_no_cause():
    report = report_of(HEALTHY / WORKSPACE)
    assert report["matched_pattern"] == "UNKNOWN" and report["confidence"] == "low"


def test_stdout_and_workspace_are_not_high_and_the_went_on_rows_are_listed_apart():
    report = report_of(HEALTHY / "stdout.txt", HEALTHY / WORKSPACE)
    assert report["confidence"] != "high", report["likely_cause"]
    assert USER in went_on(report)


def test_the_console_alone_names_no_participant_so_the_rule_does_not_apply():
    report = report_of(HEALTHY / "stdout.txt")
    assert went_on(report) == []


# --- stays as before -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "paths",
    [
        (RAISES / "stdout.txt",),
        (RAISES / WORKSPACE,),
        (RAISES / "stdout.txt", RAISES / WORKSPACE),
        (USER_FAILURE / "stdout.txt", USER_FAILURE / "workspace"),
        (USER_FAILURE / "workspace",),
    ],
)
def test_a_site_that_raised_and_did_not_go_on_stays_high(paths):
    report = report_of(*paths)
    assert report["matched_pattern"] == USER and report["confidence"] == "high"
    assert went_on(report) == []


def test_site1_had_a_result_accepted_before_it_raised_and_site2_went_on():
    """The guard above covers progress before the traceback and another participant's progress."""
    server = (RAISES / WORKSPACE / "server" / "log.txt").read_text().splitlines()
    accepted = [line for line in server if "peer=site-1" in line and "peer_rc=OK" in line]
    assert accepted and all(ACCEPTED_ROUND_0 in line for line in accepted)
    assert any("peer=site-2" in line and "peer_rc=OK" in line for line in server)


def _with_line(tmp_path: Path, logger: str) -> Path:
    """sim-site1-raises' workspace with one more line at the end of site-1's log: a `got task assignment` record
    of site-1's accepted round-0 task under `logger`."""
    copy = tmp_path / "ws"
    shutil.copytree(RAISES / WORKSPACE, copy)
    line = (
        f"2026-12-07 12:33:59,001 - {logger} - INFO - [identity=site-1, run=simulate_job, peer=simulator_server, "
        f"peer_run=simulate_job] - got task assignment: name=train, id={ACCEPTED_ROUND_0}\n"
    )
    with open(copy / "site-1" / "log.txt", "a", encoding="utf-8") as f:
        f.write(line)
    return copy


def test_progress_text_the_script_printed_after_a_real_crash_does_not_count(tmp_path):
    report = report_of(_with_line(tmp_path, "TaskScriptRunner"))
    assert report["matched_pattern"] == USER and report["confidence"] == "high"
    assert went_on(report) == []


def test_the_same_line_as_clientrunners_own_record_would_count(tmp_path):
    """The control for the test above: the rule does read that line when NVFLARE's logger wrote it."""
    report = report_of(_with_line(tmp_path, "ClientRunner"))
    assert USER in went_on(report)


# --- who the traceback is of -----------------------------------------------------------------------------------


def _block(site, path):
    return Traceback("stdout.txt", site, 0, 3, "FileNotFoundError", [(path, 3, "load")])


def test_the_participant_is_the_files_site_or_the_app_folder_its_frames_name():
    app = "/tmp/nvflare/simulation/job/site-2/simulate_job/app_site-2/custom/client.py"
    assert handled.participant(_block("site-1", app)) == "site-1"
    assert handled.participant(_block(None, app)) == "site-2"
    assert handled.participant(_block(None, "/tmp/job/app_server/custom/model.py")) is None
    assert handled.participant(_block(None, "/home/user/client.py")) is None
    assert handled.participant(_block("server", app)) is None


# --- a site's console holds every job it ran -------------------------------------------------------------------

POC = REPO / "evals" / "diagnose" / "files" / "real" / "poc" / "workspace" / "prod_00"
IMPORT_ERROR_JOBS = ("d7065359-9274-414f-a6fb-afba51ff098d", "657ad52f-967d-4487-af3e-b4c564993519")


@pytest.mark.parametrize("job_id", IMPORT_ERROR_JOBS)
def test_another_jobs_later_work_on_the_same_site_does_not_handle_a_crash(job_id):
    """The real POC system's site-1 and server consoles (six jobs, run one after another): site-1's import error of
    each failed job is followed, later in the same console, by a healthy job's task assigned to site-1 and accepted
    by the server. That is another run's work: the crash stays IMPORT_ERROR at high. Failed before (h19hnd's rule,
    not scoped by run: medium)."""
    paths = [str(POC / "site-1" / "poc_console.log"), str(POC / "server" / "poc_console.log")]
    found = ev.collect_evidence(paths, job_id=job_id, max_bytes=262144, max_total_bytes=4194304, max_files=200)
    report = validated(diagnose(found, CATALOG, mode="auto", job_id=job_id))
    assert (report["matched_pattern"], report["confidence"]) == ("IMPORT_ERROR", "high"), report["likely_cause"]
    assert went_on(report) == []


def test_the_run_of_a_traceback_is_its_apps_folder_or_its_job_folder():
    sim = "/tmp/nvflare/simulation/job/site-2/simulate_job/app_site-2/custom/client.py"
    nvflare = "/venv/lib/python3.11/site-packages/nvflare/app_common/executors/task_script_runner.py"
    poc = "/ws/site-1/d7065359-9274-414f-a6fb-afba51ff098d/app_site-1/custom/client.py"
    both = Traceback("stdout.txt", None, 0, 3, "ValueError", [(nvflare, 95, "run"), (sim, 3, "load")])
    assert handled.run_of(both) == "simulate_job"  # NVFLARE's own app_common folder names no run
    assert handled.participant(both) == "site-2"
    assert handled.run_of(_block(None, poc)) == "d7065359-9274-414f-a6fb-afba51ff098d"
    in_job_folder = Traceback("ws/site-1/657ad52f-967d-4487-af3e-b4c564993519/log.txt", "site-1", 0, 3, "E", [])
    assert handled.run_of(in_job_folder) == "657ad52f-967d-4487-af3e-b4c564993519"
    assert handled.run_of(_block(None, "/home/user/client.py")) is None
    two = Traceback("stdout.txt", None, 0, 3, "E", [(sim, 1, "a"), (poc, 2, "b")])
    assert handled.run_of(two) is None


def _interleaved(tmp_path: Path) -> Path:
    """The real POC workspace with one record of another job (its `got task assignment`) written into the failed
    job's traceback in each site's console, right after the frame of the job's own client.py: what two jobs running
    at once on one site leave in `poc_console.log` (both processes write to it)."""
    root = tmp_path / "prod_00"
    shutil.copytree(POC, root)
    job = IMPORT_ERROR_JOBS[0]
    for site in ("site-1", "site-2"):
        console = root / site / "poc_console.log"
        lines = console.read_text().splitlines()
        other = next(line for line in lines if "got task assignment" in line and job not in line)
        out = []
        for line in lines:
            out.append(line)
            if line.startswith("  File ") and f"{job}/app_{site}/custom/client.py" in line:
                out.append(other)
        assert len(out) == len(lines) + 1
        console.write_text("\n".join(out) + "\n")
    return root


def test_another_jobs_record_inside_a_traceback_does_not_change_the_row(tmp_path):
    """Scoped to the named job, the console's lines after another job's record were taken as that job's, the
    traceback's end was left out, and the import error became USER_CODE_EXCEPTION at high (failed before
    read/jobscope.scope kept a traceback begun in the job's lines whole)."""
    job = IMPORT_ERROR_JOBS[0]
    found = ev.collect_evidence([str(_interleaved(tmp_path))], job_id=job, **LIMITS)
    report = validated(diagnose(found, CATALOG, mode="auto", job_id=job))
    assert (report["matched_pattern"], report["confidence"]) == ("IMPORT_ERROR", "high"), report["likely_cause"]
