"""Smoke run of bench/importer_speed.py so the P5 benchmark cannot rot (figures are printed, not asserted)."""

import subprocess


def test_importer_speed_quick_prints_every_example(python_exe, repo_root):
    proc = subprocess.run(
        [python_exe, str(repo_root / "bench" / "importer_speed.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for example in ("hello-numpy", "numpy-loss", "fedjob-numpy", "recipes/pt_fedavg_split", "recipes/collab_fedavg"):
        assert example in proc.stdout
