"""POC/production participant folders with several jobs: with --job-id only that job's evidence counts.

A real POC workspace (evals/diagnose/files/real/poc, captured from `nvflare poc start` runs of three jobs plus
two older ones) keeps each client's traceback in the site console `poc_console.log`, which every job writes into.
"""

import json
from pathlib import Path

from nvfdiag.model import Line
from nvfdiag.read.evidence import collect_evidence
from nvfdiag.read.jobscope import scope
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC = REPO / "evals" / "diagnose" / "files" / "real" / "poc"
JOBS = dict(line.split() for line in (POC / "job_ids.txt").read_text().splitlines())
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4 * 1024 * 1024, "max_files": 200}
OURS, OTHER = "11111111-2222-3333-4444-555555555555", "99999999-8888-7777-6666-555555555555"


def lines(*texts):
    return [Line("console", "site-1", number, text) for number, text in enumerate(texts, start=1)]


def test_scope_keeps_the_jobs_records_and_their_continuations():
    kept = scope(
        lines(
            "2026-01-01 10:00:00,000 - SiteRunner - INFO - system starting",
            f"2026-01-01 10:00:01,000 - ClientRunner - INFO - [identity=site-1, run={OTHER}] - client runner started",
            "Traceback (most recent call last):",
            "ValueError: belongs to the other job",
            f"2026-01-01 10:00:02,000 - ClientRunner - INFO - [identity=site-1, run={OURS}] - client runner started",
            "Traceback (most recent call last):",
            f'  File "/poc/site-1/{OURS}/app_site-1/custom/client.py", line 8, in <module>',
            "ModuleNotFoundError: No module named 'site_preprocessing'",
            "2026-01-01 10:00:03,000 - SiteRunner - INFO - idle",
            "trailing continuation of a system record",
        ),
        OURS,
    )
    assert [line.line for line in kept] == [5, 6, 7, 8]


def test_a_new_region_of_the_file_starts_without_context():
    first = Line("console", "site-1", 1, f"... run={OURS} ...")
    window = Line("console", "site-1", None, "Traceback (most recent call last):", part=2)
    assert scope([first, window], OURS) == [first]


def collect(*paths, job_id):
    return collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)


def test_other_jobs_folders_are_skipped_and_shared_logs_are_scoped():
    ev = collect(POC / "workspace" / "prod_00", job_id=JOBS["user-code-exception"])
    read = {source.path for source in ev.sources}
    others = [job for name, job in JOBS.items() if name != "user-code-exception"]
    assert not any(job in path for job in others for path in read)
    assert any(JOBS["user-code-exception"] in path for path in read)
    text = "\n".join(line.text for line in ev.lines)
    assert "site_preprocessing" not in text  # the other job's import error in the same console is left out
    assert any("folder(s) of other jobs not read" in note for note in ev.not_read)
    assert any("line(s) of other jobs or of the system left out" in note for note in ev.not_read)


def test_without_a_job_id_nothing_is_scoped():
    ev = collect(POC / "workspace" / "prod_00", job_id=None)
    assert "site_preprocessing" in "\n".join(line.text for line in ev.lines)


def test_kit_follow_ups_and_poc_folder_suggestion(tmp_path, capsys):
    import diagnose_job

    job = JOBS["import-error"]
    envelopes = [str(POC / "envelopes" / f"import-error.{kind}.json") for kind in ("meta", "logs")]
    assert diagnose_job.main([*envelopes, "--job-id", job]) == 0
    report = json.loads(capsys.readouterr().out)
    validated(report)
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION" and report["confidence"] == "low"
    assert "CLIENT_TRACEBACK_MISSING" in report["findings"]
    assert any("poc_console.log" in item for item in report["missing_evidence"])
    assert any(
        command.startswith(f"python {Path(diagnose_job.__file__).resolve()} --job-id {job} <POC workspace>")
        for command in report["follow_up_commands"]
    )
