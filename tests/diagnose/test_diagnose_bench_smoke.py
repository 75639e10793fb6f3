"""Smoke run of bench/diagnose_scale.py --quick so the P4 benchmark cannot rot. Every bar it enforces must
pass (peak RSS, report size, flat memory); timing bars are printed but not enforced in --quick (timing on a
shared machine is noisy; the full benchmark is `python bench/diagnose_scale.py`)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest


@pytest.mark.slow
def test_diagnose_scale_quick_runs_and_cleans_up(repo_root, python_exe, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([python_exe, str(repo_root / "bench" / "diagnose_scale.py"), "--quick", "--json"],
                          capture_output=True, text=True, env=env, timeout=240)
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    missed = [f"{c['bar']}: {c['figure']}" for c in doc["checks"] if c["enforced"] and not c["ok"]]
    assert not missed, f"enforced bars missed (memory, report size, flat memory): {missed}"
    assert doc["result"] == "PASS" and proc.returncode == 0
    assert [row["files"] for row in doc["rows"]] == [40, 40, 40]
    assert [round(row["gib"] * 1024) for row in doc["rows"]] == [8, 16, 32]
    checks = {check["bar"]: check for check in doc["checks"]}
    assert checks["runs succeed"]["ok"], checks["runs succeed"]["figure"]
    assert {"wall <= 2 s", "peak RSS <= 150 MiB", "report <= 64 KiB"} <= checks.keys()
    assert all(row["rss_mib"] > 5 and row["report_bytes"] > 100 and row["wall_s"] > 0 for row in doc["rows"])
    assert not checks["wall <= 2 s"]["enforced"]  # --quick never fails on timing
    assert os.listdir(tmp_path) == []  # every temporary tree was removed
