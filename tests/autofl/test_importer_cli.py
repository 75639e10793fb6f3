"""job_importer.py CLI: exit codes, one-line errors, json/yaml output, read-only, speed, no nvflare import."""

import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from autofl_core.importer import admission, api, dryrun

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "skills" / "nvflare-autofl" / "scripts" / "job_importer.py"
FIXTURES = REPO / "tests" / "fixtures" / "jobs"
HELLO = REPO / "examples" / "hello-numpy" / "job.py"


def run_cli(python_exe: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([python_exe, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=cwd or REPO)


def assert_one_line_error(proc: subprocess.CompletedProcess, fragment: str) -> None:
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in lines[0]


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_admissible_job_exits_zero_with_json(python_exe):
    proc = run_cli(python_exe, str(HELLO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    config = json.loads(proc.stdout)
    assert config["admission_errors"] == []
    assert config["job"]["class"] == "NumpyFedAvgRecipe"
    assert list(config) == sorted(config)


def test_output_is_deterministic_and_yaml_matches_json(python_exe):
    first = run_cli(python_exe, str(HELLO), "--base-args", "--num_rounds 7")
    second = run_cli(python_exe, str(HELLO), "--base-args", "--num_rounds 7")
    assert first.stdout == second.stdout
    as_json = json.loads(first.stdout)
    assert as_json["fixed_budget"]["num_rounds"]["value"] == 7
    assert as_json["argparse"]["base_args"] == ["--num_rounds", "7"]
    as_yaml = run_cli(python_exe, str(HELLO), "--base-args", "--num_rounds 7", "--format", "yaml")
    assert as_yaml.returncode == 0
    assert yaml.safe_load(as_yaml.stdout) == as_json
    assert "&id" not in as_yaml.stdout and "*id" not in as_yaml.stdout, "YAML for humans must not use anchors"


def test_not_admissible_exits_two_with_config_and_one_line(python_exe):
    proc = run_cli(python_exe, str(FIXTURES / "loss_no_mode" / "job.py"))
    assert_one_line_error(proc, "AUTOFL_METRIC_DIRECTION_CONFLICT")
    assert json.loads(proc.stdout)["admission_errors"][0]["code"] == "AUTOFL_METRIC_DIRECTION_CONFLICT"
    as_yaml = run_cli(python_exe, str(FIXTURES / "loss_no_mode" / "job.py"), "--format", "yaml")
    assert_one_line_error(as_yaml, "AUTOFL_METRIC_DIRECTION_CONFLICT")
    assert yaml.safe_load(as_yaml.stdout)["admission_errors"] == json.loads(proc.stdout)["admission_errors"]


def test_a_static_refusal_a_run_could_settle_points_to_the_dry_run(python_exe):
    """sklearn-svm fills its client list in place: the static reading cannot count it, and says a dry run may."""
    job = REPO / "tests" / "fixtures" / "nvflare_examples" / "sklearn-svm" / "job.py"
    proc = run_cli(python_exe, str(job))
    assert_one_line_error(proc, "AUTOFL_UNRESOLVED_SAFETY_FIELD")
    assert proc.stderr.rstrip().endswith(admission.DRY_RUN_HINT), proc.stderr
    errors = json.loads(proc.stdout)["admission_errors"]
    assert errors and all(e["message"].endswith(admission.DRY_RUN_HINT) for e in errors)
    assert api.import_job(job)["admission_errors"][0]["message"] + admission.DRY_RUN_HINT == errors[0]["message"]


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_the_dry_run_the_hint_points_to_admits_the_job_without_a_hint(python_exe):
    job = REPO / "tests" / "fixtures" / "nvflare_examples" / "sklearn-svm" / "job.py"
    proc = run_cli(python_exe, str(job), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fixed_budget"]["num_clients"]["value"] == 3


def _job_with_global(tmp_path: Path) -> Path:
    """The bundled hello-numpy job with a helper using `global` (never called): beyond the static reading."""
    shutil.copytree(HELLO.parent, tmp_path / "job")
    job = tmp_path / "job" / "job.py"
    source = job.read_text()
    job.write_text(
        source.replace(
            "NUM_FEATURES = 8\n", "NUM_FEATURES = 8\nCOUNT = 0\n\n\ndef bump():\n    global COUNT\n    COUNT += 1\n", 1
        )
    )
    return job


def test_a_job_the_static_reading_gives_up_on_is_refused_with_the_dry_run_hint(python_exe, tmp_path):
    proc = run_cli(python_exe, str(_job_with_global(tmp_path)))
    assert_one_line_error(proc, "AUTOFL_UNSUPPORTED_JOB")
    assert "`global` at line" in proc.stderr
    assert proc.stderr.rstrip().endswith(admission.DRY_RUN_HINT), proc.stderr


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_the_dry_run_admits_the_job_the_static_reading_gave_up_on(python_exe, tmp_path):
    proc = run_cli(python_exe, str(_job_with_global(tmp_path)), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fixed_budget"]["num_rounds"]["value"] == 3


def test_a_job_that_trains_nothing_is_refused_without_the_dry_run_hint(python_exe):
    proc = run_cli(python_exe, str(REPO / "tests" / "fixtures" / "nvflare_examples" / "fedstats-df" / "job.py"))
    assert_one_line_error(proc, "AUTOFL_UNSUPPORTED_JOB")
    assert "--dry-run" not in proc.stderr and "--dry-run" not in proc.stdout


def test_a_refusal_no_run_settles_gets_no_dry_run_hint(python_exe):
    proc = run_cli(python_exe, str(FIXTURES / "loss_no_mode" / "job.py"))
    assert "--dry-run" not in proc.stderr and "--dry-run" not in proc.stdout


def test_requested_metric_not_declared(python_exe):
    proc = run_cli(python_exe, str(HELLO), "--metric", "val_loss")
    assert_one_line_error(proc, "AUTOFL_METRIC_NOT_DECLARED")


def test_syntax_error_fails_closed(python_exe):
    proc = run_cli(python_exe, str(FIXTURES / "syntax_error" / "job.py"))
    assert_one_line_error(proc, "syntax error at line 3")
    assert json.loads(proc.stdout)["import"]["support"]["status"] == "unsupported"


def _bad_job(folder: Path, kind: str) -> Path:
    if kind == "missing":
        return folder / "missing.py"
    if kind == "directory":
        return folder
    target = folder / f"{kind}.py"
    target.write_bytes(b"\xff\xfe\x00bad" if kind == "binary" else b"#" * (3 * 1024 * 1024))
    return target


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("missing", "does not exist"),
        ("directory", "not a regular file"),
        ("binary", "not UTF-8"),
        ("huge", "larger than"),
    ],
)
def test_unreadable_job_is_one_line_and_no_stdout(python_exe, tmp_path, kind, fragment):
    target = _bad_job(tmp_path, kind)
    proc = run_cli(python_exe, str(target))
    assert_one_line_error(proc, fragment)
    assert proc.stdout == ""


def test_bad_cli_usage_is_one_line(python_exe):
    assert_one_line_error(run_cli(python_exe, str(HELLO), "--format", "xml"), "invalid choice")
    assert_one_line_error(run_cli(python_exe), "required")
    assert_one_line_error(run_cli(python_exe, str(HELLO), "--base-args", "--lr 'oops"), "balance the quotes")
    empty = run_cli(python_exe, str(HELLO), "--metric", " ")
    assert_one_line_error(empty, "--metric is empty")
    assert empty.stdout == ""


def test_import_never_writes_or_executes(python_exe, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(FIXTURES / "bridge_schema", workspace)
    (workspace / "job.py").write_text((workspace / "job.py").read_text() + "\nopen('EXECUTED', 'w').close()\n")
    before = snapshot(workspace)
    proc = run_cli(python_exe, str(workspace / "job.py"), "--metric", "val_loss", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert snapshot(workspace) == before
    assert not (workspace / "EXECUTED").exists()


def test_import_of_example_is_fast():
    api.import_job(HELLO)
    timings = []
    for _ in range(5):  # CPU time of this process: other work on a shared or parallel-loaded machine adds none
        start = time.process_time()
        api.import_job(HELLO)
        timings.append(time.process_time() - start)
    assert statistics.median(timings) < 0.15


def test_importer_does_not_import_nvflare_or_heavy_modules(python_exe):
    code = (
        "import runpy, sys\n"
        f"module = runpy.run_path({str(SCRIPT)!r}, run_name='job_importer_probe')\n"
        f"config = module['api'].import_job({str(HELLO)!r})\n"
        "assert config['admission_errors'] == []\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('nvflare', 'numpy', 'matplotlib', 'yaml', 'torch'))\n"
        "print(heavy)\n"
    )
    proc = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
