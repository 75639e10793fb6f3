"""The diagnose script's known wrong or missing answers left by sessions 16-17 (session 18, h18dfix).

Each test is built from real NVFLARE 2.9.0 answers (tests/fixtures/diagnose_session18_2.9, captured for these tests,
and the real answers of tests/fixtures/*2.9 and evals/diagnose/files/real); the docstrings say which failed before.

1. A refused `poc start` is "no job" only when NVFLARE's port preflight shows no POC system was up (the server's
   ports free, or no port configuration: the workspace was never prepared); ports in use or a server not selected
   for startup may mean a running system that ran jobs.
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
POC_MIN = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9" / "poc-min-clients-3"
POC_RAISES = REPO / "tests" / "fixtures" / "diagnose_session16_2.9" / "poc-site1-raises"
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
