"""R3 through `evaluate`: a secret in the runner's environment is invisible to candidate code; a detached
grandchild is gone after the trial; timeout and stall kill the tree within 10 s; and (beyond the reference)
candidate code runs in its own network namespace: a loopback server outside it is unreachable and
/sys/class/net holds only `lo`, unless the campaign allows the network."""

import json
import os
import socket
import threading

import pytest
from runner_support import initialized_standin, ledger_rows, run_cli, run_inproc, source_dir

pytestmark = pytest.mark.slow
SECRET = "AUTOFL_TEST_SECRET_TOKEN"


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--uncapped")


def candidate_code(workspace, name, code):
    """prepare `name` and append `code` to its client.py (it runs when the stand-in loads the client)."""
    assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "probe").code == 0
    client = source_dir(workspace, name) / "client.py"
    client.write_text(client.read_text() + "\n" + code + "\n")


def emit(value: str) -> str:
    """Candidate code that reports `value` (a Python expression) on its output: run.log is the one channel out
    of a sealed trial (its writes outside the trial's private folders never last)."""
    return f"import json as _j\nprint('R3-PROBE ' + _j.dumps({value}), flush=True)"


def emitted(workspace, name):
    for line in (workspace / "autofl_runs" / name / "run.log").read_text().splitlines():
        if line.startswith("R3-PROBE "):
            return json.loads(line.removeprefix("R3-PROBE "))
    raise AssertionError(f"candidate {name} reported nothing")


def test_secret_variable_of_the_runner_never_reaches_candidate_code(ws, tmp_path):
    candidate_code(ws, "probe-env", "import os\n" + emit("dict(os.environ)"))
    done = run_cli(ws, "evaluate", env={**os.environ, SECRET: "hunter2"})
    assert done.code == 0
    seen = emitted(ws, "probe-env")
    assert SECRET not in seen and "hunter2" not in json.dumps(seen)
    assert "PATH" in seen and seen["NVFLARE_SIMULATOR_WORKSPACE_ROOT"] and seen["AUTOFL_TRIAL_TOKEN"]


def test_detached_grandchild_is_gone_after_the_trial(ws, tmp_path):
    marker = f"r3-grandchild-{os.getpid()}-{id(tmp_path)}"  # its pid inside the trial means nothing on the host
    candidate_code(
        ws,
        "probe-fork",
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'], "
        "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "time.sleep(0.5)\n" + emit("{'pid': p.pid, 'alive': p.poll() is None}"),
    )
    assert run_cli(ws, "evaluate").code == 0
    started = emitted(ws, "probe-fork")
    assert isinstance(started["pid"], int) and started["alive"] is True  # it started and was running
    states = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in open(f"/proc/{entry}/cmdline", "rb").read():
                states.append(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue
    assert all(state in ("Z", "X") for state in states), states


@pytest.mark.parametrize(
    "trigger, flags, reason",
    [
        ("import time\ntime.sleep(120)", ["--timeout", "3"], "timeout"),
        (
            "import sys, time\nprint('SimulatorClientRunner - ERROR - run_client_thread error: lost child', flush=True)\n"
            "time.sleep(120)",
            [],
            "stall",
        ),
    ],
)
def test_timeout_and_stall_kill_the_tree_within_ten_seconds(ws, trigger, flags, reason):
    candidate_code(ws, "hang", trigger)
    done = run_cli(ws, "evaluate", *flags)
    assert done.code == 1 and done.envelope["candidate_status"] == "crash"
    trial = json.loads((ws / "autofl_runs" / "hang" / "trial.json").read_text())
    assert reason in (trial["watchdog"] or "") and trial["survivors"] == []
    assert trial["termination_seconds"] is not None and trial["termination_seconds"] <= 10
    assert trial["runtime_seconds"] < 60
    assert reason in ledger_rows(ws)[-1]["failure_reason"]


@pytest.fixture
def loopback_server():
    """A TCP server on the host's loopback, outside any trial namespace; counts accepted connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


NETWORK_PROBE = """
import json, os, socket
result = {{"interfaces": sorted(os.listdir('/sys/class/net'))}}
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()
    result['connect'] = 'connected'
except OSError as error:
    result['connect'] = str(error)
print('R3-PROBE ' + json.dumps(result), flush=True)
"""


def test_candidate_code_cannot_reach_a_loopback_server_outside_its_namespace(ws, tmp_path, loopback_server):
    port, accepted = loopback_server
    candidate_code(ws, "probe-net", NETWORK_PROBE.format(port=port))
    done = run_cli(ws, "evaluate")
    assert done.code == 0 and done.envelope["network_isolation"] == "isolated"
    seen = emitted(ws, "probe-net")
    assert seen["interfaces"] == ["lo"] and seen["connect"] != "connected" and accepted == []
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["network"] == {"allow_network": False, "latest_trial": "isolated"}
    assert "- Trial network: isolated (loopback only)" in (ws / "autofl_report.md").read_text()


def test_allow_network_is_audited_and_lets_the_trial_connect(ws, tmp_path, loopback_server):
    """The probe above can fail: with --allow-network the same code reaches the server."""
    port, accepted = loopback_server
    candidate_code(ws, "probe-net", NETWORK_PROBE.format(port=port))
    done = run_cli(ws, "evaluate", "--allow-network")
    assert done.code == 0 and done.envelope["network_isolation"] == "allowed"
    assert done.envelope["settings_changed"] == ["allow_network"]
    assert emitted(ws, "probe-net")["connect"] == "connected" and accepted == [1]
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"]["allow_network"] is True
    assert [(c["setting"], c["old"], c["new"]) for c in meta["setting_changes"]] == [("allow_network", False, True)]
    report = json.loads((ws / "autofl_report.json").read_text())  # shown in the report: setting and latest trial
    assert report["network"] == {"allow_network": True, "latest_trial": "allowed"}
    markdown = (ws / "autofl_report.md").read_text()
    assert "Trial network: allowed (`--allow-network`)" in markdown and "allow_network" in markdown


def test_an_isolated_trial_that_fails_on_the_network_names_the_flag(ws):
    # the failure a download would meet inside the namespace (no outside address is ever contacted by a test)
    candidate_code(ws, "download", "raise OSError(101, 'Network is unreachable')")
    done = run_cli(ws, "evaluate")
    assert done.code == 1
    reason = ledger_rows(ws)[-1]["failure_reason"]
    assert "Network is unreachable" in reason and "--allow-network" in reason
