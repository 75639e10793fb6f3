"""Run job.py's dry run (the `dryrun_boot` package) in the trial sandbox; cache the record by the job's files and args.

    with Session(job_path, overlay=draft) as session:     # one sandbox, forked children, for several runs of one job
        baseline, perturbed = session.run(args), session.run(args + more)  # recorded.DryRunRecords (None: no seal)
        changed_env = session.run(args, env={"ROUNDS": "7"})  # environment variables set for that run only

The run is sealed like a trial (namespaces, the job's folder seen through an overlay with the campaign folders
hidden, private writes and temp folder). Records are cached in memory and, for a run that reached NVFLARE, in a
private folder of the temp directory keyed by `job_digest`; the cache is never read where this host cannot seal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..common import atomic, bounded, trees
from ..trial import childenv, owned_folders, seal
from .recorded import NOT_RUN, DryRunRecord, parse
from .run_reasons import KEYLESS_FOLDERS

BOOT = Path(__file__).resolve().parent / "dryrun_boot" / "__main__.py"  # run by path; its package is its folder
TIMEOUT_SECONDS = 60.0
MAX_RECORD_BYTES = 16 << 20
MAX_CACHED = 512  # records kept in the cache folder (the oldest go first)
HASHED_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".cfg", ".toml", ".txt", ".sh")
MAX_HASHED_FILES, MAX_HASHED_BYTES, MAX_DEPTH = 400, 1 << 20, 4
MAX_STATED_FILES = 4000  # other files (data): keyed by size and modification time, never read
MAX_READ_BYTES = 16 << 20  # a data file the run read is hashed up to this size (beyond it the record is not kept)
READ_MARKS = "read_marks"  # the kept record's SHA-256 of each data file its run read (`_read_marks`)
TEMP_NAMES = ("TMPDIR", "TEMP", "TMP")
# Never perturbed: what a trial sets itself, and what locates the machine's interpreter, files and network.
FIXED_ENV = (childenv.SIMULATOR_ROOT_VAR, *sorted(childenv.LOCATING_NAMES.difference(TEMP_NAMES)))
HIDDEN = (".nvflare", "autofl_runs")  # the job folder's entries a dry run cannot see (so they are not in its key)
FOLDER_PREFIX = "autofl-dryrun-run-"  # a run's private folder (trial/owned_folders.py: swept once its maker is gone)
STORED = ("recorded",)  # the cache folder keeps runs that reached NVFLARE (a raise may be on a file elsewhere)
PERTURBED_STORED = ("recorded", "raised", "exited")  # a perturbed run of a recorded job: its raise is the values'
# this process's records and their read marks (a raise or an exit too: one answer within a command)
_MEMO: dict[str, tuple[DryRunRecord, dict | None]] = {}


def available(python: str | None = None) -> bool:
    """True when this host can seal a dry run with `python` (probed once per process)."""
    python = python or sys.executable
    return seal.can_seal(seal.probe(python, _env(Path(tempfile.gettempdir()))))


def _env(root: Path, temp_dir: Path | None = None) -> dict[str, str]:
    env = childenv.build_child_env(
        os.environ, passthrough=(), simulator_root=root / "simulator", token="dryrun", temp_dir=temp_dir
    )
    return env | ({childenv.ATTEMPT_VAR: "1"} if temp_dir is not None else {})


def job_digest(folder: Path, overlay: dict[str, bytes] | None, args: list[str], python: str) -> str | None:
    """SHA-256 over what decides the dry run: every Python file of the boot package, interpreter, args, the folder's
    path and the files the run can see (the overlay's over the folder's); None when the walk cannot cover them all."""
    listed = _listed(folder, frozenset(HIDDEN))
    if listed is None:
        return None
    files = dict(listed) | {rel: hashlib.sha256(data).hexdigest() for rel, data in (overlay or {}).items()}
    head = json.dumps([python, args, str(Path(folder).absolute()), FIXED_ENV]).encode()  # a record holds its paths
    return _digest(_boot_digest().encode() + head, sorted(files.items()))


def _boot_digest() -> str:
    """SHA-256 of the boot package: each of its Python files, by name and content."""
    files = sorted(BOOT.parent.glob("*.py"))
    return _digest(b"", [(path.name, hashlib.sha256(path.read_bytes()).hexdigest()) for path in files])


def folder_digest(folder: Path, skip: frozenset[str] = frozenset()) -> str | None:
    """SHA-256 of the folder's files as a dry run's key reads them, leaving out `skip` (folder-relative POSIX paths);
    None when the walk cannot cover them all."""
    listed = _listed(folder, skip)
    return None if listed is None else _digest(b"", listed)


def _digest(head: bytes, files: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256(head)
    for rel, sha in files:
        digest.update(f"{rel}\0{sha}\0".encode())
    return digest.hexdigest()


def _listed(folder: Path, skip: frozenset[str] = frozenset()) -> list[tuple[str, str]] | None:
    """(relative path, fingerprint) of every file a run could import or read: the SHA-256 of a text file, the size
    and modification time of any other. None when some file is past a limit, unreadable, or behind a symlink."""
    found, counts, limits = [], {True: 0, False: 0}, {True: MAX_HASHED_FILES, False: MAX_STATED_FILES}
    for root, dirs, names in os.walk(folder):
        here = Path(root).relative_to(folder)
        dirs[:] = sorted(d for d in dirs if d not in KEYLESS_FOLDERS and (here / d).as_posix() not in skip)
        if any((Path(root) / d).is_symlink() for d in dirs) or (dirs and len(here.parts) >= MAX_DEPTH):
            return None
        for name in sorted(names):
            rel, text, path = (here / name).as_posix(), name.endswith(HASHED_SUFFIXES), Path(root) / name
            if rel in skip:
                continue
            counts[text] += 1  # text files are hashed, any other (data) is keyed by size and modification time
            try:
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):  # a symlink, or a FIFO a read would block on
                    return None
                if counts[text] > limits[text] or (text and info.st_size > MAX_HASHED_BYTES):
                    return None
                mark = hashlib.sha256(path.read_bytes()).hexdigest() if text else None
            except OSError:
                return None
            found.append((rel, mark or f"stat:{info.st_size}:{info.st_mtime_ns}"))
    return found


def _cache_dir() -> Path | None:
    folder = Path(tempfile.gettempdir()) / f"autofl-dryrun-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    return None if folder.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077 else folder


def _read_marks(folder: Path, files_read: tuple[str, ...], overlay: dict[str, bytes] | None) -> dict | None:
    """SHA-256 of each file of the job's folder the run read whose content its key does not hold (a data file: the
    key has its size and time only); None when one is over MAX_READ_BYTES, unreadable or not a regular file."""
    marks = {}
    for rel in files_read:
        path = Path(folder) / rel
        if rel.startswith("/") or rel in (overlay or {}) or rel.endswith(HASHED_SUFFIXES) or path.is_dir():
            continue  # outside (refused, `run_reasons`), staged or text (hashed in the key), a listed folder
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
                return None
            marks[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            marks[rel] = "absent"  # tested for and missing: the key's listing holds that
    return marks


def _same_install(record: DryRunRecord) -> bool:
    """True while NVFLARE's files the run saw (`record.installed`) have the size and time they had: a record of
    another NVFLARE install is run again."""
    for mark in record.installed:
        size, mtime, path = mark.split(":", 2) if mark.count(":") >= 2 else ("", "", "")
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return False
        if f"{info.st_size}:{info.st_mtime_ns}" != f"{size}:{mtime}":
            return False
    return True


def _cached(
    key: str, keep: tuple[str, ...] = STORED, folder: Path | None = None, overlay: dict[str, bytes] | None = None
) -> DryRunRecord | None:
    """The record kept for `key`: this process's own, else the cache folder's when it parses to a status the folder
    keeps (`keep`; anything else there is run again and replaced); either only while the data files its run read in
    `folder` hold what they held (`_read_marks`)."""
    if key in _MEMO:
        record, marks = _MEMO[key]  # marks None: a file past the bound, one answer within the command
        unmarked = folder is None or marks is None
        return record if unmarked or _read_marks(folder, record.files_read, overlay) == marks else None
    cache = _cache_dir()
    if cache is None:
        return None
    path = cache / f"{key}.json"
    try:
        raw = None if path.is_symlink() else bounded.read_json(path, MAX_RECORD_BYTES)
    except bounded.BoundedReadError:
        return None
    record = None if raw is None else parse(raw)
    if record is None or record.status not in keep or not _same_install(record):
        return None
    marks = raw.get(READ_MARKS)
    if folder is not None and (marks is None or _read_marks(folder, record.files_read, overlay) != marks):
        return None
    _MEMO[key] = (record, marks)
    return record


def _store(
    key: str | None,
    raw: dict,
    keep: tuple[str, ...] = STORED,
    folder: Path | None = None,
    overlay: dict[str, bytes] | None = None,
) -> DryRunRecord:
    """The record of a run's JSON, kept for this process under `key` (and its JSON in the cache folder when its
    status is one of `keep` and the data files its run read in `folder` can be marked, `_read_marks`)."""
    record = parse(raw)
    if key is None or record.status in NOT_RUN:
        return record
    marks = _read_marks(folder, record.files_read, overlay) if folder is not None else {}
    _MEMO[key] = (record, marks)
    cache = _cache_dir()
    if cache is None or record.status not in keep or marks is None:
        return record
    try:
        atomic.write_json(cache / f"{key}.json", {**raw, READ_MARKS: marks})
    except (OSError, ValueError):  # ValueError: a value JSON cannot hold (NaN)
        return record
    with contextlib.suppress(OSError):  # the newest MAX_CACHED records stay
        entries = sorted(cache.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for stale in entries[: max(0, len(entries) - MAX_CACHED)]:
            stale.unlink(missing_ok=True)
    return record


class Session:
    """One sandboxed boot process for one job (and overlay), started on the first run that misses the cache: each
    `run(args)` is a child forked inside it. Use as a context manager."""

    def __init__(self, job_path: Path, *, overlay: dict[str, bytes] | None = None, python: str | None = None):
        self.job = Path(job_path).absolute()
        self.overlay = dict(overlay or {})
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self.trial_dir: Path | None = None
        self.count = 0
        self.deadline = 0.0

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        self.close(at_once=exc_type is not None)  # an interrupt (or an error) never waits for job.py

    def run(
        self, args: list[str], env: dict[str, str] | None = None, keep: tuple[str, ...] = STORED
    ) -> DryRunRecord | None:
        """The record of `python job.py ARGS` (with `env` set), or None where this host cannot seal a dry run."""
        return self.run_many([args], env, keep)[0]

    def run_many(
        self, batch: list[list[str]], env: dict[str, str] | None = None, keep: tuple[str, ...] = STORED
    ) -> list[DryRunRecord | None]:
        """Records of several runs (those not cached run side by side), each with `env` set; None where it cannot
        seal. `keep`: the statuses the cache folder keeps."""
        batch = [[str(a) for a in args] for args in batch]
        env = {str(k): str(v) for k, v in (env or {}).items()}
        if not available(self.python):  # a record found in the cache never stands in for a run this host cannot make
            return [None for _ in batch]
        keyed = [[*args, *(f"\0env:{k}={v}" for k, v in sorted(env.items()))] for args in batch]
        keys = [job_digest(self.job.parent, self.overlay, args, self.python) for args in keyed]
        folder = self.job.parent
        records = [_cached(key, keep, folder, self.overlay) if key else None for key in keys]
        missing = [i for i, found in enumerate(records) if found is None]
        if missing and (self.proc is not None or self.start()):
            for index, raw in zip(missing, self._ask([batch[i] for i in missing], env), strict=True):
                records[index] = _store(keys[index], raw, keep, folder, self.overlay)
        return records

    def start(self) -> bool:
        """Start the sandboxed boot process (on the first run the cache misses); False when the host cannot seal
        it."""
        if self.proc is not None:
            return True
        if not available(self.python):
            return False
        # a killed caller's folder goes here
        self.trial_dir = owned_folders.make(Path(tempfile.gettempdir()), FOLDER_PREFIX)
        out = self.trial_dir / "out"
        out.mkdir()
        (self.trial_dir / "tmp").mkdir()  # a trial's private temp folder; in the sandbox its writes vanish (tmpfs)
        self.env = _env(self.trial_dir, self.trial_dir / "tmp")
        plan = seal.write_plan(
            self.trial_dir,
            workspace=self.job.parent,
            network="isolated",
            writable=[out],
            home=os.environ.get("HOME"),
            stage_files=self.overlay,
            hide=[self.job.parent / name for name in HIDDEN if (self.job.parent / name).is_dir()],
        )
        argv = [self.python, "-I", str(BOOT), "--serve", str(self.job)]
        self.proc = subprocess.Popen(
            seal.launcher_argv(self.python, plan, argv),
            cwd=str(self.job.parent),
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.deadline = time.monotonic() + TIMEOUT_SECONDS
        return True

    def _ask(self, batch: list[list[str]], env: dict[str, str]) -> list[dict]:
        outs = [self.trial_dir / "out" / f"record-{self.count + i}.json" for i in range(1, len(batch) + 1)]
        self.count += len(batch)
        runs = [{"out": str(out), "args": args, "env": env} for out, args in zip(outs, batch, strict=True)]
        try:
            self.proc.stdin.write((json.dumps({"runs": runs}) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as error:
            return [{"status": "sandbox_failed", "reason": f"the dry run could not start: {error}"} for _ in batch]
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, self.deadline - time.monotonic()))
        if not ready:
            self.close()
            return [{"status": "timeout", "reason": f"the dry runs took over {TIMEOUT_SECONDS:.0f} s"} for _ in batch]
        if self.proc.stdout.readline() != b"done\n":
            code = self.proc.poll()
            self.close()
            return [{"status": "sandbox_failed", "reason": f"the dry run ended early (exit {code})"} for _ in batch]
        return [self._record(out) for out in outs]

    def _record(self, out: Path) -> dict:
        """The boot's JSON of one run (a status saying why when there is none), with the session's facts added."""
        try:
            with open(out, "rb") as handle:
                data = handle.read(MAX_RECORD_BYTES + 1)
            if len(data) > MAX_RECORD_BYTES:
                return {"status": "sandbox_failed", "reason": f"the dry run's record is over {MAX_RECORD_BYTES} bytes"}
            written = json.loads(data.decode("utf-8"))
        except (OSError, ValueError):
            return {"status": "sandbox_failed", "reason": "the dry run wrote no record"}
        if not isinstance(written, dict):
            return {"status": "malformed", "reason": "the dry run's record is not a JSON object"}
        written.pop("imported", None)  # the JSON before `recorded.parse`: the session's own facts join it
        return {**written, "root_variable": self.env[childenv.SIMULATOR_ROOT_VAR]}

    def close(self, at_once: bool = False) -> None:
        """End the sandbox (its init ends every process in it) and remove its folder; `at_once` kills it without
        letting a run under way finish (an interrupt: its record is never read nor cached)."""
        if self.proc is not None:
            try:
                if at_once or not self.count:  # never asked: no need to wait for its NVFLARE import either
                    raise subprocess.TimeoutExpired(self.proc.args, 0)
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc.stdout.close()
            self.proc = None
        if self.trial_dir is not None:
            trees.remove_tree(self.trial_dir)
            self.trial_dir = None
