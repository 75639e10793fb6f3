"""Campaign files are checked, not trusted: what a trial must not change is copied before it runs and restored after.

A sealed trial cannot write the workspace at all; a trial that runs only contained (no mount namespace or
overlay on this host) runs in the live workspace with the user's rights. Either way the runner keeps, in its
own memory (out of any trial's reach), the bytes of the ledger, campaign.json, autofl.yaml, the trial marker,
the records of what the runner may remove (created.json, installed.json, the finalize journal), every candidate
manifest, the whole best snapshot, the frozen evaluator's copies and section digest, the baselines' frozen evaluation records (the
sites and model file later trials are held to) before a trial, and compares them afterwards: a
difference is restored byte for byte and reported as tampering. For a trial that ran in the live workspace it
also keeps the workspace's Python sources (`*.py`, `*.pth`) and the names of its bytecode files: a source the
trial changed is restored and one it created is removed (both reported), and bytecode it left or changed is
removed without a report (Python writes bytecode itself when the job imports its modules), so forged bytecode or
a shadowing module never reaches a later trial or the live job. Usage::

    guard = EvidenceGuard.take(campaign, live_workspace=not sealed)
    ...run the trial...
    restored = guard.restore()      # workspace-relative paths of what the trial had changed
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..campaign import vocabulary as v
from ..common import atomic
from .frozen_eval import EVALUATION_FILE
from .store import created, frozen

SOURCE_SUFFIXES = (".py", ".pth")
SKIPPED_PARTS = {".git", ".nvflare", ".tox", ".venv", "venv", "node_modules", "site-packages"}
MAX_SOURCES = 5000
MAX_SOURCE_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 256 * 1024 * 1024
WHOLE_FOLDERS = ("best", frozen.FOLDER)  # every file watched, extra ones removed


@dataclass
class EvidenceGuard:
    """Copies of the campaign's evidence (and, for a live-workspace trial, of its Python sources)."""

    workspace: Path
    files: dict[Path, bytes | None] = field(default_factory=dict)  # None: the file did not exist
    folders: list[Path] = field(default_factory=list)  # whose extra files are removed
    sources: dict[Path, bytes] = field(default_factory=dict)
    bytecode: dict[Path, tuple[int, int]] = field(default_factory=dict)
    skipped: list[Path] = field(default_factory=list)

    @classmethod
    def take(cls, campaign, *, live_workspace: bool) -> EvidenceGuard:
        paths = campaign.paths
        guard = cls(workspace=paths.workspace, skipped=[paths.output_root])
        records = (paths.journal, created.path_of(paths), created.installed_path(paths))  # what may be removed
        section = paths.meta / frozen.SECTION_DIGEST
        for path in (paths.results, paths.campaign, paths.autofl_yaml, paths.trial_marker, *records, section):
            guard.files[path] = _read(path)
        for row in campaign.rows():  # the frozen evaluation pins a candidate's sites and model file to these
            if row.status == v.BASELINE:
                record = paths.run_dir(row.name) / EVALUATION_FILE
                guard.files[record] = _read(record)
        for folder in (paths.best, paths.candidates, paths.meta / frozen.FOLDER):
            guard.folders.append(folder)
            for path in _walk(folder):
                if folder.name in WHOLE_FOLDERS or path.name == "candidate_manifest.json":
                    guard.files[path] = _read(path)
        if live_workspace:
            guard._take_sources()
        return guard

    def restore(self) -> list[str]:
        """Put back every watched file the trial changed; returns their workspace-relative paths, sorted."""
        changed = set()
        for path, data in self.files.items():
            if _read(path) != data:
                _put(path, data)
                changed.add(path)
        for folder in self.folders:
            for path in _walk(folder):
                if path not in self.files and (folder.name in WHOLE_FOLDERS or path.name == "candidate_manifest.json"):
                    path.unlink(missing_ok=True)
                    changed.add(path)
        if self.sources or self.bytecode:
            changed |= self._restore_sources()
        return sorted(self._rel(path) for path in changed)

    def _take_sources(self) -> None:
        total = 0
        for path in self._workspace_files():
            if path.suffix in SOURCE_SUFFIXES and len(self.sources) < MAX_SOURCES and total < MAX_SOURCE_BYTES:
                data = _read(path)
                if data is not None:
                    self.sources[path] = data
                    total += len(data)
            elif path.suffix == ".pyc":
                self.bytecode[path] = _stamp(path)

    def _restore_sources(self) -> set[Path]:
        changed = set()
        for path in self._workspace_files():
            if path.suffix in SOURCE_SUFFIXES and path not in self.sources:
                path.unlink(missing_ok=True)  # a module the trial created, e.g. a shadowing json.py
                changed.add(path)
            elif path.suffix == ".pyc" and self.bytecode.get(path) != _stamp(path):
                path.unlink(missing_ok=True)  # bytecode the trial wrote or forged: Python rebuilds it
        for path, data in self.sources.items():
            if _read(path) != data:
                _put(path, data)
                changed.add(path)
        return changed

    def _workspace_files(self):
        skipped = [str(path) for path in self.skipped]
        for folder, dirs, names in os.walk(self.workspace, followlinks=False):
            dirs[:] = [d for d in dirs if d not in SKIPPED_PARTS and os.path.join(folder, d) not in skipped]
            for name in names:
                path = Path(folder, name)
                if not path.is_symlink():
                    yield path

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return path.as_posix()


def _walk(folder: Path):
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            yield Path(root, name)


def _read(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return b"<not a plain file>" if path.exists() or path.is_symlink() else None
        return path.read_bytes()
    except OSError:
        return None


def _put(path: Path, data: bytes | None) -> None:
    if path.is_symlink() or path.is_dir():
        if path.is_dir() and not path.is_symlink():
            return
        path.unlink()
    if data is None:
        path.unlink(missing_ok=True)
    else:
        atomic.write_bytes(path, data)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (-1, -1)
    return (info.st_size, info.st_mtime_ns)
