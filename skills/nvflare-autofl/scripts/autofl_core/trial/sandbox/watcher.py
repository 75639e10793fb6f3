"""`Watcher`: PID 1's reading of the trial's memory, tasks and disk from its own /proc and the writable folders,
and the first limit crossed."""

from __future__ import annotations

import os

from .syscalls import fd_path

WATCH_SECONDS = 0.5  # memory and tasks of the namespace are read this often (a few processes: ~1 ms)
DISK_SECONDS = 2.0  # the writable folders are walked this often
MAX_WALK_ENTRIES = 50000  # a walk stops here (what it counted so far is a lower bound)
STATUS_READ_LIMIT = 8192


class Watcher:
    """PID 1's view of the trial's resources; `breach()` names the first limit crossed (or None).

    Memory: RssAnon summed over every process of the namespace (shared libraries and file pages are not the
    trial's to free). Tasks: processes and threads. Disk: the bytes of the writable folders (walked at most
    every DISK_SECONDS, at most MAX_WALK_ENTRIES entries) plus what the temp-folder tmpfs mounts hold.
    """

    def __init__(self, limits: dict, temp_mounts: list[tuple[str, int]], disk_fds: list[tuple[str, int]]):
        """`temp_mounts` is the seal's own list (the mounts laid before the watch starts)."""
        self.memory, self.disk, self.processes = limits.get("memory"), limits.get("disk"), limits.get("processes")
        self.temp_mounts = temp_mounts
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
            used[label] = used.get(label, 0) + _bytes_under(fd_path(fd), budget)
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
