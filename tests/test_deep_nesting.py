"""Hostile nesting depth (R7): JSON or YAML nested thousands of levels deep is "not valid", never a crash.

`json.loads` and PyYAML raise RecursionError on such input; every reader of untrusted JSON/YAML must treat it
like any other malformed document.
"""

import json
import subprocess

import pytest
from autofl_core.campaign import guard_inputs
from autofl_core.importer.schema import parse_schema_text
from autofl_core.trial.metrics import extract_metric
from nvfdiag.read import jsontext

DEPTH = 100_000
DEEP_JSON = "[" * DEPTH + "]" * DEPTH


def test_json_reader_treats_deep_nesting_as_not_json():
    assert jsontext.parse(DEEP_JSON) is None
    assert jsontext.parse_object_line('{"a": ' + DEEP_JSON + "}") is None
    assert jsontext.parse_object_line(' {"a": [1]} ') == {"a": [1]}
    assert jsontext.parse("[1, 2") is None and jsontext.parse(b"\xff") is None


@pytest.mark.timeout(60)
def test_diagnosis_reports_despite_a_deeply_nested_json_log_line(tmp_path, python_exe, repo_root):
    depth = 7000  # the line stays under the 16 KiB clip, so it reaches the JSON parser whole
    record = '{"asctime": "2026-01-01 00:00:00", "levelname": ' + "[" * depth + "]" * depth + "}"
    log = tmp_path / "log.txt"
    log.write_text("2026-01-01 00:00:00,000 - ClientRunner - ERROR - [identity=site-1] - boom\n" + record + "\n")
    (tmp_path / "job.json").write_text(DEEP_JSON)
    script = repo_root / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    done = subprocess.run([python_exe, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {source["path"] for source in report["evidence_sources"]} >= {str(log)}
    assert "RecursionError" not in done.stderr


def test_guard_rejects_a_deeply_nested_campaign_state_with_one_line(tmp_path):
    state = tmp_path / guard_inputs.STATE_RELATIVE_PATH
    state.parent.mkdir(parents=True)
    state.write_text(DEEP_JSON)
    with pytest.raises(guard_inputs.InputError, match="is not valid JSON"):
        guard_inputs.stored_mode(tmp_path)


def test_importer_reports_a_deeply_nested_schema_as_invalid_yaml():
    data, errors = parse_schema_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert data is None and errors == ["mutation_schema.yaml is not valid YAML: it is nested too deeply"]


def test_metric_extraction_skips_a_deeply_nested_summary(tmp_path):
    server = tmp_path / "simulation" / "server" / "simulate_job" / "metrics"
    server.mkdir(parents=True)
    (server / "metrics_summary.json").write_text(DEEP_JSON)
    (tmp_path / "simulation" / "server" / "log.txt").write_text("accuracy: 0.5\n")
    found = extract_metric(tmp_path, ["accuracy"])
    assert found.value == 0.5 and found.metric_source.startswith("text:")


def test_guard_cli_one_line_for_deep_state(tmp_path, python_exe, repo_root):
    state = tmp_path / guard_inputs.STATE_RELATIVE_PATH
    state.parent.mkdir(parents=True)
    state.write_text(DEEP_JSON)
    script = repo_root / "skills" / "nvflare-autofl" / "scripts" / "campaign_guard.py"
    done = subprocess.run(
        [python_exe, str(script), str(tmp_path / "results.tsv")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "not valid JSON" in done.stderr


DEEP_PYTHON = "x = " + "-" * 200_000 + "1\n"  # the parser gives up with MemoryError, not SyntaxError


def test_python_nested_too_deeply_is_a_file_that_does_not_parse_for_every_reader_of_job_files():
    from autofl_core.importer import evaluator_imports, noise_sources
    from autofl_core.runner import job_defaults

    assert noise_sources.scan({"deep.py": DEEP_PYTHON, "ok.py": "import random\nrandom.shuffle(x)\n"}) != []
    with pytest.raises(job_defaults.JobDefaultsError, match="job.py does not parse"):
        job_defaults.rewrite(DEEP_PYTHON.encode(), ["--lr", "0.1"])
    with pytest.raises(ValueError, match="evaluate.py does not parse"):
        evaluator_imports.local_imports("evaluate.py", {"evaluate.py": DEEP_PYTHON}.get)
