"""Live progress of a running trial on stderr: round k/N, elapsed time, last metric seen.

Parses the NVFLARE 2.9 shapes: `Round N started.` (0-based N; shown as N+1 of the budget's
num_rounds), `Aggregated k/n results`, `new best validation metric at round N: v` (negated
by NVFLARE when the key metric is minimized), `Finished FedAvg.`, and client prints such as
`site=site-1 round=0 accuracy=0.18`. Never writes to stdout.

Usage: tracker = ProgressTracker("baseline", num_rounds=3, metric="accuracy", mode="max")
       printer = ProgressPrinter(sys.stderr)
       tracker.feed(line)                                        # for every output/log line
       printer.show(tracker.render(elapsed), tracker.state_key())  # about once a second
"""

from __future__ import annotations

import re
import threading
from typing import TextIO

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
ROUND_STARTED_RE = re.compile(r"\bRound (\d+) started\.")
AGGREGATED_RE = re.compile(r"\bAggregated (\d+)/(\d+) results")
BEST_RE = re.compile(rf"new best validation metric at round (\d+): ({NUMBER})")
CLIENT_ROUND_RE = re.compile(r"\bround=(\d+)\b")
KEY_VALUE_RE = re.compile(rf"\b([A-Za-z_][A-Za-z0-9_.]*)\s*[=:]\s*({NUMBER})(?![\w.])")
NON_METRIC_KEYS = frozenset({"round", "site", "epoch", "step", "pid", "rank", "interval", "task_processed"})


class ProgressTracker:
    """State parsed from trial output; `feed` is safe to call from the output thread."""

    def __init__(self, label: str, *, num_rounds: int | None, metric: str | None, mode: str = "max"):
        self.label = label
        self.num_rounds = num_rounds
        self.metric = metric
        self.mode = mode
        self.round_index: int | None = None
        self.aggregated: tuple[int, int] | None = None
        self.last_metric: tuple[str, str] | None = None
        self.finished = False
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
        self._best(match.group(2))

    def _on_client(self, match: re.Match[str], line: str) -> None:
        self._at_round(int(match.group(1)))
        self._client_metric(line)

    def _at_round(self, index: int) -> None:
        if self.round_index is None or index > self.round_index:
            self.round_index = index

    def _best(self, text: str) -> None:
        name = self.metric or "best"
        value = float(text)
        if self.mode == "min":  # NVFLARE negates minimized key metrics in this log line
            value = -value
        self.last_metric = (f"best {name}", f"{value:.6g}")

    def _client_metric(self, line: str) -> None:
        for key, value in KEY_VALUE_RE.findall(line):
            if (self.metric and key == self.metric) or (not self.metric and key.lower() not in NON_METRIC_KEYS):
                self.last_metric = (key, f"{float(value):.6g}")
                return

    def state_key(self) -> tuple:
        """Changes exactly when the displayed state (apart from elapsed time) changes."""
        with self._lock:
            return (self.round_index, self.aggregated, self.last_metric, self.finished)

    def render(self, elapsed: float) -> str:
        """One status line, e.g. `[autofl baseline] round 2/3 (2/2 aggregated) | 0:14 | accuracy=0.915`."""
        with self._lock:
            parts = [f"[autofl {self.label}] {self._round_text()}"]
            parts.append(f"{int(elapsed) // 60}:{int(elapsed) % 60:02d} elapsed")
            if self.last_metric:
                parts.append(f"{self.last_metric[0]}={self.last_metric[1]}")
            return " | ".join(part for part in parts if part)

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


class ProgressPrinter:
    """Write a status line to a text stream (stderr) whenever it changes; `\\r` redraws on a TTY."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_key: object = None
        self._lock = threading.Lock()
        self._open_line = False

    def show(self, line: str, key: object) -> None:
        """Print `line`: on a TTY always (redraw in place), elsewhere only when `key` changed."""
        with self._lock:
            if not self._tty and key == self._last_key:
                return
            self._stream.write("\r\033[K" + line if self._tty else line + "\n")
            self._open_line = self._tty
            self._last_key = key
            self._stream.flush()

    def close(self) -> None:
        """End a redrawn TTY line so later stderr output starts on a fresh line."""
        with self._lock:
            if self._open_line:
                self._stream.write("\n")
                self._stream.flush()
                self._open_line = False
