"""A reader that closed stdout (`| head -0`, a cancelled tool call) ends every CLI quietly, never a traceback.

The pipe's read end is closed before the CLI starts, so its write always fails with EPIPE: deterministic.
"""

import os
import shutil
import subprocess

import pytest

DIAGNOSE = "nvflare-diagnose-job/scripts/diagnose_job.py"
AUTOFL = "nvflare-autofl/scripts/"


@pytest.fixture()
def inputs(tmp_path, repo_root):
    shutil.copytree(
        repo_root / "examples" / "hello-numpy", tmp_path / "job", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "job" / "results.tsv").write_text("")
    (tmp_path / "client.log").write_text("ERROR - boom\n")
    return tmp_path


CASES = {  # script, input file (relative to the inputs folder), extra flags
    "diagnose_job": (DIAGNOSE, "client.log", []),
    "campaign_guard": (AUTOFL + "campaign_guard.py", "job/results.tsv", []),
    "job_importer": (AUTOFL + "job_importer.py", "job/job.py", []),
    "plot_progress": (AUTOFL + "plot_progress.py", "job/results.tsv", ["--mode", "max"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_closed_stdout_exits_141_without_a_traceback(inputs, python_exe, repo_root, name):
    script, given, flags = CASES[name]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [python_exe, str(repo_root / "skills" / script), str(inputs / given), *flags],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=inputs,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
