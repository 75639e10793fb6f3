"""Smoke runs of the diagnose benchmarks (P4 diagnose_scale --quick, P4t diagnose_throughput --quick) so they
cannot rot. Every bar diagnose_scale enforces must pass (peak RSS, report size, flat memory); timing bars are
printed but not enforced in --quick (a shared machine is noisy); the full benchmarks are
`python bench/diagnose_scale.py` and `python bench/diagnose_throughput.py`, both run by `make bench`."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from module_loader import load_by_path


def run_bench(repo_root, python_exe, tmp_path, name: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [python_exe, str(repo_root / "bench" / name), "--quick", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr
    return proc, json.loads(proc.stdout)


@pytest.mark.slow
def test_diagnose_scale_quick_runs_finds_both_planted_causes_and_cleans_up(repo_root, python_exe, tmp_path):
    proc, doc = run_bench(repo_root, python_exe, tmp_path, "diagnose_scale.py")
    missed = [f"{c['bar']}: {c['figure']}" for c in doc["checks"] if c["enforced"] and not c["ok"]]
    assert not missed, f"enforced bars missed (memory, report size, flat memory): {missed}"
    assert doc["result"] == "PASS" and proc.returncode == 0
    assert [(row["files"], row["failure"]) for row in doc["rows"]] == [(40, "end"), (40, "middle")] * 3
    assert [round(row["gib"] * 1024) for row in doc["rows"]] == [8, 8, 16, 16, 32, 32]
    assert [row["pattern"] for row in doc["rows"]] == ["IMPORT_ERROR", "CUDA_OOM"] * 3
    checks = {check["bar"]: check for check in doc["checks"]}
    assert checks["planted cause matched, runs succeed"]["ok"], checks["planted cause matched, runs succeed"]["figure"]
    assert {"wall <= 2 s", "peak RSS <= 150 MiB", "report <= 64 KiB"} <= checks.keys()
    assert all(row["rss_mib"] > 5 and row["report_bytes"] > 100 and row["wall_s"] > 0 for row in doc["rows"])
    assert not checks["wall <= 2 s"]["enforced"]  # --quick never fails on timing
    assert os.listdir(tmp_path) == []  # every temporary tree was removed


@pytest.mark.slow
def test_diagnose_throughput_quick_measures_real_healthy_text(repo_root, python_exe, tmp_path):
    proc, doc = run_bench(repo_root, python_exe, tmp_path, "diagnose_throughput.py")
    assert proc.returncode == (0 if doc["result"] == "PASS" else 1)
    row = doc["row"]
    assert row["mib"] >= 0.9 and row["lines"] > 5000 and row["files"] > 20
    assert (row["pattern"], row["suspicious"]) == ("UNKNOWN", 0)  # healthy real logs: nothing matched or flagged
    assert row["mb_per_s"] > 0 and row["scan_s"] > 0
    assert os.listdir(tmp_path) == []


def test_mutation_groups_of_the_diagnose_skill_name_existing_modules(repo_root):
    mutate = load_by_path("mutate_bench", repo_root / "bench" / "mutate.py")
    groups = [group for group in mutate.GROUPS if group.skill == mutate.DIAGNOSE]
    assert {group.name for group in groups} == {"matcher", "refine", "injection"}
    scripts = repo_root / "skills" / mutate.DIAGNOSE / "scripts"
    for group in groups:
        for pattern in group.files:
            assert sorted(scripts.glob(pattern)), f"{group.name}: {pattern} matches no file"
        for test in group.tests:
            assert (repo_root / test).is_file(), f"{group.name}: {test} does not exist"
