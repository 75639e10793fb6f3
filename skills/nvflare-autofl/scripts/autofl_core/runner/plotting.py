"""progress.png for the runner: drawn by a worker process warmed up during the trial, else in this process.

Importing matplotlib costs about a second of CPU. Done in the runner (even in a thread) it either lengthens
the time after the trial or competes with the runner's supervision through the GIL; a worker process started
with the trial (`autofl_core/plot_worker.py`) imports it on the other core instead, and renders while the
runner writes the report. Usage::

    worker = PlotWorker.start()                      # when a trial starts
    drawn = render(campaign, state, worker)          # after the ledger changed: True when an image was drawn
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from . import noise

WORKER = Path(__file__).resolve().parents[1] / "plot_worker.py"
REPLY_TIMEOUT = 60.0


class PlotWorker:
    """Handle on one worker process; every failure ends in `None` so the caller draws in-process instead."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.ready: str | None | bool = False  # False: not known yet

    @classmethod
    def start(cls) -> PlotWorker | None:
        try:
            process = subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                close_fds=True,
            )
        except OSError:
            return None
        return cls(process)

    def draw(self, request: dict) -> str | None:
        """Send the request and wait for the image; the backend that drew it, or None (caller falls back)."""
        reply = self._exchange(request)
        if not isinstance(reply, dict) or "backend" not in reply:
            return None
        return reply["backend"]

    def stop(self) -> None:
        """End the worker without drawing (idempotent)."""
        self._close_input()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _exchange(self, request: dict) -> dict | None:
        result: list = []

        def talk() -> None:
            try:
                ready = json.loads(self.process.stdout.readline() or "null")
                if not isinstance(ready, dict):
                    return
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
                result.append(json.loads(self.process.stdout.readline() or "null"))
            except (OSError, ValueError):
                pass

        thread = threading.Thread(target=talk, daemon=True)
        thread.start()
        thread.join(REPLY_TIMEOUT)
        if result:  # the image is written; the worker's own exit (interpreter teardown) need not be waited for
            self._close_input()
            threading.Thread(target=self.process.wait, name="autofl-plot-reaper", daemon=True).start()
        else:
            self.stop()
        return result[0] if result else None

    def _close_input(self) -> None:
        try:
            if self.process.stdin and not self.process.stdin.closed:
                self.process.stdin.close()
        except OSError:
            pass


def render(campaign, state: dict, worker: PlotWorker | None) -> bool:
    """Refresh progress.png (with the noise band) through `worker` when there is one; False when no image
    could be drawn (a text note only)."""
    band = noise.band(state["noise"])
    if worker is not None:
        request = {
            "results": str(campaign.paths.results),
            "output": str(campaign.paths.progress),
            "metric": campaign.settings["metric"],
            "mode": campaign.settings["mode"],
            "band": band,
        }
        backend = worker.draw(request)
        if backend is not None:
            return backend != "text"
    from .. import plot

    summary = plot.render(
        campaign.rows(),
        campaign.paths.progress,
        metric=campaign.settings["metric"],
        mode=campaign.settings["mode"],
        band=band,
    )
    return summary["backend"] != "text"
