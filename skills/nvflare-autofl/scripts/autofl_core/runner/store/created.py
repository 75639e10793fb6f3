"""`.nvflare/autofl/created.json`: what the runner itself creates in the live workspace, recorded before it does.

The one rule for removing workspace files: the runner removes only files it created and recorded here (with
the sha256 of the bytes it wrote) and only folders it created (those that did not exist before it wrote the
first file into them). Candidate manifests and the finalize journal name created files too, but they are
hand-editable, so their lists never decide what is deleted: a forged `created_files` naming `results.tsv`,
`autofl.yaml` or user data removes nothing. A recorded file whose content changed since the runner wrote it
is left in place (with a note on stderr), and so is a folder that is not empty. The rule holds whether the
draft is written into the workspace before its trial or only when it is kept. Usage::

    record(paths, "lr-x2", {"helpers/mod.py": data})       # before the first write
    undone = undo(paths, keep=best.hashes, candidate="lr-x2")   # after: removed paths; the record is dropped

A kept candidate's created files stay in the live job as part of the best. They are recorded again, in
`.nvflare/autofl/installed.json`, before the keep writes them: when a later keep installs a best that lacks them (a
sibling prepared from an older best), `settle_keep` removes them from the workspace (unchanged ones only) and
names the allowed_edit_paths the runner added for them, so the live job and the contract equal the new best.
"""

from __future__ import annotations

import os
import stat
import sys

from ...common import atomic, bounded
from ..outcome import CampaignError
from . import sources

SCHEMA = "nvflare.autofl.created.v1"
INSTALLED_SCHEMA = "nvflare.autofl.installed.v1"


def path_of(paths):
    return paths.meta / "created.json"


def installed_path(paths):
    return paths.meta / "installed.json"


def record(paths, candidate: str, files: dict[str, bytes]) -> None:
    """Record the files about to be created for `candidate` (with hashes) and the folders their writes create."""
    folders: set[str] = set()
    for rel in files:
        sources.check_inside(paths.workspace, rel)
        parts = rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder in folders or not os.path.lexists(paths.workspace / folder):
                folders.add(folder)
    document = {
        "schema_version": SCHEMA,
        "candidate_id": candidate,
        "files": sources.file_hashes(files),
        "folders": sorted(folders),
    }
    atomic.write_json(path_of(paths), document)


def undo(paths, *, keep: dict[str, str], candidate: str | None = None, named: list[str] = ()) -> list[str]:
    """Remove what the record says the runner created for `candidate`, except files in `keep` (the best
    snapshot's); returns the removed paths and drops the record. Without `candidate`, the record applies when
    `named` (a caller's list of created files) covers every file it holds. Another candidate's record is kept."""
    document = load(paths)
    if document is None:
        return []
    if candidate is not None:
        applies = document["candidate_id"] == candidate
    else:
        applies = bool(named) and set(document["files"]) <= set(named)
    if not applies:
        return []
    removed = []
    for rel, sha in sorted(document["files"].items(), reverse=True):
        if rel not in keep and _remove_if_unchanged(paths.workspace, rel, sha):
            removed.append(rel)
    for folder in sorted(document["folders"], key=lambda rel: (-rel.count("/"), rel)):
        if folder not in keep and _remove_empty_folder(paths.workspace, folder):
            removed.append(folder + "/")
    path_of(paths).unlink(missing_ok=True)
    return removed


