"""A candidate draft against the best source: the deterministic diff, the trust-contract checks, the patch.

The agent edits `candidates/<id>/source/` (a copy of the best snapshot). `read_draft` walks it without
following links and rejects, naming the offending path: symlinks, special files, binary or non-UTF-8
files, absolute or `..` paths, reserved folders, deleted managed files, changes outside `allowed_edit_paths`,
new files outside `allowed_create_patterns`, and new files that would overwrite an unmanaged file of the
workspace. Build byproducts and editor files (`__pycache__` folders, `*.pyc`/`*.pyo`, vim swap files `.*.sw?`,
`*~` backups, emacs `#*#` autosaves and `.#*` locks) are removed from the draft before it is read (named on
stderr), never validated, counted or applied. Usage::

    draft = read_draft(source_dir, best_files, config, workspace)
    draft.changed, draft.created, draft.patch, draft.patch_sha256, draft.files
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..common import trees
from ..importer.trust import RESERVED_PARTS, safe_relative
from .outcome import CampaignError
from .store import contract, frozen, sources

IGNORED_DIRS = frozenset({"__pycache__"})
BYPRODUCT_FILES = re.compile(r"(?:.*\.py[co]|\..*\.sw[a-p]|.*~|#.*#|\.#.*)")  # bytecode, editor swap/backup/lock
MAX_DRAFT_FILES = 2000
MAX_DRAFT_DEPTH = 32


@dataclass(frozen=True)
class Draft:
    files: dict[str, bytes]
    changed: list[str]
    created: list[str]
    patch: str

    @property
    def patch_sha256(self) -> str | None:
        return sources.sha256_bytes(self.patch.encode("utf-8")) if self.patch else None

    @property
    def digest(self) -> str:
        return sources.source_digest(self.files)

    @property
    def touched(self) -> list[str]:
        return sorted(self.changed + self.created)


def read_draft(source_dir: Path, best: dict[str, bytes], config: dict, workspace: Path) -> Draft:
    """Read and check the draft in `source_dir` against the best source set `best`."""
    files = source_files(source_dir)
    deleted = sorted(set(best) - set(files))
    if deleted:
        raise CampaignError(
            f"the draft deletes {', '.join(deleted)}; deleting managed files is not supported, "
            f"restore them in {source_dir}"
        )
    changed = sorted(rel for rel in best if files[rel] != best[rel])
    created = sorted(set(files) - set(best))
    frozen.refuse_edits(config, changed + created)  # the evaluator that measures the score is never edited
    allowed = set(contract.allowed_edit_paths(config))
    outside = [rel for rel in changed if rel not in allowed]
    if outside:
        raise CampaignError(
            f"the draft changes {', '.join(outside)}, outside the trust contract's allowed_edit_paths "
            f"({', '.join(sorted(allowed))}); revert those files"
        )
    patterns = contract.allowed_create_patterns(config)
    for rel in created:
        if not any(glob_match(pattern, rel) for pattern in patterns):
            raise CampaignError(
                f"the draft creates {rel}, which matches no allowed_create_patterns "
                f"({', '.join(patterns) or 'none'}); remove it"
            )
        if os.path.lexists(workspace / rel):
            raise CampaignError(
                f"the draft creates {rel}, but the workspace already has an unmanaged file there; "
                "pick another file name"
            )
    for rel in changed + created:
        try:
            sources.check_inside(workspace, rel)
        except CampaignError as error:
            raise CampaignError(f"the draft path {error}") from None
    return Draft(files=files, changed=changed, created=created, patch=unified_patch(best, files, changed + created))


def glob_match(pattern: str, rel: str) -> bool:
    """Match a workspace-relative path against a glob where `**/` spans folders and `*` stays inside one."""
    return _glob_regex(pattern).fullmatch(rel) is not None


@lru_cache(maxsize=64)
def _glob_regex(pattern: str) -> re.Pattern:
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out))


def unified_patch(old: dict[str, bytes], new: dict[str, bytes], rels: list[str]) -> str:
    """A unified diff of `rels` (sorted), `/dev/null` for created files; deterministic."""
    chunks = []
    for rel in sorted(rels):
        before = old.get(rel)
        after = new[rel]
        lines = difflib.unified_diff(
            _lines(before),
            _lines(after),
            fromfile="/dev/null" if before is None else f"a/{rel}",
            tofile=f"b/{rel}",
            lineterm="",
        )
        chunks.extend(line if line.endswith("\n") else line + "\n" for line in lines)
    return "".join(chunks)


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def source_files(root: Path) -> dict[str, bytes]:
    """Every file of a candidate source folder (links, special, binary and non-UTF-8 files refused; build and
    editor byproducts removed)."""
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        raise CampaignError(
            f"the candidate source folder {root} is missing; abandon the candidate and prepare again"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise CampaignError(
            f"the candidate source {root} is not a plain folder; abandon the candidate and prepare again"
        )
    files: dict[str, bytes] = {}
    folders = [root]  # iterative (os.walk recurses per level): a hostile draft may nest folders very deeply
    while folders:
        base = folders.pop()
        if len(base.relative_to(root).parts) > MAX_DRAFT_DEPTH:
            raise CampaignError(
                f"the draft nests folders deeper than {MAX_DRAFT_DEPTH} levels "
                f"({base.relative_to(root).parts[0]}/...); keep source files in a shallow tree"
            )
        with os.scandir(base) as handle:
            entries = sorted(handle, key=lambda entry: entry.name)
        for entry in entries:
            path = base / entry.name
            if _remove_byproduct(entry, path, root):
                continue
            if entry.is_dir(follow_symlinks=False):
                if not _skip_dir(path, root):
                    folders.append(path)
                continue
            if os.path.islink(path) and os.path.isdir(path):
                _skip_dir(path, root)  # raises: a symlinked folder
            rel = path.relative_to(root).as_posix()
            files[rel] = _read_member(path, rel)
            if len(files) > MAX_DRAFT_FILES:
                raise CampaignError(f"the draft holds more than {MAX_DRAFT_FILES} files; keep only source files in it")
    return dict(sorted(files.items()))


def _remove_byproduct(entry: os.DirEntry, path: Path, root: Path) -> bool:
    """Remove a build byproduct or editor file from the draft (a link itself, never what it points to); True when
    `entry` was one."""
    if entry.is_dir(follow_symlinks=False):
        if entry.name not in IGNORED_DIRS:
            return False
        trees.remove_tree(path)
    elif BYPRODUCT_FILES.fullmatch(entry.name):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    else:
        return False
    print(
        f"autofl: removed {path.relative_to(root).as_posix()} from the draft (a build or editor byproduct)",
        file=sys.stderr,
    )
    return True


def _skip_dir(path: Path, root: Path) -> bool:
    rel = path.relative_to(root).as_posix()
    if os.path.islink(path):
        raise CampaignError(f"the draft folder {rel} is a symlink; candidates may only contain plain files")
    if path.name in RESERVED_PARTS:
        raise CampaignError(
            f"the draft contains the reserved folder {rel}; remove it (reserved: {', '.join(sorted(RESERVED_PARTS))})"
        )
    return False


def _read_member(path: Path, rel: str) -> bytes:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise CampaignError(f"the draft file {rel} is a symlink; replace it with a plain file")
    if not stat.S_ISREG(info.st_mode):
        raise CampaignError(f"the draft entry {rel} is not a regular file; remove it")
    if safe_relative(rel) != rel:
        raise CampaignError(f"the draft path {rel!r} is not a plain workspace-relative path; rename it")
    data = sources.read_file(path.parent, path.name)
    if data is None:
        raise CampaignError(f"the draft file {rel} vanished while it was read; retry")
    if b"\0" in data:
        raise CampaignError(f"the draft file {rel} is binary; candidates may only change text source files")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise CampaignError(f"the draft file {rel} is not valid UTF-8 text; save it as UTF-8") from None
    return data
