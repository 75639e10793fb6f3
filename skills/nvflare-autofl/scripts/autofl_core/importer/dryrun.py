"""Run job.py's dry run (`dryrun_boot.py`) inside the trial sandbox and cache the record by the job's files and args.

    record = dry_run(job_path, base_args, overlay=None)   # None where the sandbox cannot seal (then: static only)

The run is sealed like a trial: user, mount, PID and network namespaces, the job's folder seen through an overlay
(a candidate's draft staged over it), every write private, and everything ended when the boot script returns.
Records are cached in memory and in a private folder of the temp directory (0700, owner-checked), keyed by the
SHA-256 of the boot script, the interpreter, the job folder's small text files (plus the overlay) and the args.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..common import trees
from ..trial import childenv, seal

BOOT = Path(__file__).resolve().parent / "dryrun_boot.py"
TIMEOUT_SECONDS = 60.0
HASHED_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".cfg", ".toml", ".txt")
MAX_HASHED_FILES, MAX_HASHED_BYTES, MAX_DEPTH = 400, 1 << 20, 4
SKIPPED_FOLDERS = {"__pycache__", ".git", ".autofl", "autofl_runs", "node_modules", ".venv", "venv"}
_MEMO: dict[str, dict] = {}


def available(python: str | None = None) -> bool:
    """True when this host can seal a dry run with `python` (probed once per process)."""
    python = python or sys.executable
    return seal.can_seal(seal.probe(python, _env(Path(tempfile.gettempdir()))))


def _env(root: Path) -> dict[str, str]:
    return childenv.build_child_env(os.environ, passthrough=(), simulator_root=root / "simulator", token="dryrun")


def job_digest(folder: Path, overlay: dict[str, bytes] | None, args: list[str], python: str) -> str:
    """SHA-256 over what decides the dry run: boot script, interpreter, the folder's small text files, args."""
    digest = hashlib.sha256()
    digest.update(BOOT.read_bytes())
    digest.update(json.dumps([python, args]).encode())
    files = dict(_text_files(folder))
    for rel, data in (overlay or {}).items():
        files[rel] = hashlib.sha256(data).hexdigest()
    for rel in sorted(files):
        digest.update(f"{rel}\0{files[rel]}\0".encode())
    return digest.hexdigest()


def _text_files(folder: Path):
    count = 0
    for root, dirs, names in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = [] if depth >= MAX_DEPTH else sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(names):
            path = Path(root) / name
            if not name.endswith(HASHED_SUFFIXES) or path.is_symlink():
                continue
            try:
                if path.stat().st_size > MAX_HASHED_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            count += 1
            if count > MAX_HASHED_FILES:
                return
            yield str(path.relative_to(folder)), hashlib.sha256(data).hexdigest()


def _cache_dir() -> Path | None:
    folder = Path(tempfile.gettempdir()) / f"autofl-dryrun-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if folder.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def _cached(key: str) -> dict | None:
    if key in _MEMO:
        return _MEMO[key]
    folder = _cache_dir()
    if folder is None:
        return None
    try:
        record = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    _MEMO[key] = record
    return record


def _store(key: str, record: dict) -> None:
    _MEMO[key] = record
    folder = _cache_dir()
    if folder is None:
        return
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True)
    os.replace(tmp, folder / f"{key}.json")


def dry_run(
    job_path: Path,
    base_args: list[str],
    *,
    overlay: dict[str, bytes] | None = None,
    python: str | None = None,
    use_cache: bool = True,
) -> dict | None:
    """The dry-run record of `python job.py ARGS` (see dryrun_boot.py), or None where it cannot be sealed."""
    python = python or sys.executable
    job_path = Path(job_path).absolute()
    args = [str(a) for a in base_args]
    key = job_digest(job_path.parent, overlay, args, python)
    if use_cache:
        found = _cached(key)
        if found is not None:
            return found
    if not available(python):
        return None
    record = _run(job_path, args, overlay or {}, python)
    if record.get("status") != "sandbox_failed":
        _store(key, record)
    return record


def _run(job_path: Path, args: list[str], overlay: dict[str, bytes], python: str) -> dict:
    trial_dir = Path(tempfile.mkdtemp(prefix="autofl-dryrun-"))
    started = time.monotonic()
    try:
        out = trial_dir / "out"
        out.mkdir()
        env = _env(trial_dir)
        plan = seal.write_plan(
            trial_dir,
            workspace=job_path.parent,
            network="isolated",
            writable=[out],
            home=os.environ.get("HOME"),
            stage_files=dict(overlay),
        )
        argv = [python, "-I", str(BOOT), str(out / "record.json"), str(job_path), *args]
        proc = subprocess.Popen(
            seal.launcher_argv(python, plan, argv),
            cwd=str(job_path.parent),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _out, err = proc.communicate(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "timeout", "reason": f"the dry run took longer than {TIMEOUT_SECONDS:.0f} s"}
        try:
            record = json.loads((out / "record.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            return {
                "status": "sandbox_failed",
                "reason": f"the dry run wrote no record (exit {proc.returncode}): {tail[0]}",
            }
        record["seconds"] = round(time.monotonic() - started, 3)
        record["root_variable"] = env[childenv.SIMULATOR_ROOT_VAR]
        return record
    finally:
        trees.remove_tree(trial_dir)
