"""Live progress of a running trial on stderr: round k/N, elapsed time, the metric, labelled by where it came from.

Parses the NVFLARE 2.9 shapes: `Round N started.` (0-based N; shown as N+1 of the budget's
num_rounds), `Aggregated k/n results`, `new best validation metric at round N: v` (negated
by NVFLARE when the key metric is minimized), `validation metric v from client site-1`, `Finished FedAvg.`,
client prints such as `site=site-1 round=0 accuracy=0.18`, and the server's per-round aggregated metrics in
`round_metrics.jsonl` (NVFLARE 2.9's MetricsArtifactWriter; read from the trial root as it grows). The tracker
keeps those values per round too (`ProgressTracker.read_curve`: what a trial's round judge sees); the module's
`read_curve` reads the same records of a finished run.

The value shown is the one the ledger records when there is one: the server's aggregated metric (`server
aggregated accuracy=0.915 (round 3, the value the ledger records)`); before it exists, the server's best or a
single site's value, always labelled with that site (`site-1 accuracy=0.9`; `one site's accuracy=...` when the
line does not say which). Never writes to stdout.

Usage: tracker = ProgressTracker("baseline", num_rounds=3, metric="accuracy", mode="max", root=trial_root)
       printer = ProgressPrinter(sys.stderr)
       tracker.feed(line)                                        # for every output/log line
       printer.show(tracker.render(elapsed), tracker.state_key())  # every tick (reads new round records)
"""

from __future__ import annotations

import math
import os
import re
import stat
import threading
import time
from collections import deque
from pathlib import Path
from typing import TextIO

from ..common import bounded
from .folders import Subfolders

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
ROUND_STARTED_RE = re.compile(r"\bRound (\d+) started\.")
AGGREGATED_RE = re.compile(r"\bAggregated (\d+)/(\d+) results")
BEST_RE = re.compile(rf"new best validation metric at round (\d+): ({NUMBER})")
CLIENT_ROUND_RE = re.compile(r"\bround=(\d+)\b")
KEY_VALUE_RE = re.compile(rf"\b([A-Za-z_][A-Za-z0-9_.]*)\s*[=:]\s*({NUMBER})(?![\w.])")
SITE_VALUE_RE = re.compile(rf"validation metric ({NUMBER}) from client ([A-Za-z0-9][\w.-]*)")
SITE_RE = re.compile(r"\b(?:site|identity)=([A-Za-z0-9][\w.-]*)")
NON_METRIC_KEYS = frozenset({"round", "site", "epoch", "step", "pid", "rank", "interval", "task_processed"})
ROUND_RECORDS = Path("server", "simulate_job", "metrics", "round_metrics.jsonl")  # under <root> or <root>/<job>
MAX_RECORD_READ = 1 << 20  # bytes of new round records read per render
MAX_JOB_FOLDERS = 8


