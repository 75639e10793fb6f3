"""Attacks on three changes of this session: the sweep of dead dry-run folders, the probe started in its own session
with interrupts held while a child starts, and the static reading of conditions it cannot resolve.

The promises under attack: the sweep removes only a folder the importer made whose owner is gone, never anything
a symlink reaches, a live run's folder, another user's folder or the record cache; an interrupt is raised exactly
once, after the child started in a held block is registered for its cleanup; the static importer admits a budget
only when it is the one `python job.py` runs (a condition it cannot resolve leaves what it may change unresolved).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import live_processes
import pytest
from autofl_core.common import cli, trees
from autofl_core.importer import api, dryrun
from autofl_core.trial import owned_folders, processes, seal
from runner_support import dry_run

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
NAMESPACE = owned_folders.pid_namespace()
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


# --- 1. the sweep of dry-run folders -----------------------------------------------------------------------------


def _record(pid: int, started: int | None = None) -> str:
    return f"{pid} {'-' if started is None else started} {NAMESPACE}\n"


def _run_folder(root: Path, suffix: str = "deadbeef", owner: str | None = None) -> Path:
    """A folder as a dry run killed by SIGKILL leaves it (owner gone unless `owner` says otherwise)."""
    folder = root / f"{dryrun.FOLDER_PREFIX}{suffix}"
    folder.mkdir(mode=0o700)
    (folder / owned_folders.OWNER).write_text(owner or _record(live_processes.dead_pid()), encoding="ascii")
    return folder


def _precious(root: Path) -> Path:
    """A folder of files nobody may remove, outside the temp directory."""
    keep = root / "precious"
    (keep / "deep").mkdir(parents=True)
    (keep / "data.txt").write_text("keep me", encoding="utf-8")
    (keep / "deep" / "more.txt").write_text("keep me too", encoding="utf-8")
    # A dead owner's record, so a sweep that followed a link to here would take it for a leftover.
    (keep / owned_folders.OWNER).write_text(_record(live_processes.dead_pid()), encoding="ascii")
    return keep


def _intact(keep: Path) -> bool:
    return (keep / "data.txt").read_text() == "keep me" and (keep / "deep" / "more.txt").read_text() == "keep me too"


def test_a_dead_owners_folder_is_removed_and_a_live_runs_folder_is_kept(tmp_path):
    """The control for every attack below: the sweep does remove what it should."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    dead = _run_folder(temp, "dead0000")
    _state, started = processes.state_and_start(os.getpid())
    live = _run_folder(temp, "live0000", _record(os.getpid(), started))
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == [dead.name]
    assert not dead.exists() and (live / owned_folders.OWNER).is_file()


def test_a_symlink_named_like_a_run_folder_is_never_followed(tmp_path):
    temp, keep = tmp_path / "tmp", _precious(tmp_path)
    temp.mkdir()
    link = temp / f"{dryrun.FOLDER_PREFIX}linkedto"
    link.symlink_to(keep, target_is_directory=True)
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == []
    assert link.is_symlink() and _intact(keep)


def test_symlinks_inside_a_removed_folder_are_removed_not_followed(tmp_path):
    temp, keep = tmp_path / "tmp", _precious(tmp_path)
    temp.mkdir()
    dead = _run_folder(temp)
    (dead / "out" / "nested").mkdir(parents=True)
    (dead / "to-folder").symlink_to(keep, target_is_directory=True)
    (dead / "out" / "nested" / "to-file").symlink_to(keep / "data.txt")
    (dead / "out" / "to-deep").symlink_to(keep / "deep", target_is_directory=True)
    os.chmod(dead / "out" / "nested", 0o500)  # a folder left without write permission is emptied too
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == [dead.name]
    assert not dead.exists() and _intact(keep)


def test_a_folder_swapped_for_a_symlink_after_its_check_is_not_followed(tmp_path, monkeypatch):
    """The race: the folder is checked (a dead owner), then replaced by a symlink to precious data before the
    removal starts."""
    temp, keep = tmp_path / "tmp", _precious(tmp_path)
    temp.mkdir()
    dead = _run_folder(temp)
    checked = owned_folders._owner

    def check_then_swap(folder):
        owner = checked(folder)
        os.rename(folder, tmp_path / "moved-away")
        Path(folder).symlink_to(keep, target_is_directory=True)
        return owner

    monkeypatch.setattr(owned_folders, "_owner", check_then_swap)
    owned_folders.sweep(temp, dryrun.FOLDER_PREFIX)
    assert _intact(keep)
    assert not dead.is_symlink()  # the link itself may go; what it points at stays


