"""The trial sandbox (trial/sandbox/, trial/seal.py) on this host: real namespaces and overlays, no NVFLARE.

Each test runs a small Python program as the trial's command and reads what it could see and do. CI runs on
Linux with unprivileged user namespaces; a host without them fails these tests (never skips them) with the
probe's reason. `unshare -U -r` with `user.max_user_namespaces=0` inside stands for a locked-down container.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from autofl_core.trial import seal
from runner_support import WITHOUT_NAMESPACES

LAUNCHER = seal.LAUNCHER
PYTHON = sys.executable


def probe() -> dict:
    done = subprocess.run([PYTHON, "-I", str(LAUNCHER), "--probe"], capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def sealable():
    document = probe()
    assert seal.can_seal(document), f"this host cannot seal trials: {document}"
    return document


@pytest.fixture
def trial(tmp_path):
    """A live workspace with runner folders, and a trial folder with its simulator root and private temp."""
    workspace = tmp_path / "ws"
    (workspace / ".nvflare" / "autofl").mkdir(parents=True)
    (workspace / ".nvflare" / "autofl" / "campaign.json").write_text('{"secret": "campaign"}')
    (workspace / "autofl_runs").mkdir()
    (workspace / "results.tsv").write_text("status\tname\nbaseline\tbaseline\n")
    (workspace / "job.py").write_text("LIVE = True\n")
    (workspace / "data.txt").write_text("user data\n")
    trial_dir = tmp_path / "t"
    for name in ("sim", "tmp"):
        (trial_dir / name).mkdir(parents=True)
    return workspace, trial_dir


def run_sealed(workspace: Path, trial_dir: Path, program: str, *, stage: dict | None, literal=(), network="isolated"):
    (trial_dir / "probe.py").write_text(textwrap.dedent(program))
    plan = seal.write_plan(
        trial_dir,
        workspace=workspace,
        network=network,
        writable=[trial_dir / "sim", trial_dir / "tmp"],
        home=os.environ.get("HOME"),
        stage_files=stage,
        hide=[workspace / ".nvflare" / "autofl", workspace / "autofl_runs"],
        literal_paths=list(literal),
    )
    argv = seal.launcher_argv(PYTHON, plan, [PYTHON, "-I", str(trial_dir / "probe.py")])
    done = subprocess.run(argv, cwd=trial_dir, capture_output=True, text=True, timeout=120)
    status = seal.read_status(trial_dir, sealed=stage is not None)
    return done, status


def attempt(label: str, code: str) -> str:
    return f"""
try:
    {code}
    print("{label}: ok")
except Exception as error:
    print("{label}: refused", type(error).__name__)
