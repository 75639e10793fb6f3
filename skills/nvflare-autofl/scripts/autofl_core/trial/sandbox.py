"""Seal one trial: run a command in its own user, mount, PID (and network) namespaces on a private view of the job.

Candidate code is untrusted: an agent optimizing a number wrote it. This launcher is the trial's first program.
It reads a plan (JSON, written by the runner into the trial's private folder) and, on Linux:

1. unshares a user namespace (mapping the caller's own uid/gid), a mount namespace, a PID namespace and, unless
   the plan allows the network, a network namespace with only loopback up;
2. forks the namespace's init (PID 1), which mounts a fresh /proc (the runner and every other host process are
   invisible), lays the job's view over the workspace path (an overlay: the candidate's staged files over the
   live workspace, with every write going to a private upper folder), hides the runner's own folders, lays
   write-discarding overlays over the temp folder and HOME, maps literal simulator paths and the trial's
   writable folders onto private folders, makes every other mount read-only, drops every capability, and
   forks the command;
3. when the command ends, init ends every process left in the namespace (a double-forked `setsid` daemon
   included) and exits with the command's status; the launcher exits with the same status.

4. with `limits` in the plan, caps the trial's tasks with a pids cgroup where the host lets it create one
   (before the namespaces), sizes the temp-folder tmpfs mounts to the disk limit, and lets PID 1 watch the
   namespace (every `WATCH_SECONDS`: resident anonymous memory and tasks of its processes; every
   `DISK_SECONDS`: the writable folders and the temp mounts). A limit crossed ends every process of the
   namespace at once; what was crossed, by whom, goes to `limits.reason_file` (JSON) for the runner.

Each protection is attempted on its own and written to the plan's status file (`{"protections": {...},
"missing": [...]}`), so the runner can say exactly which ones were missing. A protection the plan requires that
fails stops the trial before the command runs (exit 126). Standard library only; run it with `python -I`.

Usage:
    python -I sandbox.py --plan PLAN.json -- python job.py ...
    python -I sandbox.py --probe [SCRATCH] # prints the status JSON of a dry run; exit 0 when fully sealed

Plan keys: status_file, cwd, network ("isolated" | "allowed"), required [protection names],
view {workspace, stage, upper, work, hide[]}, ephemeral [{path, scratch}], writable [paths], map [{path, upper, work}],
limits {memory, disk, processes (None: none), reason_file, cgroup (a name), disk_paths [{path, label}]}.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import time

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x10000000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 0x4000, 1 << 18
AT_EMPTY_PATH, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 0x1000, 0x8000, 0x1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscalls share one table since 5.x)
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 28, 47, 4
SECURE_ALL_LOCKED = 0x3F  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS and their locks
CAPABILITY_VERSION_3 = 0x20080522
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
EXIT_NOT_RUN = 126
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
PROTECTIONS = (
    "user_namespace",
    "mount_namespace",
    "pid_namespace",
    "private_proc",
    "network",
    "workspace_view",
    "read_only_host",
    "capabilities_dropped",
)
YES = "yes"
WATCH_SECONDS = 0.5  # memory and tasks of the namespace are read this often (a few processes: ~1 ms)
DISK_SECONDS = 2.0  # the writable folders are walked this often
MAX_WALK_ENTRIES = 50000  # a walk stops here (what it counted so far is a lower bound)
STATUS_READ_LIMIT = 8192
PIDS_CGROUP = "/sys/fs/cgroup/pids"
ENFORCED, WATCHED = "enforced", "watched"


class SealError(OSError):
    """One protection could not be set up; str() names the step and the reason."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


_LIBC = []


