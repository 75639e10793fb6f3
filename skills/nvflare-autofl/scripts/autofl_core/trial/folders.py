"""Sub-folders of the trial's simulator root, listed again only when a folder changed (cheap watching).

A running trial's log files and round records are looked for every tick; listing the same few folders each
time costs several system calls per folder, a stat costs one. A listing is reused while the folder's
modification time is unchanged and lies more than `RACY_SECONDS` before the listing: a folder changed within the
timestamp's granularity of a listing is listed again (the "racy" case), so no new sub-folder is ever missed.

Usage: folders = Subfolders(); for job in folders.of(root, limit=8): ...
"""

from __future__ import annotations

import os
import time

RACY_SECONDS = 1.0


class Subfolders:
    """Sorted real sub-folders (no symlinks) of each folder asked about, at most `limit`; cached per folder."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, list[str]]] = {}

    def of(self, folder: str | os.PathLike, limit: int) -> list[str]:
        folder = os.fspath(folder)
        try:
            changed = os.stat(folder).st_mtime_ns
        except OSError:
            self._cache.pop(folder, None)
            return []
        cached = self._cache.get(folder)
        if cached is not None and cached[0] == changed:
            return cached[1][:limit]
        listed_at = time.time_ns()
        names = list_subfolders(folder)
        if names is None:
            return []
        if listed_at - changed > RACY_SECONDS * 1e9:  # else a change in the same timestamp tick could be missed
            self._cache[folder] = (changed, names)
        else:
            self._cache.pop(folder, None)
        return names[:limit]


def list_subfolders(folder: str | os.PathLike) -> list[str] | None:
    """Sorted paths of the real sub-folders (None when the folder cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        return None
