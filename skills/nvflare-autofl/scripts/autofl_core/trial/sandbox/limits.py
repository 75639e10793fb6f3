"""Before any namespace: the limits' reason file, the pids cgroup, the folders the disk watch walks; a breach's
record written to the reason file."""

from __future__ import annotations

import json
import os

from .protections import ENFORCED, WATCHED
from .sealing import Seal
from .syscalls import write

PIDS_CGROUP = "/sys/fs/cgroup/pids"


def _join_pids_cgroup(name: str, processes: int) -> None:
    """Cap this process and everything it starts at `processes` tasks (+1: this launcher) in a new pids cgroup."""
    path = os.path.join(PIDS_CGROUP, name)
    os.mkdir(path, 0o700)
    try:
        write(os.path.join(path, "pids.max"), str(processes + 1))
        write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
    except OSError:
        os.rmdir(path)
        raise


_REASON_FD: list[int] = []


def record_breach(record: dict | None) -> None:
    if record is not None and _REASON_FD:
        os.write(_REASON_FD[0], json.dumps(record, sort_keys=True).encode("utf-8"))


def watch_setup(seal: Seal) -> list[tuple[str, int]]:
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