def _libc():
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(rc: int, what: str) -> None:
    if rc != 0:
        code = ctypes.get_errno()
        raise SealError(code, f"{what}: {errno.errorcode.get(code, code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(text):
        return None if text is None else os.fsencode(text)

    _check(_libc().mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def _set_read_only(fd: int, read_only: bool) -> None:
    """Set or clear read-only on the mount tree at `fd` (mount_setattr, Linux >= 5.12)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    flags = AT_EMPTY_PATH | AT_RECURSIVE
    rc = _libc().syscall(SYS_MOUNT_SETATTR, fd, b"", flags, ctypes.byref(attr), ctypes.sizeof(attr))
    _check(rc, "mount_setattr")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _path_fd(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"  # paths in mount options need no escaping of ',' or ':'


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def _has_mounts_below(path: str, ignore: list[str] = ()) -> bool:
    """True when another mount sits inside `path` (an overlay over it would hide that mount)."""
    prefix = path.rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            points = [line.split()[4] for line in handle if len(line.split()) > 4]
    except OSError:
        return True
    own = [mine.rstrip("/") + "/" for mine in ignore]
    return any(point.startswith(prefix) and not any((point + "/").startswith(m) for m in own) for point in points)


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
        if not self.attempt("user_namespace", lambda: _check(_libc().unshare(CLONE_NEWUSER), "unshare(user)")):
            for name in PROTECTIONS[1:]:
                self.status[name] = "unavailable: no user namespace"
            return False
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        self.attempt("mount_namespace", lambda: _check(_libc().unshare(CLONE_NEWNS), "unshare(mount)"))
        if self.plan.get("network") == "allowed":
            self.status["network"] = "allowed"
        else:
            self.attempt("network", lambda: _check(_libc().unshare(CLONE_NEWNET), "unshare(network)"))
        self.attempt("pid_namespace", lambda: _check(_libc().unshare(CLONE_NEWPID), "unshare(pid)"))
        return True

    def build(self) -> None:
        """Loopback, /proc, the overlays, the mapped and writable folders, then the read-only host."""
        if self.status["network"] == YES:
            self.attempt("network", _loopback_up)
        if self.status["mount_namespace"] != YES:
            for name in ("private_proc", "workspace_view", "read_only_host"):
                self.status[name] = "unavailable: no mount namespace"
            return
        if not self.attempt("read_only_host", lambda: _mount(None, "/", None, MS_REC | MS_PRIVATE)):
            return
        if self.status["network"] == YES:  # /sys/class/net then lists only the namespace's loopback
            try:
                _mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            except OSError:
                pass  # cosmetic: the namespace has no other interface either way
        if self.status["pid_namespace"] == YES:
            self.attempt("private_proc", lambda: _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC))
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
        return {path: _path_fd(path) for path in paths}

    def _discard_writes(self, path: str, scratch: str) -> None:
        """Overlay `path` with an upper layer on a tmpfs at `scratch`: reads see the host, writes vanish."""
        if not os.path.isdir(path) or os.path.realpath(path) == "/" or _has_mounts_below(os.path.realpath(path)):
            return  # stays read-only with the rest of the host
        _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700" + self._size_option())
        self.own_mounts.append(os.path.realpath(scratch))
        self.temp_mounts.append((path, _path_fd(scratch)))
        for name in ("upper", "work"):
            os.mkdir(os.path.join(scratch, name), 0o700)
        self._overlay(path, f"{scratch}/upper", f"{scratch}/work")

    def _keep_writes(self, entry: dict, sources: dict[str, int]) -> None:
        """Overlay `path` (the nearest existing folder of a literal simulator path) with an upper layer in the
        trial folder: the job may delete and recreate its literal workspace there, and the runner reads the
        result from the upper layer."""
        path = entry["path"]
        if os.path.realpath(path) == "/" or _has_mounts_below(os.path.realpath(path), ignore=self.own_mounts):
            raise SealError(errno.EBUSY, f"cannot map a simulator path under {path}")
        self._overlay(path, _fd_path(sources[entry["upper"]]), _fd_path(sources[entry["work"]]))

    def _overlay(self, path: str, upper: str, work: str) -> None:
        lower = _path_fd(path)
        _mount("overlay", path, "overlay", 0, f"lowerdir={_fd_path(lower)},upperdir={upper},workdir={work}")
        self.own_mounts.append(os.path.realpath(path))
        self.read_write.append(_path_fd(path))

    def _view(self, view: dict, sources: dict[str, int]) -> None:
        lower = f"{_fd_path(sources[view['stage']])}:{_fd_path(sources[view['workspace']])}"
        upper, work = _fd_path(sources[view["upper"]]), _fd_path(sources[view["work"]])
        _mount("overlay", view["workspace"], "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")
        self.read_write.append(_path_fd(view["workspace"]))
        for hidden in view.get("hide", []):
            if os.path.isdir(hidden) and not os.path.islink(hidden):
                _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0555")
                self.read_only_again.append(_path_fd(hidden))

    def _bind(self, source_fd: int, target: str) -> None:
        os.makedirs(target, exist_ok=True)
        _mount(_fd_path(source_fd), target, None, MS_BIND | MS_REC)
        self.read_write.append(_path_fd(target))

    def _read_only_host(self) -> None:
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" + self._size_option())
        self.read_write.append(_path_fd("/dev/shm"))
        self.temp_mounts.append(("/dev/shm", _path_fd("/dev/shm")))
        _set_read_only(_path_fd("/"), True)
        for fd in self.read_write:
            _set_read_only(fd, False)
        for fd in self.read_only_again:
            _set_read_only(fd, True)

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
            self.watcher = Watcher(self, self.disk_fds)

    def drop_capabilities(self) -> None:
        def drop():
            _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            for cap in range(64):
                if _libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
                    _check(-1, f"drop capability {cap}")
            _libc().prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
            _check(_libc().prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED, 0, 0, 0), "securebits")
            header, data = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)()
            _check(_libc().capset(header, data), "capset")

        if self.status["user_namespace"] == YES:
            self.attempt("capabilities_dropped", drop)
        else:
            self.status["capabilities_dropped"] = "unavailable: no user namespace"


class Watcher:
    """PID 1's view of the trial's resources; `breach()` names the first limit crossed (or None).

    Memory: RssAnon summed over every process of the namespace (shared libraries and file pages are not the
    trial's to free). Tasks: processes and threads. Disk: the bytes of the writable folders (walked at most
    every DISK_SECONDS, at most MAX_WALK_ENTRIES entries) plus what the temp-folder tmpfs mounts hold.
    """

    def __init__(self, seal: Seal, disk_fds: list[tuple[str, int]]):
        limits = seal.limits
        self.memory, self.disk, self.processes = limits.get("memory"), limits.get("disk"), limits.get("processes")
        self.temp_mounts = seal.temp_mounts
        self.disk_fds = disk_fds
        self.next_walk = 0.0
        self.walked: dict[str, int] = {}

    def breach(self, now: float, *, final: bool = False) -> dict | None:
        if not final and (self.memory or self.processes):
            found = self._tasks_and_memory()
            if found:
                return found
        if self.disk and (final or now >= self.next_walk):
            self.next_walk = now + DISK_SECONDS
            return self._disk()
        return None

    def _tasks_and_memory(self) -> dict | None:
        anon, tasks, biggest, parents = 0, 0, (0, 0), {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            fields = _status_fields(int(name))
            if not fields:
                continue
            tasks += fields.get("Threads", 1)
            if name == "1":
                continue  # this watcher
            anon += fields.get("RssAnon", 0) * 1024
            biggest = max(biggest, (fields.get("RssAnon", 0), int(name)))
            parent = fields.get("PPid", 0)
            parents[parent] = parents.get(parent, 0) + 1
        if self.memory and anon > self.memory:
            return {"limit": "memory", "value": self.memory, "used": anon, "by": _describe(biggest[1])}
        if self.processes and tasks >= self.processes:
            parent = max(parents, key=lambda pid: (parents[pid], pid)) if parents else 0
            return {"limit": "processes", "value": self.processes, "used": tasks, "by": _describe(parent)}
        return None

    def _disk(self) -> dict | None:
        used: dict[str, int] = {}
        for label, fd in self.temp_mounts:
            try:
                info = os.fstatvfs(fd)
            except OSError:
                continue
            used[label] = used.get(label, 0) + (info.f_blocks - info.f_bfree) * info.f_frsize
        budget = [MAX_WALK_ENTRIES]
        for label, fd in self.disk_fds:
            used[label] = used.get(label, 0) + _bytes_under(_fd_path(fd), budget)
        total = sum(used.values())
        if total >= self.disk:
            most = max(used, key=lambda label: used[label])
            return {"limit": "disk", "value": self.disk, "used": total, "by": most}
        return None


def _status_fields(pid: int) -> dict[str, int]:
    """PPid, Threads and RssAnon (kB) from /proc/<pid>/status ({} when it is gone)."""
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        data = os.read(fd, STATUS_READ_LIMIT)
    except OSError:
        return {}
    finally:
        os.close(fd)
    fields = {}
    for line in data.split(b"\n"):
        key, _, value = line.partition(b":")
        if key in (b"PPid", b"Threads", b"RssAnon"):
            parts = value.split()
            if parts and parts[0].isdigit():
                fields[key.decode()] = int(parts[0])
    return fields


def _describe(pid: int) -> str:
    """`site-2 (python client.py)`: the site a process serves (from its command line) and what it runs."""
    try:
        fd = os.open(f"/proc/{pid}/cmdline", os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return ""
    argv = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    if not argv:
        return ""
    program = os.path.basename(argv[0])
    what = next((os.path.basename(arg) for arg in argv[1:] if arg.endswith(".py")), "")
    if not what and "-m" in argv[1:-1]:
        what = "-m " + argv[argv.index("-m", 1) + 1]
    shown = f"{program} {what}".strip()
    site = next((arg for arg in argv if arg.startswith("site-") and len(arg) < 64), "")
    if not site:
        for flag in ("--client", "-c", "--site", "-n"):
            if flag in argv[1:-1] and not argv[argv.index(flag, 1) + 1].startswith("-"):
                site = argv[argv.index(flag, 1) + 1][:64]
                break
    return f"{site} ({shown})" if site else shown


def _bytes_under(root: str, budget: list[int]) -> int:
    """Bytes allocated to files below `root` (no symlink followed); stops when `budget[0]` entries were seen."""
    total, stack = 0, [root]
    while stack and budget[0] > 0:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                budget[0] -= 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                if budget[0] <= 0:
                    break
    return total


def _join_pids_cgroup(name: str, processes: int) -> None:
    """Cap this process and everything it starts at `processes` tasks (+1: this launcher) in a new pids cgroup."""
    path = os.path.join(PIDS_CGROUP, name)
    os.mkdir(path, 0o700)
    try:
        _write(os.path.join(path, "pids.max"), str(processes + 1))
        _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
    except OSError:
        os.rmdir(path)
        raise


def _exit_like(status: int) -> None:
    """Leave with the same exit code or signal as the waited-for child."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else EXIT_NOT_RUN)


def _init(seal: Seal, command: list[str]) -> None:
    """Build the seal and run the command: as PID 1, fork it and end everything else when it ends; without a PID
    namespace, become the command (same pid, same process group)."""
    seal.build()
    seal.drop_capabilities()
    seal.arm_watcher()
    seal.write_status()
    unmet = [name for name in seal.plan.get("required", []) if seal.status.get(name) != YES]
    if unmet:
        sys.stderr.write(f"autofl: the trial was not run: {', '.join(unmet)} unavailable\n")
        os._exit(EXIT_NOT_RUN)
    try:
        os.chdir(seal.plan.get("cwd") or "/")  # after the view is laid: the old cwd would be the live folder
    except OSError as error:
        sys.stderr.write(f"autofl: the trial was not run: cannot enter its workspace ({error})\n")
        os._exit(EXIT_NOT_RUN)
    if not command:
        os._exit(0)
    if os.getpid() != 1:
        _exec(command)
    child = os.fork()
    if child == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        _exec(command)
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: _signal_namespace(number))
    status = _reap_until(child, seal.watcher)
    _signal_namespace(signal.SIGKILL)
    if seal.status_pipe is not None:  # PID 1 cannot die of its own signal: the launcher mirrors the status
        os.write(seal.status_pipe, str(status).encode("ascii"))
    _exit_like(status)


def _exec(command: list[str]) -> None:
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"autofl: cannot run {command[0]}: {error}\n")
    os._exit(127)