def test_a_folder_of_another_user_is_kept(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    other = _run_folder(temp)
    os.chown(other, 65534, 65534)  # nobody
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == []
    assert (other / owned_folders.OWNER).is_file()


def test_an_owner_record_that_is_a_symlink_a_fifo_or_huge_keeps_its_folder(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    elsewhere = tmp_path / "record"
    elsewhere.write_text(_record(live_processes.dead_pid()), encoding="ascii")
    linked = temp / f"{dryrun.FOLDER_PREFIX}symlink0"
    linked.mkdir()
    (linked / owned_folders.OWNER).symlink_to(elsewhere)
    fifo = temp / f"{dryrun.FOLDER_PREFIX}fifo0000"
    fifo.mkdir()
    os.mkfifo(fifo / owned_folders.OWNER)  # a blocking read here would hang every importer
    huge = _run_folder(temp, "huge0000")
    with open(huge / owned_folders.OWNER, "a", encoding="ascii") as handle:
        handle.write("0" * 5_000_000)
    started = time.monotonic()
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == []
    assert time.monotonic() - started < 5
    assert linked.is_dir() and fifo.is_dir() and huge.is_dir()


def test_a_forged_dead_owner_removes_only_the_folder_itself_never_what_it_links_to(tmp_path):
    """Anyone who can write a record can have the folder removed (it is theirs); what the folder reaches through
    links (hard or symbolic) outside it stays."""
    temp, keep = tmp_path / "tmp", _precious(tmp_path)
    temp.mkdir()
    forged = _run_folder(temp, "forged00")
    os.link(keep / "data.txt", forged / "hardlink.txt")
    (forged / "sym").symlink_to(keep, target_is_directory=True)
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == [forged.name]
    assert _intact(keep) and (keep / "data.txt").stat().st_nlink == 1


@pytest.mark.parametrize(
    "name",
    [
        f"autofl-dryrun-{os.getuid()}",  # the record cache
        "autofl-dryrun-run-abcdefg",  # 7
        "autofl-dryrun-run-abcdefghi",  # 9
        "autofl-dryrun-run-ABCDEFGH",
        "autofl-dryrun-run-abcdefgh.bak",
        "xautofl-dryrun-run-abcdefgh",
        "autofl-dryrun-run-abc-efgh",
        "autofl-dryrun-run-abcdefg\n",
        "autofl-trial-run-abcdefgh",
    ],
    ids=repr,
)
def test_names_that_nearly_match_and_the_record_cache_are_kept(tmp_path, name):
    temp = tmp_path / "tmp"
    temp.mkdir()
    folder = temp / name
    folder.mkdir(mode=0o700)
    (folder / owned_folders.OWNER).write_text(_record(live_processes.dead_pid()), encoding="ascii")
    (folder / "x.json").write_text("{}", encoding="utf-8")
    assert owned_folders.sweep(temp, dryrun.FOLDER_PREFIX) == []
    assert (folder / "x.json").is_file()


SWEEP_IN_TMPDIR = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autofl_core.importer import dryrun
from autofl_core.trial import owned_folders
folder = owned_folders.make(Path(tempfile.gettempdir()), dryrun.FOLDER_PREFIX)
print(folder)
"""


def test_tmpdir_is_where_the_folder_is_made_and_swept(tmp_path):
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    dead = _run_folder(temp)
    env = {**os.environ, "TMPDIR": str(temp)}
    scripts = str(REPO / "skills" / "nvflare-autofl" / "scripts")
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_IN_TMPDIR, scripts], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip())
    assert made.parent == temp and not dead.exists()
    assert trees.remove_tree(made)


def test_an_unusable_tmpdir_falls_back_and_is_left_untouched(tmp_path):
    """TMPDIR names a file (as root nothing is unwritable by mode): Python's temp folder falls back to the next
    usable one, where the folder is made; the file is not touched."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("keep", encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(blocker)}
    scripts = str(REPO / "skills" / "nvflare-autofl" / "scripts")
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_IN_TMPDIR, scripts], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip())
    try:
        assert made.is_dir() and not made.is_relative_to(blocker) and blocker.read_text() == "keep"
    finally:
        trees.remove_tree(made)


