"""`Seal`: the namespaces and mounts of one plan, each protection attempted on its own, and the status file."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import sys

from .protections import ENFORCED, PROTECTIONS, WATCHED, YES
from .syscalls import (
    CAPABILITY_VERSION_3,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_SECUREBITS,
    SECURE_ALL_LOCKED,
    SealError,
    check,
    fd_path,
    has_mounts_below,
    libc,
    loopback_up,
    mount,
    path_fd,
    set_read_only,
    write,
)
from .watcher import Watcher


class Seal:
    """The namespaces and mounts of one plan; `status` maps each protection to `yes` or `unavailable: <why>`."""

    def __init__(self, plan: dict):
        self.plan = plan
        self.status = {name: "not requested" for name in PROTECTIONS}
        self.read_write: list[int] = []  # mount roots (O_PATH fds) that stay writable
        self.read_only_again: list[int] = []  # hidden folders inside a writable mount
        self.status_fd: int | None = None
        self.status_pipe: int | None = None  # init -> launcher: the command's wait status
        self.own_mounts: list[str] = []  # mount points this seal made (not hidden by its overlays)
        self.limits = dict(plan.get("limits") or {})
        self.temp_mounts: list[tuple[str, int]] = []  # (label, O_PATH fd) of the size-capped tmpfs mounts
        self.enforcement: dict[str, str] = {}
        self.disk_fds: list[tuple[str, int]] = []  # (label, directory fd) of the writable folders on disk
        self.watcher: Watcher | None = None

    def attempt(self, name: str, step) -> bool:
        try:
            step()
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.status[name] = f"unavailable: {error}"
            return False
        if not self.status[name].startswith("unavailable"):
            self.status[name] = YES
        return True

    def missing(self) -> list[str]:
        return [name for name, value in self.status.items() if value.startswith("unavailable")]

    def open_status(self) -> None:
        """Open the status file now: by the time it is written, its folder is read-only."""
        if self.plan.get("status_file"):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
            self.status_fd = os.open(self.plan["status_file"], flags, 0o600)

    def write_status(self) -> dict:
        document = {"protections": dict(self.status), "missing": self.missing()}
        if self.limits:
            document["limits"] = {
                kind: {"value": self.limits.get(kind), "enforcement": self.enforcement.get(kind, "not set")}
                for kind in ("memory", "disk", "processes")
            }
        if self.status_fd is not None:
            os.write(self.status_fd, json.dumps(document, sort_keys=True).encode("utf-8"))
            os.close(self.status_fd)
            self.status_fd = None
        return document

    def unshare(self) -> bool:
        """Enter the user namespace (it grants the rights for the others), then mount, network and PID."""
        if not sys.platform.startswith("linux"):
            for name in PROTECTIONS:
                self.status[name] = f"unavailable: namespaces need Linux (this is {sys.platform})"
            return False
        uid, gid = os.getuid(), os.getgid()
        if not self.attempt("user_namespace", lambda: check(libc().unshare(CLONE_NEWUSER), "unshare(user)")):
            for name in PROTECTIONS[1:]:
                self.status[name] = "unavailable: no user namespace"
            return False
        write("/proc/self/setgroups", "deny")
        write("/proc/self/uid_map", f"{uid} {uid} 1")
        write("/proc/self/gid_map", f"{gid} {gid} 1")
        self.attempt("mount_namespace", lambda: check(libc().unshare(CLONE_NEWNS), "unshare(mount)"))
        if self.plan.get("network") == "allowed":
            self.status["network"] = "allowed"
        else:
            self.attempt("network", lambda: check(libc().unshare(CLONE_NEWNET), "unshare(network)"))
        self.attempt("pid_namespace", lambda: check(libc().unshare(CLONE_NEWPID), "unshare(pid)"))
        return True

    def build(self) -> None:
        """Loopback, /proc, the overlays, the mapped and writable folders, then the read-only host."""
        if self.status["network"] == YES:
            self.attempt("network", loopback_up)
        if self.status["mount_namespace"] != YES:
            for name in ("private_proc", "workspace_view", "read_only_host"):
                self.status[name] = "unavailable: no mount namespace"
            return
        if not self.attempt("read_only_host", lambda: mount(None, "/", None, MS_REC | MS_PRIVATE)):
            return
        if self.status["network"] == YES:  # /sys/class/net then lists only the namespace's loopback
            try:
                mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            except OSError:
                pass  # cosmetic: the namespace has no other interface either way
        if self.status["pid_namespace"] == YES:
            self.attempt("private_proc", lambda: mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC))
        else:
            self.status["private_proc"] = "unavailable: no PID namespace"
        if not self.plan.get("view"):
            self.status["workspace_view"] = self.status["read_only_host"] = "not requested"
            return  # contained: the trial runs in the live workspace, which must stay writable
        sources: dict[str, int] = {}
        if not self.attempt("workspace_view", lambda: sources.update(self._open_sources())):
            self.status["read_only_host"] = "unavailable: no view of the job"
            return
        for entry in self.plan.get("ephemeral", []):
            self.attempt("read_only_host", lambda e=entry: self._discard_writes(e["path"], e["scratch"]))
        self.attempt("workspace_view", lambda: self._view(self.plan["view"], sources))
        for entry in self.plan.get("map", []):
            self.attempt("workspace_view", lambda e=entry: self._keep_writes(e, sources))
        for path in self.plan.get("writable", []):
            self.attempt("read_only_host", lambda p=path: self._bind(sources[p], p))
        self.attempt("read_only_host", self._read_only_host)

    def _open_sources(self) -> dict[str, int]:
        """O_PATH descriptors of every folder bound later: overlays laid meanwhile cannot redirect them."""
        view = self.plan.get("view") or {}
        paths = [view[key] for key in ("stage", "upper", "work", "workspace") if key in view]
        paths += [entry[key] for entry in self.plan.get("map", []) for key in ("upper", "work")]
        paths += list(self.plan.get("writable", []))
        return {path: path_fd(path) for path in paths}

    def _discard_writes(self, path: str, scratch: str) -> None:
        """Overlay `path` with an upper layer on a tmpfs at `scratch`: reads see the host, writes vanish."""
        if not os.path.isdir(path) or os.path.realpath(path) == "/" or has_mounts_below(os.path.realpath(path)):
            return  # stays read-only with the rest of the host
        mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700" + self._size_option())
        self.own_mounts.append(os.path.realpath(scratch))
        self.temp_mounts.append((path, path_fd(scratch)))
        for name in ("upper", "work"):
            os.mkdir(os.path.join(scratch, name), 0o700)
        self._overlay(path, f"{scratch}/upper", f"{scratch}/work")

    def _keep_writes(self, entry: dict, sources: dict[str, int]) -> None:
        """Overlay `path` (the nearest existing folder of a literal simulator path) with an upper layer in the
        trial folder: the job may delete and recreate its literal workspace there, and the runner reads the
        result from the upper layer."""
        path = entry["path"]
        if os.path.realpath(path) == "/" or has_mounts_below(os.path.realpath(path), ignore=self.own_mounts):
            raise SealError(errno.EBUSY, f"cannot map a simulator path under {path}")
        self._overlay(path, fd_path(sources[entry["upper"]]), fd_path(sources[entry["work"]]))

    def _overlay(self, path: str, upper: str, work: str) -> None:
        lower = path_fd(path)
        mount("overlay", path, "overlay", 0, f"lowerdir={fd_path(lower)},upperdir={upper},workdir={work}")
        self.own_mounts.append(os.path.realpath(path))
        self.read_write.append(path_fd(path))

    def _view(self, view: dict, sources: dict[str, int]) -> None:
        lower = f"{fd_path(sources[view['stage']])}:{fd_path(sources[view['workspace']])}"
        upper, work = fd_path(sources[view["upper"]]), fd_path(sources[view["work"]])
        mount("overlay", view["workspace"], "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")
        self.read_write.append(path_fd(view["workspace"]))
        for hidden in view.get("hide", []):
            if os.path.isdir(hidden) and not os.path.islink(hidden):
                mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0555")
                self.read_only_again.append(path_fd(hidden))

    def _bind(self, source_fd: int, target: str) -> None:
        os.makedirs(target, exist_ok=True)
        mount(fd_path(source_fd), target, None, MS_BIND | MS_REC)
        self.read_write.append(path_fd(target))

    def _read_only_host(self) -> None:
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" + self._size_option())
        self.read_write.append(path_fd("/dev/shm"))
        self.temp_mounts.append(("/dev/shm", path_fd("/dev/shm")))
        set_read_only(path_fd("/"), True)
        for fd in self.read_write:
            set_read_only(fd, False)
        for fd in self.read_only_again:
            set_read_only(fd, True)

    def _size_option(self) -> str:
        """A tmpfs holding trial writes is no larger than the disk limit (tmpfs is memory, not disk)."""
        disk = self.limits.get("disk")
        return f",size={int(disk)}" if isinstance(disk, int) and disk > 0 else ""

    def arm_watcher(self) -> None:
        """PID 1 with its own /proc watches memory, disk and tasks; elsewhere those limits are unavailable."""
        if not self.limits:
            return
        can = os.getpid() == 1 and self.status["private_proc"] == YES
        why = WATCHED if can else "unavailable: no PID namespace with its own /proc"
        for kind in ("memory", "disk", "processes"):
            if self.limits.get(kind) and self.enforcement.get(kind) != ENFORCED:
                self.enforcement[kind] = why
        if can:
            self.watcher = Watcher(self.limits, self.temp_mounts, self.disk_fds)

    def drop_capabilities(self) -> None:
        def drop():
            check(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            for cap in range(64):
                if libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
                    check(-1, f"drop capability {cap}")
            libc().prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
            check(libc().prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED, 0, 0, 0), "securebits")
            header, data = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)()
            check(libc().capset(header, data), "capset")

        if self.status["user_namespace"] == YES:
            self.attempt("capabilities_dropped", drop)
        else:
            self.status["capabilities_dropped"] = "unavailable: no user namespace"
