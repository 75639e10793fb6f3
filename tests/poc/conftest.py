"""A real NVFLARE 2.9 POC system on localhost for the tests in this folder (marked `poc` and `integration`).

`poc_system` (session scope) prepares a POC workspace in a temporary folder (`NVFLARE_POC_WORKSPACE`) with free
ports (so it cannot meet another POC system on the machine), starts it, yields its admin startup kit, and always
stops it afterwards: every process whose command line or working directory lies in that workspace is ended
(SIGTERM, then SIGKILL), and the teardown fails if any survives. No test needs a graceful `nvflare poc stop`: it
took 12-18 s (the CLI, then the processes' own shutdown), SIGTERM ends them all in under a second.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
AUTOFL_TESTS = REPO / "tests" / "autofl"
if str(AUTOFL_TESTS) not in sys.path:
    sys.path.insert(0, str(AUTOFL_TESTS))


@dataclass
class PocSystem:
    workspace: Path
    kit: Path
    env: dict

    def nvflare(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        # run from an empty folder: nvflare 2.9 walks its working folder for comm_config.* (the repository with
        # its .venv would cost seconds per call, see nvfdiag/collect.py)
        cwd = self.workspace.parent / "cli-cwd"
        cwd.mkdir(exist_ok=True)
        return subprocess.run(
            [str(VENV_BIN / "nvflare"), *args], env=self.env, capture_output=True, text=True, timeout=timeout, cwd=cwd
        )


def poc_processes(workspace: Path) -> list[int]:
    """Live processes started from the POC workspace (by command line or working directory)."""
    needle = str(workspace)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X") and (needle in cmdline or cwd.startswith(needle)):
            found.append(int(entry))
    return found


def _gone_within(workspace: Path, seconds: float) -> list[int]:
    """Wait until no process of the workspace is left, or `seconds` passed; the ones still alive."""
    deadline = time.monotonic() + seconds
    alive = poc_processes(workspace)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = poc_processes(workspace)
    return alive


def _end_all(workspace: Path) -> list[int]:
    """SIGTERM, then SIGKILL, the workspace's processes (each signal waits up to 2 s, no longer than they take to
    go); the survivors."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in poc_processes(workspace):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        _gone_within(workspace, 2.0)
    return poc_processes(workspace)


def free_ports(count: int) -> list[int]:
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def write_project(path: Path) -> Path:
    """`poc prepare -n 2`'s project (nvflare's dummy_project.yml: server, site-1, site-2, three admins) with
    free ports: the default 8002/8003 collide with any other POC system on the machine (another suite)."""
    import nvflare
    import yaml

    project = yaml.safe_load((Path(nvflare.__file__).parent / "lighter" / "dummy_project.yml").read_text())
    for participant in project["participants"]:
        if participant["type"] == "server":
            participant.update(name="server", default_host="localhost")
            fed_learn_port, admin_port = free_ports(2)
            participant.update(fed_learn_port=fed_learn_port, admin_port=admin_port)
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    return path


def wait_for_clients(system: PocSystem, seconds: float = 240.0) -> subprocess.CompletedProcess:
    """`system status` until it lists both sites. Each call is a bounded process of its own: nvflare's own
    readiness wait (`poc start` without --no-wait) hung for minutes at load 14, and waits only 30 s by default."""
    deadline = time.monotonic() + seconds
    status = None
    while time.monotonic() < deadline:
        try:
            status = system.nvflare(
                "--format", "json", "system", "status", "--startup-kit", str(system.kit), timeout=60
            )
        except subprocess.TimeoutExpired:
            continue
        if '"site-1"' in status.stdout and '"site-2"' in status.stdout:
            break
        time.sleep(1)
    assert status is not None, f"no answer from the POC system within {seconds:g} s"
    return status


