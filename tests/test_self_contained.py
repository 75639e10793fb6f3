"""Each skill folder, copied alone into `.agents/skills/`, must work: its scripts run from the copy."""

import json
import shutil
import subprocess

import jsonschema
import pytest

SKILLS = ("nvflare-diagnose-job", "nvflare-autofl")


@pytest.fixture()
def installed(tmp_path, repo_root):
    """Copy each skill folder alone into a fresh project's `.agents/skills/`, like an agent install."""
    target = tmp_path / "project" / ".agents" / "skills"
    for name in SKILLS:
        shutil.copytree(repo_root / "skills" / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def schema(repo_root, name):
    return json.loads((repo_root / "shared" / "schemas" / name).read_text(encoding="utf-8"))


def run_isolated(python_exe, argv, cwd):
    """Run with -I so neither PYTHONPATH nor the repository can leak modules into the copied skill."""
    return subprocess.run([python_exe, "-I", *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_diagnose_script_runs_from_a_lone_copy(installed, python_exe, tmp_path, repo_root):
    log = tmp_path / "job_output.txt"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "client.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'not_a_real_module'\n"
        "RuntimeError: Simulation failed with return code 2.\n"
    )
    script = installed / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    result = run_isolated(python_exe, [script, log], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["schema_version"] == "nvflare.diagnose.report.v1"
    assert report["matched_pattern"] == "IMPORT_ERROR"
    jsonschema.validate(report, schema(repo_root, "diagnose_report.v1.schema.json"))


def test_autofl_scripts_run_from_a_lone_copy(installed, python_exe, tmp_path, repo_root, matplotlib_plot):
    job_dir = tmp_path / "job"
    shutil.copytree(repo_root / "examples" / "hello-numpy", job_dir, ignore=shutil.ignore_patterns("__pycache__"))
    scripts = installed / "nvflare-autofl" / "scripts"

    imported = run_isolated(python_exe, [scripts / "job_importer.py", job_dir / "job.py"], cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["admission_errors"] == []

    ledger = job_dir / "results.tsv"
    guard = run_isolated(python_exe, [scripts / "campaign_guard.py", ledger, "--format", "json"], cwd=tmp_path)
    assert guard.returncode == 0, guard.stderr
    state = json.loads(guard.stdout)
    assert state["schema_version"] == "nvflare.autofl.campaign_state.v1"
    jsonschema.validate(state, schema(repo_root, "campaign_state.v1.schema.json"))

    png = tmp_path / "progress.png"
    plot = run_isolated(
        python_exe, [scripts / "plot_progress.py", ledger, "--output", png, "--metric", "accuracy"], cwd=tmp_path
    )
    assert plot.returncode == 0, plot.stderr
    assert png.read_bytes().startswith(b"\x89PNG")


def test_skill_scripts_never_reach_outside_their_folder(repo_root):
    """Run-time code must not refer to the repository's shared/ folder or the other skill."""
    for name in SKILLS:
        other = next(s for s in SKILLS if s != name)
        for path in (repo_root / "skills" / name / "scripts").rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert other not in text, f"{path} mentions the other skill"
            assert '/ "shared"' not in text and "'shared'" not in text, f"{path} builds a path into the repo's shared/"