class ProgressTracker:
    """State parsed from trial output; `feed` is safe to call from the output thread."""

    def __init__(
        self,
        label: str,
        *,
        num_rounds: int | None,
        metric: str | None,
        mode: str = "max",
        root: Path | None = None,
        measured_after: bool = False,
    ):
        self.label = label
        self.ledger_words = (
            "reported by the job; the frozen evaluator measures the score"
            if measured_after
            else ("the value the ledger records")
        )
        self.num_rounds = num_rounds
        self.metric = metric
        self.mode = mode
        self.round_index: int | None = None
        self.aggregated: tuple[int, int] | None = None
        self.last_metric: tuple[str, str] | None = None  # (label, value): a site's value or the server's best
        self.server_metric: tuple[str, str, int] | None = None  # (name, value, round) of the aggregated metric
        self.finished = False
        self.curve: dict[int, float] = {}  # round index -> the server's aggregated metric (non-finite kept)
        self._records = RoundRecords(root) if root is not None else None
        self._lock = threading.Lock()

    def feed(self, line: str) -> None:
        """Update the state from one line of output or log text (cheap substring checks first)."""
        if "Finished FedAvg." in line:
            with self._lock:
                self.finished = True
            return
        if "started." in line:
            self._match(ROUND_STARTED_RE, line, self._on_round_started)
        elif "Aggregated " in line:
            self._match(AGGREGATED_RE, line, self._on_aggregated)
        elif "new best validation metric" in line:
            self._match(BEST_RE, line, self._on_best)
        elif "from client " in line:
            self._match(SITE_VALUE_RE, line, self._on_site_value)
        elif "round=" in line:
            self._match(CLIENT_ROUND_RE, line, lambda match: self._on_client(match, line))

    def _match(self, pattern: re.Pattern[str], line: str, handler) -> None:
        match = pattern.search(line)
        if match:
            with self._lock:
                handler(match)

    def _on_round_started(self, match: re.Match[str]) -> None:
        self._at_round(int(match.group(1)))
        self.aggregated = None

    def _on_aggregated(self, match: re.Match[str]) -> None:
        self.aggregated = (int(match.group(1)), int(match.group(2)))

    def _on_best(self, match: re.Match[str]) -> None:
        value = float(match.group(2))
        if self.mode == "min":  # NVFLARE negates minimized key metrics in this log line
            value = -value
        self.last_metric = (f"server best {self.metric or 'best'}", f"{value:.6g}")

    def _on_site_value(self, match: re.Match[str]) -> None:
        value = float(match.group(1))
        if self.mode == "min":  # NVFLARE negates minimized key metrics in this log line too
            value = -value
        self.last_metric = (f"{match.group(2)} {self.metric or 'validation metric'}", f"{value:.6g}")

    def feed_record(self, record: dict) -> None:
        """One round record of round_metrics.jsonl: the server's aggregated metrics of that round."""
        point = round_value(record, self.metric)
        if point is not None:
            with self._lock:
                self.curve[point[0]] = point[1]
        found = _aggregated_value(record, self.metric)
        if found is None:
            return
        with self._lock:
            name, value = found
            rnd = record.get("round")
            rnd = rnd if bounded.is_integer(rnd) else None
            if rnd is not None:
                self._at_round(rnd)
            self.server_metric = (name, f"{value:.6g}", rnd)

    def _at_round(self, index: int) -> None:
        if self.round_index is None or index > self.round_index:
            self.round_index = index

    def _on_client(self, match: re.Match[str], line: str) -> None:
        self._at_round(int(match.group(1)))
        site = SITE_RE.search(line)
        for key, value in KEY_VALUE_RE.findall(line):
            if (self.metric and key == self.metric) or (not self.metric and key.lower() not in NON_METRIC_KEYS):
                label = f"{site.group(1)} {key}" if site else f"one site's {key}"
                self.last_metric = (label, f"{float(value):.6g}")
                return

    def state_key(self, *, refresh: bool = True) -> tuple:
        """Changes exactly when the displayed state (apart from elapsed time) changes. `refresh=False`: from the
        lines fed so far, without reading new round records (no I/O: for the output thread, after each line)."""
        if refresh:
            self._read_records()
        with self._lock:
            return (self.round_index, self.aggregated, self.last_metric, self.server_metric, self.finished)

    def render(self, elapsed: float, *, refresh: bool = True) -> str:
        """One status line, e.g. `[autofl baseline] round 3/3 (2/2 aggregated) | 0:14 elapsed | server aggregated
        accuracy=0.915 (round 3, the value the ledger records)`. `refresh=False`: skip reading new round records
        (the caller just did, through `state_key`)."""
        if refresh:
            self._read_records()
        with self._lock:
            parts = [f"[autofl {self.label}] {self._round_text()}"]
            parts.append(f"{int(elapsed) // 60}:{int(elapsed) % 60:02d} elapsed")
            if self.server_metric:
                name, value, rnd = self.server_metric
                when = f"round {rnd + 1}, " if rnd is not None else ""
                parts.append(f"server aggregated {name}={value} ({when}{self.ledger_words})")
            elif self.last_metric:
                parts.append(f"{self.last_metric[0]}={self.last_metric[1]}")
            return " | ".join(part for part in parts if part)

    def read_curve(self) -> dict[int, float]:
        """The per-round global metric so far (reads the round records appended since the last read)."""
        self._read_records()
        with self._lock:
            return dict(self.curve)

    def _read_records(self) -> None:
        if self._records is not None:
            for record in self._records.poll():
                self.feed_record(record)

    def _round_text(self) -> str:
        total = f"/{self.num_rounds}" if self.num_rounds else ""
        if self.finished:
            return f"finished {self.num_rounds or (self.round_index or 0) + 1}{total} rounds"
        if self.round_index is None:
            return "starting"
        text = f"round {self.round_index + 1}{total}"
        if self.aggregated:
            text += f" ({self.aggregated[0]}/{self.aggregated[1]} aggregated)"
        return text


def _aggregated_value(record: dict, metric: str | None) -> tuple[str, float] | None:
    """(name, value) of `metric` (else the first number) among a round record's `aggregated_metrics`."""
    entries = record.get("aggregated_metrics")
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        value = entry.get("value")
        if not bounded.is_number(value) or value != value:
            continue
        if metric is None or entry["name"] == metric:
            return entry["name"], float(value)
    return None