"""


def test_the_probe_reports_every_protection_on_this_host(sealable):
    assert set(sealable["protections"]) == set(seal.SEALED_NEEDS) | {
        "pid_namespace",
        "private_proc",
        "network",
        "capabilities_dropped",
    }
    assert sealable["missing"] == [] and all(value == "yes" for value in sealable["protections"].values())


def test_a_sealed_trial_sees_its_staged_files_and_cannot_write_anything_that_lasts(sealable, trial, tmp_path):
    workspace, trial_dir = trial
    site = Path(os.__file__).parent / "autofl-sandbox-test.pth"
    home = Path(os.path.expanduser("~")) / "autofl-sandbox-home-test"
    program = (
        "import os\n"
        "print('job:', open('job.py').read().strip())\n"
        "print('data:', open('data.txt').read().strip())\n"
        "print('campaign visible:', os.path.exists('.nvflare/autofl/campaign.json'))\n"
        "print('runs visible:', os.listdir('autofl_runs'))\n"
        + attempt("write results", "open('results.tsv', 'w').write('forged')")
        + attempt("write job", "open('job.py', 'w').write('FORGED = 1')")
        + attempt("new module", "open('json.py', 'w').write('x = 1')")
        + attempt("write tmp", "open('/tmp/autofl-sandbox-tmp-test', 'w').write('x')")
        + attempt("write home", f"open({str(home)!r}, 'w').write('x')")
        + attempt("write site", f"open({str(site)!r}, 'w').write('x')")
        + attempt("write sim", f"open({str(trial_dir / 'sim' / 'kept.txt')!r}, 'w').write('kept')")
    )
    done, status = run_sealed(workspace, trial_dir, program, stage={"job.py": b"CANDIDATE = True\n"})
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert status["sealed"] is True and status["missing"] == []
    assert "job: CANDIDATE = True" in out and "data: user data" in out
    assert "campaign visible: False" in out and "runs visible: []" in out
    for label in ("write results", "write job", "new module", "write tmp", "write home", "write sim"):
        assert f"{label}: ok" in out, out  # the job may write: into its private layers
    assert (workspace / "results.tsv").read_text() == "status\tname\nbaseline\tbaseline\n"
    assert (workspace / "job.py").read_text() == "LIVE = True\n"
    assert not (workspace / "json.py").exists()
    assert not Path("/tmp/autofl-sandbox-tmp-test").exists() and not home.exists() and not site.exists()
    assert (trial_dir / "sim" / "kept.txt").read_text() == "kept"  # what the runner copies out on purpose


def test_a_sealed_trial_has_its_own_proc_no_capabilities_and_no_network(sealable, trial):
    workspace, trial_dir = trial
    program = (
        "import os, socket, subprocess\n"
        "print('pids:', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "print('ppid:', os.getppid())\n"
        "print('interfaces:', sorted(os.listdir('/sys/class/net')))\n"
        + attempt("umount", "assert subprocess.run(['umount', '/proc'], capture_output=True).returncode == 0")
        + attempt(
            "remount", "assert subprocess.run(['mount', '-o', 'remount,rw', '/'], capture_output=True).returncode == 0"
        )
        + attempt("connect", "socket.create_connection(('192.0.2.1', 80), timeout=2)")
    )
    done, status = run_sealed(workspace, trial_dir, program, stage={"job.py": b"x = 1\n"})
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "pids: [1, 2]" in out and "ppid: 1" in out, out  # the runner and the host are invisible
    assert "interfaces: ['lo']" in out
    assert "umount: refused" in out and "remount: refused" in out and "connect: refused" in out
    assert status["protections"]["capabilities_dropped"] == "yes"


def test_every_process_of_a_trial_ends_with_its_first_one(sealable, trial):
    workspace, trial_dir = trial
    marker = f"autofl-daemon-{os.getpid()}-{time.monotonic_ns()}"
    program = f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)", "{marker}"], {{}})
            os._exit(0)
        time.sleep(0.5)

        def named(pid):
            try:
                return b"{marker}" in open(f"/proc/{{pid}}/cmdline", "rb").read()
            except OSError:
                return False

        seen = any(named(p) for p in os.listdir("/proc") if p.isdigit())
        print("parent done", "daemon running" if seen else "daemon missing")
    """
    done, _status = run_sealed(workspace, trial_dir, program, stage={"job.py": b"x = 1\n"})
    assert done.returncode == 0 and "parent done daemon running" in done.stdout, (done.stdout, done.stderr)
    deadline = time.monotonic() + 10  # killed as the namespace ended; a loaded kernel may take a moment to reap

    def survivors():
        return [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]

    while survivors() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert survivors() == []


@pytest.mark.parametrize("exists", [False, True])
def test_a_literal_simulator_path_lands_in_the_trial_folder(sealable, trial, tmp_path, exists):
    """NVFLARE's simulator_run removes and recreates its workspace: the job may do that to the mapped path."""
    workspace, trial_dir = trial
    literal = tmp_path / "nvflare" / "jobs" / "workdir"
    if exists:  # an earlier bare run left it (with a file of its own)
        literal.mkdir(parents=True)
        (literal / "old.txt").write_text("from a bare run")
    program = f"""
        import os, shutil
        shutil.rmtree({str(literal)!r}, ignore_errors=True)
        os.makedirs({str(literal)!r} + "/server")
        open({str(literal)!r} + "/server/log.txt", "w").write("Round 0 started.")
        print("written")
    """
    done, _status = run_sealed(workspace, trial_dir, program, stage={"job.py": b"x = 1\n"}, literal=[str(literal)])
    assert done.returncode == 0 and "written" in done.stdout, done.stderr
    result = seal.literal_root(trial_dir, [str(literal)])
    assert (result / "server" / "log.txt").read_text() == "Round 0 started."
    assert literal.exists() is exists and not (literal / "server").exists()  # the host path is untouched
    if exists:
        assert (literal / "old.txt").read_text() == "from a bare run"


