"""Recover what a killed runner left behind, before any lifecycle action does its own work.

Runs under the lock, so nothing found here is still owned by a live runner:
1. an interrupted finalize (journal present) is finished (`finalize.replay`); otherwise a half-done snapshot
   swap is undone;
2. an orphaned trial (`running_trial.json` present) has its whole tree terminated by its token (the child
   runs in its own session and outlives the runner) and its temp folder removed;
3. a candidate left `running` (killed while applied or evaluating) is taken out of the workspace (best
   source restored, its created files removed) and returned to `prepared`; it does not count as an attempt.
Usage: `extras = recover(campaign, now)` -> {"recovered_interrupted_evaluation": "<id>"} or {}.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ..campaign import vocabulary as v
from ..common import atomic, bounded
from . import finalize
from .store import snapshots
from .store.paths import TRIAL_TEMP_PREFIX


def recover(campaign, now: str) -> dict:
    paths = campaign.paths
    finished = finalize.replay(campaign)
    if finished is None:
        snapshots.repair(paths)
    _end_orphaned_trial(paths)
    recovered = None
    for manifest in campaign.manifests():
        if manifest["status"] != v.RUNNING:
            continue
        campaign.forget()
        applied = manifest.get("workspace_applied", True)  # a sealed trial never wrote the workspace
        snapshots.restore_workspace(paths, campaign.best(), remove=manifest["created_files"] if applied else [])
        reset = dict(manifest, status=v.PREPARED, updated_at=now)
        reset.pop("trial", None)
        atomic.write_json(paths.manifest(manifest["candidate_id"]), reset)
        recovered = manifest["candidate_id"]
    campaign.forget()
    extras = {}
    if recovered or finished:
        extras["recovered_interrupted_evaluation"] = recovered or finished
    return extras


def _end_orphaned_trial(paths) -> None:
    marker = paths.trial_marker
    try:
        record = bounded.read_json(marker)
    except bounded.BoundedReadError:
        record = {}
    if record is None:
        return
    token = record.get("token")
    if isinstance(token, str) and token:
        from ..trial import childenv, processes  # only when a runner died mid-trial

        survivors = processes.terminate_tree(None, (childenv.TOKEN_VAR, token))
        if survivors:
            print(f"autofl: processes of an orphaned trial survived termination: {survivors}", file=sys.stderr)
    temp_dir = record.get("temp_dir")
    if isinstance(temp_dir, str) and Path(temp_dir).name.startswith(TRIAL_TEMP_PREFIX):
        shutil.rmtree(temp_dir, ignore_errors=True)
    marker.unlink(missing_ok=True)
