"""Remove a folder tree iteratively and never fatally: the one remover of every folder a trial could write.

`shutil.rmtree` recurses once per folder level (a trial that leaves a chain of 1,500 folders makes it raise
RecursionError, even with ignore_errors) and builds ever longer paths. `remove_tree` keeps a constant depth
instead: it works on the tree's top folder only, unlinking files and links (never following one), removing
empty folders, and moving the entries of a non-empty folder up into the top folder (a rename), so every entry
is renamed at most once and no path grows. It never raises: it returns False (and leaves what it could not
remove) on a permission or I/O error. Usage::

    if not remove_tree(temp_dir):
        print(f"autofl: could not remove {temp_dir} completely; remove it by hand", file=sys.stderr)
"""

from __future__ import annotations

import itertools
import os
import stat

MAX_STEPS = 10_000_000  # a bound on the work, far above any real tree: never loop forever on a racing writer
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def remove_tree(path: str | os.PathLike) -> bool:
    """Remove `path` (a folder tree, a file or a symlink); True when nothing is left, False otherwise."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            return True
        _empty(path)
        os.rmdir(path)
        return True
    except (OSError, RecursionError, ValueError):
        return False


def _empty(path: str | os.PathLike) -> None:
    """Empty the folder at `path` with a constant number of open descriptors and no long paths."""
    top = os.open(path, _DIR_FLAGS)
    names = (f".afl-rm-{index}" for index in itertools.count())
    try:
        for _step in range(MAX_STEPS):
            entries = _list(top)
            if not entries:
                return
            for name, is_dir in entries:
                if not is_dir:
                    os.unlink(name, dir_fd=top)
                elif not _flatten(top, name, names):
                    os.rmdir(name, dir_fd=top)
        raise OSError(f"{path} keeps changing while it is removed")
    finally:
        os.close(top)


def _flatten(top: int, name: str, names) -> bool:
    """Move the entries of folder `name` (a child of `top`) up into `top`; False when it was already empty."""
    folder = _open_child(top, name)
    try:
        children = [entry for entry, _is_dir in _list(folder)]
        for child in children:
            _move_up(folder, child, top, names)
        return bool(children)
    finally:
        os.close(folder)


def _move_up(folder: int, child: str, top: int, names) -> None:
    for _attempt in range(100):
        target = next(names)
        try:
            os.lstat(target, dir_fd=top)
            continue  # taken (a name the tree itself uses): pick the next one
        except FileNotFoundError:
            pass
        os.rename(child, target, src_dir_fd=folder, dst_dir_fd=top)
        return
    raise OSError("no free name to move an entry up while removing a tree")


def _open_child(top: int, name: str) -> int:
    """Open child folder `name` of `top`; a folder left without owner permissions (read-only caches, a trial's
    chmod) gets them back first, since its entries must be listed and moved out."""
    mode = os.stat(name, dir_fd=top, follow_symlinks=False).st_mode
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        os.chmod(name, 0o700, dir_fd=top)
    return os.open(name, _DIR_FLAGS, dir_fd=top)


def _list(fd: int) -> list[tuple[str, bool]]:
    """(name, is a real folder) of each entry of the open folder `fd`; symlinks count as files."""
    entries = []
    with os.scandir(fd) as handle:
        for entry in handle:
            entries.append((entry.name, entry.is_dir(follow_symlinks=False)))
    return entries
