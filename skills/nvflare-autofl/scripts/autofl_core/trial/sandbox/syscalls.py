"""The kernel calls of the seal (ctypes on the C library): unshare, mount, mount_setattr, prctl and capset, the
loopback interface's flags, and the mount table's points."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x10000000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 0x4000, 1 << 18
AT_EMPTY_PATH, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 0x1000, 0x8000, 0x1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscalls share one table since 5.x)
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 28, 47, 4
SECURE_ALL_LOCKED = 0x3F  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS and their locks
CAPABILITY_VERSION_3 = 0x20080522
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


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


def libc():
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def check(rc: int, what: str) -> None:
    if rc != 0:
        code = ctypes.get_errno()
        raise SealError(code, f"{what}: {errno.errorcode.get(code, code)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(text):
        return None if text is None else os.fsencode(text)

    check(libc().mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def set_read_only(fd: int, read_only: bool) -> None:
    """Set or clear read-only on the mount tree at `fd` (mount_setattr, Linux >= 5.12)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    flags = AT_EMPTY_PATH | AT_RECURSIVE
    rc = libc().syscall(SYS_MOUNT_SETATTR, fd, b"", flags, ctypes.byref(attr), ctypes.sizeof(attr))
    check(rc, "mount_setattr")


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def path_fd(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"  # paths in mount options need no escaping of ',' or ':'


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def has_mounts_below(path: str, ignore: list[str] = ()) -> bool:
    """True when another mount sits inside `path` (an overlay over it would hide that mount)."""
    prefix = path.rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            points = [line.split()[4] for line in handle if len(line.split()) > 4]
    except OSError:
        return True
    own = [mine.rstrip("/") + "/" for mine in ignore]
    return any(point.startswith(prefix) and not any((point + "/").startswith(m) for m in own) for point in points)
