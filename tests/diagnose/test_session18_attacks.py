"""Attacks on session 18's diagnose changes (h18atk): follow-ups, job identity, files the job wrote, logged messages.

Each test is built from real NVFLARE 2.9.0 evidence (evals/diagnose/files/real, tests/fixtures); "Failed before"
means on the product code of the merged session 18 (1c44349f).

1. A JSON file the job's code wrote where it runs in a POC or production workspace (its site's workspace: NVFLARE's
   client starts there, so a relative path lands beside the site's logs or in the job's run folder) states no job id
   or status: only NVFLARE's own `meta.json` of a job's folder, and files the user names, do.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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