def round_value(record: dict, metric: str | None) -> tuple[int, float] | None:
    """(round index, value) of `metric` (else the first number) in one round record; a non-finite value is kept
    (a diverging run), a record without a round index or that metric gives None."""
    rnd = record.get("round")
    entries = record.get("aggregated_metrics")
    if not bounded.is_integer(rnd) or rnd < 0 or not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        value = entry.get("value")
        if not bounded.is_number(value):
            continue
        if metric is None or entry["name"] == metric:
            return rnd, float(value)
    skipped = record.get("skipped_metrics")
    for entry in skipped if isinstance(skipped, list) and metric else ():
        if isinstance(entry, dict) and entry.get("name") == metric and "site" not in entry:
            return rnd, math.nan  # NVFLARE left out an aggregated value it could not use (non-finite)
    return None


def read_curve(folder: Path, metric: str | None, *, max_polls: int = 64) -> dict[int, float]:
    """The per-round global metric of a finished run: `folder` is a simulation result (or its parent), read
    through the same bounded reader as a running trial's records."""
    records, curve = RoundRecords(folder), {}
    for _ in range(max_polls):
        batch = records.poll()
        if not batch:
            break
        for record in batch:
            point = round_value(record, metric)
            if point is not None:
                curve[point[0]] = point[1]
    return curve


class RoundRecords:
    """The server's `round_metrics.jsonl` of a running trial, read as it grows (bounded, regular files only)."""

    def __init__(self, root: Path):
        self._root = Path(root)
        self._path: str | None = None
        self._offset = 0
        self._partial = b""
        self._folders = Subfolders()

    def poll(self) -> list[dict]:
        """The records appended since the last poll (complete JSON lines that are objects)."""
        path = self._path or self._find()
        if path is None:
            return []
        try:  # one stat while nothing new was written (most polls); never opens anything but a regular file
            info = os.stat(path)
        except OSError:
            return []
        if not stat.S_ISREG(info.st_mode) or info.st_size <= self._offset:
            return []
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO put there must never block
        except OSError:
            return []
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            data = os.pread(fd, MAX_RECORD_READ, self._offset)
        except OSError:
            return []
        finally:
            os.close(fd)
        self._offset += len(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        self._partial = self._partial[-MAX_RECORD_READ:]
        records = []
        for line in complete:
            try:
                record = bounded.parse_json(line, allow_nan=True)
            except bounded.BoundedReadError:
                continue
            if isinstance(record, dict):
                records.append(record)
        return records

    def _find(self) -> str | None:
        folders = [str(self._root), *self._folders.of(self._root, MAX_JOB_FOLDERS)]
        for folder in folders:
            candidate = os.path.join(folder, ROUND_RECORDS)
            try:
                if stat.S_ISREG(os.lstat(candidate).st_mode):
                    self._path = candidate
                    return self._path
            except OSError:
                continue
        return None


class ProgressPrinter:
    """Write a status line to a text stream (stderr) whenever it changes; `\\r` redraws on a TTY.

    Lines are handed to a writer thread (started with the first line), so a stream nobody reads (a full pipe)
    never blocks the caller: the output pump and the watchdogs go on, and lines beyond MAX_QUEUED are dropped
    (oldest first). `close()` waits at most CLOSE_SECONDS for the queued lines to be written.
    """

    MAX_QUEUED = 64
    CLOSE_SECONDS = 2.0

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_key: object = None
        self._lock = threading.Lock()
        self._open_line = False
        self.written_at = float("-inf")  # time.monotonic() of the last line handed over
        self._queue: deque[str] = deque(maxlen=self.MAX_QUEUED)
        self._ready = threading.Condition(self._lock)
        self._closing = False
        self._writer: threading.Thread | None = None

    def wants(self, key: object) -> bool:
        """Whether `show` with this key would write (on a TTY always: the elapsed time is redrawn)."""
        with self._lock:
            return self.tty or key != self._last_key

    def show(self, line: str, key: object) -> None:
        """Print `line`: on a TTY always (redraw in place), elsewhere only when `key` changed."""
        with self._lock:
            if self._closing or (not self.tty and key == self._last_key):
                return
            self._queue.append("\r\033[K" + line if self.tty else line + "\n")
            self._open_line = self.tty
            self._last_key = key
            self.written_at = time.monotonic()
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_queued, name="autofl-progress", daemon=True)
                self._writer.start()
            self._ready.notify()

    def _write_queued(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    return
                text = "".join(self._queue)
                self._queue.clear()
            try:
                self._stream.write(text)
                self._stream.flush()
            except Exception:  # a broken stream ends the progress line, never the trial
                return

    def close(self) -> None:
        """End a redrawn TTY line, write what is queued (waiting at most CLOSE_SECONDS) and stop the writer."""
        with self._lock:
            if self._open_line:
                self._queue.append("\n")
                self._open_line = False
            if self._queue and self._writer is None:
                self._writer = threading.Thread(target=self._write_queued, name="autofl-progress", daemon=True)
                self._writer.start()
            self._closing = True
            self._ready.notify()
        if self._writer is not None:
            self._writer.join(timeout=self.CLOSE_SECONDS)
