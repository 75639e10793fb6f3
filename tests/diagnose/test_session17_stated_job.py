"""The job the CLI answers name, in folders that hold several jobs; the scheduler's word for starting a job.

A careful reader given `job meta`/`job logs` answers of one job and a POC workspace with several jobs reads only
that job's records (as `--job-id` does); and NVFLARE 2.9's scheduler says `get result: (scheduled).` when it starts
a job, which is not a reason for not starting it. Both failed on 978410c (the healthy hello-numpy job's answers
beside the workspace were diagnosed IMPORT_ERROR from another job, and every started job was "not started: `scheduled`").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC = REPO / "evals" / "diagnose" / "files" / "real" / "poc"
JOBS = dict(line.split() for line in (POC / "job_ids.txt").read_text().splitlines())
WORKSPACE = POC / "workspace" / "prod_00"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4 * 1024 * 1024, "max_files": 200}
CATALOG = cat.load_catalog()
SCOPED = "so only its folders and lines were read"


def _collect(*paths, job_id=None):
    return collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)


def _report(*paths, job_id=None):
    return validated(diagnose(_collect(*paths, job_id=job_id), CATALOG, job_id=job_id))


def _answers(name):
    return POC / "envelopes" / f"{name}.meta.json", POC / "envelopes" / f"{name}.logs.json"


def test_a_healthy_jobs_answers_beside_a_shared_workspace_read_only_that_job():
    report = _report(*_answers("hello-numpy"), WORKSPACE)
    assert report["matched_pattern"] == "UNKNOWN", report["likely_cause"]
    assert report["job_id"] == JOBS["hello-numpy"] and report["job_status"] == "FINISHED:COMPLETED"
    assert "FINISHED:COMPLETED" in report["likely_cause"]
    ev = _collect(*_answers("hello-numpy"), WORKSPACE)
    assert any(SCOPED in note for note in ev.not_read)
    others = [job for name, job in JOBS.items() if name != "hello-numpy"]
    assert not any(job in source.path for job in others for source in ev.sources)


def test_the_stated_job_is_read_the_same_as_with_its_id_given():
    for name in ("import-error", "user-code-exception"):
        stated = _report(*_answers(name), WORKSPACE)
        given = _report(*_answers(name), WORKSPACE, job_id=JOBS[name])
        keys = ("matched_pattern", "confidence", "likely_cause", "job_id", "job_status")
        assert {k: stated[k] for k in keys} == {k: given[k] for k in keys}, name
    assert _report(*_answers("user-code-exception"), WORKSPACE)["matched_pattern"] == "USER_CODE_EXCEPTION"


def test_two_jobs_stated_keep_the_whole_reading():
    ev = _collect(*_answers("hello-numpy"), *_answers("import-error"), WORKSPACE)
    assert not any(SCOPED in note for note in ev.not_read)
    assert any(JOBS["import-error"] in source.path for source in ev.sources)


def test_a_stated_job_the_folders_do_not_hold_keeps_the_whole_reading(tmp_path):
    meta = json.loads(_answers("hello-numpy")[0].read_text())
    elsewhere = "0f0f0f0f-1111-2222-3333-444444444444"
    text = json.dumps(meta).replace(JOBS["hello-numpy"], elsewhere)
    assert elsewhere in text
    (tmp_path / "meta.json").write_text(text)
    ev = _collect(tmp_path / "meta.json", WORKSPACE)
    assert ev.job_id == elsewhere and not any(SCOPED in note for note in ev.not_read)
    assert any(JOBS["import-error"] in source.path for source in ev.sources)


def test_a_workspace_of_one_job_is_read_once_as_it_is(tmp_path):
    ev = _collect(*_answers("hello-numpy"), WORKSPACE / "site-1" / JOBS["hello-numpy"])
    assert not any(SCOPED in note for note in ev.not_read)


def test_a_job_id_in_log_text_does_not_scope(tmp_path):
    """Only a structured statement (CLI answer, job meta, bundle) names the job: a printed id is text."""
    log = tmp_path / "stdout.txt"
    log.write_text(f"submitted job {JOBS['hello-numpy']}\n")
    ev = _collect(log, WORKSPACE)
    assert not any(SCOPED in note for note in ev.not_read)


# --- the scheduler's record of starting the job --------------------------------------------------------------------

REFUSALS = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9" / "poc-min-clients-3"


def test_the_record_of_starting_a_job_is_not_a_reason_for_not_starting_it():
    report = _report(WORKSPACE, job_id=JOBS["hello-numpy"])
    assert "did not start the job" not in report["likely_cause"], report["likely_cause"]


def test_refusals_before_a_scheduled_record_are_not_said(tmp_path):
    refusals = (REFUSALS / "server_log.txt").read_text().splitlines()[:3]
    job = json.loads((REFUSALS / "job_submit.json").read_text())["data"]["job_id"]
    head = "2026-12-07 09:35:35,787 - DefaultJobScheduler - INFO - [identity=server, run=?] - "
    log = tmp_path / "server_log.txt"
    log.write_text("\n".join([*refusals, f"{head}Try to schedule job {job}, get result: (scheduled)."]) + "\n")
    assert "did not start the job" not in _report(REFUSALS / "job_wait.json", log)["likely_cause"]
    (tmp_path / "refused.txt").write_text("\n".join(refusals) + "\n")
    assert "did not start the job" in _report(REFUSALS / "job_wait.json", tmp_path / "refused.txt")["likely_cause"]


# --- Python's other launcher path --------------------------------------------------------------------------------


def test_a_program_not_found_through_posix_spawn_is_a_program(tmp_path):
    """subprocess starts a program given by path with `close_fds=False` through `_posix_spawn` (CPython 3.8+): a real
    run's traceback ends there, not in `_execute_child`; it was DATA_PATH_NOT_FOUND on 35a3133."""
    script = tmp_path / "prepare.py"
    script.write_text("import subprocess\nsubprocess.run(['/opt/h17/no-such-tool', '--version'], close_fds=False)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "in _posix_spawn" in done.stderr, done.stderr[-600:]  # the real launcher path
    log = tmp_path / "stdout.txt"
    log.write_text(done.stderr)
    report = _report(log)
    assert report["matched_pattern"] != "DATA_PATH_NOT_FOUND"
    assert "'/opt/h17/no-such-tool'" in report["likely_cause"]
