"""Run a command in a new user + network + mount namespace with only loopback up (Linux), then exec it.

Candidate code is written by an agent that reads papers and logs; it must not be able to send data anywhere.
This launcher is the trial's first program: it unshares the namespaces (unprivileged, through a user
namespace that maps the caller's own uid/gid), brings `lo` up, remounts /sys so `/sys/class/net` shows only
the namespace's interfaces, writes one status word to `--status-file` and execs the real command in place
(same pid, same session, same environment). Where namespaces are unavailable it writes `unavailable: <why>`
and execs the command without isolation, so the caller can say so.

Usage (standard library only; run with the trial's interpreter):
    python netns.py --status-file FILE -- python job.py ...
    python netns.py --probe          # exit 0 when isolation works here, 1 otherwise (prints why)
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
ISOLATED = "isolated"


def isolate() -> str:
    """Enter the namespaces; returns ISOLATED or `unavailable: <reason>` (then nothing changed)."""
    if not sys.platform.startswith("linux"):
        return f"unavailable: network namespaces need Linux (this is {sys.platform})"
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0:
        code = ctypes.get_errno()
        return f"unavailable: unshare failed ({errno.errorcode.get(code, code)}: {os.strerror(code)})"
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _loopback_up()
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
        libc.mount(b"sysfs", b"/sys", b"sysfs", 0, None)  # best effort: /sys/class/net then shows only lo
    return ISOLATED


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:
        try:
            status = isolate()
        except OSError as error:
            status = f"unavailable: {error}"
        print(status)
        return 0 if status == ISOLATED else 1
    if len(argv) < 4 or argv[0] != "--status-file" or argv[2] != "--":
        sys.stderr.write("usage: netns.py --status-file FILE -- COMMAND [ARGS...]\n")
        return 2
    status_file, command = argv[1], argv[3:]
    try:
        status = isolate()
    except OSError as error:  # e.g. a half-set-up namespace: never run the job in an unknown state
        _write(status_file, f"failed: {error}")
        sys.stderr.write(f"autofl: network isolation failed ({error}); the trial was not run\n")
        return 126
    _write(status_file, status)
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
