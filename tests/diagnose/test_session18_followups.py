"""The diagnose script's known wrong or missing answers left by sessions 16-17 (session 18, h18dfix).

Each test is built from real NVFLARE 2.9.0 answers (tests/fixtures/diagnose_session18_2.9, captured for these tests,
and the real answers of evals/diagnose/files/real); "Failed before" means on the product code of 7a6f785.

1. A refused `poc start` is "no job" only when NVFLARE's port preflight shows no POC system was up (the server's
   ports free, or no port configuration: the workspace was never prepared); ports in use or a server not selected
   for startup may mean a running system that ran jobs.
2. Once an ended job's `job logs --site all` answer is in hand, no `job logs --site S` (NVFLARE answers it from the
   same stores); the site's own log instead.
3. A saved `job meta` / `job logs --site all` answer is not asked for again; a report left without a command names
   the sites' own logs.
4. The job status is the job the report names (none when two jobs are named and none chosen).
5. The healthy job's `get result: (scheduled).` is not a reason it did not start (guard; fixed in session 17).
6. evidence_quality_note says when the reading kept only the job the CLI answers name.
7. A JSON file in a SimEnv workspace (where the job's code runs) states no job id or status.
"""

from __future__ import annotations

from pathlib import Path

from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
S18 = REPO / "tests" / "fixtures" / "diagnose_session18_2.9"
REAL = REPO / "evals" / "diagnose" / "files" / "real"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()


def report_of(paths, mode="auto", job_id=None, job_status=None):
    found = ev.collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)
    return validated(diagnose(found, CATALOG, mode=mode, job_id=job_id, job_status=job_status))


def job_commands(report) -> list[str]:
    return [c for c in report["follow_up_commands"] if c.startswith("nvflare ") and " job " in c]


# --- 1. a refused poc start while a POC system may be running ------------------------------------------------------


def test_a_poc_start_refused_while_the_server_port_is_in_use_keeps_the_job_follow_ups():
    """Real: `poc start -p server -p site-9` while the POC server's fed_learn_port is taken (port_conflict true).
    Failed before (no job command, no job-status sentence: every refusal was "no job")."""
    report = report_of([S18 / "poc-start-ports-in-use" / "poc_start.json"])
    assert report["matched_pattern"] == "NVFLARE_COMMAND_ERROR"
    assert job_commands(report), report["follow_up_commands"]
    assert any("job status" in s for s in report["missing_evidence"]), report["missing_evidence"]


def test_a_poc_start_of_clients_only_does_not_say_no_system_runs():
    """Real: `poc start -p site-9` (server not selected: its ports were not checked). Failed before."""
    report = report_of([S18 / "poc-start-server-not-selected" / "poc_start.json"])
    assert job_commands(report), report["follow_up_commands"]


def test_a_poc_start_refused_with_its_ports_free_is_still_no_job():
    """Guard (real, ports checked and free): nothing was up, so no job command."""
    report = report_of([S18 / "poc-start-ports-free" / "poc_start.json"])
    assert job_commands(report) == [], report["follow_up_commands"]
    assert not any("job status" in s for s in report["missing_evidence"]), report["missing_evidence"]


def test_a_poc_start_in_an_unprepared_workspace_is_still_no_job():
    """Guard (real, no port configuration: the workspace was never prepared)."""
    report = report_of([REAL / "poc-not-prepared" / "poc_start.json"])
    assert job_commands(report) == [], report["follow_up_commands"]


# --- 2. a `job logs --site all` answer that holds only the server --------------------------------------------------

ENVELOPES = REAL / "poc" / "envelopes"
IMPORT_ERROR = "657ad52f-967d-4487-af3e-b4c564993519"  # the job of ENVELOPES/import-error.*
HELLO = "7b58b9a8-5b7f-4e89-899c-e669423796f3"  # the job of ENVELOPES/hello-numpy.*


def test_a_server_only_all_sites_answer_is_not_followed_by_a_per_site_logs_command():
    """Real import-error POC answers (meta: FINISHED:EXECUTION_EXCEPTION; `--site all` gave only the server's log,
    client logs not streamed): NVFLARE answers `--site site-1` from the same stores (job_cmds.get_job_log), so it
    is not asked; the site's own log is. Failed before (`job logs <id> --site site-1` was suggested)."""
    report = report_of([ENVELOPES / "import-error.meta.json", ENVELOPES / "import-error.logs.json"])
    assert report["job_id"] == IMPORT_ERROR
    assert not any("--site site-1" in c for c in report["follow_up_commands"]), report["follow_up_commands"]
    assert any("site-1 host" in c and f"{IMPORT_ERROR}/log.txt" in c for c in report["follow_up_commands"])


