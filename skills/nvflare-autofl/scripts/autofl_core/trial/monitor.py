"""The hooks that watch one running trial: watchdog deadlines, live progress, result paths it prints, pruning.

Usage (`execute` hands the hooks to `processes.run_process`):
    monitor = Monitor(spec, root, time.monotonic())   # spec: the trial's execute.TrialSpec
    ... on_line=monitor.on_line, tick=monitor.tick, tick_interval=monitor.interval, wake=monitor.wake,
        due=monitor.due ...
    monitor.close()   # the final progress line; then monitor.printed and monitor.pruned
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from . import progress, resultdir, watchdog

TICK_SECONDS = 2.0  # log files and round records are read this often (a wake-up costs ~0.1 ms of CPU here)
TTY_TICK_SECONDS = 1.0  # on a terminal the progress line redraws its elapsed time every second
LIVE_GAP_SECONDS = 1.0  # the output thread prints a changed progress state at most this often
MAX_PRINTED_LINES = 32  # result-path lines remembered from the output (the last one inside the root wins)


class Monitor:
    """Per-line and per-tick hooks: watchdog, live progress, printed result paths.

    Lines arrive from the output thread: a stall sets `wake` (the supervisor ends the trial at once) and a changed
    progress state is printed right away (at most one line a second; the tick prints what changed since). The
    tick (every `TICK_SECONDS`; every second on a terminal, which redraws the elapsed time) reads the simulator's
    log files and round records; `due` tells the supervisor when a watchdog deadline falls between ticks.
    """

    def __init__(self, spec, root: Path, started: float):  # spec: an execute.TrialSpec (execute imports this module)
        self.started = started
        self.wake = threading.Event()
        self.watchdog = watchdog.Watchdog(
            started=started, total_timeout=spec.timeout, no_progress_timeout=spec.no_progress_timeout
        )
        self.logs = watchdog.LogWatcher(root, interval=TICK_SECONDS)
        self.printed: deque[str] = deque(maxlen=MAX_PRINTED_LINES)  # bounded: a job may print this endlessly
        metric = spec.metric_order[0] if spec.metric_order else None
        self.tracker = progress.ProgressTracker(
            spec.trial_name,
            num_rounds=spec.num_rounds,
            metric=metric,
            mode=spec.mode,
            root=root,
            measured_after=spec.score_measured_after,
        )
        self.printer = progress.ProgressPrinter(spec.progress_stream) if spec.progress_stream else None
        self.interval = TTY_TICK_SECONDS if self.printer and self.printer.tty else TICK_SECONDS
        self.live = bool(self.printer and not self.printer.tty)  # print changes from the output thread
        self.note: tuple[int, str] | None = None
        self.judge = spec.round_judge
        self.pruned: str | None = None  # the judge's reason, once it stopped the trial

    def on_line(self, line: str) -> None:
        now = time.monotonic()
        if self.watchdog.observe(line, now):
            self.wake.set()
        self.tracker.feed(line)
        if resultdir.printed_paths([line]):
            self.printed.append(line)
        if self.live and now - self.printer.written_at >= LIVE_GAP_SECONDS:  # as many lines as one a second
            try:
                self._show(self.tracker.state_key(refresh=False), now)
            except Exception:  # a broken stream must not stop the watchdog's lines; the tick still prints
                self.live = False

    def tick(self, now: float) -> str | None:
        for line in self.logs.poll(now):
            self.watchdog.observe(line, now)
            self.tracker.feed(line)
        if self.printer:
            self.note = self.watchdog.waiting(now)  # a quiet trial says what it waits for
            self._show(self.tracker.state_key(), now)  # reads the round records appended since the last tick
        stop = self.watchdog.check(now)
        if stop is None and self.judge is not None:
            self.pruned = stop = self.judge(self.tracker.read_curve())
        return stop

    def due(self) -> float | None:
        return self.watchdog.next_deadline()

    def _show(self, key: tuple, now: float) -> None:
        note = self.note  # (every WAIT_NOTE_SECONDS of silence, the note), set by the tick
        key = (*key, note[0]) if note else key
        if self.printer.wants(key):  # the line is built only when it will be written
            line = self.tracker.render(now - self.started, refresh=False)
            self.printer.show(f"{line} | {note[1]}" if note else line, key)

    def close(self) -> None:
        if self.printer:
            self.printer.show(self.tracker.render(time.monotonic() - self.started), ("final",))
            self.printer.close()
