"""Source files as data: read a set of workspace files, hash them, write them back exactly.

A *source set* is `{relative POSIX path: bytes}`. Its digest (`source_digest`) is the sha256 over the sorted
`path NUL sha256 LF` lines, so two sets are equal exactly when their digests are. Usage::

    files = read_files(workspace, ["job.py", "client.py"])   # CampaignError when one is missing or unusable
    digest = source_digest(files)
    write_files(workspace, changed)          # atomic per file, never through a symlinked folder
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
    """Read every file in `rels` under `root`; a missing one, or one behind a symlinked folder, is an error."""
    files = {}
    for rel in sorted(set(rels)):
        check_inside(root, rel)
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
    """Write each file atomically (parents created), never through a symlinked folder (`check_inside`)."""
    for rel, data in sorted(files.items()):
        check_inside(root, rel)
        atomic.write_bytes(root / rel, data)


def check_inside(root: Path, rel: str) -> None:
    """Refuse `rel` unless it is a plain relative path whose existing folders under `root` are all real folders:
    a symlinked folder on the way (`ext -> /outside`) would make a write land outside the job."""
    if unsafe_relative(rel):
        raise CampaignError(f"{rel!r} is not a plain workspace-relative path; rename it")
    parts = rel.split("/")
    current = Path(root)
    for index, part in enumerate(parts[:-1]):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        except OSError as error:
            raise CampaignError(f"cannot check {current} ({error.strerror}); fix its permissions") from None
        folder = "/".join(parts[: index + 1])
        if stat.S_ISLNK(info.st_mode):
            raise CampaignError(
                f"{rel} goes through {folder}, a symlink in {root}; the runner never writes through a link "
                "(it could leave the job): pick a path outside that folder, or replace the link with a folder"
            )
        if not stat.S_ISDIR(info.st_mode):
            raise CampaignError(f"{rel} goes through {folder}, which is not a folder in {root}; pick another path")


def unsafe_relative(rel) -> bool:
    """True unless `rel` is a non-empty relative POSIX path without empty, `.` or `..` parts."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\0" in rel:
        return True
    return any(part in ("", ".", "..") for part in rel.split("/"))
