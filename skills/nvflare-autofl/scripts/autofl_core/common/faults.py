"""Test-only fault injection at named points of the lifecycle, so crash-safety tests hit exact instants.

`AUTOFL_FAULT_AT=<point>[:<fault>]` makes `checkpoint(<point>)` deliver the fault: SIGKILL (default), SIGTERM or
SIGINT to the runner itself, or ENOSPC (an OSError as from a full disk). Every atomic write is also a point,
`write:<file name>` (e.g. `write:results.tsv:ENOSPC`). Nothing else reads the variable, and a trial's child
never sees it (its environment is an allowlist). Usage: `faults.checkpoint("finalize:staged")`.
"""

from __future__ import annotations

import errno
import os
import signal
import time

VARIABLE = "AUTOFL_FAULT_AT"
POINTS = (
    "evaluate:validated",
    "evaluate:patch_written",
    "evaluate:manifest_running",
    "evaluate:applied_partially",
    "evaluate:applied",
    "evaluate:reimported",
    "trial:marker_written",
    "trial:child_started",
    "trial:child_finished",
    "finalize:staged",
    "finalize:journal_written",
    "finalize:marker_cleared",
    "finalize:swap_parked",
    "finalize:swapped",
    "finalize:installed_recorded",
    "finalize:workspace_restored",
    "finalize:contract_updated",
    "finalize:manifest_written",
    "finalize:ledger_appended",
    "finalize:journal_removed",
    "refresh:metadata_written",
    "refresh:state_written",
    "refresh:plot_written",
    "refresh:report_json_written",
)


def checkpoint(point: str) -> None:
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    name, fault = spec.rsplit(":", 1) if spec.count(":") == 2 else (spec, "")  # points contain one ":"
    if name != point:
        return
    if fault == "ENOSPC":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), point)
    os.kill(os.getpid(), getattr(signal, fault or "SIGKILL"))
    time.sleep(10)  # a handled signal raises in here; SIGKILL never returns
