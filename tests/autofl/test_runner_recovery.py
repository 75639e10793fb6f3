"""Interrupted evaluations (Do better 7), signals, and cheap lifecycle actions (Do better 8).

The lock and concurrency promises live in tests/reliability/test_r4_concurrency.py."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from autofl_core.trial.seal import PIDS_CGROUP
from runner_support import (
    RUNNER,
    WITHOUT_NAMESPACES,
    initialized_standin,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    source_dir,
    standin_workspace,
    token_processes,
    tree_digest,
)

pytestmark = pytest.mark.slow
HANG = "\nimport time\ntime.sleep(120)\n"


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--max-candidates", "5")


def start_hanging_evaluate(workspace, prefix=()):
    """prepare a candidate whose client sleeps, start evaluate as a CLI process, wait until its trial runs."""
    assert run_inproc(workspace, "prepare", "--name", "hang", "--hypothesis", "h").code == 0
    client = source_dir(workspace, "hang") / "client.py"
    client.write_text(client.read_text() + HANG)
    proc = subprocess.Popen(
        [*prefix, sys.executable, str(RUNNER), "evaluate", str(workspace / "job.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = workspace / ".nvflare/autofl/running_trial.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if marker.exists() and token_processes(json.loads(marker.read_text())["token"]):
            return proc, json.loads(marker.read_text())
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the trial never started")


def clean_sources(workspace):
    return tree_digest(
        workspace,
        skip=(
            ".nvflare",
            "autofl_runs",
            "results.tsv",
            "progress.png",
            "progress.txt",
            "autofl_report.md",
            "autofl_report.json",
            "__pycache__",
        ),
    )


@pytest.mark.parametrize("sealed", [True, False])
def test_killed_runner_mid_trial_is_recovered_by_the_next_action(ws, sealed):
    """Sealed, the trial runs on its own view and the live job is untouched throughout; on a host where trials
    cannot be sealed the candidate is applied while it runs, and the next action restores the workspace."""
    before = clean_sources(ws)
    proc, marker = start_hanging_evaluate(ws, prefix=() if sealed else WITHOUT_NAMESPACES)
    applied = "time.sleep(120)" in (ws / "client.py").read_text()
    assert applied is not sealed and (clean_sources(ws) == before) is sealed
    groups = [PIDS_CGROUP / name for name in os.listdir(marker["temp_dir"])]  # each trial folder names its cgroup
    if sealed and os.access(PIDS_CGROUP, os.W_OK):  # the trial's launcher makes a pids cgroup as it starts
        deadline = time.monotonic() + 60
        while not any(group.is_dir() for group in groups) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any(group.is_dir() for group in groups), groups
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert token_processes(marker["token"])  # the trial runs in its own session: it outlived the runner
    done = run_cli(ws, "status")
    assert done.code == 0 and done.envelope["recovered_interrupted_evaluation"] == "hang"
    assert token_processes(marker["token"]) == []
    assert not os.path.exists(marker["temp_dir"]) and not (ws / ".nvflare/autofl/running_trial.json").exists()
    assert not any(group.exists() for group in groups)  # the orphaned trial's cgroup is removed too
    assert clean_sources(ws) == before
    assert manifest(ws, "hang")["status"] == "prepared"
    assert done.envelope["candidate_attempts"] == 0 and [r["name"] for r in ledger_rows(ws)] == ["baseline"]
    assert done.envelope["next_action"] == "edit_candidate"
    assert run_inproc(ws, "abandon").code == 0  # it can be abandoned (or evaluated) like any pending candidate


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_end_the_trial_and_leave_the_candidate_pending(ws, sig, code):
    before = clean_sources(ws)
    proc, marker = start_hanging_evaluate(ws)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code and out == ""
    assert err.strip().endswith("a candidate under evaluation is pending again")
    assert token_processes(marker["token"]) == []
    assert clean_sources(ws) == before and manifest(ws, "hang")["status"] == "prepared"
    assert not (ws / ".nvflare/autofl/running_trial.json").exists()
    status = run_inproc(ws, "status")
    assert status.code == 0 and "recovered_interrupted_evaluation" not in status.envelope


CHECK_IMPORTS = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:
    code = stop.code
heavy = sorted(name for name in ("matplotlib", "nvflare", "PIL", "numpy") if name in sys.modules)
heavy += sorted(name for name in sys.modules if name.startswith("autofl_core.trial"))  # the trial machinery
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
sys.exit(code)
"""


@pytest.mark.parametrize(
    "action, args",
    [
        ("status", []),
        ("suggest", []),
        ("prepare", ["--name", "cheap", "--hypothesis", "h"]),
        ("abandon", []),
    ],
)
def test_lifecycle_actions_never_import_plotting_or_nvflare(ws, action, args):
    if action == "abandon":
        run_inproc(ws, "prepare", "--name", "to-drop", "--hypothesis", "h")
    done = subprocess.run(
        [sys.executable, "-c", CHECK_IMPORTS, str(RUNNER), action, str(ws / "job.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY=\n" in done.stderr, done.stderr


def test_base_args_accept_equals_and_attached_short_forms(tmp_path):
    """`--base-args "-r3"` (identical to the budget: dropped), `"-r5"` and `"--lr=0.2"` work."""
    workspace = standin_workspace(tmp_path)
    done = run_cli(workspace, "initialize", "--base-args", "--lr=0.2 -r3")
    assert done.code == 0, done.stderr
    row = ledger_rows(workspace)[0]
    assert row["score"] == 0.85 and "--lr=0.2" in row["run_command"] and " -r3" not in row["run_command"]
    other = standin_workspace(tmp_path, "five")
    assert run_cli(other, "initialize", "--base-args", "-r5").code == 0  # base args set the campaign's budget
    import yaml

    assert yaml.safe_load((other / "autofl.yaml").read_text())["fixed_budget"]["num_rounds"]["value"] == 5
    command = ledger_rows(other)[0]["run_command"]
    assert "--num_rounds 5" in command and "-r5" not in command  # each budget option exactly once