def test_an_all_sites_answer_of_a_job_that_may_still_run_keeps_the_per_site_command():
    """Guard: without an ended status, a log being streamed live may reach `--site site-1` and not the answer."""
    report = report_of([ENVELOPES / "import-error.logs.json"])
    assert any(f"job logs {IMPORT_ERROR} --site site-1" in c for c in report["follow_up_commands"])


def test_an_all_sites_answer_of_another_job_does_not_stand_for_this_one():
    """Guard: the user's job is not the one the saved `--site all` answer is about: its per-site command stays."""
    other = "2bc24454-f48f-44ab-8373-dac843d4c488"
    report = report_of([ENVELOPES / "import-error.logs.json"], job_id=other)
    assert any(f"job logs {other} --site site-1" in c for c in report["follow_up_commands"]), report[
        "follow_up_commands"
    ]


# --- 3. a saved `job logs --site all` / `job meta` answer is not asked for again -----------------------------------


def test_saved_meta_and_all_logs_answers_are_not_asked_for_again():
    """Real import-error POC answers (meta + logs). Failed before (both commands were repeated)."""
    report = report_of([ENVELOPES / "import-error.meta.json", ENVELOPES / "import-error.logs.json"])
    commands = report["follow_up_commands"]
    assert not any(f"job meta {IMPORT_ERROR}" in c or "--site all" in c for c in commands), commands
    assert commands


def test_the_healthy_jobs_answers_get_a_replacement_follow_up_not_a_repeat():
    """Real hello-numpy POC answers (FINISHED:COMPLETED, UNKNOWN at low confidence): the spec wants a follow-up, and
    the one not yet given is a site's own log. Failed before (the two saved commands were repeated)."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "hello-numpy.logs.json"])
    assert report["confidence"] != "high" and report["missing_evidence"]
    commands = report["follow_up_commands"]
    assert commands and not any(f"job meta {HELLO}" in c or "--site all" in c for c in commands), commands
    assert any("host, read <site workspace>" in c and HELLO in c for c in commands), commands


def test_only_the_answer_in_hand_is_dropped():
    """Guard: with only the meta answer, `job logs --site all` is still asked; `job meta` is not."""
    report = report_of([ENVELOPES / "import-error.meta.json"])
    commands = report["follow_up_commands"]
    assert any(f"job logs {IMPORT_ERROR} --site all" in c for c in commands), commands
    assert not any(f"job meta {IMPORT_ERROR}" in c for c in commands), commands


# --- 4. the job status belongs to the job the report names -----------------------------------------------------------


def test_the_status_is_the_named_jobs_not_the_first_stated():
    """Real meta answers of two POC jobs (hello-numpy COMPLETED first, import-error EXECUTION_EXCEPTION), the user
    names the second. Failed before (FINISHED:COMPLETED, the other job's, and UNKNOWN "nothing says it failed")."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "import-error.meta.json"], job_id=IMPORT_ERROR)
    assert report["job_id"] == IMPORT_ERROR
    assert report["job_status"] == "FINISHED:EXECUTION_EXCEPTION"
    assert "FINISHED:COMPLETED" not in report["likely_cause"]


def test_two_jobs_and_none_named_report_no_status():
    """Two ids, none picked: neither job's status is the report's. Failed before (FINISHED:COMPLETED)."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "import-error.meta.json"])
    assert report["job_id"] is None and report["job_status"] is None
    assert any("different job ids" in s for s in report["missing_evidence"]), report["missing_evidence"]


def test_a_named_job_with_no_status_stated_gets_none_from_another_job():
    """The import-error job's logs (no status) beside the healthy job's meta: no status. Failed before."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "import-error.logs.json"], job_id=IMPORT_ERROR)
    assert report["job_status"] is None
    assert any("job status" in s for s in report["missing_evidence"]), report["missing_evidence"]


def test_one_job_keeps_its_stated_status():
    """Guard: the meta answer and the logs of one job."""
    report = report_of([ENVELOPES / "import-error.meta.json", ENVELOPES / "import-error.logs.json"])
    assert (report["job_id"], report["job_status"]) == (IMPORT_ERROR, "FINISHED:EXECUTION_EXCEPTION")


# --- 5. the healthy job's scheduler record ----------------------------------------------------------------------------

POC_WORKSPACE = REAL / "poc" / "workspace" / "prod_00"


def test_the_healthy_poc_job_is_not_said_to_be_unscheduled():
    """Real hello-numpy POC run (meta, logs and the POC workspace, no --job-id): NVFLARE 2.9's scheduler writes
    `get result: (scheduled).` when it starts a job. Said "did not start the job: `scheduled`" (and IMPORT_ERROR
    from another job) before 35a3133 (session 17's coordinator); a guard here, as the brief's item 5 named it."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "hello-numpy.logs.json", POC_WORKSPACE])
    assert (report["job_id"], report["job_status"]) == (HELLO, "FINISHED:COMPLETED")
    assert "did not start the job" not in report["likely_cause"], report["likely_cause"]
    assert report["matched_pattern"] == "UNKNOWN"


# --- 6. the report says when other jobs were skipped ----------------------------------------------------------------


def test_the_report_says_the_reading_kept_only_the_job_the_answers_name():
    """Real hello-numpy answers beside the real POC workspace (six jobs): the reading is scoped to the answers' job,
    and evidence_quality_note (a field of the published schema) says so. Failed before (only in `not_read`)."""
    report = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "hello-numpy.logs.json", POC_WORKSPACE])
    note = report["evidence_quality_note"]
    assert "several jobs" in note and f"only job {HELLO}" in note and "--job-id" in note, note


def test_a_reading_of_one_job_has_no_scoping_note():
    """Guard: the answers alone, and the workspace with the user's --job-id (the user chose the job)."""
    alone = report_of([ENVELOPES / "hello-numpy.meta.json", ENVELOPES / "hello-numpy.logs.json"])
    chosen = report_of([POC_WORKSPACE], job_id=HELLO)
    assert "several jobs" not in alone["evidence_quality_note"]
    assert "several jobs" not in chosen["evidence_quality_note"]


# --- 7. a file the job may have written states no job ---------------------------------------------------------------

SIM = REAL / "user-code-exception"  # a real SimEnv run: site-1's code raised; stdout and the SimEnv workspace


def _sim_copy(tmp_path, summaries: dict[str, str]):
    """The real SimEnv workspace, copied, with JSON files the job's code wrote where it runs ({relative path: job id});
    each is shaped as job meta saying the run completed."""
    import json
    import shutil

    root = tmp_path / "workspace"
    shutil.copytree(SIM / "workspace", root)
    for relative, job_id in summaries.items():
        path = root / "user-code-exception" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"job_id": job_id, "name": "summary", "status": "FINISHED:COMPLETED"}))
    return root


