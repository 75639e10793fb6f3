"""What a careful reader does with three kinds of real NVFLARE 2.9 evidence (session 15).

Promises guarded:
- a traceback the job's script caught, logged and went past (an optional import) does not decide the row: the
  later traceback of the same script that ended the run does, at most medium; this holds for the in-process Client
  API (the caught traceback as INFO records, the fatal one at ERROR) and for launch_external_process=True (NVFLARE
  echoes every line of the subprocess, the fatal traceback too, as INFO records). A fatal ImportError stays
  IMPORT_ERROR at high in both modes;
- a FileNotFoundError that Python's process launcher raised names a program that cannot be started, not a missing
  data path: the recipe's `command=` is SIMULATION_CONFIG_ERROR when NVFLARE's external-process backend made the
  call, and the program is named in likely_cause; a real missing data file stays DATA_PATH_NOT_FOUND;
- a CLI envelope whose wait ran out (`error_code: TIMEOUT`) is not a refused command: it supports no row, and the
  server scheduler's reason for not starting the job is said instead; a CLI refusing a command stays
  NVFLARE_COMMAND_ERROR.

The real captures are in tests/fixtures/diagnose_careful_reader_2.9 (README.md says how they were made).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match import handled, waits
from nvfdiag.match.tracebacks import find_tracebacks
from nvfdiag.model import Line
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9"
EVAL_REAL = REPO / "evals" / "diagnose" / "files" / "real"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()


def from_files(*paths, mode="auto"):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(diagnose(found, CATALOG, mode=mode, job_id=None))


def other(report, pattern):
    return next((c for c in report["other_candidates"] if c["pattern"] == pattern), None)


# --- 1. a handled traceback is not the run's cause ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "handled-inproc/stdout.txt",  # in-process: the caught traceback as INFO records, the fatal one at ERROR
        "handled-ext/stdout.txt",  # external process: both tracebacks echoed as INFO records
        "handled-ext/site-1/log.txt",  # the site's own log of that run
    ],
)
def test_a_caught_import_traceback_does_not_decide_the_row(name):
    report = from_files(REAL / name)
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert report["confidence"] == "medium"
    assert "ValueError" in report["likely_cause"]
    assert other(report, "IMPORT_ERROR")["reason"] == handled.REASON


def test_a_caught_traceback_no_row_matched_leaves_the_fatal_one_high():
    """The in-process site log of the same run: no row reads the caught traceback, so nothing caps the fatal one."""
    report = from_files(REAL / "handled-inproc" / "site-1" / "log.txt")
    assert (report["matched_pattern"], report["confidence"]) == ("USER_CODE_EXCEPTION", "high")
    assert "ValueError" in report["likely_cause"]


@pytest.mark.parametrize(
    "path",
    [
        REAL / "fatal-import-ext" / "stdout.txt",  # external process: the fatal traceback is INFO records only
        EVAL_REAL / "import-error" / "stdout.txt",  # in-process
    ],
)
def test_a_fatal_import_error_stays_import_error_at_high(path):
    report = from_files(path)
    assert (report["matched_pattern"], report["confidence"]) == ("IMPORT_ERROR", "high")
    assert other(report, "IMPORT_ERROR") is None


def _lines(text: str, source="stdout.txt") -> list[Line]:
    return [Line(source, None, n + 1, t) for n, t in enumerate(text.splitlines())]


def _tb(path: str, exc: str, function="<module>") -> str:
    return f'Traceback (most recent call last):\n  File "{path}", line 3, in {function}\n    x()\n{exc}\n'


def test_only_an_earlier_traceback_of_another_exception_in_the_same_script_is_handled():
    script = "/tmp/nvflare/simulation/job/site-1/simulate_job/app_site-1/custom/client.py"
    other_site = script.replace("site-1", "site-2")
    lines = _lines(
        _tb(script, "ModuleNotFoundError: No module named 'seaborn'")
        + _tb(other_site, "ValueError: bad label")  # another site's process: says nothing about site-1's import
        + _tb(script, "ModuleNotFoundError: No module named 'seaborn'")  # the same exception again: a relaunch
    )
    assert handled.handled_blocks(find_tracebacks(lines), lines) == []
    lines = _lines(_tb(script, "ModuleNotFoundError: No module named 'seaborn'") + _tb(script, "ValueError: bad"))
    assert [b.exc_type for b in handled.handled_blocks(find_tracebacks(lines), lines)] == ["ModuleNotFoundError"]


@pytest.mark.parametrize("raise_from", [" from error", ""])  # `direct cause` and `during handling` chains
def test_an_import_error_raised_again_as_another_exception_is_not_handled(tmp_path, raise_from):
    script = tmp_path / "client.py"
    script.write_text(
        "try:\n    import h15_missing_helper\nexcept ImportError as error:\n"
        f"    raise RuntimeError('client.py needs h15_missing_helper'){raise_from}\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert "ModuleNotFoundError" in done.stderr and "RuntimeError" in done.stderr  # a real chained traceback
    lines = _lines(done.stderr)
    assert handled.handled_blocks(find_tracebacks(lines), lines) == []
    log = tmp_path / "stdout.txt"
    log.write_text(done.stderr)
    report = from_files(log, mode="simulation")
    assert all(c["reason"] != handled.REASON for c in report["other_candidates"])


# --- 2. a program that cannot be started is not a missing data path ----------------------------------------------


def test_a_missing_launch_command_is_the_recipes_command_not_a_data_path():
    report = from_files(REAL / "command-missing" / "stdout.txt")
    assert report["matched_pattern"] == "SIMULATION_CONFIG_ERROR"
    assert report["confidence"] == "medium"
    assert "'python3.99'" in report["likely_cause"]
    assert all(s["pattern"] != "DATA_PATH_NOT_FOUND" for s in report["signals"])


def test_the_jobs_own_subprocess_of_a_missing_tool_is_not_a_data_path(tmp_path):
    script = tmp_path / "prepare.py"
    script.write_text("import subprocess\nsubprocess.run(['h15-no-such-tool', '--version'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert "_execute_child" in done.stderr  # a real traceback of Python's launcher
    log = tmp_path / "stdout.txt"
    log.write_text(done.stderr)
    report = from_files(log, mode="simulation")
    assert report["matched_pattern"] != "DATA_PATH_NOT_FOUND"
    assert "'h15-no-such-tool'" in report["likely_cause"]


def test_a_real_missing_data_file_stays_data_path_not_found():
    report = from_files(EVAL_REAL / "relative-data-path" / "stdout.txt")
    assert report["matched_pattern"] == "DATA_PATH_NOT_FOUND"
    assert "program the run tried to start" not in report["likely_cause"]


# --- 3. a wait that ran out is not a refused command --------------------------------------------------------------

POC = REAL / "poc-min-clients-3"


def test_a_job_wait_that_ran_out_supports_no_row():
    report = from_files(POC / "job_submit.json", POC / "job_wait.json")
    assert json.loads((POC / "job_wait.json").read_text())["error_code"] == "TIMEOUT"
    assert report["matched_pattern"] == "UNKNOWN"
    assert report["signals"] == []


def test_the_schedulers_reason_is_said_when_the_wait_ran_out():
    report = from_files(POC / "job_submit.json", POC / "job_wait.json", POC / "server_log.txt")
    assert report["matched_pattern"] == "UNKNOWN"
    assert report["runtime_mode"] == "production"
    assert "`connected sites (2) < min_sites (3)`" in report["likely_cause"]


def test_a_refused_cli_command_stays_nvflare_command_error():
    report = from_files(EVAL_REAL / "poc-not-prepared" / "poc_start.json")
    assert report["matched_pattern"] == "NVFLARE_COMMAND_ERROR"


def test_only_the_timeout_code_marks_a_wait_that_ran_out():
    assert waits.WAIT_ENDED_CODES == frozenset({"TIMEOUT"})
    from nvfdiag.read.structured import envelope_error_code, envelope_error_line

    assert envelope_error_code(envelope_error_line("TIMEOUT", "Operation timed out.")) == "TIMEOUT"
    assert envelope_error_code("2026-12-07 - INFO - nvflare CLI error TIMEOUT: pasted") is None
