"""Trial watchdogs: total timeout, simulator stall, no progress; plus a cheap log-file watcher.

`Watchdog` is fed lines (child output and new log lines) and asked `check(now)` by the
process supervisor at every tick and at its `next_deadline()`; it returns a reason string
when the trial must stop:
- total timeout since start;
- stall: the simulator reports it lost a client runner (`STALL_MARKERS`): the reason quotes the line; the
  `INFRASTRUCTURE_STALLS` among them are the simulator's own (its connection to a site's worker process failed as
  it started it), which `infrastructure_stall` tells apart so the runner can run the trial once more. Only a
  stall before the trial reported any result counts (NVFLARE's race comes as the sites' workers start); a stall
  line after results (which a candidate could print itself once it saw them) ends with `LATE_STALL`;
- no progress: after the first progress marker, no new marker for `no_progress_timeout`
  seconds (0 disables); while an aggregation is partial (`Aggregated k/n results`, k<n) only
  an advancing aggregation, a new round or the end of FedAvg counts as progress. The reason names the
  sites whose results the round still waits for (NVFLARE's `Sampled clients: [...]` minus the `peer=` of
  each `Aggregated k/n results`), and `waiting(now)` gives a note every WAIT_NOTE_SECONDS of such silence, so
  the progress line says what the trial waits for instead of going quiet.

`LogWatcher` finds the NVFLARE simulator logs cheaply: at most every `interval` seconds it
lists `<root>/<job>/` (a handful of entries; again only when a folder changed, see `folders`),
stats each `<site>/log.txt` and reads only the bytes appended since the last look (bounded).
Most progress arrives through the child's streamed output anyway; the log files cover jobs
that log only to files.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import threading
from pathlib import Path

from .folders import Subfolders

PROGRESS_MARKERS = (
    "Round ",
    "Aggregated ",
    "Start FedAvg",
    "Finished FedAvg",
    "round=",
    "epoch",
    "Epoch",
    "sent result",
    "task completed",
    "Task completed",
    "new best validation metric",
)
STALL_MARKERS = (
    "Failed to create connection to the child process in SimulatorClientRunner",
    "SimulatorClientRunner - ERROR - run_client_thread error",
    # The simulator lost the connection to a client's worker process as it started it (seen under load: `[Errno
    # 104] Connection reset by peer`): that client never runs, and the server waits for its result forever.
    "Communication error with client ",
)
# The simulator's own connection to a site's worker failed (timed out as it started it, or reset by the peer: its
# race under load, logged by the client's thread or by its run_client_thread). A worker that dies of the job's code
# ends its connection with EOF instead (an empty message), and any other run_client_thread error is the job's.
INFRASTRUCTURE_STALLS = re.compile(
    r"(?:Failed to create connection to the child process|Communication error with client \S+: \[Errno 104\]"
    r"|SimulatorClientRunner - ERROR - run_client_thread error: ConnectionResetError: \[Errno 104\])"
)
MAX_STALL_TEXT = 200
STALL_REASON = "simulator stall: server log shows "
LATE_STALL = " after the trial had reported results"
START_BANNER_RE = re.compile(r"Start FedAvg|Round 0 started")  # progress lines that report no result yet
ANY_MARKER_RE = re.compile("|".join(re.escape(marker) for marker in (*PROGRESS_MARKERS, *STALL_MARKERS)))
AGGREGATED_RE = re.compile(r"Aggregated (\d+)/(\d+) results")
ROUND_OR_END_RE = re.compile(r"Round \d+ started|Finished FedAvg")
SAMPLED_RE = re.compile(r"Sampled clients: (\[[^\]\n]{0,4096}\])")
PEER_RE = re.compile(r"\bpeer=([A-Za-z0-9_.@-]{1,128}),")
WAIT_NOTE_SECONDS = 30.0


class Watchdog:
    """Thread-safe watchdog state: `observe` from the output thread, `check` from the supervisor."""

    def __init__(self, *, started: float, total_timeout: float | None, no_progress_timeout: float | None):
        self._started = started
        self._total = total_timeout if total_timeout and total_timeout > 0 else None
        self._no_progress = no_progress_timeout if no_progress_timeout and no_progress_timeout > 0 else None
        self._lock = threading.Lock()
        self._last_progress: float | None = None
        self._partial: tuple[int, int] | None = None
        self._stall: str | None = None
        self._results_seen = False  # a progress line other than a start banner (a result, a metric, a round)
        self._stall_late = False
        self._sampled: list[str] = []  # the sites of the current round, and those whose results arrived
        self._arrived: set[str] = set()

    def observe(self, line: str, now: float) -> bool:
        """Record one line of child output or log text seen at `now`; True when it showed a stall (stop now)."""
        if not ANY_MARKER_RE.search(line):
            if "Sampled clients" in line:  # not progress: which sites the round waits for
                with self._lock:
                    self._sampled_line(line)
            return False
        stall = next((marker for marker in STALL_MARKERS if marker in line), None)
        with self._lock:
            if stall:  # the marker and what the line says after it (which client, which error)
                if self._stall is None:
                    self._stall = line[line.index(stall) :][:MAX_STALL_TEXT].strip()
                    self._stall_late = self._results_seen
            else:
                self._results_seen = self._results_seen or not START_BANNER_RE.search(line)
                if self._advances(line):
                    self._last_progress = now
        return stall is not None

    def _advances(self, line: str) -> bool:
        match = AGGREGATED_RE.search(line)
        if match:
            peer = PEER_RE.search(line)
            if peer:
                self._arrived.add(peer.group(1))
            done, total = int(match.group(1)), int(match.group(2))
            previous = self._partial
            self._partial = (done, total) if done < total else None
            return previous is None or done > previous[0] or total != previous[1]
        if ROUND_OR_END_RE.search(line):
            self._partial = None
            return True
        return self._partial is None

    def _sampled_line(self, line: str) -> None:
        sampled = SAMPLED_RE.search(line)
        if sampled:
            self._sampled, self._arrived = _names(sampled.group(1)), set()

    def next_deadline(self) -> float | None:
        """The monotonic time at which `check` would fire if nothing else happens (None: no deadline)."""
        with self._lock:
            deadlines = []
            if self._total is not None:
                deadlines.append(self._started + self._total)
            if self._no_progress is not None and self._last_progress is not None:
                deadlines.append(self._last_progress + self._no_progress)
            return min(deadlines) if deadlines else None

    def check(self, now: float) -> str | None:
        """A stop reason, or None while the trial may go on."""
        with self._lock:
            if self._stall:
                return f"{STALL_REASON}{self._stall!r}{LATE_STALL if self._stall_late else ''}"
            if self._total is not None and now - self._started >= self._total:
                return f"timeout: trial exceeded the {self._total:g}s total timeout"
            if self._no_progress is None or self._last_progress is None:
                return None
            if now - self._last_progress < self._no_progress:
                return None
            what = "partial aggregation did not advance" if self._partial else "no new progress marker"
            return f"no progress: {what} for {self._no_progress:g}s{self._missing()} (simulator no-progress timeout)"

    def waiting(self, now: float) -> tuple[int, str] | None:
        """(how many WAIT_NOTE_SECONDS have passed, a note) while nothing advanced for that long, else None."""
        with self._lock:
            if self._last_progress is None or now - self._last_progress < WAIT_NOTE_SECONDS:
                return None
            quiet = now - self._last_progress
            limit = f"; the trial ends at {self._no_progress:g}s" if self._no_progress else ""
            what = f"round results {self._partial[0]}/{self._partial[1]}" if self._partial else "no progress marker"
            return int(quiet // WAIT_NOTE_SECONDS), f"no progress for {int(quiet)}s ({what}{self._missing()}{limit})"

    def _missing(self) -> str:
        """`, waiting for site-2's result` while a partial round's sampled sites are known (under the lock)."""
        missing = [site for site in self._sampled if site not in self._arrived]
        if not self._partial or not missing or not self._arrived:
            return ""
        shown = ", ".join(missing[:4]) + (f" (+{len(missing) - 4} more)" if len(missing) > 4 else "")
        return f", waiting for {shown}'s result" if len(missing) == 1 else f", waiting for the results of {shown}"


