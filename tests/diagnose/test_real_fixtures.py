"""Real-run fixtures: the generator's pure helpers, the committed fixtures, and a real regeneration."""

import sys
from pathlib import Path

import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "evals" / "diagnose" / "files" / "real"


fixtures = load_by_path("make_real_fixtures", REPO / "evals" / "make_real_fixtures.py")


def test_scrub_replaces_nested_paths_longest_first():
    pairs = fixtures.placeholders("/tmp/xyz/sim", "/tmp/xyz/home")
    text = f"/tmp/xyz/sim/job/server/log.txt {REPO}/examples/job.py {sys.prefix}/lib/x.py /tmp/xyz/home/.cache"
    out = fixtures.scrub(text, pairs)
    assert out.split() == [
        "/tmp/nvflare/simulation/job/server/log.txt",
        "/repo/examples/job.py",
        ("/repo/.venv" if sys.prefix != sys.base_prefix else "/opt/python") + "/lib/x.py",
        "/tmp/nvflare/home/.cache",
    ]


def test_child_env_is_minimal():
    env = fixtures.child_env("/tmp/r", "/tmp/h")
    assert set(env) == {
        "PATH",
        "HOME",
        "LANG",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "NVFLARE_SIMULATOR_WORKSPACE_ROOT",
    }
    assert env["NVFLARE_SIMULATOR_WORKSPACE_ROOT"] == "/tmp/r" and env["HOME"] == "/tmp/h"


def test_fixture_files_keep_logs_and_metrics_only(tmp_path):
    job = tmp_path / "job"
    keep = [
        "server/log.txt",
        "server/log_fl.txt",
        "server/error_log.txt",
        "server/log.json",
        "server/simulate_job/meta.json",
        "server/simulate_job/metrics/metrics_summary.json",
        "server/simulate_job/metrics/round_metrics.jsonl",
        "server/simulate_job/cross_site_val/cross_val_results.json",
        "site-1/log.txt",
        "site-1/error_log.txt",
    ]
    drop = [
        "server/startup/server.key",
        "server/startup/rootCA.pem",
        "startup/signature.json",
        "server/simulate_job/models/server.npy",
        "server/simulate_job/app_server/custom/client.py",
        "server/local/resources.json.default",
        "site-1/simulate_job/meta.json",
        "local/resources.json.default",
        "server/pool_stats/simulator_cell_stats.json",
    ]
    for rel in keep + drop:
        (job / rel).parent.mkdir(parents=True, exist_ok=True)
        (job / rel).write_text("x")
    assert sorted(str(p) for p in fixtures.fixture_files(job)) == sorted(keep)


def _texts(case: str):
    for path in sorted((REAL / case).rglob("*")):
        if path.is_file():
            yield path, path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", sorted(fixtures.CASES))
def test_committed_fixture_is_scrubbed_and_complete(case):
    assert (REAL / case / "stdout.txt").is_file()
    placeholders = ("/repo/", "/repo/.venv/", "/opt/python/", "/tmp/nvflare/simulation/", "/tmp/nvflare/home/")
    # this machine's paths; a path that is itself a placeholder prefix (e.g. a clone in /repo) cannot be told apart
    leaks = [p + "/" for p in (str(REPO), sys.base_prefix) if not any(ph.startswith(p + "/") for ph in placeholders)]
    for path, text in _texts(case):
        for leak in leaks + ["/root/", "nvf-fixture-"]:
            assert leak not in text, f"{path} leaks {leak!r}"
        rel = path.relative_to(REAL / case).parts
        assert "startup" not in rel and "models" not in rel and path.suffix not in (".key", ".pem", ".crt")


def test_committed_fixtures_show_the_observed_failure_shapes():
    stdout = (REAL / "import-error" / "stdout.txt").read_text(encoding="utf-8")
    assert "ModuleNotFoundError: No module named 'site_preprocessing'" in stdout
    assert "RuntimeError: Simulation failed with return code" in stdout
    # the SimEnv workspace shows only the server's view of the import error (spec: ask for the job's stdout)
    workspace = "".join(text for path, text in _texts("import-error") if "workspace" in path.parts)
    assert "ModuleNotFoundError" not in workspace and "peer_rc=EXECUTION_EXCEPTION" in workspace
    bad = (REAL / "bad-recipe-arg" / "stdout.txt").read_text(encoding="utf-8")
    assert "got an unexpected keyword argument 'local_epochs'" in bad
    assert not (REAL / "bad-recipe-arg" / "workspace").exists()
    user = (REAL / "user-code-exception" / "stdout.txt").read_text(encoding="utf-8")
    assert "custom/client.py" in user and "in train" in user and "ValueError" in user
    healthy = REAL / "healthy" / "workspace" / "hello-numpy" / "server" / "simulate_job" / "metrics"
    assert (healthy / "metrics_summary.json").is_file() and (healthy / "round_metrics.jsonl").is_file()


@pytest.mark.integration
def test_regenerates_bad_recipe_arg_fixture(tmp_path, capsys):
    assert fixtures.main(["--case", "bad-recipe-arg", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "bad-recipe-arg" / "stdout.txt").read_text(encoding="utf-8")
    assert 'File "/repo/examples/failing/bad-recipe-arg/job.py"' in text
    assert "TypeError: NumpyFedAvgRecipe.__init__() got an unexpected keyword argument 'local_epochs'" in text
    if str(REPO) != "/repo":
        assert str(REPO) + "/" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad-recipe-arg"]  # no staging leftovers
    assert '"errors": []' in capsys.readouterr().out


def _layout(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.integration
@pytest.mark.slow
def test_regenerated_import_error_matches_committed_layout(tmp_path):
    """The layout must match on one of two runs: on a busy machine NVFLARE may end the job before a site has
    written every log file, which is the simulator's timing, not the generator's. A generator that changes the
    layout differs on both runs."""
    old = _layout(REAL / "import-error")
    for attempt in range(2):
        out = tmp_path / f"run{attempt}"
        assert fixtures.main(["--case", "import-error", "--out", str(out)]) == 0
        new = _layout(out / "import-error")
        assert set(new) <= set(old)  # never a file the committed fixture lacks (no kit, key, model or app code)
        if new == old:
            break
    assert new == old
    stdout = (out / "import-error" / "stdout.txt").read_text(encoding="utf-8")
    assert "ModuleNotFoundError: No module named 'site_preprocessing'" in stdout
    assert "under /tmp/nvflare/simulation/import-error" in stdout
