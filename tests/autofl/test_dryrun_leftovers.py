"""What a stopped caller leaves of a dry run: its private folder, its sandbox probe.

The sweep of dry-run folders removes only the importer's own folders whose recorded owner is gone (real
processes: a pid that ended, this live process) or that lost their maker before the record (once old), never a
symlink's target, a fresh folder without a record, or the record cache; the sandbox probe's folders follow the
same rule. The sandbox probe runs in a session of its own and is ended, with everything it forked, when the
importer is stopped by SIGTERM while it waits for the probe.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import live_processes
import pytest
from autofl_core.importer import dryrun
from autofl_core.trial import owned_folders, processes, seal

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parents[2]
IMPORTER = REPO / "skills" / "nvflare-autofl" / "scripts" / "job_importer.py"


NAMESPACE = os.stat("/proc/self/ns/pid").st_ino


def _record(pid: int, started: int | None, namespace: int = NAMESPACE) -> str:
    return f"{pid} {'-' if started is None else started} {namespace}\n"


def _folder(root: Path, suffix: str, owner: str | None) -> Path:
    folder = root / f"{dryrun.FOLDER_PREFIX}{suffix}"
    folder.mkdir(mode=0o700)
    (folder / "out").mkdir()
    (folder / "out" / "record-1.json").write_text("{}", encoding="utf-8")
    if owner is not None:
        (folder / owned_folders.OWNER).write_text(owner, encoding="ascii")
    return folder


def test_a_folder_whose_owner_ended_is_removed_and_a_live_ones_is_kept(tmp_path):
    _state, started = processes.state_and_start(os.getpid())
    dead = _folder(tmp_path, "dead0000", _record(live_processes.dead_pid(), 1))
    live = _folder(tmp_path, "live0000", _record(os.getpid(), started))
    assert owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == [dead.name]
    assert not dead.exists() and (live / "out" / "record-1.json").is_file()


def test_a_live_pid_that_started_at_another_time_is_not_the_owner(tmp_path):
    _state, started = processes.state_and_start(os.getpid())
    reused = _folder(tmp_path, "reused00", _record(os.getpid(), started + 1))  # the pid, used again since
    assert owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == [reused.name]


def test_what_the_sweep_leaves_alone(tmp_path):
    """No record (a folder being made), an unreadable record, a record made in another PID namespace (a container
    sharing the temp folder), a record that is a symlink, another name (the cache folder, a user's), and a symlink
    to a dead owner's folder: neither the link nor its target is touched."""
    dead = _record(live_processes.dead_pid(), 1)
    kept = [
        _folder(tmp_path, "nofile00", None),
        _folder(tmp_path, "garbage0", "the owner\n"),
        _folder(tmp_path, "otherns0", _record(live_processes.dead_pid(), 1, NAMESPACE + 1)),
    ]
    target = _folder(tmp_path.parent, "outside0", dead)  # a dead owner's folder outside, reached only by links
    kept.append(target)
    linked_record = _folder(tmp_path, "linkrec0", None)
    (linked_record / owned_folders.OWNER).symlink_to(target / owned_folders.OWNER)
    link = tmp_path / f"{dryrun.FOLDER_PREFIX}link0000"
    link.symlink_to(target, target_is_directory=True)
    for name in (f"autofl-dryrun-{os.getuid()}", "autofl-dryrun-run-toolongname", "mine"):
        (tmp_path / name).mkdir()
        (tmp_path / name / owned_folders.OWNER).write_text(dead, encoding="ascii")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert link.is_symlink() and all((folder / "out" / "record-1.json").is_file() for folder in kept)


def test_a_folder_its_maker_left_without_a_record_is_removed_once_old(tmp_path):
    """A maker killed between making its folder and renaming the record into it leaves a folder no owner names:
    removed once it has not changed for UNRECORDED_SECONDS (also with the half-written `owner.tmp`); a fresh one
    (being made right now) and another user's are kept."""
    fresh = _folder(tmp_path, "fresh000", None)
    old, half, other = (_folder(tmp_path, suffix, None) for suffix in ("old00000", "half0000", "other000"))
    (half / "owner.tmp").write_text("12", encoding="ascii")
    os.chown(other, 65534, 65534)  # nobody
    then = time.time() - owned_folders.UNRECORDED_SECONDS - 60
    for folder in (old, half, other):
        os.utime(folder, (then, then))
    assert sorted(owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX)) == sorted([old.name, half.name])
    assert (fresh / "out" / "record-1.json").is_file() and (other / "out" / "record-1.json").is_file()