def _signal_namespace(sig: int) -> None:
    """From PID 1: signal every other process of the namespace (kill(-1) never reaches outside it)."""
    try:
        os.kill(-1, sig)
    except ProcessLookupError:
        pass


def _reap_until(child: int, watcher: Watcher | None = None) -> int:
    if watcher is not None:
        return _reap_watching(child, watcher)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return status


def _reap_watching(child: int, watcher: Watcher) -> int:
    """Reap like `_reap_until`, waking every WATCH_SECONDS (or when the command exits) to check the limits; a
    limit crossed ends every process of the namespace, and its record goes to the reason file."""
    try:
        exited = [os.pidfd_open(child)]
    except (OSError, AttributeError):
        exited = []  # the exit is then seen at the next wake-up
    breached = None
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            except InterruptedError:
                continue
            if pid == 0:
                break
            if pid == child:
                if breached is None and watcher.disk:  # a temp mount may be full: the job then failed on ENOSPC
                    _record_breach(watcher.breach(time.monotonic(), final=True))
                return status
        if breached is None:
            breached = watcher.breach(time.monotonic())
            if breached is not None:
                _record_breach(breached)
                _signal_namespace(signal.SIGKILL)
                continue
        select.select(exited, [], [], WATCH_SECONDS)


_REASON_FD: list[int] = []


