"""bench/diagnose_throughput.py --baseline: before and after side by side in one run (quality.md), on the same
evidence, with the diagnose skill of another commit loaded next to the current one."""

from __future__ import annotations

import json
import os
import subprocess

import pytest


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