@pytest.fixture(scope="session")
def poc_system(tmp_path_factory):
    root = tmp_path_factory.mktemp("poc")
    workspace = root / "poc-workspace"
    env = {**os.environ, "NVFLARE_POC_WORKSPACE": str(workspace), "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    system = PocSystem(workspace=workspace, kit=workspace / "example_project" / "prod_00" / "admin@nvidia.com", env=env)
    project = write_project(root / "project.yml")
    prepared = system.nvflare("poc", "prepare", "-i", str(project), "--force")
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    try:
        started = system.nvflare("poc", "start", "--no-wait", timeout=240)
        assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        status = wait_for_clients(system)
        assert '"site-1"' in status.stdout and '"site-2"' in status.stdout, status.stdout
        yield system
    finally:
        survivors = _end_all(workspace)
        shutil.rmtree(workspace, ignore_errors=True)
        assert survivors == [], f"POC processes survived the teardown: {survivors}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the POC system right after the last test of a run of tests that use it, not at the end of the session.

    A session fixture is torn down when the session ends: the system's stop (its processes ended and checked gone)
    then came after every other test of its worker, at the tail of the whole run. Ending it here
    moves that wait into the run, beside the other workers' tests; a later test that asks for it again gets a new
    system (pytest sets the fixture up again). The survivor check of the fixture's teardown fails this test."""
    result = yield
    if "poc_system" in item.fixturenames and (nextitem is None or "poc_system" not in nextitem.fixturenames):
        # no public API finishes one session fixture early; pytest 9.2 is pinned (requirements-dev.txt)
        for fixturedef in item._fixtureinfo.name2fixturedefs.get("poc_system", ()):
            fixturedef.finish(item._request)
    return result


PROVISIONED_NAMES = {"project": "hospital_net", "server": "fl-hub", "sites": ("hospital-a", "hospital-b")}
PROVISIONED_ADMIN = "ops@acme.org"


def write_provisioned_project(path: Path) -> Path:
    """A production-shaped project: server, sites, admin and project named unlike any POC default, free ports."""
    import yaml

    fed_learn_port, admin_port = free_ports(2)
    server = {"name": PROVISIONED_NAMES["server"], "type": "server", "org": "acme", "default_host": "localhost"}
    server.update(fed_learn_port=fed_learn_port, admin_port=admin_port)
    import nvflare

    project = yaml.safe_load((Path(nvflare.__file__).parent / "lighter" / "dummy_project.yml").read_text())
    project["name"] = PROVISIONED_NAMES["project"]
    project["participants"] = [
        server,
        *({"name": site, "type": "client", "org": "acme"} for site in PROVISIONED_NAMES["sites"]),
        {"name": PROVISIONED_ADMIN, "type": "admin", "org": "acme", "role": "project_admin"},
    ]
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def provisioned_system(tmp_path_factory):
    """A project provisioned with `nvflare provision` (non-default names and ports), each participant started by
    its own startup/start.sh, as an operator starts a production deployment; always stopped afterwards."""
    root = tmp_path_factory.mktemp("prod")
    workspace = root / "provisioned"
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    env.pop("NVFLARE_POC_WORKSPACE", None)
    prod = workspace / PROVISIONED_NAMES["project"] / "prod_00"
    system = PocSystem(workspace=workspace, kit=prod / PROVISIONED_ADMIN, env=env)
    project = write_provisioned_project(root / "project.yml")
    provisioned = system.nvflare("provision", "-p", str(project), "-w", str(workspace), "--force")
    assert provisioned.returncode == 0, provisioned.stdout[-2000:] + provisioned.stderr[-2000:]
    logs = []
    try:
        for name in (PROVISIONED_NAMES["server"], *PROVISIONED_NAMES["sites"]):
            log = open(root / f"{name}.console.log", "ab")  # noqa: SIM115 (closed in the finally)
            logs.append(log)
            subprocess.Popen(
                ["bash", str(prod / name / "startup" / "start.sh")],
                cwd=prod / name,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 240
        status = None
        while time.monotonic() < deadline:
            try:
                status = system.nvflare(
                    "--format", "json", "system", "status", "--startup-kit", str(system.kit), timeout=60
                )
            except subprocess.TimeoutExpired:
                continue
            if all(f'"{site}"' in status.stdout for site in PROVISIONED_NAMES["sites"]):
                break
            time.sleep(1)
        assert status is not None and all(f'"{site}"' in status.stdout for site in PROVISIONED_NAMES["sites"]), (
            status.stdout if status else "no answer"
        )
        yield system
    finally:
        survivors = _end_all(workspace)
        for log in logs:
            log.close()
        shutil.rmtree(workspace, ignore_errors=True)
        assert survivors == [], f"processes of the provisioned system survived the teardown: {survivors}"
