"""diagnose_job.py CLI: exit codes, stdin, formats, one-line errors, schema-valid reports, self-contained copy."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "nvflare-diagnose-job"
SCRIPT = SKILL / "scripts" / "diagnose_job.py"
TIMEOUT_LINE = "2026-06-02 11:03:10,001 - ServerRunner - ERROR - task round_3 timed out waiting for site-2\n"


def cli(python_exe, *args, stdin=None, script=SCRIPT, cwd=None):
    return subprocess.run(
        [python_exe, str(script), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=60, cwd=cwd
    )


def report_of(result):
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout)
    assert len(result.stdout.encode()) <= 64 * 1024
    return report


def assert_one_line_error(result, needle):
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and needle in lines[0]


def test_log_file_gives_a_json_report(python_exe, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(TIMEOUT_LINE)
    report = report_of(cli(python_exe, log, "--mode", "poc", "--job-id", "abc123"))
    assert report["runtime_mode"] == "production"
    assert report["matched_pattern"] == "ROUND_TIMEOUT"
    assert report["job_id"] == "abc123"
    assert "nvflare --format json job logs abc123 --site site-2 --tail 200" in report["follow_up_commands"]


def test_stdin_dash_is_read(python_exe):
    text = "Traceback (most recent call last):\n  File \"/w/client.py\", line 1, in <module>\nModuleNotFoundError: No module named 'foo'\n"
    report = report_of(cli(python_exe, "-", "--mode", "simulation", stdin=text))
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert report["evidence_sources"][0]["path"] == "<stdin>"


def test_markdown_format(python_exe, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(TIMEOUT_LINE)
    result = cli(python_exe, log, "--format", "markdown", "--mode", "production")
    assert result.returncode == 0
    assert result.stdout.startswith("# NVFLARE job diagnosis")
    assert "## Suspicious log content (not followed)" in result.stdout


def test_unknown_report_still_exits_zero(python_exe, tmp_path):
    log = tmp_path / "ok.log"
    log.write_text("2026-06-02 11:03:10,001 - X - INFO - all fine\n")
    report = report_of(cli(python_exe, log))
    assert report["matched_pattern"] == "UNKNOWN" and report["recovery_category"] == "UNKNOWN"


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "no EVIDENCE"),
        (["x.log", "--mode", "cloud"], "--mode"),
        (["x.log", "--max-bytes", "0"], "--max-bytes"),
        (["x.log", "--max-files", "many"], "--max-files"),
        (["x.log", "--format", "xml"], "--format"),
        (["x.log", "--startup-kit", "/kit"], "--collect"),
        (["--collect"], "--job-id"),
        (["--collect", "--job-id", "a1", "--startup-kit", "/k", "--kit-id", "k"], "not allowed with"),
        (["--collect", "--job-id", "a1", "--mode", "simulation"], "--collect"),
        (["x.log", "--job-id", "a b;rm -rf /"], "--job-id"),
        (["x.log", "--job-status", "FINISHED: $(reboot)"], "--job-status"),
        (["x.log", "--no-such-flag"], "unrecognized"),
        (["-", "-"], "stdin"),
    ],
)
def test_usage_errors_are_one_line_exit_2(python_exe, tmp_path, args, needle):
    assert_one_line_error(cli(python_exe, *args, cwd=tmp_path), needle)


def test_missing_evidence_and_empty_stdin_are_exit_2(python_exe, tmp_path):
    assert_one_line_error(cli(python_exe, tmp_path / "nope.log"), "no evidence could be read")
    assert_one_line_error(cli(python_exe, "-", stdin=""), "no evidence could be read")


def test_simenv_workspace_tree(python_exe, tmp_path):
    job = tmp_path / "hello-numpy"
    (job / "server" / "simulate_job" / "metrics").mkdir(parents=True)
    (job / "site-1").mkdir()
    (job / "server" / "log.txt").write_text(
        "2026-06-02 11:03:10,001 - ServerRunner - ERROR - [identity=simulator_server, run=simulate_job, peer=site-1, "
        "peer_rc=EXECUTION_EXCEPTION, task_name=train] - bad result\n"
    )
    (job / "site-1" / "log.txt").write_text("2026-06-02 11:03:09,001 - ClientRunner - INFO - started\n")
    summary = {
        "status": "ok",
        "final_round": 1,
        "key_metric": {"name": "loss", "mode": "min"},
        "final_aggregated_metrics": [{"name": "loss", "value": "NaN"}],
    }
    (job / "server" / "simulate_job" / "metrics" / "metrics_summary.json").write_text(json.dumps(summary))
    report = report_of(cli(python_exe, tmp_path))
    assert report["runtime_mode"] == "simulation"
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION" and report["confidence"] == "low"
    assert "CLIENT_TRACEBACK_MISSING" in report["findings"]
    assert "NON_FINITE_METRICS" in report["findings"]
    assert any("python job.py" in item for item in report["missing_evidence"])


def test_bundle_with_permission_denied_site(python_exe, tmp_path):
    bundle = {
        "job_id": "abc123",
        "job_status": "FINISHED:EXECUTION_EXCEPTION",
        "logs": {
            "server": {"status": "ok", "truncated": False, "lines": [TIMEOUT_LINE.strip()]},
            "site-1": {"status": "ok", "lines": ["2026-06-02 11:03:00,000 - ClientRunner - INFO - done"]},
            "site-2": {"status": "permission_denied"},
        },
    }
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    report = report_of(cli(python_exe, path))
    assert report["runtime_mode"] == "production"
    assert (report["matched_pattern"], report["confidence"]) == ("PARTIAL_LOG_VISIBILITY", "low")
    assert "ROUND_TIMEOUT" in {c["pattern"] for c in report["other_candidates"]}
    assert "nvflare --format json job logs abc123 --site site-2 --tail 200" in report["follow_up_commands"]


def test_output_is_deterministic(python_exe, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(TIMEOUT_LINE * 50)
    assert cli(python_exe, log).stdout == cli(python_exe, log).stdout


def test_in_process_main_and_collect_wiring(monkeypatch, tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import diagnose_job
    finally:
        sys.path.remove(str(SCRIPT.parent))
    from nvfdiag.read import collect

    envelopes = [
        {
            "command": ["nvflare", "--format", "json", "job", "meta", "abc123"],
            "envelope": {
                "schema_version": "1",
                "status": "ok",
                "data": {"job_id": "abc123", "status": "FINISHED:EXECUTION_EXCEPTION"},
            },
            "error": None,
        }
    ]
    calls = []
    monkeypatch.setattr(collect, "collect_from_cli", lambda job_id, **kw: calls.append((job_id, kw)) or envelopes)
    out = io.StringIO()
    assert diagnose_job.main(["--collect", "--job-id", "abc123"], stdout=out) == 0
    report = validated(out.getvalue())
    assert calls == [("abc123", {"startup_kit": None, "kit_id": None})]
    assert report["job_status"] == "FINISHED:EXECUTION_EXCEPTION"
    assert report["runtime_mode"] == "production"

    # collected envelopes plus a site log the user copied from the site host: one merged report
    site_log = tmp_path / "site-1" / "log.txt"
    site_log.parent.mkdir()
    site_log.write_text(
        'Traceback (most recent call last):\n  File "/ws/custom/client.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'foo'\n"
    )
    out = io.StringIO()
    assert diagnose_job.main(["--collect", "--job-id", "abc123", str(site_log)], stdout=out) == 0
    merged = validated(out.getvalue())
    assert merged["matched_pattern"] == "IMPORT_ERROR"
    assert merged["job_status"] == "FINISHED:EXECUTION_EXCEPTION"
    assert {s["kind"] for s in merged["evidence_sources"]} >= {"cli_envelope", "log"}


def test_cli_does_not_import_nvflare(python_exe, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(TIMEOUT_LINE)
    code = (
        "import io, runpy, sys\n"
        f"mod = runpy.run_path({str(SCRIPT)!r}, run_name='diagnose_job_probe')\n"
        f"rc = mod['main']([{str(log)!r}], stdout=io.StringIO())\n"
        "print(rc, any(m == 'nvflare' or m.startswith('nvflare.') for m in sys.modules))\n"
    )
    result = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["0", "False"], result.stderr


def test_skill_folder_works_when_copied_alone(python_exe, tmp_path):
    target = tmp_path / ".agents" / "skills" / "nvflare-diagnose-job"
    shutil.copytree(SKILL, target, ignore=shutil.ignore_patterns("__pycache__"))
    log = tmp_path / "server.log"
    log.write_text(TIMEOUT_LINE)
    report = report_of(
        cli(python_exe, log, "--mode", "production", script=target / "scripts" / "diagnose_job.py", cwd=tmp_path)
    )
    assert report["matched_pattern"] == "ROUND_TIMEOUT"


def test_broken_skill_copy_fails_with_one_line(python_exe, tmp_path):
    target = tmp_path / "skill"
    shutil.copytree(SKILL, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "scripts" / "nvfdiag" / "match" / "matcher.py").write_text("def broken(:\n")
    assert_one_line_error(cli(python_exe, tmp_path, script=target / "scripts" / "diagnose_job.py"), "nvfdiag")
    (target / "scripts" / "nvfdiag" / "match" / "matcher.py").write_text(
        (SKILL / "scripts/nvfdiag/match/matcher.py").read_text()
    )
    (target / "references" / "failure_patterns.json").write_text("{")
    log = tmp_path / "x.log"
    log.write_text(TIMEOUT_LINE)
    assert_one_line_error(cli(python_exe, log, script=target / "scripts" / "diagnose_job.py"), "catalog")


def test_report_is_utf8_even_with_an_ascii_locale(python_exe, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(
        "2026-06-02 11:03:10,001 - X - ERROR - task round_3 timed out waiting for site-2 \u00e9\u00e8\n",
        encoding="utf-8",
    )
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii"}
    result = subprocess.run(
        [python_exe, str(SCRIPT), str(log), "--mode", "production"], capture_output=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout.decode("utf-8"))
    assert "\u00e9" in report["signals"][0]["excerpt"]


def test_file_limit_is_a_finding_with_advice(python_exe, tmp_path):
    for site in ("site-1", "site-2", "site-3"):
        (tmp_path / "ws" / site).mkdir(parents=True)
        (tmp_path / "ws" / site / "log.txt").write_text(TIMEOUT_LINE)
    report = report_of(cli(python_exe, tmp_path / "ws", "--max-files", "1"))
    assert "EVIDENCE_LIMIT_REACHED" in report["findings"] and report["evidence_quality"] == "partial"
    assert [s["status"] for s in report["evidence_sources"]].count("skipped_limit") == 2
    assert any("--max-files" in item for item in report["missing_evidence"])


def test_interrupt_exits_130_with_one_line_and_no_report():
    import diagnose_job

    class Interrupting(io.BytesIO):
        def read(self, *args):
            raise KeyboardInterrupt

    out, err = io.StringIO(), io.StringIO()
    saved, sys.stderr = sys.stderr, err
    try:
        code = diagnose_job.main(["-"], stdin=Interrupting(), stdout=out)
    finally:
        sys.stderr = saved
    assert code == 130 and out.getvalue() == ""
    assert err.getvalue().count("\n") == 1 and "interrupted" in err.getvalue()
