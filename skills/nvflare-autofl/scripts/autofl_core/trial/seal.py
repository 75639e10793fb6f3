"""The runner's side of the trial sandbox: probe what this host allows, write a trial's plan, read what held.

`sandbox/` (the package beside this module, `sandbox/__main__.py` run by path with `python -I`) is the trial's
first program; this module decides what it is asked to do. A *sealed* trial runs on its own view of the job: the
managed files as the trial must see them (the best source, or the best plus a candidate's edits) are staged in the
trial folder and laid over the live workspace by an overlay, every write lands in a private upper folder, the
runner's folders are hidden, writes to the temp folder and HOME are discarded, literal simulator paths and the
trial's own folders are mapped to private folders, and the rest of the host is read-only. Without the namespaces
and overlays that needs, the trial is only *contained* (user, PID, network namespaces as far as they work) and runs
in the live workspace. Usage::

    if can_seal(probe(python, env)):                 # once per runner process and interpreter
        plan = write_plan(trial_dir, workspace=ws, stage_files=files, hide=[...], network="isolated")
    launch = launcher_argv(python, plan, argv)       # cwd: the trial folder, never the job
    status = read_status(trial_dir)                   # {"sealed", "protections", "missing"}
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..common import bounded, cli, trees
from . import owned_folders

LAUNCHER = Path(__file__).resolve().parent / "sandbox" / "__main__.py"
PLAN, STATUS, LIMITS = "sandbox-plan.json", "sandbox-status.json", "sandbox-limits.json"
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
NO_STATUS = "unavailable: the sandbox launcher wrote no status"
SEALED_NEEDS = ("user_namespace", "mount_namespace", "workspace_view", "read_only_host")
PROBE_TIMEOUT = 30.0
PROBE_PREFIX = "autofl-probe-"  # a probe's scratch folder (trial/owned_folders.py: swept once its maker is gone)
_PROBES: dict[str, dict] = {}
_PENDING: dict[str, subprocess.Popen] = {}  # probes started early (start_probe), not yet collected
_SCRATCH: dict[int, Path] = {}  # a probe's pid -> its scratch folder, removed when the probe is ended


def start_probe(python: str, env: dict[str, str]) -> None:
    """Start the probe of `python` in the background (the caller goes on with its own start-up meanwhile);
    `probe` collects it."""
    if python not in _PROBES and python not in _PENDING:
        try:
            _launch_probe(python, env)
        except OSError:
            pass  # probe() tries again and records the error


def probe(python: str, env: dict[str, str]) -> dict:
    """What the sandbox can set up on this host with `python` (cached per interpreter for this process). However
    the wait for it ends (an answer, the timeout, an interrupt), the probe's whole process group is ended."""
    if python not in _PROBES:
        try:
            document = _probe_document(python, env)
        finally:
            with cli.interrupts_held():  # an interrupt now waits until the probe left the list is ended
                proc = _PENDING.pop(python, None)
                if proc is not None:
                    _end_probe(proc)
        _PROBES[python] = document
    return _PROBES[python]


def _probe_document(python: str, env: dict[str, str]) -> dict:
    try:
        proc = _PENDING.get(python) or _launch_probe(python, env)
        out, _err = proc.communicate(timeout=PROBE_TIMEOUT)
        document = bounded.parse_json(out.decode("utf-8", "replace") or "{}")
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        document = {"protections": {}, "missing": [], "error": str(error)}
    if not isinstance(document, dict) or not isinstance(document.get("protections"), dict):
        document = {"protections": {}, "missing": [], "error": "the sandbox probe printed no status"}
    return document


@atexit.register
def _end_pending() -> None:
    """A probe nobody collected (the action stopped early) does not outlive the runner."""
    for proc in _PENDING.values():
        _end_probe(proc)


def _end_probe(proc: subprocess.Popen) -> None:
    """SIGKILL the probe's process group (the probe and what it forked: its namespace's init ends the rest) unless
    it was collected already, reap it, and remove its scratch folder."""
    if proc.returncode is None:  # not reaped yet: the group id is still the probe's own
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    scratch = _SCRATCH.pop(proc.pid, None)
    if scratch is not None:
        trees.remove_tree(scratch)