# --- 2. held interrupts, the probe, the sandbox started in its own session ------------------------------------------


def test_a_nested_held_block_raises_once_when_the_outermost_ends(interrupt_handlers):
    events = []
    with pytest.raises(cli.Interrupted) as raised:
        with cli.interrupts_held():
            with cli.interrupts_held():
                os.kill(os.getpid(), signal.SIGTERM)
                os.kill(os.getpid(), signal.SIGINT)  # ignored: the first one is being handled
                events.append("inner body done")
            events.append("inner ended without raising")
        events.append("never")
    assert events == ["inner body done", "inner ended without raising"]
    assert raised.value.exit_code == cli.EXIT_SIGTERM
    assert cli._HOLD == {"depth": 0, "pending": None}  # nothing left to raise a second time


def test_an_interrupt_held_while_the_block_fails_is_still_raised(interrupt_handlers):
    with pytest.raises(cli.Interrupted) as raised:
        with cli.interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            raise ValueError("the block failed")
    assert raised.value.exit_code == cli.EXIT_SIGINT
    assert isinstance(raised.value.__context__, ValueError)
    assert cli._HOLD == {"depth": 0, "pending": None}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for pid in _members(pgid):
        state, _ = processes.state_and_start(pid)
        if state not in (None, "Z", "X"):
            return True
    return False


def _members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                data = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid:
                found.append(int(entry))
    return found


