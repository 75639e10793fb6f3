"""Recover what a killed runner left behind, before any lifecycle action does its own work.

Runs under the lock, so nothing found here is still owned by a live runner:
1. an interrupted finalize (journal present) is finished (`finalize.replay`); otherwise a half-done snapshot
   swap is undone;
2. an orphaned trial (`running_trial.json` present; a batch's lists each of its trials) has its whole tree terminated by its token (the child
   runs in its own session and outlives the runner) and its temp folder removed, only when that folder is one
   the runner makes (`own_trial_folder`: never a folder a hand-edited marker points at);
3. a candidate left `running` (killed while applied or evaluating) is taken out of the workspace (best
   source restored, its created files removed) and returned to `prepared`; it does not count as an attempt
   (every candidate of a killed batch that was not finalized yet).
Usage: `extras = recover(campaign, now)` -> {"recovered_interrupted_evaluation": "<id>"} or {}.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from ..campaign import vocabulary as v
from ..common import bounded, trees
from . import finalize
from .store import manifests, snapshots
from .store.paths import TRIAL_TEMP_PREFIX

TOKEN_RE = re.compile(r"[0-9a-f]{32}")  # secrets.token_hex(16), as campaign_trial writes it
TRIAL_FOLDER_PREFIX = "autofl-"  # the folder trial/execute.run_trial makes inside the temp folder


def recover(campaign, now: str) -> dict:
    paths = campaign.paths
    finished = finalize.replay(campaign)
    if finished is None:
        snapshots.repair(paths)
    _end_orphaned_trial(paths)
    recovered = None
    for manifest in campaign.manifests():
        if manifest.status != v.RUNNING:
            continue
        snapshots.restore_workspace(
            paths, campaign.best(), remove=manifest.created_files, candidate=manifest.candidate_id
        )
        reset = manifest.replace(status=v.PREPARED, updated_at=now).dropping("trial")
        manifests.write(paths, reset)
        recovered = manifest.candidate_id
    return {"recovered_interrupted_evaluation": recovered or finished} if recovered or finished else {}


def _end_orphaned_trial(paths) -> None:
    marker = paths.trial_marker
    try:
        record = bounded.read_json(marker)
    except bounded.BoundedReadError:
        record = {}
    if record is None:
        return
    for entry in marker_trials(record):
        token = entry.get("token")
        if isinstance(token, str) and TOKEN_RE.fullmatch(token):
            from ..trial import childenv, processes  # only when a runner died mid-trial

            survivors = processes.terminate_tree(None, (childenv.TOKEN_VAR, token))
            if survivors:
                print(f"autofl: processes of an orphaned trial survived termination: {survivors}", file=sys.stderr)
        temp_dir = own_trial_folder(entry.get("temp_dir"))
        if temp_dir is not None:
            from ..trial import seal

            try:
                names = os.listdir(temp_dir)
            except OSError:
                names = []
            for name in names:  # each trial folder names its pids cgroup (empty once its processes ended)
                seal.release_limits(temp_dir / name)
        if temp_dir is not None and not trees.remove_tree(temp_dir):
            print(f"autofl: could not remove the orphaned trial folder {temp_dir}; remove it by hand", file=sys.stderr)
    marker.unlink(missing_ok=True)


def marker_trials(record) -> list[dict]:
    """The trials a marker names: one (a single trial's marker) or each entry of a batch's `trials` list."""
    if not isinstance(record, dict):
        return []
    trials = record.get("trials")
    if isinstance(trials, list):
        return [entry for entry in trials if isinstance(entry, dict)]
    return [record]


def own_trial_folder(recorded) -> Path | None:
    """The marker's temp folder, only when it is one the runner makes: a direct child of the system temp folder
    named `afl-*`, a real folder (never a link) of this user, holding nothing but trial folders (`autofl-*`).
    Anything else a marker names (a hand edit, a copied workspace) is left alone."""
    if not isinstance(recorded, str) or not os.path.isabs(recorded):
        return None
    path = Path(os.path.normpath(recorded))
    root = os.path.realpath(tempfile.gettempdir())
    if not path.name.startswith(TRIAL_TEMP_PREFIX) or os.path.realpath(path.parent) != root:
        return None
    try:
        info = os.lstat(path)
        names = os.listdir(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return None
    return path if all(name.startswith(TRIAL_FOLDER_PREFIX) for name in names) else None
