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

Each protection is attempted on its own and written to the plan's status file (`{"protections": {...},
"missing": [...]}`), so the runner can say exactly which ones were missing. A protection the plan requires that
fails stops the trial before the command runs (exit 126). Standard library only; run it with `python -I`.

Usage:
    python -I sandbox.py --plan PLAN.json -- python job.py ...
    python -I sandbox.py --probe          # prints the status JSON of a dry run; exit 0 when fully sealed

Plan keys: status_file, cwd, network ("isolated" | "allowed"), required [protection names],
view {workspace, stage, upper, work, hide[]}, ephemeral [{path, scratch}], writable [paths], map [{path, upper, work}].
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import tempfile

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
        _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700")
        self.own_mounts.append(os.path.realpath(scratch))
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
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        self.read_write.append(_path_fd("/dev/shm"))
        _set_read_only(_path_fd("/"), True)
        for fd in self.read_write:
            _set_read_only(fd, False)
        for fd in self.read_only_again:
            _set_read_only(fd, True)

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
    status = _reap_until(child)
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


def _reap_until(child: int) -> int:
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return status


def run(plan: dict, command: list[str]) -> None:
    seal = Seal(plan)
    seal.open_status()
    if not seal.unshare():
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


def probe() -> dict:
    """Try every protection on a scratch view without running anything; the status document."""
    with tempfile.TemporaryDirectory(prefix="autofl-probe-") as scratch:
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
    if argv == ["--probe"]:
        document = probe()
        print(json.dumps(document, sort_keys=True))
        return 0 if not document["missing"] else 1
    if len(argv) < 3 or argv[0] != "--plan" or argv[2] != "--":
        sys.stderr.write("usage: sandbox.py --plan PLAN.json -- COMMAND [ARGS...] | --probe\n")
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
