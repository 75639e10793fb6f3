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


def test_every_switch_of_the_static_features_bench_names_what_the_walker_uses(repo_root, monkeypatch):
    """bench/static_features.py replaces parts of the walker by name: each must exist, or the bench measures nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("static_features", repo_root / "bench" / "static_features.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.syspath_prepend(str(repo_root / "evals"))
    spec.loader.exec_module(bench)
    for name, (_, switches) in bench.FEATURES.items():
        for path in switches:
            owner, attr = bench.target(path)
            assert callable(getattr(owner, attr)), (name, path)
