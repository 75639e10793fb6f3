"""The last step of every action: re-derive the best fields, write the state, and after a ledger change also
progress.png and the interim report. Run by the lifecycle shell only (actions never call it).

progress.png is drawn by the plot worker started with the trial (see `campaign/plot_worker.py`), else in this
process, with the same renderer either way. Usage::

    state = refresh(campaign, now, ledger_changed=True)
    stop_plot_worker(campaign)                       # in a `finally`: an action that ended without drawing
"""

from __future__ import annotations

from ..common import faults
from . import state as state_mod
from .report import build as report
from .store import metadata


def refresh(campaign, now: str, *, ledger_changed: bool) -> dict:
    """Re-derive the best fields, write the state; after a ledger change also the plot and the report."""
    best = campaign.best_row()
    digest = campaign.best().digest
    meta = metadata.with_best(campaign.meta, best_row=best, digest=digest, run_args=campaign.best_run_args(), now=now)
    if meta is not campaign.meta:
        campaign.meta = meta
        metadata.write(campaign.paths, meta)
    faults.checkpoint("refresh:metadata_written")
    state = state_mod.compute(campaign, now)
    state_mod.write(campaign, state, stamp=ledger_changed)
    faults.checkpoint("refresh:state_written")
    if ledger_changed or not campaign.paths.report.exists():
        plotted = render_plot(campaign, state) if ledger_changed or not campaign.paths.progress.exists() else True
        faults.checkpoint("refresh:plot_written")
        report.write(report.outputs_of(campaign.paths), report.build(campaign, state, plot_available=plotted))
    return state


def render_plot(campaign, state: dict) -> bool:
    """Refresh progress.png (noise band, batches, round curves) through the trial's plot worker when there is
    one, else in this process; False when no image could be drawn (a text summary only)."""
    worker, campaign.plot_worker = campaign.plot_worker, None
    options = report.plot_options(campaign, state)
    if worker is not None:
        request = {"results": str(campaign.paths.results), "output": str(campaign.paths.progress), **options}
        summary = worker.draw(request)
        if summary is not None:
            return summary["backend"] != "text"
    return report.render_plot(campaign, campaign.paths.progress, options)


def stop_plot_worker(campaign) -> None:
    """An action that ended without drawing (a rejection, an interrupt) ends its plot worker."""
    worker, campaign.plot_worker = getattr(campaign, "plot_worker", None), None
    if worker is not None:
        worker.stop()
