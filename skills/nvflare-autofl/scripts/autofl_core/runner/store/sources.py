"""Source files as data: read a set of workspace files, hash them, write them back exactly.

A *source set* is `{relative POSIX path: bytes}`. Its digest (`source_digest`) is the sha256 over the sorted
`path NUL sha256 LF` lines, so two sets are equal exactly when their digests are. Usage::

    files = read_files(workspace, ["job.py", "client.py"])   # CampaignError when one is missing or unusable
    digest = source_digest(files)
    write_files(workspace, changed)          # atomic per file
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ...common import atomic, bounded
from ..outcome import CampaignError

MAX_FILE_BYTES = 8 * 1024 * 1024


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_hashes(files: dict[str, bytes]) -> dict[str, str]:
    return {rel: sha256_bytes(data) for rel, data in sorted(files.items())}


def digest_of_hashes(hashes: dict[str, str]) -> str:
    lines = "".join(f"{rel}\0{sha}\n" for rel, sha in sorted(hashes.items()))
    return sha256_bytes(lines.encode("utf-8", "surrogateescape"))


def source_digest(files: dict[str, bytes]) -> str:
    return digest_of_hashes(file_hashes(files))


def read_file(root: Path, rel: str) -> bytes | None:
    """The bytes of `root/rel` (a regular file, not a symlink), None when it does not exist."""
    path = root / rel
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CampaignError(f"cannot read {path} ({error.strerror}); fix its permissions") from None
    if not stat.S_ISREG(info.st_mode):
        raise CampaignError(f"{path} is not a regular file (symlink or special file); replace it with a plain file")
    try:
        return bounded.read_regular(path, MAX_FILE_BYTES)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{path} {error}; managed source files must be plain files under 8 MiB") from None


def read_files(root: Path, rels: list[str]) -> dict[str, bytes]:
    """Read every file in `rels` under `root`; a missing one is an error naming it."""
    files = {}
    for rel in sorted(set(rels)):
        data = read_file(root, rel)
        if data is None:
            raise CampaignError(f"{root / rel} is missing; restore it (the campaign manages this file)")
        files[rel] = data
    return files


def differing(root: Path, expected: dict[str, str]) -> list[str]:
    """Files under `root` whose content differs from the expected hashes (missing ones included)."""
    changed = []
    for rel, sha in sorted(expected.items()):
        try:
            data = read_file(root, rel)
        except CampaignError:
            data = None
        if data is None or sha256_bytes(data) != sha:
            changed.append(rel)
    return changed


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write each file atomically (parents created)."""
    for rel, data in sorted(files.items()):
        atomic.write_bytes(root / rel, data)


def remove_files(root: Path, rels: list[str]) -> None:
    """Delete files (and the folders this leaves empty, up to `root`)."""
    for rel in sorted(set(rels), reverse=True):
        path = root / rel
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        parent = path.parent
        while parent != root and parent.is_relative_to(root):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
