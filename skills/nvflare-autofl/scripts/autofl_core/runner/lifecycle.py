"""The shell around every action: lock, recovery, settings audit, the action, then state/plot/report refresh.

`run(action, options)` returns (exit code, envelope dict). Rejections raise CampaignError *before* anything
is written (settings changes are persisted only after the action succeeded). Usage::

    code, envelope = run("status", options)
"""

from __future__ import annotations

import importlib
import os
import stat
from datetime import datetime, timezone

from .. import faults
from . import metadata, plotting, recovery, report
from . import settings as settings_mod
from . import state as state_mod
from .campaign import Campaign
from .errors import CampaignError
from .lock import workspace_lock
from .paths import CampaignPaths

# action -> (module, function); modules load lazily so cheap actions never import the trial machinery
ACTIONS = {
    "initialize": ("act_initialize", "existing"),
    "prepare": ("act_prepare", "run"),
    "evaluate": ("act_evaluate", "run"),
    "abandon": ("act_abandon", "run"),
    "record": ("act_record", "run"),
    "suggest": ("act_suggest", "run"),
    "status": ("act_status", "run"),
    "replicate": ("act_replicate", "run"),
}
READ_ONLY_ACTIONS = {"report": ("act_report", "run")}  # own lock and refusal rules; no recovery, no state write


def now_text() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(action: str, options) -> tuple[int, dict]:
    given = settings_mod.requested_settings(options)
    probe = CampaignPaths.for_job(options.job, {})
    check_job_file(probe.job)
    if not metadata.exists(probe):
        if action != "initialize":
            raise CampaignError(f"no Auto-FL campaign in {probe.workspace}: run initialize first")
        return _action("initialize", "new_campaign")(options, given, now_text())
    if action in READ_ONLY_ACTIONS:
        return _action(*READ_ONLY_ACTIONS[action])(options, given, now_text())
    with workspace_lock(probe.lock):
        campaign = Campaign.open(options.job)
        now = now_text()
        extras = recovery.recover(campaign, now)
        campaign.best()  # a damaged best snapshot stops every action (exit 2 naming it), status included
        merged = settings_mod.merge_settings(
            campaign.settings,
            given,
            action=action,
            now=now,
            approved=bool(getattr(options, "confirm_user_approved_cap_change", False)),
            cap_history=campaign.meta["cap_changes"],
        )
        stored = campaign.meta
        campaign.meta = {**stored, "settings": merged.settings}
        try:
            result = _action(*ACTIONS[action])(campaign, options, now)
            if merged.changed:
                campaign.meta = {
                    **campaign.meta,
                    "updated_at": now,
                    "setting_changes": stored["setting_changes"] + merged.setting_changes,
                    "cap_changes": stored["cap_changes"] + ([merged.cap_change] if merged.cap_change else []),
                }
                metadata.write(campaign.paths, campaign.meta)
                result.extras["settings_changed"] = merged.changed
            state = refresh(campaign, now, ledger_changed=result.ledger_changed)
        finally:
            stop_plot_worker(campaign)
    return result.exit_code, state_mod.envelope(campaign.paths, state, {**extras, **result.extras})


def check_job_file(job) -> None:
    try:
        info = os.stat(job)
    except OSError:
        raise CampaignError(f"{job} does not exist; pass the path of an existing NVFLARE job.py") from None
    if not stat.S_ISREG(info.st_mode):
        raise CampaignError(f"{job} is not a file; pass the path of an existing NVFLARE job.py")


def _action(module: str, function: str):
    if not module.startswith("act_"):
        module = f"act_{module}"
    return getattr(importlib.import_module(f".{module}", __package__), function)


def refresh(campaign, now: str, *, ledger_changed: bool) -> dict:
    """Re-derive the best fields, write the state; after a ledger change also the plot and the report.

    Every writer drops the campaign's cached reads itself (`campaign.forget()`), so nothing is read twice here.
    """
    best = campaign.best_row()
    digest = campaign.best().digest
    meta = metadata.with_best(campaign.meta, best_row=best, digest=digest, run_args=campaign.best_run_args(), now=now)
    if meta is not campaign.meta:
        campaign.meta = meta
        metadata.write(campaign.paths, meta)
    faults.checkpoint("refresh:metadata_written")
    state = state_mod.compute(campaign, now)
    state_mod.write(campaign, state)
    faults.checkpoint("refresh:state_written")
    if ledger_changed or not campaign.paths.report.exists():
        plotted = render_plot(campaign, state) if ledger_changed or not campaign.paths.progress.exists() else True
        faults.checkpoint("refresh:plot_written")
        report.write(report.outputs_of(campaign.paths), report.build(campaign, state, plot_available=plotted))
    return state


def render_plot(campaign, state: dict) -> bool:
    """Refresh progress.png (with the noise band); False when no image could be drawn (text note only)."""
    worker, campaign.plot_worker = campaign.plot_worker, None
    return plotting.render(campaign, state, worker)


def stop_plot_worker(campaign) -> None:
    """An action that ended without drawing (a rejection, an interrupt) ends its plot worker."""
    worker, campaign.plot_worker = getattr(campaign, "plot_worker", None), None
    if worker is not None:
        worker.stop()
