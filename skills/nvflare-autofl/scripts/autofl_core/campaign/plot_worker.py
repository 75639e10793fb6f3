"""The plot worker: a short-lived process that draws progress.png for the runner, and the runner's handle on it.

Importing matplotlib and drawing costs about 0.8 s of wall time. Done in the runner after the trial it lengthens
every `evaluate` past the overhead bar (P1); done in a thread during the trial it is runner CPU while the child
runs (P2). The worker, started with the trial (`PlotWorker.start()`), imports it on the other core instead. It draws
with the same `plot.render` as the runner, so the picture is the same whichever process drew it; when the worker
cannot answer, the runner draws in-process.

Protocol (one JSON object per line): the worker prints `{"ready": backend}` (matplotlib or null) as soon
as the library is imported; the runner then writes one request `{"results", "output", "metric", "mode", "band",
"batches", "curves"}` and the worker answers `{"backend": ..., "reason": ...}` (or `{"error": ...}`) after writing the image atomically. An empty
stdin (the runner gave up) ends it without drawing. The worker side runs by path: `python plot_worker.py`.
Usage (runner side)::

    worker = PlotWorker.start()                      # when a trial starts; None when it cannot start
    summary = worker.draw(request)                   # {"backend", "reason"} of plot.render, or None: draw in-process
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

WORKER = Path(__file__).resolve()
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

    def draw(self, request: dict) -> dict | None:
        """Send the request and wait for the image; `{"backend", "reason"}` of the render, or None (the caller
        draws in-process)."""
        reply = self._exchange(request)
        if not isinstance(reply, dict) or reply.get("backend") not in ("matplotlib", "text"):
            return None
        return {"backend": reply["backend"], "reason": reply.get("reason")}

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


def _load_package():
    """Load the folder above this one as the package `autofl_core` by file path (never from site-packages)."""
    if "autofl_core" in sys.modules:
        return sys.modules["autofl_core"]
    folder = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "autofl_core", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["autofl_core"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    _load_package()
    from autofl_core.campaign import ledger, plot

    print(json.dumps({"ready": plot.warm_up()}), flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    try:
        request = json.loads(line)
        rows = ledger.read_rows(request["results"])
        summary = plot.render(
            rows,
            request["output"],
            metric=request["metric"],
            mode=request["mode"],
            band=request.get("band"),
            batches=request.get("batches"),
            curves=request.get("curves"),
        )
        print(json.dumps({"backend": summary["backend"], "reason": summary["reason"]}), flush=True)
    except Exception as error:  # noqa: BLE001 - the runner falls back to drawing in-process
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    sys.exit(main())
