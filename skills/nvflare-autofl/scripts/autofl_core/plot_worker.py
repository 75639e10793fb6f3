"""A short-lived process that draws progress.png for the runner: it imports the plotting library while a trial
runs (on the other core, outside the runner's process and its GIL), then renders once when asked.

Protocol (one JSON object per line): the worker prints `{"ready": backend}` (matplotlib, pillow or null) as soon
as the library is imported; the runner then writes one request `{"results", "output", "metric", "mode", "band"}`
and the worker answers `{"backend": ...}` (or `{"error": ...}`) after writing the image atomically. An empty
stdin (the runner gave up) ends it without drawing. Run by path: `python plot_worker.py`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True


def _load_package():
    """Load this folder as the package `autofl_core` by file path (never from site-packages)."""
    if "autofl_core" in sys.modules:
        return sys.modules["autofl_core"]
    folder = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location(
        "autofl_core", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["autofl_core"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    _load_package()
    from autofl_core import ledger, plot

    backend = plot.warm_up()
    if backend == "matplotlib":
        plot.prime()
    print(json.dumps({"ready": backend}), flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    try:
        request = json.loads(line)
        rows = ledger.read_rows(request["results"])
        summary = plot.render(
            rows, request["output"], metric=request["metric"], mode=request["mode"], band=request.get("band")
        )
        print(json.dumps({"backend": summary["backend"]}), flush=True)
    except Exception as error:  # noqa: BLE001 - the runner falls back to drawing in-process
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
