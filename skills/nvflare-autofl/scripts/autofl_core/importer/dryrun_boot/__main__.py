"""Run job.py up to the point where NVFLARE would start training, and record what it built: the boot's program.

Run by path inside the trial sandbox, isolated, with the job's folder as cwd (requests and answers: `serve`):
    python -I .../dryrun_boot/__main__.py --serve JOB.py

`-I` puts no folder on sys.path for this file. The package is loaded from this file's folder by location, never
through sys.path, so neither job.py's folder nor the importer's other modules can stand in for one of its modules;
once loaded, its modules leave sys.modules, so job.py importing a module of its own named like one of them
(`dryrun_boot`, `records`) gets its own. Standard library and nvflare only; nothing here trains, and nothing is
written outside the temp folder and the runs' records.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

PACKAGE = "dryrun_boot"


def _load_serve():
    """The package's `serve` module, loaded from this file's folder; no module of the package stays in sys.modules."""
    folder = os.path.dirname(os.path.abspath(__file__))
    init = os.path.join(folder, "__init__.py")
    spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[folder])
    sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(sys.modules[PACKAGE])
        return importlib.import_module(f"{PACKAGE}.serve")
    finally:
        for name in [name for name in sys.modules if name.partition(".")[0] == PACKAGE]:
            del sys.modules[name]


if __name__ == "__main__":
    sys.exit(_load_serve().main(sys.argv[1:]))