def test_a_summary_the_job_wrote_in_its_simenv_workspace_states_no_job_or_status(tmp_path):
    """Failed before: the job's own file made the job id and FINISHED:COMPLETED the report's job status."""
    root = _sim_copy(tmp_path, {"site-1/simulate_job/app_site-1/run_summary.json": HELLO})
    plain = report_of([SIM / "stdout.txt", SIM / "workspace"])
    report = report_of([SIM / "stdout.txt", root])
    assert report["job_status"] is None and report["job_id"] is None, (report["job_id"], report["job_status"])
    assert (report["matched_pattern"], report["confidence"]) == (plain["matched_pattern"], plain["confidence"])


def test_two_job_written_ids_do_not_blank_the_users_job_id(tmp_path):
    """Two such files with different ids beside a saved CLI answer of the user (a real `job meta` answer): the
    answer's id is the report's. Failed before (two ids: job_id null, `<job_id>` in the commands)."""
    root = _sim_copy(
        tmp_path,
        {"site-1/run_summary.json": HELLO, "site-2/simulate_job/summary.json": "2bc24454-f48f-44ab-8373-dac843d4c488"},
    )
    report = report_of([ENVELOPES / "import-error.meta.json", root])
    assert report["job_id"] == IMPORT_ERROR, report["missing_evidence"]
    assert not any("different job ids" in s for s in report["missing_evidence"])


def test_a_saved_answer_the_user_names_still_states_the_job():
    """Guard: a CLI answer given on the command line beside the SimEnv workspace still states its job and status."""
    report = report_of([ENVELOPES / "import-error.meta.json", SIM / "workspace"])
    assert (report["job_id"], report["job_status"]) == (IMPORT_ERROR, "FINISHED:EXECUTION_EXCEPTION")