PROBE_MAKER = """import os, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autofl_core.trial import owned_folders, seal
print(owned_folders.make(Path(sys.argv[2]), seal.PROBE_PREFIX), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # killed before it could remove its probe's folder
"""


def test_a_probe_folder_whose_maker_was_killed_is_swept_by_the_next_probe(tmp_path, monkeypatch):
    """The probe's scratch folder is the runner's, by the dry-run folders' rule: the next probe started (in another
    process) removes a killed runner's folder, and ending a probe removes its own."""
    scripts = str(REPO / "skills" / "nvflare-autofl" / "scripts")
    done = subprocess.run(
        [sys.executable, "-c", PROBE_MAKER, scripts, str(tmp_path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = Path(done.stdout.strip())
    assert left.parent == tmp_path and left.name.startswith(seal.PROBE_PREFIX) and left.is_dir()
    monkeypatch.setattr(seal, "_PENDING", {})
    monkeypatch.setattr(seal, "_SCRATCH", {})
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    proc = seal._launch_probe(sys.executable, env)
    try:
        assert not left.exists()
        assert [p.name.startswith(seal.PROBE_PREFIX) for p in tmp_path.iterdir()] == [True]  # its own
    finally:
        seal._end_probe(proc)
    assert list(tmp_path.iterdir()) == []


def test_make_sweeps_first_and_records_this_process(tmp_path):
    dead = _folder(tmp_path, "dead0000", _record(live_processes.dead_pid(), 1))
    made = owned_folders.make(tmp_path, dryrun.FOLDER_PREFIX)
    assert not dead.exists()
    assert owned_folders.pattern(dryrun.FOLDER_PREFIX).fullmatch(made.name) and made.stat().st_mode & 0o777 == 0o700
    assert (
        owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == [] and made.is_dir()
    )  # this process is alive: its folder stays


SLOW_PROBE = """import os
import time

os.fork()  # the real probe forks too (the namespaces' init): both must end
time.sleep(60)
"""
DRIVER = """import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("job_importer", sys.argv[1])
importer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(importer)
from autofl_core.trial import seal

seal.LAUNCHER = Path(sys.argv[2])  # the probe command: `python -I SLOW_PROBE --probe`
sys.exit(importer.main([sys.argv[3], "--dry-run"]))
"""
JOB = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="j", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(clients=["site-1", "site-2"]))
"""


_probes = live_processes.running


def test_sigterm_to_the_importer_during_the_sandbox_probe_ends_the_probe_and_what_it_forked(tmp_path):
    probe, driver = tmp_path / "slow_probe.py", tmp_path / "driver.py"
    probe.write_text(SLOW_PROBE, encoding="utf-8")
    driver.write_text(DRIVER, encoding="utf-8")
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "job.py").write_text(JOB, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(IMPORTER), str(probe), str(tmp_path / "job" / "job.py")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the importer alone gets the signal, as `kill PID` sends it
    )
    try:
        deadline = time.monotonic() + 30
        while len(_probes(probe)) < 2:  # the probe and its fork
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=15)
        assert proc.returncode == 143, err
        assert "interrupted by SIGTERM" in err.decode() and "Traceback" not in err.decode()
        gone_by = time.monotonic() + 2.0
        while _probes(probe) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _probes(probe) == [], "the sandbox probe outlived the stopped importer"
    finally:
        proc.kill()
        proc.wait()
        for pid in _probes(probe):
            os.kill(pid, signal.SIGKILL)


HELD = """import os
import signal
import sys
import time

sys.path.insert(0, sys.argv[1])
from autofl_core.common import cli

cli.install_interrupt_handlers()
try:
    with cli.interrupts_held():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        print("the block finished", flush=True)
    print("after the block", flush=True)
except cli.Interrupted as stop:
    print(f"interrupted by {stop.signal_name}", flush=True)
    sys.exit(stop.exit_code)
"""


def test_an_interrupt_inside_a_held_block_is_raised_when_the_block_ends(tmp_path):
    """What lets a child started in the block (the probe) be registered for cleanup before anything unwinds."""
    script = tmp_path / "held.py"
    script.write_text(HELD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(IMPORTER.parent)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 143, done.stderr
    assert done.stdout.splitlines() == ["the block finished", "interrupted by SIGTERM"]
