"""Attacks on session 18's diagnose changes (h18atk): follow-ups, job identity, files the job wrote, logged messages.

Each test is built from real NVFLARE 2.9.0 evidence (evals/diagnose/files/real, tests/fixtures); "Failed before"
means on the product code of the merged session 18 (1c44349f).

1. A JSON file the job's code wrote where it runs in a POC or production workspace (its site's workspace: NVFLARE's
   client starts there, so a relative path lands beside the site's logs or in the job's run folder) states no job id
   or status: only NVFLARE's own `meta.json` of a job's folder does, and files the user names or gathered in a
   folder of their own (not a workspace) do.
2. Healthy real SimEnv runs get no finding with the mapping that now holds NVFLARE's error-level log calls; a
   logged-only record the server went on past (2.9's `Aggregated N/M results` follow it), the same record ending a
   healthy run, and one bare echo of a logged message in job.py's output decided high (strict xfails in session
   18; medium since session 19, h19cal: tests/diagnose/test_session19_calibration.py).
3. A logged consequence (the Client API's peer-gone messages) after the job's own exception does not outrank it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "evals" / "diagnose" / "files" / "real"
POC = REAL / "poc" / "workspace"
IMPORT_ERROR = "657ad52f-967d-4487-af3e-b4c564993519"  # a failed job of the real POC workspace
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()


def report_of(paths, job_id=None, job_status=None):
    found = ev.collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)
    return validated(diagnose(found, CATALOG, mode="auto", job_id=job_id, job_status=job_status))


# --- 1. a JSON file the job wrote in a POC / production workspace -------------------------------------------------

SUMMARY = {"job_id": IMPORT_ERROR, "name": "run summary", "status": "FINISHED:COMPLETED"}


def _poc_copy(tmp_path, relative: str) -> Path:
    """The real POC workspace (six jobs; the import-error job failed on both sites), copied, with a meta-shaped
    summary the job's code wrote at `relative` (a path under the site folders) saying the run completed."""
    root = tmp_path / "poc"
    shutil.copytree(POC, root)
    path = root / "prod_00" / relative
    path.write_text(json.dumps(SUMMARY))
    return root / "prod_00"


def test_a_summary_the_job_wrote_in_its_sites_workspace_states_no_status(tmp_path):
    """The client runs the job's code from the site's workspace, so `open("run_summary.json", "w")` lands in
    site-1/. Failed before: the report's job became the summary's and its status FINISHED:COMPLETED, for a job whose
    both sites raised ModuleNotFoundError, and the `job meta` question was dropped."""
    plain = report_of([POC / "prod_00"], job_id=IMPORT_ERROR)
    report = report_of([_poc_copy(tmp_path, "site-1/run_summary.json")], job_id=IMPORT_ERROR)
    assert plain["job_status"] is None
    assert report["job_status"] is None, report["job_status"]
    assert any(f"job meta {IMPORT_ERROR}" in c for c in report["follow_up_commands"]), report["follow_up_commands"]
    unnamed = report_of([_poc_copy(tmp_path / "b", "site-1/run_summary.json")])
    assert (unnamed["job_id"], unnamed["job_status"]) == (None, None), (unnamed["job_id"], unnamed["job_status"])


def test_a_summary_the_job_wrote_in_its_run_folder_states_no_status(tmp_path):
    """The same summary in the job's own run folder (site-1/<job id>/). Failed before (FINISHED:COMPLETED)."""
    report = report_of([_poc_copy(tmp_path, f"site-1/{IMPORT_ERROR}/run_summary.json")], job_id=IMPORT_ERROR)
    assert report["job_status"] is None, report["job_status"]


def test_nvflare_s_own_meta_of_a_job_folder_still_states_the_status(tmp_path):
    """Guard: NVFLARE writes the job's meta.json into its run folder (app_deployer) and a job download holds one:
    that file still states the job and its status; so does a summary the user names on the command line."""
    report = report_of([_poc_copy(tmp_path, f"site-1/{IMPORT_ERROR}/meta.json")], job_id=IMPORT_ERROR)
    assert report["job_status"] == "FINISHED:COMPLETED"
    named = tmp_path / "saved_meta.json"
    named.write_text(json.dumps(SUMMARY))
    assert report_of([named, POC / "prod_00"], job_id=IMPORT_ERROR)["job_status"] == "FINISHED:COMPLETED"


def test_a_meta_the_user_saved_in_an_evidence_folder_still_states_the_job(tmp_path):
    """Guard: a folder the user gathered (no participant workspace, no job folder) with the job meta the Flare API
    returns (a bare dict, saved as job_meta.json) beside the real import-error answer of `job logs`: it states the
    job's status."""
    folder = tmp_path / "evidence"
    folder.mkdir()
    shutil.copy(REAL / "poc" / "envelopes" / "import-error.logs.json", folder / "logs.json")
    meta = dict(SUMMARY, status="FINISHED:EXECUTION_EXCEPTION")
    (folder / "job_meta.json").write_text(json.dumps(meta))
    report = report_of([folder])
    assert (report["job_id"], report["job_status"]) == (IMPORT_ERROR, "FINISHED:EXECUTION_EXCEPTION")


# --- 2. healthy real runs and NVFLARE's logged-only messages --------------------------------------------------------

HEALTHY = REPO / "tests" / "fixtures" / "healthy_real"  # a real NVFLARE 2.9 SimEnv run that completed (README there)
EXAMPLE = REPO / "examples" / "hello-numpy"


