"""Seal one trial: run a command in its own user, mount, PID (and network) namespaces on a private view of the job.

Candidate code is untrusted: an agent optimizing a number wrote it. This launcher is the trial's first program.
It reads a plan (JSON, written by the runner into the trial's private folder) and, on Linux:

1. unshares a user namespace (mapping the caller's own uid/gid), a mount namespace, a PID namespace and, unless
   the plan allows the network, a network namespace with only loopback up;
2. forks the namespace's init (PID 1), which mounts a fresh /proc (the runner and every other host process are
   invisible), lays the job's view over the workspace path (an overlay: the candidate's staged files over the
   live workspace, with every write going to a private upper folder), hides the runner's own folders, lays
   write-discarding overlays over the temp folder and HOME, maps literal simulator paths and the trial's
   writable folders onto private folders, makes every other mount read-only, drops every capability, and
   forks the command;
3. when the command ends, init ends every process left in the namespace (a double-forked `setsid` daemon
   included) and exits with the command's status; the launcher exits with the same status.

4. with `limits` in the plan, caps the trial's tasks with a pids cgroup where the host lets it create one
   (before the namespaces), sizes the temp-folder tmpfs mounts to the disk limit, and lets PID 1 watch the
   namespace (every `WATCH_SECONDS`: resident anonymous memory and tasks of its processes; every
   `DISK_SECONDS`: the writable folders and the temp mounts). A limit crossed ends every process of the
   namespace at once; what was crossed, by whom, goes to `limits.reason_file` (JSON) for the runner.

Each protection is attempted on its own and written to the plan's status file (`{"protections": {...},
"missing": [...]}`), so the runner can say exactly which ones were missing. A protection the plan requires that
fails stops the trial before the command runs (exit 126). Standard library only; run it with `python -I`.

Usage:
    python -I sandbox/__main__.py --plan PLAN.json -- python job.py ...
    python -I sandbox/__main__.py --probe [SCRATCH] # prints the status JSON of a dry run; exit 0 when fully sealed

Plan keys: status_file, cwd, network ("isolated" | "allowed"), required [protection names],
view {workspace, stage, upper, work, hide[]}, ephemeral [{path, scratch}], writable [paths], map [{path, upper, work}],
limits {memory, disk, processes (None: none), reason_file, cgroup (a name), disk_paths [{path, label}]}.

`-I` puts no folder on sys.path for this file. The package is loaded from this file's folder by location, never
through sys.path, and every module of it is loaded before the first namespace or mount (nothing is imported
later); once loaded, its modules leave sys.modules. The command is exec'd, a program of its own: a job.py
importing a module named like one of these (`sandbox`, `sealing`, `main`) gets its own.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

PACKAGE = "sandbox"


def _load_main():
    """The package's `main` module, loaded from this file's folder; no module of the package stays in sys.modules."""
    folder = os.path.dirname(os.path.abspath(__file__))
    init = os.path.join(folder, "__init__.py")
    spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[folder])
    sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(sys.modules[PACKAGE])
        return importlib.import_module(f"{PACKAGE}.main")
    finally:
        for name in [name for name in sys.modules if name.partition(".")[0] == PACKAGE]:
            del sys.modules[name]


if __name__ == "__main__":
    sys.exit(_load_main().main(sys.argv[1:]))
