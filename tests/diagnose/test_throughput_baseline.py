"""bench/diagnose_throughput.py --baseline: before and after side by side in one run (quality.md), on the same
evidence, with the diagnose skill of another commit loaded next to the current one: a commit with the staged
package layout (read/, match/, report/, pipeline.py) or one with the flat layout of older commits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from module_loader import load_by_path


def run(repo_root, python_exe, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [python_exe, str(repo_root / "bench" / "diagnose_throughput.py"), "--quick", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_baseline_commit_is_scanned_beside_the_current_code(repo_root, python_exe, tmp_path):
    proc = run(repo_root, python_exe, tmp_path, "--json", "--baseline", "HEAD")
    row = json.loads(proc.stdout)["row"]
    assert row["baseline"]["ref"] == "HEAD" and row["baseline"]["scan_s"] > 0 and row["speedup"] > 0
    assert (row["baseline"]["pattern"], row["baseline"]["suspicious"]) == ("UNKNOWN", 0)
    assert len(row["load_avg_1min"]) == 2
    assert os.listdir(tmp_path) == []  # the extracted commit and the text tree were removed


def test_unknown_commit_is_one_line_and_exit_2(repo_root, python_exe, tmp_path):
    proc = run(repo_root, python_exe, tmp_path, "--baseline", "no-such-commit-xyz")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no-such-commit-xyz" in proc.stderr


FLAT_EVIDENCE = "skills/nvflare-diagnose-job/scripts/nvfdiag/evidence.py"  # read/evidence.py before the stages


def last_flat_commit(repo_root) -> str | None:
    """The newest commit whose nvfdiag has the flat layout (evidence.py, catalog.py, matcher.diagnose at its top)."""
    listed = subprocess.run(
        ["git", "-C", str(repo_root), "log", "--format=%H", "--", FLAT_EVIDENCE], capture_output=True, text=True
    )
    for commit in listed.stdout.split():
        probe = ["git", "-C", str(repo_root), "cat-file", "-e", f"{commit}:{FLAT_EVIDENCE}"]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return commit
    return None


@pytest.mark.slow
def test_a_commit_with_the_flat_layout_is_scanned_beside_the_staged_one(repo_root, python_exe, tmp_path):
    commit = last_flat_commit(repo_root)
    if commit is None:
        pytest.skip("no commit with the flat nvfdiag layout in this clone's history (shallow clone?)")
    proc = run(repo_root, python_exe, tmp_path, "--json", "--baseline", commit)
    row = json.loads(proc.stdout)["row"]
    assert row["baseline"]["ref"] == commit and row["baseline"]["scan_s"] > 0 and row["speedup"] > 0
    assert (row["baseline"]["pattern"], row["baseline"]["suspicious"]) == ("UNKNOWN", 0)
    assert os.listdir(tmp_path) == []


def stub_skill(root, files: dict[str, str]):
    for rel, text in {"nvfdiag/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_entry_points_are_found_in_the_flat_and_in_the_staged_layout(repo_root, tmp_path):
    bench = load_by_path("diagnose_throughput_bench", repo_root / "bench" / "diagnose_throughput.py")
    flat = stub_skill(
        tmp_path / "flat",
        {
            "nvfdiag/catalog.py": "def load_catalog():\n    return 'flat catalog'\n",
            "nvfdiag/matcher.py": "def diagnose(found, known):\n    return 'flat report'\n",
        },
    )
    staged = stub_skill(
        tmp_path / "staged",
        {
            "nvfdiag/match/__init__.py": "",
            "nvfdiag/match/catalog.py": "def load_catalog():\n    return 'staged catalog'\n",
            "nvfdiag/match/matcher.py": "def analyse(found, known):\n    return 'analysis'\n",
            "nvfdiag/pipeline.py": "from .match.matcher import analyse\n\n\ndef diagnose(found, known):\n"
            "    return 'staged report from ' + analyse(found, known)\n",
        },
    )
    try:
        known, diagnose = bench.entry_points(flat, "nvfdiag_stub_flat")
        assert (known, diagnose(None, known)) == ("flat catalog", "flat report")
        known, diagnose = bench.entry_points(staged, "nvfdiag_stub_staged")
        assert (known, diagnose(None, known)) == ("staged catalog", "staged report from analysis")
    finally:
        for name in [n for n in sys.modules if n.startswith("nvfdiag_stub_")]:
            del sys.modules[name]
