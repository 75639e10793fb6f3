"""Find the simulator result directory of a trial inside its isolated root, and move/copy it out.

Resolution order (the first rule that yields a directory wins):
1. a path the job printed (`Result can be found in :`, `simulation logs can be found at`,
   `result_dir=`, ...), only if it is a direct child of the trial root (the last such line);
2. the injected job name (`autofl_<hash>_<trial>`);
3. the single expected name (e.g. the job's default `--name`) that exists;
4. the single direct child of the root that appeared or changed during the trial;
5. the root itself (name `.`) when `server/` and `site-*/` sit directly in it: what
   `FedJob.simulator_run(root)` writes in NVFLARE 2.9 (no job-name folder).
Several candidates at one step fail closed (`ResultDirError`). The returned name is what
the runner persists as `artifacts.simulator_result_name`.

Usage: name, rule = resolve_result_dir(root, output_lines, injected_name=..., expected_names=[...])
       collect_result(root / name, run_dir / "simulation")
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import uuid
from collections.abc import Iterable
from pathlib import Path

from ..common import trees

PRINTED_PATH_RES = (
    re.compile(r"Result can be found in\s*:?\s*(?P<path>\S.*?)\s*$"),
    re.compile(r"simulation logs can be found at\s*:?\s*(?P<path>\S.*?)\s*$"),
    re.compile(r"\bresult_dir\s*[=:]\s*['\"]?(?P<path>[^'\"\s,]+)"),
    re.compile(r"\bresults? (?:are|is) (?:saved|stored|written) (?:in|to)\s*:?\s*(?P<path>\S.*?)\s*$"),
)
# Every pattern above contains one of these words: a cheap substring test skips the regexes for other lines.
PRINTED_PATH_HINTS = ("found", "result")


ROOT_ITSELF = "."


class ResultDirError(ValueError):
    """No unambiguous result directory; the message says why and what to do."""


def printed_paths(lines: Iterable[str]) -> list[str]:
    """Every result path the job printed, in output order."""
    found = []
    for line in lines:
        if not any(hint in line for hint in PRINTED_PATH_HINTS):
            continue
        for pattern in PRINTED_PATH_RES:
            match = pattern.search(line)
            if match:
                found.append(match.group("path").strip().rstrip(".").strip("'\""))
                break
    return found


def direct_child_name(root: Path, printed: str) -> str | None:
    """The child name if `printed` names a direct child directory of `root` (symlinks resolved), else None."""
    try:
        candidate = Path(os.path.realpath(printed))
        real_root = Path(os.path.realpath(root))
    except (OSError, ValueError):
        return None
    if candidate.parent == real_root and candidate.is_dir() and not Path(root, candidate.name).is_symlink():
        return candidate.name
    return None


def snapshot_children(root: Path) -> dict[str, float]:
    """Direct child directories of `root` with their mtimes (taken before the trial starts)."""
    children = {}
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    children[entry.name] = entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        pass
    return children


def resolve_result_dir(
    root: Path,
    output_lines: Iterable[str],
    *,
    injected_name: str | None,
    expected_names: Iterable[str] = (),
    before: dict[str, float] | None = None,
) -> tuple[str, str]:
    """Return (result dir name, rule used); raise ResultDirError when nothing or several qualify."""
    root = Path(root)
    for printed in reversed(printed_paths(output_lines)):
        name = direct_child_name(root, printed)
        if name:
            return name, "printed_path"
    if injected_name and _is_real_dir(root / injected_name):
        return injected_name, "injected_name"
    existing = sorted({name for name in expected_names if name and _is_real_dir(root / name)})
    if len(existing) == 1:
        return existing[0], "expected_name"
    if len(existing) > 1:
        raise ResultDirError(f"ambiguous simulator result directories {existing}; give the job a unique --name")
    after = snapshot_children(root)
    changed = sorted(name for name, mtime in after.items() if (before or {}).get(name) != mtime)
    if len(changed) == 1:
        return changed[0], "changed_child"
    if _is_real_dir(root / "server") and any(name.startswith("site-") and _is_real_dir(root / name) for name in after):
        return ROOT_ITSELF, "root_layout"  # FedJob.simulator_run(root) in NVFLARE 2.9: no job-name folder
    if len(changed) > 1:
        raise ResultDirError(
            f"ambiguous simulator result directories {changed} under the trial root; "
            "add a --name argument to job.py so each trial writes one known directory"
        )
    raise ResultDirError("the job wrote no simulator result directory under NVFLARE_SIMULATOR_WORKSPACE_ROOT")


def collect_result(source: Path, destination: Path) -> None:
    """Move the result out of the disposable trial root (a rename), or copy it across filesystems."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    _retire(destination)
    try:
        os.rename(source, destination)
    except OSError:
        copy_result(source, destination)


def copy_result(source: Path, destination: Path) -> None:
    """Copy the result tree (symlinks kept as links) to `destination`, replacing it atomically.

    FIFOs, sockets and device nodes a job left behind are not copied (copying a FIFO would fail the whole copy).
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = destination.with_name(f".{destination.name}.{uuid.uuid4().hex}.tmp")
    try:
        try:
            shutil.copytree(source, staging, symlinks=True, ignore=_special_files)
        except RecursionError:  # copytree recurses per folder level: a result nested that deep is not copied
            raise OSError(errno.ELOOP, "the result folder is nested too deeply to copy", str(source)) from None
        _retire(destination)
        os.replace(staging, destination)
    finally:
        if staging.exists():
            trees.remove_tree(staging)


def _retire(destination: Path) -> None:
    """Remove an existing destination by renaming it away first (readers never see a half-deleted tree)."""
    if destination.exists() or destination.is_symlink():
        retired = destination.with_name(f".{destination.name}.{uuid.uuid4().hex}.old")
        os.replace(destination, retired)
        if retired.is_dir() and not retired.is_symlink():
            trees.remove_tree(retired)
        else:
            retired.unlink(missing_ok=True)


def _special_files(folder: str, names: list[str]) -> set[str]:
    """copytree ignore hook: the entries of `folder` that are neither files, folders nor symlinks."""
    special = set()
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            special.add(name)
    return special


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