def test_exit_codes_and_signals_of_the_command_are_the_launchers(sealable, trial):
    workspace, trial_dir = trial
    done, _ = run_sealed(workspace, trial_dir, "raise SystemExit(3)", stage={"job.py": b""})
    assert done.returncode == 3
    shutil.rmtree(trial_dir)
    (trial_dir / "sim").mkdir(parents=True)
    (trial_dir / "tmp").mkdir()
    done, _ = run_sealed(workspace, trial_dir, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", stage={})
    assert done.returncode == -15


def test_a_command_killed_by_sigkill_ends_the_launcher_by_sigkill_without_a_traceback(sealable, trial):
    """What a limit breach or the kernel's OOM killer does: SIGKILL cannot be given a handler, so the launcher and
    the namespace's init leave by it without trying to."""
    workspace, trial_dir = trial
    done, _ = run_sealed(workspace, trial_dir, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", stage={})
    assert done.returncode == -9 and "Traceback" not in done.stderr, done.stderr


def test_a_required_protection_that_fails_stops_the_trial_before_it_runs(sealable, trial):
    workspace, trial_dir = trial
    plan = seal.write_plan(
        trial_dir,
        workspace=workspace / "missing",  # the view cannot be laid on a folder that does not exist
        network="isolated",
        writable=[trial_dir / "sim", trial_dir / "tmp"],
        home=None,
        stage_files={"job.py": b""},
    )
    argv = seal.launcher_argv(PYTHON, plan, [PYTHON, "-c", "print('ran')"])
    done = subprocess.run(argv, cwd=trial_dir, capture_output=True, text=True, timeout=60)
    assert done.returncode == 126 and "ran" not in done.stdout
    assert "autofl: the trial was not run: workspace_view" in done.stderr
    assert seal.read_status(trial_dir, sealed=True)["sealed"] is False


def test_a_contained_trial_runs_in_the_live_workspace_in_its_own_pid_namespace(sealable, trial):
    workspace, trial_dir = trial
    program = (
        "import os; open('made.txt', 'w').write('x'); print(sorted(p for p in os.listdir('/proc') if p.isdigit()))"
    )
    done, status = run_sealed(workspace, trial_dir, program, stage=None, network="allowed")
    assert done.returncode == 0, done.stderr
    assert (workspace / "made.txt").exists()  # contained, not sealed: the runner checks the workspace afterwards
    assert done.stdout.strip() == "['1', '2']"
    assert status["sealed"] is False and status["protections"]["network"] == "allowed"


def test_without_user_namespaces_the_probe_names_what_is_missing_and_a_contained_trial_still_runs(trial):
    workspace, trial_dir = trial
    locked = list(WITHOUT_NAMESPACES)
    done = subprocess.run([*locked, PYTHON, "-I", str(LAUNCHER), "--probe"], capture_output=True, text=True, timeout=60)
    document = json.loads(done.stdout)
    assert done.returncode == 1 and not seal.can_seal(document)
    assert "user_namespace" in document["missing"] and "workspace_view" in document["missing"]
    (trial_dir / "probe.py").write_text("print('ran anyway')")
    plan = seal.write_plan(trial_dir, workspace=workspace, network="isolated", writable=[trial_dir / "sim"], home=None)
    argv = [*locked, *seal.launcher_argv(PYTHON, plan, [PYTHON, str(trial_dir / "probe.py")])]
    ran = subprocess.run(argv, cwd=trial_dir, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and "ran anyway" in ran.stdout, ran.stderr
    status = seal.read_status(trial_dir, sealed=False)
    assert status["sealed"] is False and "network" in status["missing"]


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