def _record_breach(record: dict | None) -> None:
    if record is not None and _REASON_FD:
        os.write(_REASON_FD[0], json.dumps(record, sort_keys=True).encode("utf-8"))


def _watch_setup(seal: Seal) -> list[tuple[str, int]]:
    """Before any namespace: the reason file, the pids cgroup, descriptors of the folders the disk watch walks."""
    limits = seal.limits
    if limits.get("reason_file"):
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
        _REASON_FD.append(os.open(limits["reason_file"], flags, 0o600))
    if limits.get("processes"):
        seal.enforcement["processes"] = WATCHED
        if limits.get("cgroup"):
            try:
                _join_pids_cgroup(str(limits["cgroup"]), int(limits["processes"]))
                seal.enforcement["processes"] = ENFORCED
            except OSError:
                pass
    fds = []
    for entry in limits.get("disk_paths") or []:
        try:
            fds.append((entry["label"], os.open(entry["path"], os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)))
        except (OSError, KeyError, TypeError):
            continue
    return fds


def run(plan: dict, command: list[str]) -> None:
    seal = Seal(plan)
    seal.open_status()
    seal.disk_fds = _watch_setup(seal) if seal.limits else []
    if not seal.unshare():
        seal.arm_watcher()
        seal.write_status()
        if plan.get("required"):
            sys.stderr.write("autofl: the trial was not run: namespaces are unavailable\n")
            os._exit(EXIT_NOT_RUN)
        os.chdir(plan.get("cwd") or "/")
        if not command:
            os._exit(0)
        _exec(command)
    if seal.status["pid_namespace"] != YES:
        _init(seal, command)  # no PID namespace: this process sets up the mounts, then becomes the command
    read_end, write_end = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read_end)
        seal.status_pipe = write_end
        _init(seal, command)
    os.close(write_end)
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: os.kill(init, number))
    while True:
        try:
            _pid, status = os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
    reported = os.read(read_end, 32).decode("ascii", "replace")
    _exit_like(int(reported) if reported.isdigit() else status)


