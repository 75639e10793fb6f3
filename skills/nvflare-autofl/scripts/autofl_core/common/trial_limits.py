"""Per-trial resource limits: sizes as people write them, defaults from the machine, the crash reason of a breach.

A trial gets three limits besides its timeouts: memory (resident anonymous memory summed over its processes),
disk (what it writes to its writable folders and temp folders) and processes (processes and threads). The
sandbox launcher enforces them (`trial/sandbox/`: a pids cgroup where the host lets it create one, a watcher in the
trial's PID 1 for the rest) and writes what it found to `limits.json`; this module turns that into the
reason the runner records. Pure apart from reading /proc/meminfo, statvfs and threads-max (the runner's settings and the trial both use
it, so it lives here: the trial machinery is not imported by actions that run no trial). Usage::

    limits = resolve({"memory": "6G", "disk": None, "processes": None}, slots=2, folder=Path("/tmp"))
    limits.to_plan()      # {"memory": 6442450944, "disk": ..., "processes": ...}
    breach_reason({"limit": "memory", "value": 6442450944, "by": "site-2 (python client.py)"})
    # 'memory limit 6 GiB exceeded by site-2 (python client.py); ...'
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

KIB, MIB, GIB = 1024, 1024**2, 1024**3
SIZE_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
UNITS = {"": 1, "K": KIB, "M": MIB, "G": GIB, "T": 1024**4}
MEMORY_SHARE = 0.75  # of physical memory, divided among the batch's slots (the rest: the runner, the OS, others)
DISK_SHARE = 0.5  # of the free space where trials write, divided among the slots
MAX_DEFAULT_PROCESSES = 2048  # processes and threads of one trial (an NVFLARE client runs a few dozen threads)
MIN_MEMORY, MIN_DISK, MIN_PROCESSES = 64 * MIB, 16 * MIB, 16
FLAGS = {"memory": "--trial-memory", "disk": "--trial-disk", "processes": "--trial-processes"}
KINDS = tuple(FLAGS)
ADVICE = {
    "memory": "lower the candidate's memory use (model size, batch size, data kept per round)",
    "disk": "write less from the candidate (checkpoints, logs, data copies)",
    "processes": "start fewer processes or threads (data-loader workers, clients)",
}


@dataclass(frozen=True)
class TrialLimits:
    """Memory and disk in bytes, processes as a count; None: no limit of that kind."""

    memory: int | None = None
    disk: int | None = None
    processes: int | None = None

    def to_plan(self) -> dict:
        return asdict(self)


def parse_size(text: str, flag: str) -> int:
    """Bytes of a size like `6G`, `200M`, `1.5GiB` or `1048576` (ValueError names the flag and the fix)."""
    match = SIZE_RE.fullmatch(str(text))
    if not match:
        raise ValueError(f"{flag} must be a size like 6G, 200M or 1.5GiB, got {text!r}")
    value = int(float(match.group(1)) * UNITS[match.group(2).upper()])
    minimum = MIN_MEMORY if flag == FLAGS["memory"] else MIN_DISK
    if value < minimum:
        raise ValueError(f"{flag} must be at least {show_size(minimum)}, got {text!r}")
    return value


def parse_count(text: str, flag: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a whole number of processes, got {text!r}") from None
    if value < MIN_PROCESSES:
        raise ValueError(f"{flag} must be at least {MIN_PROCESSES}, got {text!r}")
    return value


def show_size(value: int) -> str:
    """`6 GiB`, `1.5 GiB`, `200 MiB`, `512 KiB`."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if value >= unit:
            shown = value / unit
            return f"{shown:.0f} {name}" if shown == int(shown) or shown >= 100 else f"{shown:.1f} {name}"
    return f"{value} B"


def show(kind: str, value: int | None) -> str:
    if value is None:
        return "none"
    return str(value) if kind == "processes" else show_size(value)


def machine_defaults(slots: int, folder: Path, *, meminfo: str = "/proc/meminfo") -> TrialLimits:
    """Physical memory and the free disk under `folder` divided among `slots` trials; processes capped too."""
    slots = max(1, slots)
    memory = _mem_total(meminfo)
    try:
        info = os.statvfs(folder)
        free = info.f_bavail * info.f_frsize
    except OSError:
        free = None
    threads = _read_int("/proc/sys/kernel/threads-max")
    processes = MAX_DEFAULT_PROCESSES if threads is None else min(MAX_DEFAULT_PROCESSES, threads // 4 // slots)
    return TrialLimits(
        memory=None if memory is None else max(MIN_MEMORY, int(memory * MEMORY_SHARE) // slots),
        disk=None if free is None else max(MIN_DISK, int(free * DISK_SHARE) // slots),
        processes=max(MIN_PROCESSES, processes),
    )


def resolve(settings: dict, *, slots: int, folder: Path) -> TrialLimits:
    """The limits of one trial: each setting given (bytes or a count) wins, else the machine's default."""
    auto = machine_defaults(slots, folder)
    return TrialLimits(**{kind: settings.get(kind) or getattr(auto, kind) for kind in KINDS})


def breach_reason(record: dict) -> str | None:
    """The crash reason of a limit the launcher found exceeded (None when the record names none)."""
    kind = record.get("limit") if isinstance(record, dict) else None
    value = record.get("value")
    if kind not in KINDS or not isinstance(value, int):
        return None
    by = str(record.get("by") or "")[:200]
    shown = show(kind, value)
    if kind == "memory":
        what = f"memory limit {shown} exceeded" + (f" by {by}" if by else "")
    elif kind == "disk":
        used = record.get("used")
        written = f" ({show_size(used)} written" if isinstance(used, int) else " ("
        what = f"disk limit {shown} exceeded{written}{', most under ' + by if by else ''})".replace(" ()", "")
    else:
        what = f"process limit {shown} reached" + (f", most started by {by}" if by else "")
    return f"{what}; {ADVICE[kind]}, or raise {FLAGS[kind]} (now {shown})"


def _mem_total(path: str) -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read(64).strip())
    except (OSError, ValueError):
        return None
