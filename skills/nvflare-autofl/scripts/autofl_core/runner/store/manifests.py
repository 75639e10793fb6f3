"""Candidate manifests (`nvflare.autofl.candidate.v1`): the typed record, read with checks, write, list.

A manifest belongs to the workspace it lives in: its path must be
`<workspace>/.nvflare/autofl/candidates/<candidate_id>/candidate_manifest.json`, its `candidate_id` must equal
its folder name, and its fields must have the right types; anything else is refused with the reason.
Paths inside are workspace-relative. `CandidateManifest.from_json`/`to_json` are the one place its keys are
read and written: keys this runner does not know are kept, keys a manifest lacked stay absent, so a file read
and written back is the same bytes. Updates make a new record (`manifest.replace(status=..., ...)`). Usage::

    write(paths, manifest)                             # atomic; the path follows the candidate_id
    manifest = read(paths, "lr-x2")                    # or read_path(paths, given_path)
    pending(all_manifests(paths))                      # prepared / running / ready ones
    manifest.result.score; manifest.artifacts.run      # attributes, nested where the JSON nests
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from ...campaign import vocabulary as v
from ...common import atomic, bounded
from ..outcome import CampaignError

SCHEMA = "nvflare.autofl.candidate.v1"
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
REQUIRED = {
    "schema_version": str,
    "candidate_id": str,
    "name": str,
    "hypothesis": str,
    "algorithm_family": str,
    "status": str,
    "created_at": str,
    "updated_at": str,
    "workspace_root": str,
    "base_candidate": str,
    "base_source_sha256": str,
    "fixed_budget_sha256": str,
    "objective": dict,
    "environment": str,
    "run_args": list,
    "effective_run_args": list,
    "changed_files": list,
    "created_files": list,
    "provenance": dict,
    "artifacts": dict,
    "result": dict,
}
_BOOKKEEPING = ("absent", "extra")


class _Document:
    """What the manifest's records share: `of` builds a new one (optional fields not given stay absent),
    `replace` updates (a field it sets is present from then on), `to_json` writes present fields and kept keys."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # fields a document may lack; absent ones are not written back
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()  # fields written only while they hold a value
    NESTED: ClassVar[dict] = {}  # field -> record class of a nested JSON object

    @classmethod
    def of(cls, **values):
        return cls(**values, absent=tuple(key for key in cls.OPTIONAL if key not in values))

    def replace(self, **changes):
        absent = tuple(key for key in self.absent if key not in changes)
        return dataclasses.replace(self, **changes, absent=absent)

    def dropping(self, *keys: str):
        """The record without the unknown keys `keys` (kept from the file it was read from)."""
        return dataclasses.replace(self, extra=tuple(item for item in self.extra if item[0] not in keys))

    @classmethod
    def from_json(cls, document: dict):
        known = [f.name for f in fields(cls) if f.name not in _BOOKKEEPING]
        values = {key: document[key] for key in known if key in document}
        for key, record in cls.NESTED.items():
            values[key] = record.from_json(values.get(key) or {})
        extra = tuple((key, value) for key, value in document.items() if key not in known)
        absent = tuple(key for key in cls.OPTIONAL if key not in document)
        return cls(**values, absent=absent, extra=extra)

    def to_json(self) -> dict:
        document = {}
        for f in fields(self):
            key, value = f.name, getattr(self, f.name)
            if key in _BOOKKEEPING or key in self.absent or (key in self.OMIT_NONE and value is None):
                continue
            if isinstance(value, _Document):
                value = value.to_json()
            document[key] = list(value) if isinstance(value, tuple) else value
        return {**document, **dict(self.extra)}