def probe(scratch: str | None = None) -> dict:
    """Try every protection on a scratch view without running anything; the status document. The view is laid in
    `scratch` (a folder the caller made and removes) or in a temporary folder of its own."""
    if scratch is None:
        with tempfile.TemporaryDirectory(prefix="autofl-probe-") as folder:
            return probe(folder)
    folders = {name: os.path.join(scratch, name) for name in ("stage", "upper", "work", "workspace", "sim", "tmp")}
    for folder in folders.values():
        os.mkdir(folder)
    plan = {
        "status_file": os.path.join(scratch, "status.json"),
        "cwd": folders["workspace"],
        "writable": [folders["sim"]],
        "ephemeral": [{"path": tempfile.gettempdir(), "scratch": folders["tmp"]}],
        "view": {key: folders[key] for key in ("stage", "upper", "work", "workspace")},
    }
    pid = os.fork()
    if pid == 0:
        try:
            run(plan, [])
        finally:
            os._exit(EXIT_NOT_RUN)
    os.waitpid(pid, 0)
    try:
        with open(plan["status_file"], encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        reason = f"unavailable: the probe failed ({error})"
        return {"protections": dict.fromkeys(PROTECTIONS, reason), "missing": list(PROTECTIONS)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"] and len(argv) <= 2:
        document = probe(*argv[1:])
        print(json.dumps(document, sort_keys=True))
        return 0 if not document["missing"] else 1
    if len(argv) < 3 or argv[0] != "--plan" or argv[2] != "--":
        sys.stderr.write("usage: sandbox.py --plan PLAN.json -- COMMAND [ARGS...] | --probe [SCRATCH]\n")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            plan = json.load(handle)
    except (OSError, ValueError) as error:
        sys.stderr.write(f"autofl: cannot read the trial plan {argv[1]}: {error}\n")
        return EXIT_NOT_RUN
    run(plan, argv[3:])
    return EXIT_NOT_RUN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
