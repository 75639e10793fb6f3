"""The runner benchmarks run end to end in their quick form, and their verdict agrees with their bars."""

import re
import subprocess

import pytest

pytestmark = pytest.mark.slow


def run(repo_root, python_exe, script, *args):
    return subprocess.run([python_exe, str(repo_root / "bench" / script), *args], capture_output=True, text=True,
                          timeout=600, cwd=repo_root)  # fmt: skip


def test_lifecycle_speed_quick_meets_p5_and_p3_at_10k(repo_root, python_exe):
    done = run(repo_root, python_exe, "lifecycle_speed.py", "--quick")
    figures = dict(re.findall(r"^(prepare|suggest|status|status 10k rows)\s+([\d.]+)\s+[\d.]+\s+(?:PASS|FAIL)$",
                              done.stdout, re.M))  # fmt: skip
    assert set(figures) == {"prepare", "suggest", "status", "status 10k rows"}, done.stdout + done.stderr
    assert all(float(value) <= 0.3 for value in figures.values()), done.stdout
    assert done.returncode == 0 and done.stdout.rstrip().endswith("RESULT: PASS")


def test_evaluate_overhead_quick_runs_and_judges_its_bar(repo_root, python_exe):
    done = run(repo_root, python_exe, "evaluate_overhead.py", "--quick")
    match = re.search(r"overhead ([+-][\d.]+) s", done.stdout)
    assert match, done.stdout + done.stderr
    passed = float(match.group(1)) <= 2.5
    assert done.stdout.rstrip().endswith(f"RESULT: {'PASS' if passed else 'FAIL'}")
    assert done.returncode == (0 if passed else 1)
    assert passed, "evaluate of a 0.1 s stand-in trial costs more than 2.5 s: something blocks"
