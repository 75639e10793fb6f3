"""The live best source: `.nvflare/autofl/snapshots/best/{snapshot.json, source/}`.

`snapshot.json` holds the candidate name, the per-file sha256 and the source digest; `source/` holds exact
copies. A new best is written into `snapshots/staging/` and swapped in with two renames (the old one is
parked in `snapshots/previous/` until the swap is done), so a crash leaves either the old or the new best.
Usage::

    install(paths, files, candidate="lr-x2")     # files: {rel: bytes}
    best = load(paths)                           # Snapshot(candidate, hashes, digest)
    restore_workspace(paths, best, candidate="lr-x2")   # managed files back, its recorded creations removed
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...common import atomic, bounded, faults, trees
from ..outcome import CampaignError
from . import created, sources

SCHEMA = "nvflare.autofl.snapshot.v1"


@dataclass(frozen=True)
class Snapshot:
    candidate: str
    hashes: dict[str, str]
    digest: str

    @property
    def files(self) -> list[str]:
        return sorted(self.hashes)


def install(paths, files: dict[str, bytes], *, candidate: str) -> Snapshot:
    """Make `files` the best snapshot (stage, then atomic swap)."""
    snapshot = stage(paths, files, candidate=candidate)
    swap(paths, snapshot.digest)
    return snapshot


def stage(paths, files: dict[str, bytes], *, candidate: str) -> Snapshot:
    """Write `files` as the staged next best (`snapshots/staging/`); nothing live changes yet."""
    staging = paths.snapshots / "staging"
    trees.remove_tree(staging)
    sources.write_files(staging / "source", files)
    hashes = sources.file_hashes(files)
    snapshot = Snapshot(candidate=candidate, hashes=hashes, digest=sources.digest_of_hashes(hashes))
    document = {"schema_version": SCHEMA, "candidate": candidate, "files": hashes, "source_sha256": snapshot.digest}
    atomic.write_json(staging / "snapshot.json", document)
    return snapshot


def swap(paths, digest: str) -> None:
    """Make the staged snapshot with `digest` the best one; idempotent (a finished swap is left alone).

    Raises CampaignError when neither the best nor the staged snapshot has `digest` (nothing to finish).
    """
    snapshots = paths.snapshots
    staging, previous, best = snapshots / "staging", snapshots / "previous", paths.best
    if _digest_at(best) == digest:
        trees.remove_tree(previous)
        trees.remove_tree(staging)
        return
    if _digest_at(staging) != digest:
        raise CampaignError(
            f"the staged best snapshot {digest[:12]} is missing, so an interrupted keep cannot be "
            f"finished; restore {paths.snapshots} from a backup"
        )
    trees.remove_tree(previous)
    if best.exists():
        best.rename(previous)
    faults.checkpoint("finalize:swap_parked")
    staging.rename(best)
    trees.remove_tree(previous)


def repair(paths) -> None:
    """Undo a swap a crash interrupted: bring back the parked best, drop a half-written staging folder."""
    snapshots = paths.snapshots
    previous = snapshots / "previous"
    if not paths.best.exists() and previous.exists():
        previous.rename(paths.best)
    trees.remove_tree(previous)
    trees.remove_tree(snapshots / "staging")


def _digest_at(folder: Path) -> str | None:
    document = bounded.read_json_or_none(folder / "snapshot.json")
    return document.get("source_sha256") if document else None


def load(paths) -> Snapshot:
    """The best snapshot, with its copies verified against the recorded hashes."""
    meta = paths.best / "snapshot.json"
    document = bounded.read_json_or_none(meta)
    if document is None or not isinstance(document.get("files"), dict):
        raise CampaignError(
            f"{meta} is missing or corrupt; the best snapshot cannot be trusted (restore it from a "
            "backup or start a fresh campaign)"
        )
    hashes = {str(rel): str(sha) for rel, sha in document["files"].items()}
    damaged = sources.differing(paths.best / "source", hashes)
    if damaged:
        raise CampaignError(
            f"the best snapshot copies of {', '.join(damaged)} do not match snapshot.json; restore "
            f"{paths.best} from a backup"
        )
    return Snapshot(
        candidate=str(document.get("candidate") or ""), hashes=hashes, digest=sources.digest_of_hashes(hashes)
    )


def files_of(paths, snapshot: Snapshot) -> dict[str, bytes]:
    """The snapshot's source bytes."""
    return sources.read_files(paths.best / "source", snapshot.files)


def workspace_drift(paths, snapshot: Snapshot) -> list[str]:
    """Managed files whose workspace copy differs from the best snapshot."""
    return sources.differing(paths.workspace, snapshot.hashes)


def restore_workspace(paths, snapshot: Snapshot, remove: list[str] = (), candidate: str | None = None) -> list[str]:
    """Make the workspace's managed files equal the snapshot and take out what the runner created for the
    candidate (`created.undo`: only files and folders it recorded creating, never a path merely named in
    `remove`, which only identifies the candidate when `candidate` is not given).

    Returns the files it rewrote or removed. Idempotent.
    """
    drifted = workspace_drift(paths, snapshot)
    if drifted:
        sources.write_files(paths.workspace, {rel: _copy(paths, rel) for rel in drifted})
    removed = created.undo(paths, keep=snapshot.hashes, candidate=candidate, named=list(remove))
    return drifted + removed


def _copy(paths, rel: str) -> bytes:
    data = sources.read_file(paths.best / "source", rel)
    if data is None:
        raise CampaignError(f"the best snapshot has no copy of {rel}; restore {paths.best} from a backup")
    return data
