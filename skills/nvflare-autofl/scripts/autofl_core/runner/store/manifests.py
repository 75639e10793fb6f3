"""Candidate manifests (`nvflare.autofl.candidate.v1`): read with checks, write, list.

A manifest belongs to the workspace it lives in: its path must be
`<workspace>/.nvflare/autofl/candidates/<candidate_id>/candidate_manifest.json`, its `candidate_id` must equal
its folder name, and its fields must have the right types; anything else is refused with the reason.
Paths inside are workspace-relative. Usage::

    write(paths, manifest)                             # atomic; the path follows the candidate_id
    manifest = read(paths, "lr-x2")                    # or read_path(paths, given_path)
    pending(all_manifests(paths))                      # prepared / running / ready ones
"""

from __future__ import annotations

import os
import re
from pathlib import Path

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


def in_preparation_order(manifests: list[dict]) -> list[dict]:
    """`manifests` in the order they were prepared (`prepared_index`; older manifests by creation time, first)."""
    return sorted(manifests, key=lambda m: (m.get("prepared_index") or 0, m["created_at"], m["candidate_id"]))


def check_id(candidate_id: str, what: str = "--name") -> str:
    if not isinstance(candidate_id, str) or not ID_RE.fullmatch(candidate_id):
        raise CampaignError(
            f"{what} {candidate_id!r} is not a valid candidate id; use 1-64 letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    return candidate_id


def empty_result() -> dict:
    return {
        "score": None,
        "metric_name": None,
        "metric_source": None,
        "metric_artifact": None,
        "runtime_seconds": None,
        "run_command": None,
        "failure_reason": None,
    }


def write(paths, manifest: dict) -> None:
    atomic.write_json(paths.manifest(manifest["candidate_id"]), manifest)


def read(paths, candidate_id: str) -> dict:
    return _load(paths, paths.manifest(check_id(candidate_id, "candidate id")), candidate_id)


def read_path(paths, given: str) -> dict:
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


def all_manifests(paths) -> list[dict]:
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
    return sorted(found, key=lambda m: (m["created_at"], m["candidate_id"]))


def pending(manifests: list[dict]) -> list[dict]:
    return [m for m in manifests if m["status"] in v.MANIFEST_PENDING]


def _load(paths, path: Path, candidate_id: str) -> dict:
    try:
        manifest = bounded.read_json(path)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{path} {error}; restore it or remove the candidate folder") from None
    if manifest is None:
        raise CampaignError(f"{path} does not exist; prepare a candidate first")
    problem = _problem(manifest, candidate_id)
    if problem:
        raise CampaignError(f"{path} is not a valid candidate manifest ({problem}); restore it or remove the folder")
    return manifest


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
    return None


def _same(left: Path, right: Path) -> bool:
    try:
        return os.path.samefile(left, right)
    except OSError:
        return os.path.abspath(left) == os.path.abspath(right)
