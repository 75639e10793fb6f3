"""The read-only CLIs (diagnose_job, campaign_guard, job_importer) write nothing at all, anywhere.

Each runs from a lone copy of its skill in isolated mode (`-I`, so PYTHONDONTWRITEBYTECODE from the caller's
environment does not hide bytecode caches) under an audit hook that records every open-for-write and every
mutating os/shutil call; the copied skill and the inputs must also be byte-identical afterwards.
"""

import hashlib
import json
import shutil
import subprocess

import pytest
from audit_wrapper import AUDIT_WRAPPER, audit_events


def _tree_digest(root):
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        for path in sorted(root.rglob("*"))
    }


@pytest.fixture()
def lone_copy(tmp_path, repo_root):
    """Both skills copied alone (no caches), plus a job, a log and an empty ledger as inputs."""
    skills = tmp_path / "skills"
    for name in ("nvflare-diagnose-job", "nvflare-autofl"):
        shutil.copytree(repo_root / "skills" / name, skills / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        repo_root / "examples" / "hello-numpy", tmp_path / "job", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "job" / "results.tsv").write_text("")
    (tmp_path / "client.log").write_text(
        'Traceback (most recent call last):\n  File "client.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'not_a_real_module'\n"
    )
    return tmp_path


CASES = {
    "diagnose_job": ("nvflare-diagnose-job/scripts/diagnose_job.py", ["client.log"]),
    "campaign_guard": ("nvflare-autofl/scripts/campaign_guard.py", ["job/results.tsv"]),
    "job_importer": ("nvflare-autofl/scripts/job_importer.py", ["job/job.py"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_read_only_cli_writes_nothing_even_without_the_bytecode_variable(lone_copy, python_exe, name):
    script, args = CASES[name]
    before = _tree_digest(lone_copy)
    done = subprocess.run(
        [
            python_exe,
            "-I",
            "-c",
            AUDIT_WRAPPER,
            str(lone_copy / "skills" / script),
            *(str(lone_copy / a) for a in args),
        ],
        cwd=lone_copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # it did its job: one JSON document
    assert audit_events(done.stderr) == []
    assert _tree_digest(lone_copy) == before
