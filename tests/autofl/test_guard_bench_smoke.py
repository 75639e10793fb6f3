"""bench/guard_scale.py --quick: the P3 benchmark runs end to end and checks the CLI state."""

import re
import subprocess

import pytest


@pytest.mark.slow
def test_guard_scale_quick(repo_root, python_exe):
    done = subprocess.run(
        [python_exe, str(repo_root / "bench" / "guard_scale.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=repo_root,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = {
        int(m.group(1)): m.group(0) for m in re.finditer(r"^\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+.*$", done.stdout, re.M)
    }
    assert sorted(table) == [1000, 10000]
    assert all(" True " in line for line in table.values()), "the CLI must print the in-process state"
    assert re.search(r"^scaling x10 rows -> x[\d.]+ time", done.stdout, re.M)
    assert done.stdout.rstrip().endswith("RESULT: PASS")
