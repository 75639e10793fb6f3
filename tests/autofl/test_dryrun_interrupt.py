"""Real signals to real commands while a dry run of job.py is under way.

Ctrl-C (SIGINT to the whole foreground process group) or SIGTERM to the command stops `job_importer.py --dry-run`
and the runner's `initialize` within a couple of seconds with exit 130/143 and one stderr line, ends every process
of the dry run's sandbox, leaves no trial folder and no cached record (the next import runs the job again), and a
SIGINT that reaches the run inside the sandbox is never recorded as job.py's own raise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autofl_core.importer import dryrun

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
BOOT = f"{dryrun.BOOT.parent.name}/{dryrun.BOOT.name}".encode()  # the boot's program in a process's argv
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
pytestmark = [sealed, pytest.mark.timeout(60)]

STARTED_WITHIN = 25.0  # NVFLARE's import in the sandbox on a loaded 2-core machine
STOPPED_WITHIN = 3.0  # the demand: the command ends within a couple of seconds of the signal
JOB = """import os
import signal
import time

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

{handler}
if os.path.exists({flag!r}):  # the slow run: a long preparation before the recipe is built
    time.sleep(60)
recipe = NumpyFedAvgRecipe(
    name="slow", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py", key_metric="accuracy"
)
recipe.execute(SimEnv(clients=["site-1", "site-2"]))
"""


def _job(tmp_path: Path, handler: str = "") -> tuple[Path, Path]:
    """A job.py that sleeps while `flag` (outside its folder, so not in the cache key) exists, after running the
    line `handler`; (job, flag)."""
    folder, flag = tmp_path / "job", tmp_path / "slow.flag"
    folder.mkdir()
    (folder / "job.py").write_text(JOB.format(flag=str(flag), handler=handler), encoding="utf-8")
    (folder / "client.py").write_bytes(CLIENT.read_bytes())
    flag.write_text("sleep\n", encoding="utf-8")
    return folder / "job.py", flag


def _env(tmp_path: Path) -> dict[str, str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temp)}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's foreground command has it, whatever pytest has


def _launch(argv: list[str], tmp_path: Path) -> subprocess.Popen:
    """The command in a process group of its own (the terminal's foreground group when a user runs it)."""
    return subprocess.Popen(
        [sys.executable, *argv],
        env=_env(tmp_path),
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


def _boot_processes(job: Path, launcher: bool = False) -> dict[int, int]:
    """{pid: parent pid} of this job's dry-run boot and the runs it forked (`launcher`: the sandbox's launcher
    processes too, whose argv names the boot)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        named = any(a.endswith(BOOT) for a in argv)
        boot = len(argv) > 2 and argv[2].endswith(BOOT)  # `python -I dryrun_boot/__main__.py`, not its launcher
        if state != "Z" and (boot or launcher and named) and str(job).encode() in argv:
            found[int(entry.name)] = int(ppid)
    return found


def _wait_for_the_run(job: Path, proc: subprocess.Popen) -> int:
    """Wait until job.py runs in the sandbox (the boot forked its run); the pid of that run."""
    deadline = time.monotonic() + STARTED_WITHIN
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        tree = _boot_processes(job)
        leaves = [pid for pid in tree if pid not in tree.values()]
        if len(tree) >= 3 and leaves:  # boot, its per-run child, and the run itself
            time.sleep(1.0)  # inside job.py's sleep by now
            return leaves[0]
        time.sleep(0.1)
    pytest.fail("the dry run never started job.py")


def _stopped(proc: subprocess.Popen, sent: float) -> tuple[int, float, str, str]:
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the command did not stop after the signal: {err.decode()[-2000:]}")
    return proc.returncode, time.monotonic() - sent, out.decode(), err.decode()


def _assert_nothing_left(job: Path, tmp_path: Path) -> None:
    deadline = time.monotonic() + 3.0
    while _boot_processes(job, launcher=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _boot_processes(job, launcher=True) == {}, "a process of the dry run's sandbox outlived the command"
    temp = tmp_path / "tmp"
    cache = temp / f"autofl-dryrun-{os.getuid()}"
    trials = [p.name for p in temp.iterdir() if p.name.startswith("autofl-dryrun-") and p != cache]
    assert trials == [], "the sandbox's trial folder was left behind"
    assert not cache.exists() or list(cache.iterdir()) == [], "the interrupted run left a record in the cache"


def _importer(job: Path) -> list[str]:
    return [str(SCRIPTS / "job_importer.py"), str(job), "--dry-run"]


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _interrupt_the_importer(tmp_path: Path, send, code: int, name: str):
    """Start the importer's dry run of a slow job, `send(proc)` once job.py runs; it stops at once with `code`,
    one line naming `name`, nothing on stdout and nothing left. Returns (job, flag)."""
    job, flag = _job(tmp_path)
    proc = _launch(_importer(job), tmp_path)
    _wait_for_the_run(job, proc)
    sent = time.monotonic()
    send(proc)
    got, seconds, out, err = _stopped(proc, sent)
    assert got == code, (got, err)
    assert seconds < STOPPED_WITHIN, f"took {seconds:.1f} s to stop"
    assert f"interrupted by {name}" in _one_line(err)
    assert out == ""
    _assert_nothing_left(job, tmp_path)
    return job, flag


def test_ctrl_c_stops_the_importers_dry_run_and_the_next_import_runs_it_again(tmp_path):
    ctrl_c = lambda proc: os.killpg(proc.pid, signal.SIGINT)  # noqa: E731  (what the terminal does on Ctrl-C)
    job, flag = _interrupt_the_importer(tmp_path, ctrl_c, 130, "SIGINT")
    flag.unlink()  # the same files and args: a cached record would answer at once, a new run records the job
    again = subprocess.run(
        [sys.executable, *_importer(job)], env=_env(tmp_path), capture_output=True, timeout=40, check=False
    )
    config = json.loads(again.stdout)
    assert again.returncode == 0, again.stderr.decode()
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["admission_errors"] == []


def test_sigterm_to_the_importer_alone_ends_its_sandbox(tmp_path):
    # the importer only: the sandbox is in a session of its own
    _interrupt_the_importer(tmp_path, lambda proc: proc.send_signal(signal.SIGTERM), 143, "SIGTERM")


@pytest.mark.parametrize(
    ("sig", "group", "code"), [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)], ids=["ctrl_c", "sigterm"]
)
def test_an_interrupt_stops_the_runners_initialize_during_its_dry_run(tmp_path, sig, group, code):
    job, _flag = _job(tmp_path)
    before = sorted(p.name for p in job.parent.iterdir())
    proc = _launch([str(SCRIPTS / "run_job_campaign.py"), "initialize", str(job)], tmp_path)
    _wait_for_the_run(job, proc)
    sent = time.monotonic()
    (os.killpg if group else os.kill)(proc.pid, sig)
    exit_code, seconds, out, err = _stopped(proc, sent)
    assert exit_code == code, (exit_code, err)  # the runner's documented exit codes
    assert seconds < STOPPED_WITHIN, f"took {seconds:.1f} s to stop"
    assert f"interrupted by {sig.name}" in _one_line(err)
    assert out == ""
    _assert_nothing_left(job, tmp_path)
    assert sorted(p.name for p in job.parent.iterdir()) == before  # nothing initialized


@pytest.mark.parametrize(
    "handler", ["", "signal.signal(signal.SIGINT, signal.default_int_handler)"], ids=["default", "job_raises"]
)
def test_a_sigint_inside_the_sandbox_is_never_a_raise_of_job_py(tmp_path, handler):
    """The run itself interrupted (as by a Ctrl-C that reached it), also where job.py turns SIGINT into a
    KeyboardInterrupt: the import goes on without a record, never refusing the job for a KeyboardInterrupt at the
    line it was sleeping on, and caches nothing."""
    job, _flag = _job(tmp_path, handler)
    proc = _launch(_importer(job), tmp_path)
    run = _wait_for_the_run(job, proc)
    os.kill(run, signal.SIGINT)
    code, _seconds, out, err = _stopped(proc, time.monotonic())
    config = json.loads(out)
    ran = config["import"]["dry_run"]
    assert ran["status"] != "raised", ran
    assert "KeyboardInterrupt" not in json.dumps(config) and "job.py:" not in json.dumps(config["admission_errors"])
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    _assert_nothing_left(job, tmp_path)


def test_a_killed_importer_leaves_no_sandbox_running(tmp_path):
    """SIGKILL cannot be handled: the sandbox sees its requests' pipe close and ends itself and every run."""
    job, _flag = _job(tmp_path)
    proc = _launch(_importer(job), tmp_path)
    _wait_for_the_run(job, proc)
    proc.kill()
    proc.communicate(timeout=15)
    deadline = time.monotonic() + STOPPED_WITHIN
    while _boot_processes(job, launcher=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _boot_processes(job, launcher=True) == {}, "the sandbox outlived the killed importer"


def _session_folders(tmp_path: Path) -> list[Path]:
    """The dry-run sessions' folders in the commands' temp folder (the record cache's folder left out)."""
    temp = tmp_path / "tmp"
    cache = temp / f"autofl-dryrun-{os.getuid()}"
    return sorted(p for p in temp.iterdir() if p.name.startswith("autofl-dryrun-") and p != cache)


def test_the_folder_of_a_killed_importers_dry_run_is_removed_by_the_next_dry_run(tmp_path):
    """SIGKILL leaves the session's folder behind (nothing of the importer runs); the next dry run sees its owner
    gone, removes it, and runs."""
    job, flag = _job(tmp_path)
    proc = _launch(_importer(job), tmp_path)
    _wait_for_the_run(job, proc)
    left = _session_folders(tmp_path)
    assert len(left) == 1, left
    proc.kill()
    proc.communicate(timeout=15)
    assert _session_folders(tmp_path) == left  # what the killed importer could not remove
    flag.unlink()
    again = subprocess.run(
        [sys.executable, *_importer(job)], env=_env(tmp_path), capture_output=True, timeout=40, check=False
    )
    assert again.returncode == 0, again.stderr.decode()
    assert json.loads(again.stdout)["import"]["dry_run"]["status"] == "recorded"
    assert not left[0].exists(), "the killed importer's folder outlived the next dry run"
    assert _session_folders(tmp_path) == []