def _names(listed: str) -> list[str]:
    try:
        value = ast.literal_eval(listed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class LogWatcher:
    """Return lines appended to the simulator's per-site log.txt files since the last poll."""

    def __init__(self, root: Path, *, interval: float = 2.0, max_read: int = 256 * 1024, max_files: int = 32):
        self._root = Path(root)
        self._interval = interval
        self._max_read = max_read
        self._max_files = max_files
        self._next_poll = 0.0
        self._offsets: dict[str, int] = {}
        self._partials: dict[str, bytes] = {}
        self._folders = Subfolders()

    def poll(self, now: float) -> list[str]:
        """New complete lines from all known log files (empty until `interval` has passed)."""
        if now < self._next_poll:
            return []
        self._next_poll = now + self._interval
        lines: list[str] = []
        for path in self._log_files():
            lines.extend(self._read_new(path))
        return lines

    def _log_files(self) -> list[str]:
        files = []
        for job in self._folders.of(self._root, 8):
            for site in self._folders.of(job, self._max_files):
                files.append(os.path.join(site, "log.txt"))
        return files[: self._max_files]

    def _read_new(self, path: str) -> list[str]:
        try:
            info = os.stat(path)
        except OSError:
            return []
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device named log.txt must never block the supervisor
            return []
        size = info.st_size
        offset = self._offsets.get(path, 0)
        if size <= offset:
            return []
        start = max(offset, size - self._max_read)
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            return []
        self._offsets[path] = start + len(data)
        data = (self._partials.pop(path, b"") if start == offset else b"") + data
        *complete, rest = data.split(b"\n")
        if rest:
            self._partials[path] = rest[-65536:]
        return [line.decode("utf-8", errors="replace") for line in complete]


def infrastructure_stall(reason: str | None) -> bool:
    """True for a stop reason of a stall NVFLARE's simulator causes itself (see INFRASTRUCTURE_STALLS)."""
    reason = reason or ""
    if not reason.startswith(STALL_REASON) or reason.endswith(LATE_STALL):
        return False
    return INFRASTRUCTURE_STALLS.match(reason, len(STALL_REASON) + 1) is not None