def settle_keep(paths, best: dict[str, str], *, candidate: str, created: list[str], allowed: list[str]) -> set[str]:
    """Before the workspace is made equal to a kept candidate's best (`best`: its file hashes): remove the files an
    earlier keep installed that `best` lacks (unchanged ones only, and their folders once empty), record the
    files of `best` the runner is about to create (missing from the workspace, or this candidate's recorded
    creations), and return the allowed_edit_paths to drop: those the runner added that `best` lacks.
    `created` (the manifest's list) only names the paths the contract gains; `allowed` is the contract's list now.
    Idempotent: a replay after a crash at any point ends in the same files, record and contract."""
    document = _read_record(installed_path(paths), INSTALLED_SCHEMA, ("edit_paths",)) or {
        "files": {},
        "folders": [],
        "edit_paths": [],
    }
    for rel, sha in sorted(document["files"].items(), reverse=True):
        if rel not in best:
            _remove_if_unchanged(paths.workspace, rel, sha)
    files = {rel: sha for rel, sha in document["files"].items() if rel in best}
    own = load(paths)
    mine = own["files"] if own is not None and own["candidate_id"] == candidate else {}
    folders = set(document["folders"]) | (set(own["folders"]) if mine else set())
    for rel, sha in sorted(best.items()):
        if rel in files:
            continue
        if mine.get(rel) == sha or not os.path.lexists(paths.workspace / rel):
            files[rel] = sha
            folders |= _missing_folders(paths.workspace, rel)
    for folder in sorted(folders, key=lambda rel: (-rel.count("/"), rel)):
        if not any(rel.startswith(folder + "/") for rel in best):
            _remove_empty_folder(paths.workspace, folder)
    needed = {folder for folder in folders if any(rel.startswith(folder + "/") for rel in files)}
    added = set(document["edit_paths"]) | {rel for rel in created if rel in best and rel not in allowed}
    atomic.write_json(
        installed_path(paths),
        {"schema_version": INSTALLED_SCHEMA, "files": files, "folders": sorted(needed), "edit_paths": sorted(added)},
    )
    return {rel for rel in added if rel not in best}


def _missing_folders(root, rel: str) -> set[str]:
    parts = rel.split("/")[:-1]
    folders = ("/".join(parts[: depth + 1]) for depth in range(len(parts)))
    return {folder for folder in folders if not os.path.lexists(root / folder)}


def load(paths) -> dict | None:
    """The record, or None when there is none; a damaged one is an error (nothing is removed on a guess)."""
    document = _read_record(path_of(paths), SCHEMA)
    if document is not None and not isinstance(document.get("candidate_id"), str):
        raise CampaignError(f"{path_of(paths)} is damaged; check the workspace by hand, then remove the file")
    return document


def _read_record(where, schema: str, lists: tuple[str, ...] = ()) -> dict | None:
    """A record of `schema` (files: {path: sha256}, folders and `lists`: path lists, every path inside the
    workspace), None when absent; a damaged one is a CampaignError."""
    try:
        document = bounded.read_json(where)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{where} {error}; check the workspace by hand, then remove the file") from None
    if document is None:
        return None
    files = document.get("files")
    named = [document.get(key) for key in ("folders", *lists)]
    if (
        document.get("schema_version") != schema
        or not isinstance(files, dict)
        or not all(isinstance(rel, str) and isinstance(sha, str) for rel, sha in files.items())
        or not all(isinstance(value, list) and all(isinstance(rel, str) for rel in value) for value in named)
        or any(sources.unsafe_relative(rel) for rel in [*files, *(rel for value in named for rel in value)])
    ):
        raise CampaignError(f"{where} is damaged; check the workspace by hand, then remove the file")
    return document


def _remove_if_unchanged(root, rel: str, sha: str) -> bool:
    try:
        sources.check_inside(root, rel)
        data = sources.read_file(root, rel)
    except CampaignError as error:
        print(f"autofl: left {rel} in place ({error})", file=sys.stderr)
        return False
    if data is None:
        return False
    if sources.sha256_bytes(data) != sha:
        print(f"autofl: left {rel} in place: it changed after the runner created it", file=sys.stderr)
        return False
    (root / rel).unlink()
    return True


def _remove_empty_folder(root, rel: str) -> bool:
    path = root / rel
    try:
        sources.check_inside(root, rel)
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        os.rmdir(path)
    except (OSError, CampaignError):
        return False  # gone already, not empty (something else was put there), or not a plain folder
    return True