def _launch_probe(python: str, env: dict[str, str]) -> subprocess.Popen:
    """Start the probe in a session of its own (its whole group can be ended with it, `_end_probe`) on a scratch
    folder this process owns (in the probe's temp directory), both registered before an interrupt can unwind past
    them."""
    with cli.interrupts_held():
        scratch = owned_folders.make(_temp_root(env), PROBE_PREFIX)
        try:
            proc = subprocess.Popen(
                [python, "-I", str(LAUNCHER), "--probe", str(scratch)],
                cwd=tempfile.gettempdir(),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            trees.remove_tree(scratch)
            raise
        _PENDING[python], _SCRATCH[proc.pid] = proc, scratch
    return proc


def _temp_root(env: dict[str, str]) -> Path:
    """The probe's temp directory: the first of TMPDIR, TEMP and TMP in its environment that is a folder, else
    this process's."""
    named = (env.get(name) for name in ("TMPDIR", "TEMP", "TMP"))
    return next((Path(path) for path in named if path and os.path.isdir(path)), Path(tempfile.gettempdir()))


def can_seal(document: dict) -> bool:
    """True when a probe shows every protection a sealed trial needs."""
    protections = document.get("protections") or {}
    return all(protections.get(name) == "yes" for name in SEALED_NEEDS)


def write_plan(
    trial_dir: Path,
    *,
    workspace: Path,
    network: str,
    writable: list[Path],
    home: str | None,
    stage_files: dict[str, bytes] | None = None,
    hide: list[Path] = (),
    literal_paths: list[str] = (),
    discard_writes: bool = True,
    limits: dict | None = None,
) -> Path:
    """Write the sandbox plan (and the staged files of a sealed trial) into `trial_dir`; returns the plan path.

    `stage_files` None: a contained trial in the live workspace. Otherwise a sealed one: the files are staged,
    `hide` folders of the workspace are invisible, `writable` folders (the one that holds the simulator root and
    the private temp folder: a FedJob removes its simulator root, which a mount point could not be) stay writable,
    and each of `literal_paths` (a simulator workspace a job writes to whatever NVFLARE_SIMULATOR_WORKSPACE_ROOT
    says) is mapped: its nearest existing folder gets an overlay whose upper layer is in the trial folder
    (`literal_root` says where the job's results land). `limits` (memory, disk, processes; see
    common/trial_limits.py) are enforced by the launcher on the trial's writable folders (`writable`, the upper
    layers) and temp mounts; `read_breach` reads what it found crossed. `discard_writes` False leaves the temp
    folder and HOME read-only like the rest of the host (instead of discarding what is written there).
    """
    trial_dir = Path(trial_dir)
    sealed = stage_files is not None
    plan: dict = {"status_file": str(trial_dir / STATUS), "cwd": str(workspace), "network": network}
    if limits:
        plan["limits"] = _limits_entry(trial_dir, limits, writable, sealed=sealed, literal_paths=literal_paths)
    if sealed:
        stage(trial_dir / "stage", stage_files)
        for name in ("upper", "work"):
            (trial_dir / name).mkdir()
        plan.update(_sealed_entries(trial_dir, workspace, writable, home, hide, literal_paths, discard_writes))
    path = trial_dir / PLAN
    path.write_text(json.dumps(plan, sort_keys=True), encoding="utf-8")
    return path


def _limits_entry(trial_dir: Path, limits: dict, writable: list[Path], *, sealed: bool, literal_paths) -> dict:
    """The plan's `limits`: the caller's, the file the launcher says a breach in, the trial's cgroup name and the
    folders whose disk use counts (the writable ones; a sealed trial's upper layers too)."""
    disk = [{"path": str(path), "label": "the simulator workspace and TMPDIR"} for path in writable]
    if sealed:
        disk.append({"path": str(trial_dir / "upper"), "label": "the job's folder"})
        disk += [
            {"path": str(trial_dir / f"mapped-{index}" / "upper"), "label": target}
            for index, target in enumerate(literal_paths)
        ]
    return {**limits, "reason_file": str(trial_dir / LIMITS), "cgroup": trial_dir.name, "disk_paths": disk}


def _sealed_entries(trial_dir: Path, workspace, writable, home, hide, literal_paths, discard_writes) -> dict:
    """A sealed trial's view of the workspace (stage, overlay, hidden folders), what stays writable, what is
    discarded and the mapped literal simulator paths."""
    return {
        "required": list(SEALED_NEEDS),
        "view": {
            "workspace": str(workspace),
            "stage": str(trial_dir / "stage"),
            "upper": str(trial_dir / "upper"),
            "work": str(trial_dir / "work"),
            "hide": [str(path) for path in hide],
        },
        "ephemeral": _ephemeral_entries(trial_dir, home) if discard_writes else [],
        "writable": [str(path) for path in writable],
        "map": [_map_entry(trial_dir, index, target) for index, target in enumerate(literal_paths)],
    }


def literal_root(trial_dir: Path, literal_paths: list[str]) -> Path | None:
    """Where a sealed trial's results land when the job writes to its first literal simulator path."""
    if not literal_paths:
        return None
    anchor, rel = _anchor(literal_paths[0])
    return Path(trial_dir) / "mapped-0" / "upper" / rel


def _map_entry(trial_dir: Path, index: int, target: str) -> dict:
    folder = Path(trial_dir) / f"mapped-{index}"
    for name in ("upper", "work"):
        (folder / name).mkdir(parents=True)
    anchor, _rel = _anchor(target)
    return {"path": anchor, "upper": str(folder / "upper"), "work": str(folder / "work")}


def _anchor(target: str) -> tuple[str, str]:
    """The nearest existing folder of `target` (overlaid in the trial) and the path of `target` below it."""
    path = Path(os.path.abspath(target))
    anchor = path
    while not anchor.is_dir() and anchor != anchor.parent:
        anchor = anchor.parent
    anchor = Path(os.path.realpath(anchor))
    rel = path.relative_to(anchor) if path.is_relative_to(anchor) else Path(path.name)
    if rel == Path("."):
        anchor, rel = anchor.parent, Path(anchor.name)  # the job removes and recreates the folder itself
    return str(anchor), str(rel)


def launcher_argv(python: str, plan: Path, argv: list[str]) -> list[str]:
    return [str(python), "-I", str(LAUNCHER), "--plan", str(plan), "--", *argv]


def read_breach(trial_dir: Path) -> dict | None:
    """The limit the launcher found crossed (`{"limit", "value", "used", "by"}`), or None."""
    try:
        document = bounded.read_json(Path(trial_dir) / LIMITS)  # None when no limit was crossed (no file)
    except ValueError:  # BoundedReadError
        return None
    return document if isinstance(document, dict) else None


RELEASE_SECONDS = 5.0  # a killed process may hold its cgroup for a moment while it exits (a loaded machine)


def release_limits(trial_dir: Path) -> None:
    """Remove the trial's pids cgroup once its processes ended (left in place while one survives)."""
    deadline = time.monotonic() + RELEASE_SECONDS
    while True:
        try:
            os.rmdir(PIDS_CGROUP / Path(trial_dir).name)
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return  # none was made (ENOENT), or a process of the trial survived
        time.sleep(0.05)


def read_status(trial_dir: Path, *, sealed: bool) -> dict:
    """The envelope's `sandbox` object: whether the trial was sealed, each protection, the missing ones."""
    try:
        document = bounded.read_json(Path(trial_dir) / STATUS)
        protections = dict(document["protections"])
    except (ValueError, KeyError, TypeError):  # BoundedReadError is a ValueError; a missing file reads as None
        document, protections = {}, {"user_namespace": NO_STATUS}
    missing = sorted(name for name, value in protections.items() if str(value).startswith("unavailable"))
    held = sealed and all(protections.get(name) == "yes" for name in SEALED_NEEDS)
    status = {"sealed": held, "protections": protections, "missing": missing}
    limits = document.get("limits") if protections.get("user_namespace") != NO_STATUS else None
    if isinstance(limits, dict):
        status["limits"] = limits
        status["limits_unenforced"] = sorted(
            kind
            for kind, entry in limits.items()
            if isinstance(entry, dict) and str(entry.get("enforcement", "")).startswith("unavailable")
        )
    return status


def network_word(status: dict) -> str:
    """The older `network_isolation` word: isolated, allowed, or unavailable: <why>."""
    value = status["protections"].get("network", "unavailable: no status")
    return {"yes": "isolated"}.get(value, value)


def stage(folder: Path, files: dict[str, bytes]) -> None:
    """Write `files` ({relative path: bytes}) below `folder`, creating it and the folders between."""
    for rel, data in sorted(files.items()):
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    folder.mkdir(exist_ok=True)


def _ephemeral_entries(trial_dir: Path, home: str | None) -> list[dict]:
    """The temp folders and HOME: reads see the host, writes vanish with the trial."""
    paths = []
    for path in (tempfile.gettempdir(), "/tmp", home or ""):
        real = os.path.realpath(path) if path else ""
        if real and real != "/" and os.path.isdir(real) and real not in paths:
            paths.append(real)
    entries = []
    for index, path in enumerate(paths):
        scratch = trial_dir / f"scratch-{index}"
        scratch.mkdir()
        entries.append({"path": path, "scratch": str(scratch)})
    return entries