@dataclass(frozen=True)
class ManifestArtifacts(_Document):
    """The manifest's `artifacts`: candidate.patch, the trial's run folder (workspace-relative), the simulator's
    result name, the external job id."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("patch", "run", "simulator_result_name", "job_id")

    patch: str | None = None
    run: str | None = None
    simulator_result_name: str | None = None
    job_id: str | None = None
    absent: tuple[str, ...] = ()
    extra: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class ManifestResult(_Document):
    """The manifest's `result`: the trial's score and where it came from, or why there is none; with a frozen
    evaluator also the reported score, the evaluation record and a metric divergence."""

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "score",
        "metric_name",
        "metric_source",
        "metric_artifact",
        "runtime_seconds",
        "run_command",
        "failure_reason",
        "budget",
        "reported_score",
        "evaluation",
        "metric_divergence",
    )

    score: float | None = None
    metric_name: str | None = None
    metric_source: str | None = None
    metric_artifact: str | None = None
    runtime_seconds: float | None = None
    run_command: str | None = None
    failure_reason: str | None = None
    budget: dict | None = None  # what ran against the fixed budget (trial/budget)
    reported_score: float | None = None
    evaluation: dict | None = None
    metric_divergence: dict | None = None
    absent: tuple[str, ...] = ()
    extra: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class CandidateManifest(_Document):
    """candidate_manifest.json, typed (validated by `read`/`read_path` before it is built)."""

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "literature_event_id",
        "prepared_index",
        "patch_sha256",
        "patch_stats",
        "candidate_source_sha256",
        "execution_fingerprint",
        "workspace_applied",
    )
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("crash_replay", "batch")
    NESTED: ClassVar[dict] = {"artifacts": ManifestArtifacts, "result": ManifestResult}

    schema_version: str
    candidate_id: str
    name: str
    hypothesis: str
    algorithm_family: str
    status: v.ManifestStatus
    created_at: str
    updated_at: str
    workspace_root: str
    base_candidate: str
    base_source_sha256: str
    fixed_budget_sha256: str
    objective: dict
    environment: str
    run_args: tuple[str, ...]
    effective_run_args: tuple[str, ...]
    changed_files: tuple[str, ...]
    created_files: tuple[str, ...]
    provenance: dict
    artifacts: ManifestArtifacts
    result: ManifestResult
    literature_event_id: str | None = None
    prepared_index: int | None = None  # 1, 2, ... in the order candidates were prepared
    patch_sha256: str | None = None
    patch_stats: dict | None = None  # {files, added, removed} of candidate.patch
    candidate_source_sha256: str | None = None
    execution_fingerprint: str | None = None
    workspace_applied: bool = True  # whether the draft was applied to the live workspace
    crash_replay: dict | None = None  # a crashed candidate that ran exactly the same
    batch: dict | None = None  # {members, parallel} of the batch it was evaluated in
    absent: tuple[str, ...] = ()
    extra: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", v.ManifestStatus(self.status))
        for key in ("run_args", "effective_run_args", "changed_files", "created_files"):
            object.__setattr__(self, key, tuple(getattr(self, key)))

    @property
    def touched(self) -> list[str]:
        """The files the candidate changes or creates, sorted."""
        return sorted(set(self.changed_files) | set(self.created_files))


def in_preparation_order(manifests: list[CandidateManifest]) -> list[CandidateManifest]:
    """`manifests` in the order they were prepared (`prepared_index`; older manifests by creation time, first)."""
    return sorted(manifests, key=lambda m: (m.prepared_index or 0, m.created_at, m.candidate_id))


def check_id(candidate_id: str, what: str = "--name") -> str:
    if not isinstance(candidate_id, str) or not ID_RE.fullmatch(candidate_id):
        raise CampaignError(
            f"{what} {candidate_id!r} is not a valid candidate id; use 1-64 letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    return candidate_id


def empty_result() -> ManifestResult:
    """The result of a candidate not run yet (its seven keys written as null)."""
    return ManifestResult.of(
        score=None,
        metric_name=None,
        metric_source=None,
        metric_artifact=None,
        runtime_seconds=None,
        run_command=None,
        failure_reason=None,
    )


def write(paths, manifest: CandidateManifest) -> None:
    atomic.write_json(paths.manifest(manifest.candidate_id), manifest.to_json())


def read(paths, candidate_id: str) -> CandidateManifest:
    return _load(paths, paths.manifest(check_id(candidate_id, "candidate id")), candidate_id)


def read_path(paths, given: str) -> CandidateManifest:
    """The manifest at the user-given path, which must be this workspace's manifest of its candidate."""
    path = Path(os.path.abspath(given))
    candidate_id = path.parent.name
    expected = paths.manifest(candidate_id) if ID_RE.fullmatch(candidate_id) else None
    if expected is None or path.name != "candidate_manifest.json" or not _same(path.parent, expected.parent):
        raise CampaignError(
            f"--manifest {given} is not a candidate manifest of this workspace (expected "
            f"{paths.candidates}/<candidate_id>/candidate_manifest.json)"
        )
    return _load(paths, expected, candidate_id)


