"""The lifecycle lock: one action owns a workspace at a time.

`flock` on `.nvflare/autofl/campaign.lock` *and* on the folder that holds it (released by the kernel when the
holder dies, so a stale lock never blocks). The folder lock is what keeps a second action out when someone
deletes or replaces the lock file while an action holds it (a new file at the path would lock freely); after
taking both, the runner also checks that the open file is still the one at the path (same device and inode)
and retries otherwise. Nothing on the way is followed through a symlink: a `campaign.lock` (or a campaign
folder) that is a symlink, in an existing campaign or shipped in a job folder, is refused before anything is
opened for writing, so its target is never truncated (flock is POSIX: the runner, like its trials, runs on Linux). Usage::

    with workspace_lock(paths.lock):
        ...   # raises CampaignError("workspace is already in use ...") when another action holds it
    with shared_lock(paths.lock) as held:   # readers (the final report): "held", or "absent" without a lock file
        ...
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from ..outcome import CampaignError

BUSY = "the workspace is already in use by another Auto-FL action (lock {path}); wait for it to finish and retry"
SYMLINK = "{path} is a symlink; the runner never follows links in its own folder (remove the link, then retry)"
ATTEMPTS = 3


@contextlib.contextmanager
def workspace_lock(path: Path):
    """Hold the campaign lock (exclusive) for the duration of the block."""
    path = Path(path)
    _refuse_linked_folders(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_linked_folders(path)
    with _folder_lock(path.parent, fcntl.LOCK_EX, path):
        fd = _open_verified(path, os.O_RDWR | os.O_CREAT, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_nlink > 1:  # a hard link to someone's file: truncating it would empty theirs
                raise CampaignError(f"{path} is a hard link to another file; remove it, then retry")
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            os.close(fd)  # closing releases the flock


@contextlib.contextmanager
def shared_lock(path: Path):
    """A shared lock for readers, opened read-only (works on a read-only archive); yields "held", or "absent"
    when the campaign has no lock file (then no runner has ever held it here)."""
    path = Path(path)
    _refuse_linked_folders(path)
    with _folder_lock(path.parent, fcntl.LOCK_SH, path):
        try:
            fd = _open_verified(path, os.O_RDONLY, fcntl.LOCK_SH)
        except FileNotFoundError:
            yield "absent"
            return
        try:
            yield "held"
        finally:
            os.close(fd)


def _open_verified(path: Path, flags: int, mode: int) -> int:
    """Open (never through a symlink) and flock the lock file; retry when the path no longer names the file."""
    for _attempt in range(ATTEMPTS):
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise CampaignError(SYMLINK.format(path=path)) from None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise CampaignError(f"{path} is not a regular file; remove it, then retry")
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                raise CampaignError(BUSY.format(path=path)) from None
            if _same_file(info, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # deleted or replaced between open and flock: take the file that is there now
    raise CampaignError(f"{path} keeps being replaced while the runner takes it; stop whatever rewrites it, then retry")


def _same_file(info: os.stat_result, path: Path) -> bool:
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


@contextlib.contextmanager
def _folder_lock(folder: Path, mode: int, path: Path):
    """flock the campaign folder itself: it cannot be deleted or swapped while it holds the campaign."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        yield  # a reader of a campaign without its folder: nothing to lock
        return
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise CampaignError(SYMLINK.format(path=folder)) from None
        raise
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CampaignError(BUSY.format(path=path)) from None
        except OSError:  # a filesystem without folder locks (some network mounts): the file lock alone
            pass
        yield
    finally:
        os.close(fd)


def _refuse_linked_folders(path: Path) -> None:
    """`.nvflare` and `.nvflare/autofl` must be plain folders (or absent), never symlinks."""
    for folder in (path.parent.parent, path.parent):
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise CampaignError(SYMLINK.format(path=folder))