@pytest.mark.integration
def test_healthy_simenv_runs_get_no_finding_with_the_logged_messages(tmp_path):
    """Two real hello-numpy SimEnv runs (2 clients x 4 rounds in process; 3 clients x 3 rounds with the client
    script as a subprocess, launch_external_process=True) read with the mapping that now holds NVFLARE's
    error-level log calls: no catalogued row, no suspicious content (about 40 s each)."""
    runs = [
        ("inproc", ["--n_clients", "2", "--num_rounds", "4"]),
        ("external", ["--n_clients", "3", "--num_rounds", "3"]),
    ]
    for name, args in runs:
        folder = tmp_path / name
        shutil.copytree(EXAMPLE, folder)
        if name == "external":
            job = folder / "job.py"
            job.write_text(
                job.read_text().replace(
                    'key_metric="accuracy",', 'key_metric="accuracy", launch_external_process=True,'
                )
            )
        done = subprocess.run(
            [sys.executable, "job.py", *args, "--seed", "3", "--workspace", str(folder / "ws")],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (folder / "stdout.txt").write_text(done.stdout + done.stderr)
        report = report_of([folder / "stdout.txt", folder / "ws" / "hello-numpy"])
        assert (report["matched_pattern"], report["confidence"]) == ("UNKNOWN", "low"), (name, report["likely_cause"])
        assert report["suspicious_content"] == [], name


PERSISTOR_LINE = (
    "{ts} - PTFileModelPersistor - ERROR - [identity=simulator_server, run=simulate_job, wf=cross_site_model_eval] - "
    "error loading checkpoint from /tmp/ws/server/simulate_job/models/best_FL_global_model.pt"
)


def test_a_logged_only_message_ending_a_healthy_run_is_not_high(tmp_path):
    root = tmp_path / "healthy"
    shutil.copytree(HEALTHY, root)
    log = root / "server" / "log.txt"
    last = [line for line in log.read_text().splitlines() if line[:4].isdigit()][-1]
    log.write_text(log.read_text() + PERSISTOR_LINE.format(ts=last[:23]) + "\n")
    plain = report_of([HEALTHY])
    report = report_of([root])
    assert plain["confidence"] != "high"
    assert report["confidence"] != "high", (report["matched_pattern"], report["likely_cause"])


MID_RUN = (
    "{ts} - PTFileModelPersistor - ERROR - [identity=simulator_server, run=simulate_job, wf=controller] - "
    "error loading checkpoint from /tmp/ws/server/simulate_job/models/FL_global_model.pt"
)


def test_a_logged_only_message_the_run_went_on_past_is_not_high(tmp_path):
    """A logged-only record (NVFLARE logs it and goes on) inside the real healthy run's server log, before round 1:
    2.9's FedAvg records each accepted result as `Aggregated N/M results` after it, which shows the server went on.
    Failed in session 18 (CONFIG_FILE_VALIDATION_ERROR at high: the went-on rule knew only older aggregation
    wordings)."""
    root = tmp_path / "healthy"
    shutil.copytree(HEALTHY, root)
    log = root / "server" / "log.txt"
    lines = log.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if "Round 1 started." in line) - 1
    lines.insert(at, MID_RUN.format(ts=lines[at - 1][:23]))
    log.write_text("\n".join(lines) + "\n")
    report = report_of([root])
    assert report["matched_pattern"] == "CONFIG_FILE_VALIDATION_ERROR"
    assert report["confidence"] != "high", report["likely_cause"]


SIM = REAL / "user-code-exception"  # a real SimEnv run: the client script raised ValueError on both sites
CONSEQUENCES = (
    "session aborted by CJ: job aborted",
    "CJ heartbeat timed out after 61.2s (timeout=60.0s)",
    "flare site is dead since no message received for 60.0 seconds",
)


@pytest.mark.parametrize("message", CONSEQUENCES)
def test_a_logged_consequence_after_the_real_cause_does_not_outrank_it(tmp_path, message):
    """Guard: the Client API's logged PEER_GONE_OR_TIMEOUT messages (new in the mapping) as a record of the site's
    log after the job's own exception: the exception still decides, as without the record."""
    root = tmp_path / "workspace"
    shutil.copytree(SIM / "workspace", root)
    log = root / "user-code-exception" / "site-1" / "log.txt"
    last = [line for line in log.read_text().splitlines() if line[:4].isdigit()][-1]
    log.write_text(log.read_text() + f"{last[:23]} - CellAPI - ERROR - {message}\n")
    plain = report_of([SIM / "stdout.txt", SIM / "workspace"])
    report = report_of([SIM / "stdout.txt", root])
    assert plain["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert (report["matched_pattern"], report["confidence"]) == (plain["matched_pattern"], plain["confidence"])


def test_one_bare_echo_of_a_logged_message_in_a_completed_runs_output_is_not_high(tmp_path):
    """The real healthy run (every round done on both sites) whose job.py output ends with one bare line in the
    wording the simulator logs when asked for more threads than clients (it then runs nothing)."""
    root = tmp_path / "healthy"
    shutil.copytree(HEALTHY, root)
    stdout = root / "job_stdout.txt"
    stdout.write_text(
        stdout.read_text() + "ERROR: The number of threads to run can not be larger than the number of clients.\n"
    )
    report = report_of([root])
    assert report["confidence"] != "high", (report["matched_pattern"], report["likely_cause"])