@sealed
def test_an_interrupt_as_the_sandbox_starts_never_leaves_it_running(
    tmp_path, private_cache, interrupt_handlers, monkeypatch
):
    """SIGTERM lands just as `Popen` returns the dry run's sandbox, before the session holds it: the sandbox
    (its own session: nothing else would end it) must still be ended by the unwinding."""
    job = tmp_path / "job" / "job.py"
    job.parent.mkdir()
    job.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    real_popen, started = subprocess.Popen, []

    def popen_then_sigterm(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        if "--serve" in args[0]:
            started.append(proc.pid)
            os.kill(os.getpid(), signal.SIGTERM)
        return proc

    dryrun.available()  # the probe runs first, unpatched
    monkeypatch.setattr(dryrun.subprocess, "Popen", popen_then_sigterm)
    with pytest.raises(cli.Interrupted):
        dry_run(job, [])
    assert started, "the sandbox never started"
    deadline = time.monotonic() + 5
    while _group_alive(started[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _group_alive(started[0])
    if alive:
        os.killpg(started[0], signal.SIGKILL)
    assert not alive, "the dry run's sandbox outlived the interrupt"
    assert not list(private_cache.glob(f"{dryrun.FOLDER_PREFIX}*"))


def test_a_probe_ended_by_an_interrupt_leaves_nothing_in_the_temp_folder(tmp_path):
    """What an interrupt does to a probe under way (`seal._end_probe`: SIGKILL to its group), once its scratch
    folder exists."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    python = sys.executable
    seal._PROBES.pop(python, None)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(temp), "HOME": str(tmp_path)}
    seal.start_probe(python, env)
    proc = seal._PENDING.pop(python)
    try:
        deadline = time.monotonic() + 30
        while not list(temp.glob("autofl-probe-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert list(temp.glob("autofl-probe-*")), "the probe ended before its scratch folder was seen"
    finally:
        seal._end_probe(proc)
    time.sleep(0.5)
    left = list(temp.iterdir())
    for path in left:
        trees.remove_tree(path)
    assert left == []


RUNNER_DRIVER = """import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("run_job_campaign", sys.argv[1])
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)
from autofl_core.trial import seal

seal.LAUNCHER = Path(sys.argv[2])  # the probe command: `python -I SLOW_PROBE --probe`
sys.exit(runner.main(["initialize", sys.argv[3]]))
"""
SLOW_PROBE = """import os
import time

os.fork()  # the real probe forks too: both must end
time.sleep(60)
"""


_probes = live_processes.running


@pytest.mark.parametrize(
    ("sig", "group", "code"),
    [(signal.SIGTERM, False, 143), (signal.SIGINT, True, 130), (signal.SIGHUP, True, 129)],
    ids=["sigterm", "ctrl_c", "hangup"],
)
def test_an_interrupt_to_the_runners_initialize_during_the_probe_ends_the_probe_and_its_fork(
    tmp_path, sig, group, code
):
    probe, driver = tmp_path / "slow_probe.py", tmp_path / "driver.py"
    probe.write_text(SLOW_PROBE, encoding="utf-8")
    driver.write_text(RUNNER_DRIVER, encoding="utf-8")
    job = _job_with(tmp_path, "")
    scripts = REPO / "skills" / "nvflare-autofl" / "scripts"
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(scripts / "run_job_campaign.py"), str(probe), str(job)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(scripts)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_probes(probe)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        (os.killpg if group else os.kill)(proc.pid, sig)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert "Traceback" not in err.decode()
        gone_by = time.monotonic() + 2.0
        while _probes(probe) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _probes(probe) == [], "the sandbox probe outlived the stopped runner"
    finally:
        proc.kill()
        proc.wait()
        for pid in _probes(probe):
            os.kill(pid, signal.SIGKILL)


# --- 3. the static reading of conditions it cannot resolve ----------------------------------------------------------

HEAD = """import argparse
import random
import sys

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

rounds = 2
"""
TAIL = """
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
PARSED = """parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=2)
args = parser.parse_args()
"""
# `random.random()` is in [0, 1): `> 2` is never true, `< 2` always; the static reading resolves neither.
CONDITIONS = {
    "global rebound by a function a side calls": """
        def bump():
            global rounds
            rounds = 9
        if random.random() > 2:
            bump()
        """,
    "nonlocal rebound by a function a side calls": """
        def outer():
            r = 2
            def bump():
                nonlocal r
                r = 9
            if random.random() > 2:
                bump()
            return r
        rounds = outer()
        """,
    "option set by a function a side calls": PARSED
    + """
        def bump():
            args.num_rounds = 9
        if random.random() > 2:
            bump()
        rounds = args.num_rounds
        """,
    "function defined in both sides": """
        if random.random() < 2:
            def pick():
                return 9
        else:
            def pick():
                return 2
        rounds = pick()
        """,
    "function redefined in a side": """
        def pick():
            return 2
        if random.random() > 2:
            def pick():
                return 9
        rounds = pick()
        """,
    "class redefined in a side": """
        class Plan:
            rounds = 2
        if random.random() < 2:
            class Plan:
                rounds = 9
        rounds = Plan.rounds
        """,
    "for else skipped by a break": """
        for step in ["a", "b"]:
            if step == "b":
                break
        else:
            rounds = 9
        """,
    "while else skipped by a break": """
        n = 0
        while n < 3:
            n += 1
            if n == 2:
                break
        else:
            rounds = 9
        """,
    "match on a literal": """
        match "a":
            case "a":
                rounds = 9
        """,
    "match capture": """
        match 9:
            case 1:
                pass
            case rounds:
                pass
        """,
    "match guard with walrus": """
        match 1:
            case 1 if (rounds := 9):
                pass
        """,
    "walrus in a statement": "print(rounds := 9)\n",
    "walrus first in a test": """
        if (rounds := 9) and random.random() > 2:
            pass
        """,
    "walrus after or": """
        if random.random() > 2 or (rounds := 9):
            pass
        """,
    "walrus in a conditional expression": "x = 1 if random.random() > 2 else (rounds := 9)\n",
    "walrus in a comprehension": "[rounds := 9 for _ in range(1)]\n",
    "walrus in a while test": """
        while (rounds := 9) < 0:
            pass
        """,
    "item set in a side": """
        cfg = {"rounds": 2}
        if random.random() < 2:
            cfg["rounds"] = 9
        rounds = cfg["rounds"]
        """,
    "option set in a side": PARSED
    + """
        if random.random() < 2:
            args.num_rounds = 9
        rounds = args.num_rounds
        """,
    "return in one side": """
        def pick():
            if random.random() < 2:
                return 9
            return 2
        rounds = pick()
        """,
    "try inside a side": """
        if random.random() < 2:
            try:
                rounds = int("x")
            except ValueError:
                rounds = 9
        """,
    "import that fails, caught": """
        try:
            import no_such_module_xyz
        except ImportError:
            rounds = 9
        """,
    "try body stopped part way": """
        try:
            import no_such_module_xyz
            rounds = 9
        except ImportError:
            pass
        """,
    "else of a try whose body fails": """
        try:
            import no_such_module_xyz
        except ImportError:
            pass
        else:
            rounds = 9
        """,
    "second handler catches": """
        try:
            raise ValueError("x")
        except KeyError:
            pass
        except ValueError:
            rounds = 9
        """,
    "with suppress stopping part way": """
        import contextlib
        with contextlib.suppress(ImportError):
            import no_such_module_xyz
            rounds = 9
        """,
    "option deleted in a side": PARSED
    + """
        if random.random() < 2:
            del args.num_rounds
        rounds = getattr(args, "num_rounds", 9)
        """,
    "item deleted in a side": """
        cfg = {"rounds": 2}
        if random.random() < 2:
            del cfg["rounds"]
        rounds = cfg.get("rounds", 9)
        """,
    "with a job's class suppressing": """
        class Quiet:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return True
        with Quiet():
            import no_such_module_xyz
            rounds = 9
        """,
    "container changed by a function a side calls": """
        plan = [2]
        def bump():
            plan.insert(0, 9)
        if random.random() < 2:
            bump()
        rounds = plan[0]
        """,
}
DYNAMIC = {  # ways to rebind that the static reading did not see at all
    "setattr on the namespace": PARSED
    + """
        if random.random() < 2:
            setattr(args, "num_rounds", 9)
        rounds = args.num_rounds
        """,
    "vars of the namespace": PARSED
    + """
        if random.random() < 2:
            vars(args)["num_rounds"] = 9
        rounds = args.num_rounds
        """,
    "__dict__ of the namespace": PARSED
    + """
        if random.random() < 2:
            args.__dict__["num_rounds"] = 9
        rounds = args.num_rounds
        """,
    "an alias of vars of the namespace": PARSED
    + """
        options = vars(args)
        options["num_rounds"] = 9
        rounds = args.num_rounds
        """,
    "vars of the namespace updated": PARSED
    + """
        vars(args).update(num_rounds=9)
        rounds = args.num_rounds
        """,
    "delattr then a default": PARSED
    + """
        if random.random() < 2:
            delattr(args, "num_rounds")
        rounds = getattr(args, "num_rounds", 9)
        """,
    "setattr by a computed name": PARSED
    + """
        name = "num_" + sys.platform[:0] + "rounds"
        setattr(args, name, 9)
        rounds = args.num_rounds
        """,
    "__setattr__ of the namespace": PARSED
    + """
        if random.random() < 2:
            args.__setattr__("num_rounds", 9)
        rounds = args.num_rounds
        """,
    "globals()": """
        if random.random() < 2:
            globals()["rounds"] = 9
        """,
    "exec": """
        if random.random() < 2:
            exec("rounds = 9")
        """,
    "a function's defaults": """
        def pick(r=2):
            return r
        if random.random() < 2:
            pick.__defaults__ = (9,)
        rounds = pick()
        """,
    "a function's defaults by setattr": """
        def pick(r=2):
            return r
        setattr(pick, "__defaults__", (9,))
        rounds = pick()
        """,
    "a function's defaults by object.__setattr__": """
        def pick(r=2):
            return r
        object.__setattr__(pick, "__defaults__", (9,))
        rounds = pick()
        """,
}

RECORDER = r"""
import json, runpy, sys, types

class Recipe:
    def __init__(self, *args, **kwargs):
        seen.update(num_rounds=kwargs.get("num_rounds"), min_clients=kwargs.get("min_clients"))
    def execute(self, env):
        seen["num_clients"] = env.num_clients
        print(json.dumps(seen))
        sys.exit(0)

class SimEnv:
    def __init__(self, num_clients=None, **kwargs):
        self.num_clients = num_clients

seen = {}
for name in ("nvflare", "nvflare.app_common", "nvflare.app_common.np", "nvflare.app_common.np.recipes", "nvflare.recipe"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["nvflare.app_common.np.recipes"].NumpyFedAvgRecipe = Recipe
sys.modules["nvflare.recipe"].SimEnv = SimEnv
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _job_with(tmp_path: Path, body: str, tail: str = TAIL) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    source = (PARSED if body.startswith(PARSED) else "") + textwrap.dedent(body.removeprefix(PARSED))
    (folder / "job.py").write_text(HEAD + source + tail, encoding="utf-8")
    (folder / "client.py").write_bytes(CLIENT.read_bytes())
    return folder / "job.py"


def _real_budget(job: Path) -> dict:
    """The budget `python job.py` runs: NVFLARE's recipe and SimEnv replaced by recorders."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", RECORDER, str(job)], cwd=job.parent, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_refused_or_real(job: Path) -> None:
    config = api.import_job(job)
    real = _real_budget(job)
    if config["admission_errors"]:
        assert all("\n" not in e["message"] for e in config["admission_errors"])
        return
    admitted = {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}
    assert admitted == real, f"admitted {admitted}, but job.py runs {real}"


@pytest.mark.parametrize("case", list(CONDITIONS), ids=lambda c: c.replace(" ", "-"))
def test_a_static_budget_is_admitted_only_as_job_py_runs_it(tmp_path, case):
    """Before: a rebinding through a call, a `def`/`class` in a side, a loop's `else:` a `break` skips, `match` and
    `:=` were read as if they always (or never) ran, and a budget job.py does not run was admitted."""
    _assert_refused_or_real(_job_with(tmp_path, CONDITIONS[case]))


@pytest.mark.parametrize("case", list(DYNAMIC), ids=lambda c: c.replace(" ", "-"))
def test_a_budget_rebound_by_reflection_is_never_admitted_as_unchanged(tmp_path, case):
    """Before: `setattr`, `vars(args)[...]`, `args.__dict__`, `globals()`, `exec` and a function's `__defaults__`
    changed the budget without the walk seeing it, and the unchanged value was admitted."""
    _assert_refused_or_real(_job_with(tmp_path, DYNAMIC[case]))


BUMP = textwrap.dedent(
    """
    def bump(*_args):
        global rounds
        rounds = 9
        return 1
    """
)
EFFECTS = {  # code that runs (or may not) where the walk did not look: a call there rebinds the budget
    "while test": BUMP + "while not bump():\n    pass\n",
    "parameter default": BUMP + "def f(r=bump()):\n    pass\n",
    "decorator": BUMP + "@bump\ndef f():\n    pass\n",
    "decorator's result": "def nine(fn):\n    return lambda: 9\n@nine\ndef pick():\n    return 2\nrounds = pick()\n",
    "class body": BUMP + "class Plan:\n    x = bump()\n",
    "operand or skips": BUMP + "x = random.random() < 2 or bump()\n",
    "conditional expression": BUMP + "x = bump() if random.random() < 2 else 0\n",
    "assert": "assert (rounds := 9)\n",
    "comprehension": BUMP + "xs = [bump(i) for i in range(1)]\n",
    "dict comprehension filter": BUMP + "xs = {i: i for i in range(1) if bump(i)}\n",
    "lambda": BUMP + "f = lambda: bump()\nf()\n",
    "function given to a thread": BUMP + "import threading\nt = threading.Thread(target=bump)\nt.start()\nt.join()\n",
    "function given to map": BUMP + "xs = list(map(bump, [1]))\n",
    "class of job.py built": "class Plan:\n    def __init__(self):\n        global rounds\n        rounds = 9\nplan = Plan()\n",
    "recursive call": "def f(n):\n    global rounds\n    if n == 1:\n        rounds = 9\n        return\n    f(n + 1)\nf(0)\n",
    "recursive call setting an option": PARSED
    + "def f(n):\n    if n == 1:\n        args.num_rounds = 9\n        return\n    f(n + 1)\nf(0)\nrounds = args.num_rounds\n",
    "lambda redefined in a side": "f = lambda: 2\nif random.random() < 2:\n    f = lambda: 9\nrounds = f()\n",
    "lambda's defaults": "f = lambda r=2: r\nif random.random() < 2:\n    f.__defaults__ = (9,)\nrounds = f()\n",
}


@pytest.mark.parametrize("case", list(EFFECTS), ids=lambda c: c.replace(" ", "-"))
def test_code_run_outside_the_walked_path_never_hides_a_rebinding(tmp_path, case):
    """Before: a `while` test, a default, a decorator, a class body, `assert`, a comprehension's calls and a lambda's
    body were never walked, and every operand of `or` and neither branch of an unknown conditional expression
    were: a budget job.py does not run was admitted."""
    _assert_refused_or_real(_job_with(tmp_path, EFFECTS[case]))


def test_an_option_set_through_object_setattr_is_never_admitted_as_unchanged(tmp_path):
    _assert_refused_or_real(
        _job_with(
            tmp_path,
            PARSED
            + """
        object.__setattr__(args, "num_rounds", 9)
        rounds = args.num_rounds
        """,
        )
    )


SETTER_SPELLINGS = {  # every spelling of the attribute setter reaching the namespace: read as setattr
    "object.__setattr__": 'object.__setattr__(args, "num_rounds", 9)',
    "type(args).__setattr__": 'type(args).__setattr__(args, "num_rounds", 9)',
    "argparse.Namespace.__setattr__": 'argparse.Namespace.__setattr__(args, "num_rounds", 9)',
    "super().__setattr__": 'super(argparse.Namespace, args).__setattr__("num_rounds", 9)',
    "setattr aliased": 'put = setattr\nput(args, "num_rounds", 9)',
    "object.__setattr__ aliased": 'put = object.__setattr__\nput(args, "num_rounds", 9)',
    "bound __setattr__ aliased": 'put = args.__setattr__\nput("num_rounds", 9)',
}


def _setter_job(tmp_path: Path, case: str) -> tuple[Path, list[int]]:
    """The job with `case`'s setter, and the lines of the setter's statements (where it is taken, and called)."""
    job = _job_with(tmp_path, PARSED + SETTER_SPELLINGS[case] + "\nrounds = args.num_rounds\n")
    lines = job.read_text().splitlines()
    return job, [lines.index(statement) + 1 for statement in SETTER_SPELLINGS[case].splitlines()]


@pytest.mark.parametrize("case", list(SETTER_SPELLINGS), ids=lambda c: c.replace(" ", "-"))
def test_every_spelling_of_setattr_on_the_namespace_is_refused_statically_naming_the_line(tmp_path, case):
    """Before: only `setattr(args, ...)` and `args.__setattr__(...)` were read; the unbound setter of any class (and
    an alias of either) rebound the option unseen, and 2 rounds were admitted though job.py runs 9. The static
    reading follows no setter: the namespace given to one (or whose setter is taken) leaves every option
    unresolved, naming the line."""
    job, lines = _setter_job(tmp_path, case)
    assert _real_budget(job)["num_rounds"] == 9
    config = api.import_job(job)
    assert config["fixed_budget"]["num_rounds"]["value"] is None
    messages = [e["message"] for e in config["admission_errors"]]
    assert messages and any(f"at line {line}," in messages[0] for line in lines), messages


@sealed
@pytest.mark.parametrize("case", list(SETTER_SPELLINGS), ids=lambda c: c.replace(" ", "-"))
def test_every_spelling_of_setattr_on_the_namespace_is_read_by_the_dry_run(tmp_path, private_cache, case):
    """What the static reading refuses above, the dry run reads as job.py runs it: 9 rounds."""
    job, _lines = _setter_job(tmp_path, case)
    config = api.import_job(job, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == _real_budget(job)["num_rounds"] == 9


NAMESPACE_REACHED = {  # code that may replace any option of the namespace: refused, or read as it runs
    "object.__setattr__ in a side": 'if random.random() < 2:\n    object.__setattr__(args, "num_rounds", 9)\n',
    "object.__delattr__ then a default": 'object.__delattr__(args, "num_rounds")\nargs.num_rounds = getattr(args, "num_rounds", 9)\n',
    "object.__setattr__ by a computed name": 'object.__setattr__(args, "num_" + sys.platform[:0] + "rounds", 9)\n',
    "__init__ of the namespace": "args.__init__(num_rounds=9)\n",
    "Namespace.__init__ unbound": "argparse.Namespace.__init__(args, num_rounds=9)\n",
    "__dict__ replaced": 'args.__dict__ = {**vars(args), "num_rounds": 9}\n',
    "__dict__ updated": "args.__dict__.update(num_rounds=9)\n",
    "__dict__ item set by its dunder": 'args.__dict__.__setitem__("num_rounds", 9)\n',
    "vars merged in place": 'options = vars(args)\noptions |= {"num_rounds": 9}\n',
}


@pytest.mark.parametrize("case", list(NAMESPACE_REACHED), ids=lambda c: c.replace(" ", "-"))
def test_a_namespace_reached_by_dunder_code_is_never_admitted_unchanged(tmp_path, case):
    """Before: these rebound `num_rounds` without the walk seeing it, and the parsed 2 was admitted."""
    _assert_refused_or_real(_job_with(tmp_path, PARSED + NAMESPACE_REACHED[case] + "rounds = args.num_rounds\n"))


@pytest.mark.parametrize("attribute", ["num_clients = 5", "clients = ['a', 'b', 'c']"])
def test_an_attribute_set_on_the_env_after_it_is_built_is_never_admitted_unchanged(tmp_path, attribute):
    """SimEnv reads `num_clients`/`clients` when it runs the job. Before: the reading kept the constructor's 2."""
    tail = TAIL.replace(
        "recipe.execute(SimEnv(num_clients=2))", f"env = SimEnv(num_clients=2)\nenv.{attribute}\nrecipe.execute(env)"
    )
    job = _job_with(tmp_path, "", tail)
    config = api.import_job(job)
    assert config["fixed_budget"]["num_clients"]["value"] is None, config["fixed_budget"]["num_clients"]
    assert config["admission_errors"], "admitted a client count the run does not use"


def test_the_fixed_reading_still_admits_what_job_py_runs(tmp_path):
    """Not everything becomes a refusal: a loop's else with no break, and a try whose handler raises, are read
    (a `:=` is refused statically and read by the dry run: test_importer_dryrun's `walrus` case)."""
    job = _job_with(
        tmp_path,
        """
        for step in ["a", "b"]:
            pass
        else:
            rounds = 7
        try:
            min_sites = 2
        except ValueError:
            raise
        """,
    )
    config = api.import_job(job)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == _real_budget(job)["num_rounds"] == 7


@sealed
@pytest.mark.parametrize(
    "case",
    ["match on a literal", "for else skipped by a break", "option set by a function a side calls"],
    ids=lambda c: c.replace(" ", "-"),
)
def test_the_recorders_budget_is_what_the_dry_run_records(tmp_path, private_cache, case):
    """The stand-in recipe and SimEnv above give the budget the real NVFLARE run asks for: the import's dry run
    (where this host can seal one) settles the statically unresolved value to the same numbers."""
    job = _job_with(tmp_path, CONDITIONS[case])
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert {k: config["fixed_budget"][k]["value"] for k in api.FIELDS} == _real_budget(job)


@sealed
def test_a_budget_chosen_by_a_failed_import_is_admitted_as_job_py_runs_it(tmp_path, private_cache):
    """The dry run stands in for `no_such_module_xyz`, imported in a try whose `except ImportError` keeps 2 rounds
    on this host (the body's 9 never runs here): the record is not `python job.py`, so the import is refused with
    one line naming the job.py line and the fix, never admitted with the body's budget."""
    job = _job_with(tmp_path, CONDITIONS["try body stopped part way"])
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert "no_such_module_xyz" in config["import"]["dry_run"]["stubbed"]
    assert _real_budget(job)["num_rounds"] == 2
    line = job.read_text().splitlines().index("    import no_such_module_xyz") + 1
    messages = [e["message"] for e in config["admission_errors"]]
    assert messages and f"job.py line {line} imports no_such_module_xyz inside a try" in messages[0], messages
    assert "install no_such_module_xyz" in messages[0] and "remove the fallback" in messages[0]
    assert all("\n" not in m for m in messages)


def test_an_interrupt_as_a_timed_out_probe_is_ended_never_leaves_it_running(tmp_path, interrupt_handlers, monkeypatch):
    """The probe timed out (not reaped) and is being ended when SIGTERM lands, after it left the pending list and
    before its group was killed: the interrupt must wait until the probe is ended."""
    slow = tmp_path / "slow_probe.py"
    slow.write_text(SLOW_PROBE, encoding="utf-8")
    monkeypatch.setattr(seal, "LAUNCHER", slow)
    monkeypatch.setattr(seal, "_PROBES", {})
    monkeypatch.setattr(seal, "_PENDING", {})
    monkeypatch.setattr(seal, "PROBE_TIMEOUT", 0.5)
    real_end, started = seal._end_probe, []

    def signal_then_end(proc):
        started.append(proc.pid)
        os.kill(os.getpid(), signal.SIGTERM)
        real_end(proc)

    monkeypatch.setattr(seal, "_end_probe", signal_then_end)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    try:
        with pytest.raises(cli.Interrupted):
            seal.probe(sys.executable, env)
        gone_by = time.monotonic() + 5  # a SIGKILLed process ends when the kernel next runs it (late under load)
        while _probes(slow) and time.monotonic() < gone_by:
            time.sleep(0.05)
    finally:
        survivors = _probes(slow)
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
    assert started and survivors == [], "the probe outlived the interrupt (its forked child sleeps 60 s)"
