"""The lifecycle lock: one action owns a workspace at a time.

`flock` on `.nvflare/autofl/campaign.lock` (released by the kernel when the holder dies, so a stale lock
never blocks); where flock is unavailable, an exclusive-create fallback that records the holder's pid and
is taken over when that pid is gone. Usage::

    with workspace_lock(paths.lock):
        ...   # raises CampaignError("workspace is already in use ...") when another action holds it
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..outcome import CampaignError

BUSY = "the workspace is already in use by another Auto-FL action (lock {path}); wait for it to finish and retry"


@contextlib.contextmanager
def workspace_lock(path: Path):
    """Hold the campaign lock for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        with _exclusive_create(path):
            yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CampaignError(BUSY.format(path=path)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing releases the flock


@contextlib.contextmanager
def _exclusive_create(path: Path):  # pragma: no cover - used only without fcntl
    marker = path.with_suffix(".held")
    for _attempt in range(2):
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            if _holder_alive(marker):
                raise CampaignError(BUSY.format(path=marker)) from None
            marker.unlink(missing_ok=True)
    else:
        raise CampaignError(BUSY.format(path=marker))
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        yield
    finally:
        marker.unlink(missing_ok=True)


def _holder_alive(marker: Path) -> bool:  # pragma: no cover - used only without fcntl
    try:
        pid = int(marker.read_text().strip() or "0")
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True