def all_manifests(paths) -> list[CandidateManifest]:
    """Every manifest, sorted by creation time then id; an unreadable one raises (never silently ignored)."""
    root = str(paths.candidates)
    try:
        names = sorted(entry.name for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = os.path.join(root, name, "candidate_manifest.json")
        if ID_RE.fullmatch(name) and os.path.lexists(path):
            found.append(_load(paths, Path(path), name))
    return sorted(found, key=lambda m: (m.created_at, m.candidate_id))


def pending(manifests: list[CandidateManifest]) -> list[CandidateManifest]:
    return [m for m in manifests if m.status in v.MANIFEST_PENDING]


def _load(paths, path: Path, candidate_id: str) -> CandidateManifest:
    try:
        manifest = bounded.read_json(path)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{path} {error}; restore it or remove the candidate folder") from None
    if manifest is None:
        raise CampaignError(f"{path} does not exist; prepare a candidate first")
    problem = _problem(manifest, candidate_id)
    if problem:
        raise CampaignError(f"{path} is not a valid candidate manifest ({problem}); restore it or remove the folder")
    return CandidateManifest.from_json(manifest)


def _problem(manifest: dict, candidate_id: str) -> str | None:
    if manifest.get("schema_version") != SCHEMA:
        return f"schema_version is not {SCHEMA}"
    for key, kind in REQUIRED.items():
        if not isinstance(manifest.get(key), kind):
            return f"{key} is missing or not a {kind.__name__}"
    if manifest["candidate_id"] != candidate_id:
        return f"candidate_id {manifest['candidate_id']!r} does not match its folder {candidate_id!r}"
    if manifest["status"] not in v.MANIFEST_STATUSES:
        return f"unknown status {manifest['status']!r}"
    index = manifest.get("prepared_index")
    if index is not None and (type(index) is not int or index < 1):
        return "prepared_index must be a positive integer"
    for key in ("run_args", "effective_run_args", "changed_files", "created_files"):
        if not all(isinstance(item, str) for item in manifest[key]):
            return f"{key} must hold strings"
    for rel in manifest["changed_files"] + manifest["created_files"]:
        if rel.startswith("/") or ".." in rel.split("/"):
            return f"file {rel!r} is not workspace-relative"
    if not isinstance(manifest.get("workspace_applied", True), bool):
        return "workspace_applied must be true or false"
    for key in ("score", "reported_score", "runtime_seconds"):
        value = manifest["result"].get(key)
        if value is not None and not bounded.is_number(value):
            return f"result.{key} must be a number or null"
    for key in ("patch", "run"):
        if not isinstance(manifest["artifacts"].get(key), (str, type(None))):
            return f"artifacts.{key} must be a path or null"
    return None


def _same(left: Path, right: Path) -> bool:
    try:
        return os.path.samefile(left, right)
    except OSError:
        return os.path.abspath(left) == os.path.abspath(right)
