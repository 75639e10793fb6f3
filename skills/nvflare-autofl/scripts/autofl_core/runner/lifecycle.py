"""The shell around every action: lock, recovery, settings audit, the action, then the state/plot/report refresh.

`run(action, options)` returns (exit code, envelope dict). Rejections raise CampaignError *before* anything
is written (settings changes are persisted only after the action succeeded). A new campaign takes the same
path: `initialize` admits the job in memory first, then creates the campaign files under the lock, and its
first step (the baseline in simulation) runs inside the shell like any action. Usage::

    code, envelope = run("status", options)
"""

from __future__ import annotations

import functools
import importlib
import os
import stat
import tempfile
from pathlib import Path

from ..campaign import vocabulary as v
from ..common import stamps
from . import flag_scope, frozen_eval, frozen_submit, job_defaults, pointers, pruning, ready, recovery, refresh
from . import settings as settings_mod
from . import state as state_mod
from .open_campaign import Campaign
from .outcome import ActionResult, CampaignError
from .report import curves
from .store import manifests, metadata
from .store.lock import workspace_lock
from .store.paths import CampaignPaths

# action -> its module in runner/actions/ (loaded lazily, so cheap actions never import the trial machinery);
# status has none: the shell's own work (recovery, the state refresh, the pending list) is the whole action.
ACTIONS = {
    "initialize": "initialize",
    "prepare": "prepare",
    "evaluate": "evaluate",
    "abandon": "abandon",
    "record": "record",
    "suggest": "suggest",
    "status": None,
    "replicate": "replicate",
    "submit": "submit",
}
READ_ONLY_ACTIONS = ("report",)  # own lock and refusal rules; no recovery, no state write


def run(action: str, options) -> tuple[int, dict]:
    flag_scope.check(action, options)
    given = settings_mod.requested_settings(options)
    probe = CampaignPaths.for_job(options.job, {})
    check_job_file(probe.job)
    if not metadata.exists(probe):
        if action != "initialize":
            raise CampaignError(f"no Auto-FL campaign in {probe.workspace}: run initialize first")
        return _new_campaign(options, given)
    if action in READ_ONLY_ACTIONS:
        return _module(action).run(options, given, stamps.now_text())
    with workspace_lock(probe.lock):
        campaign = Campaign.open(options.job)
        module = ACTIONS[action]
        step = _module(module).run if module else _status
        if action == "submit":  # submit records through record's own path (actions never import each other)
            step = functools.partial(_module("submit").run, record=_module("record").run)
        return _shell(campaign, action, step, options, given, stamps.now_text())


def _new_campaign(options, given: dict) -> tuple[int, dict]:
    """initialize of a new workspace: admission in memory (a rejection writes nothing), then under the lock the
    campaign files, then the first step through the shell."""
    initialize = _module("initialize")
    now = stamps.now_text()
    campaign, files = initialize.admit(options, given, now)
    with workspace_lock(campaign.paths.lock):
        initialize.create(campaign, files)
        return _shell(campaign, "initialize", initialize.start, options, given, now)


def _shell(campaign, action: str, step, options, given: dict, now: str) -> tuple[int, dict]:
    """Recovery, settings audit, the action `step(campaign, options, now)`, then the refresh (lock held).

    The refresh is stamped with the time after the step (its trials ended and were decided), so the state's
    `updated_at` is when the latest action finished: the report's campaign wall time ends there.
    """
    extras = recovery.recover(campaign, now)
    campaign.best()  # a damaged best snapshot stops every action (exit 2 naming it), status included
    merged = settings_mod.merge_settings(
        campaign.meta["settings"],
        given,
        action=action,
        now=now,
        approved=bool(getattr(options, "confirm_user_approved_cap_change", False)),
        cap_history=campaign.meta["cap_changes"],
    )
    stored = campaign.meta
    campaign.meta = {**stored, "settings": merged.settings}
    try:
        result = step(campaign, options, now)
        if merged.changed:
            campaign.meta = {
                **campaign.meta,
                "updated_at": now,
                "setting_changes": stored["setting_changes"] + merged.setting_changes,
                "cap_changes": stored["cap_changes"] + ([merged.cap_change] if merged.cap_change else []),
            }
            metadata.write(campaign.paths, campaign.meta)
            result.extras["settings_changed"] = merged.changed
        state = refresh.refresh(campaign, stamps.now_text(), ledger_changed=result.ledger_changed)
    finally:
        refresh.stop_plot_worker(campaign)
    if action == "status" or state["final_response_allowed"]:  # where the best lives, when the user asks
        extras["best_lives"] = pointers.best_lives(campaign)
    document = state_mod.envelope(campaign.paths, state, {**extras, **result.extras})
    return result.exit_code, frozen_eval.with_provenance(campaign, action, document)


def check_job_file(job) -> None:
    try:
        info = os.stat(job)
    except OSError:
        raise CampaignError(f"{job} does not exist; pass the path of an existing NVFLARE job.py") from None
    if not stat.S_ISREG(info.st_mode):
        raise CampaignError(f"{job} is not a file; pass the path of an existing NVFLARE job.py")


def _status(campaign, options, now: str) -> ActionResult:
    """status: the shell's work (recovery, the refresh) plus the list of pending candidates, each with what it
    still needs (and, when ready for external execution, the folder to export it from)."""
    pending = manifests.in_preparation_order(campaign.pending())
    awaiting = set(frozen_submit.awaiting(campaign, [m.candidate_id for m in pending if m.status == v.READY]))
    listed = [
        {
            "candidate_id": m.candidate_id,
            "status": m.status,
            "base_candidate": m.base_candidate,
            "candidate_manifest": str(campaign.paths.manifest(m.candidate_id)),
            "run_args": list(m.run_args),
            "needs": frozen_submit.EVALUATION_NEEDED if m.candidate_id in awaiting else ready.needs(m),
            "export_from": str(ready.export_from(campaign.paths, m)) if m.status == v.READY else None,
            "job_argv": campaign.job_argv(m.effective_run_args) if m.status == v.READY else None,
        }
        for m in pending
    ]
    best = campaign.best_row()
    extras = {
        "pending": listed,
        **pruning.status_fields(campaign),
        "trial_limits": limits_shown(campaign.settings),
        "best_sites": curves.site_values(campaign, best) if best else {},
    }
    if getattr(options, "write_best_defaults", False):
        extras["job_defaults_written"] = job_defaults.write(campaign, state_mod.compute(campaign, now), now)
    return ActionResult(extras=extras)


def limits_shown(settings: settings_mod.CampaignSettings) -> dict:
    """Each per-trial limit of one trial alone: its value and whether the campaign set it or the machine did."""
    from ..common import trial_limits as limits

    resolved = settings_mod.limits_of(settings, slots=1, folder=Path(tempfile.gettempdir()))
    shown = {}
    for key, kind in settings_mod.LIMIT_KEYS.items():
        value = getattr(resolved, kind)
        source = "setting" if getattr(settings, key) else "machine default (divided among a batch's trials)"
        shown[kind] = {"value": value, "shown": limits.show(kind, value), "source": source}
    return shown


def _module(name: str):
    return importlib.import_module(f".actions.{name}", __package__)
