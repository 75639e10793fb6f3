"""`make demo-diagnose` end to end: a real NVFLARE 2.9 simulation fails, and the demo diagnoses it.

Runs examples/demo_diagnose.py (the path the make target runs) into a temporary `--output` folder: the
failing job runs for real (about 15 s), then the skill's script diagnoses the fresh output and workspace.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARTIFACTS = ("job_stdout.txt", "simulation", "diagnosis.json", "diagnosis.md")


def test_make_target_runs_the_demo_script(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo-diagnose:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe and "examples/demo_diagnose.py" in recipe.group(1)


def test_demo_diagnoses_a_fresh_real_failure(repo_root, python_exe, tmp_path):
    out = tmp_path / "demo"
    env = {key: value for key, value in os.environ.items() if not key.startswith("NVFLARE_")}
    done = subprocess.run(
        [python_exe, str(repo_root / "examples" / "demo_diagnose.py"), "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]

    job_output = (out / "job_stdout.txt").read_text(encoding="utf-8", errors="replace")
    assert "ModuleNotFoundError" in job_output  # the simulation really ran and really failed
    assert re.search(r"job exited with code [1-9]", done.stderr)
    assert any((out / "simulation").rglob("log.txt")), "the SimEnv workspace was redirected into --output"

    report = json.loads((out / "diagnosis.json").read_text(encoding="utf-8"))
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert report["confidence"] == "high"
    assert report["runtime_mode"] == "simulation"
    sources = {source["path"] for source in report["evidence_sources"]}
    assert str(out / "job_stdout.txt") in sources
    assert any(path.startswith(str(out / "simulation")) for path in sources)

    markdown = (out / "diagnosis.md").read_text(encoding="utf-8")
    assert "IMPORT_ERROR" in markdown and markdown in done.stdout  # the demo prints the markdown report
    listed = done.stdout.split("Artifacts:", 1)[1].split()
    assert listed == [str(out / name) for name in ARTIFACTS]
    assert all((out / name).exists() for name in ARTIFACTS)
    assert not (repo_root / "examples" / "failing" / "import-error" / "simulation").exists()
