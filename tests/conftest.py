"""Test-wide setup: make the skills' private packages importable and expose common paths."""

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DIAGNOSE_SCRIPTS = REPO / "skills" / "nvflare-diagnose-job" / "scripts"
AUTOFL_SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

for scripts in (DIAGNOSE_SCRIPTS, AUTOFL_SCRIPTS, REPO):
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))

# Every runner action redraws progress.png, and importing matplotlib to do it costs 1-2 s of CPU: over the
# suite's hundreds of stand-in actions that would be the largest single cost of `make test`. The suite asks for
# the documented text summary instead of a picture (AUTOFL_PLOT_RENDERER=text: progress.txt, the envelope's
# `progress` null with its reason); a test of the picture takes the `matplotlib_plot` fixture
# (tests/autofl/test_plot.py, the demo campaign, ...).
os.environ["AUTOFL_PLOT_RENDERER"] = "text"


@pytest.fixture
def matplotlib_plot(monkeypatch):
    """Draw progress.png with matplotlib (the default renderer) in this test and its subprocesses."""
    monkeypatch.delenv("AUTOFL_PLOT_RENDERER")


@pytest.fixture
def interrupt_handlers():
    """The CLIs' interrupt handlers (SIGTERM, SIGINT, SIGHUP, SIGQUIT raise `Interrupted`) for this test; the
    previous ones restored after it."""
    from autofl_core.common import cli

    saved = {sig: signal.getsignal(sig) for sig in cli.INTERRUPT_CODES}
    cli.install_interrupt_handlers()
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    cli._HOLD.update(depth=0, pending=None)


# Parallel runs (`make test`: pytest-xdist, `-n WORKERS`). Tests that share an expensive module or session
# fixture form serial groups, each run in order by one worker, so the fixture is built once per group: the real
# POC system (tests/poc/conftest.py, free ports: two groups, each on its own worker with its own POC system, so
# the POC tests, the longest serial chain, take half the wall time) and the demo campaign of six simulations
# (tests/autofl/test_runner_real.py). The groups are scheduled here (pytest_xdist_make_scheduler), by node id,
# because xdist 3.8's own `xdist_group` marks do nothing under pytest 9 (they rename `item._nodeid`, which
# pytest 9 no longer reads). Every test that uses one of the fixtures must fall in one of its groups: a worker
# checks.
SERIAL_GROUPS: dict[str, str | None] = {  # the first matching prefix wins (None: no group)
    "tests/poc/test_poc_autofl.py": "poc-a",
    "tests/poc/test_poc_submit.py": "poc-a",  # Auto-FL's POC tests on one system, the diagnose ones on the other
    "tests/poc/test_poc_diagnose.py::test_readme_poc_block_runs_as_written": "poc-a",
    "tests/poc/test_prod_shaped.py": None,  # its own provisioned system: no POC system, free to run beside both
    "tests/poc/": "poc-b",
    "tests/autofl/test_runner_real.py::test_demo_": "demo-campaign",
    "tests/autofl/test_runner_real.py::test_poc_mode_records_real_downloaded_results": "demo-campaign",
    "tests/autofl/test_runner_real.py::test_noise_sigmas_discards_a_gain": "demo-campaign",
    "tests/autofl/test_runner_real.py::test_the_p6_bench_times_bare_the_job_runs_the_demo_campaign": "demo-campaign",
    # module fixtures worth building once: a real NVFLARE baseline, every release's templates diagnosed (~25 s)
    "tests/reliability/test_r8_sealed_trials.py::test_real_nvflare_": "r8-real-campaign",
    "tests/diagnose/test_nvflare_messages.py::test_coverage_": "message-coverage",
    # fixtures that run real dry runs and simulations (~25 s each alone): split over the workers, each worker built
    # its own copy (CI, 2026-12-07: two builds of each in the slowest 80); one real campaign for two files
    "tests/autofl/test_runner_dryrun_real.py": "computed-budget-campaign",
    "tests/reliability/test_r11_record_first_and_enums_attacks.py::test_a_draft_that_": "computed-budget-campaign",
    "tests/diagnose/test_nvflare_messages.py::test_every_template_of_": "message-extraction",
    "tests/diagnose/test_nvflare_messages.py::test_extraction_covers_": "message-extraction",
    # one real simulation read by two tests (~1.5 s of CPU and ~12 s of wall each time it is built)
    "tests/diagnose/test_logged_messages_real_run.py::test_": "logged-message-run",
}
SHARED_FIXTURE_GROUPS = {
    "poc_system": {"poc-a", "poc-b"},
    "demo": {"demo-campaign"},
    "real_campaign": {"r8-real-campaign"},
    "coverage": {"message-coverage"},
    "computed_budget_campaign": {"computed-budget-campaign"},
    "extracted": {"message-extraction"},
    "threads_run": {"logged-message-run"},
}
# The slowest files start first (after the groups, which xdist starts first as its largest work units), so
# the long real simulations do not form the tail of the run. Measured with --durations (issue 19).
START_FIRST = (
    "tests/poc/",
    "tests/autofl/test_runner_real.py",
    "tests/autofl/test_prune_bench_smoke.py",
    "tests/autofl/test_frozen_real.py",
    "tests/autofl/test_prune_real.py",
    "tests/autofl/test_continuous_campaigns.py",
    "tests/reliability/test_r4_concurrency.py",
    "tests/autofl/test_runner_real_interface.py",
    "tests/autofl/test_trial_real.py",
    "tests/autofl/test_skill_commands.py",
    "tests/diagnose/test_healthy_real_logs.py",
    "tests/test_demo_diagnose.py",
    "tests/autofl/test_runner_noise.py",
    "tests/reliability/test_r1_crash_injection.py",
    "tests/reliability/test_r7_full_disk_and_malformed_input.py",
    "tests/autofl/test_runner_lifecycle.py",
)


def pytest_configure(config):
    """Under xdist, the controller writes the rewritten test modules' bytecode once for every worker to read
    (tests/assert_cache.py)."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    from assert_cache import write_rewritten

    base = config.invocation_params.dir
    write_rewritten(config, [base / arg.split("::")[0] for arg in config.args])


def serial_group(nodeid: str) -> str | None:
    return next((group for prefix, group in SERIAL_GROUPS.items() if nodeid.startswith(prefix)), None)


def pytest_xdist_make_scheduler(config, log):
    """xdist's load-scope scheduler with our scopes: a serial group, else the single test."""
    from xdist.scheduler import LoadScopeScheduling

    class SerialGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return serial_group(nodeid) or nodeid

    return SerialGroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # checked in serial runs too: under xdist a worker that refuses its collection only shows as a crashed item
    for item in items:
        for name, groups in SHARED_FIXTURE_GROUPS.items():
            if name in item.fixturenames and serial_group(item.nodeid) not in groups:
                raise pytest.UsageError(f"{item.nodeid} uses {name} (groups {sorted(groups)}): add it to SERIAL_GROUPS")
    if not hasattr(config, "workerinput"):
        return  # a serial run keeps the plain collection order

    def rank(item) -> int:
        return next((i for i, prefix in enumerate(START_FIRST) if item.nodeid.startswith(prefix)), len(START_FIRST))

    items.sort(key=rank)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def python_exe() -> str:
    """The interpreter that has nvflare installed (the project venv when present)."""
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


@pytest.fixture(scope="session")
def computed_budget_campaign(tmp_path_factory) -> Path:
    """hello-numpy under the computed-budget job (a budget only a dry run can read), initialized once: a real dry
    run and baseline (~25 s). Its users (serial group `computed-budget-campaign`) work on copies."""
    autofl_tests = str(REPO / "tests" / "autofl")
    if autofl_tests not in sys.path:
        sys.path.insert(0, autofl_tests)
    from runner_support import run_inproc

    workspace = tmp_path_factory.mktemp("computed-budget") / "ws"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace)
    job = (REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "job.py").read_text()
    job = job.replace('    with open("touched.txt", "w", encoding="utf-8") as handle:', "    if False:")
    job = job.replace("model=[0.0, 0.0, 0.0],", "model=[0.0] * 9,")  # the example client trains 8 features + bias
    (workspace / "job.py").write_text(job)
    done = run_inproc(workspace, "initialize", "--max-candidates", "4")
    assert done.code == 0, done.stderr
    return workspace
