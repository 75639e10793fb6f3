"""Pruning in this campaign: the round judge a candidate's trial gets (`campaign/prune` over the best's curves).

Opt-in (`initialize --prune`, the persisted `prune` setting). Only candidates are judged, never the baseline or
replicates. The reference curves are read once, before the trial starts: the best's per-round global metric
(the round records copied with its run, `autofl_runs/<best>/simulation/`) and those of the best's replicates;
the margin comes from the noise band gains are judged by (`noise.latest_measured`), conservative when nothing
was measured. A best without round records (e.g. recorded from an external run) prunes nothing. Usage::

    trial.round_judge = judge_for(campaign, kind="candidate")   # None when pruning is off or has no reference
    status_fields(campaign)                                     # {"pruning": {...}} for the status envelope
"""

from __future__ import annotations

from pathlib import Path

from ..campaign import gains, prune
from ..campaign import vocabulary as v
from ..campaign.ledger import LedgerRow
from . import noise
from .store import contract

CANDIDATE = "candidate"


def judge_for(campaign, kind: str | None):
    """The round judge of a trial of `kind`, or None (pruning off, not a candidate, or no reference curve)."""
    if kind != CANDIDATE or not campaign.settings.prune:
        return None
    best = campaign.best_row()
    total = contract.num_rounds(campaign.config)
    if best is None or not total:
        return None
    metric = (list((campaign.config.get("objective") or {}).get("metric_extraction_order") or []) or [None])[0]
    metric = metric or campaign.settings.metric  # the name the trial's own round records are read by
    best_curve = curve_of(campaign, best, metric)
    if not best_curve:
        return None
    replicates = [
        curve_of(campaign, row, metric)
        for row in campaign.rows()
        if row.status == v.REPLICATE and row.score is not None and row.base_candidate == best.name
    ]
    mode, band = campaign.settings.mode, gains.band(noise.latest_measured(campaign))
    replicates = [item for item in replicates if item]

    def judge(curve: dict[int, float]) -> str | None:
        decision = prune.decide(curve, best_curve, replicates, mode=mode, band=band, total_rounds=total)
        return decision.reason if decision.prune else None

    return judge


def curve_of(campaign, row: LedgerRow, metric: str) -> dict[int, float]:
    """The per-round global metric a ledger row's run recorded ({} without a run folder or round records)."""
    if not row.artifacts:
        return {}
    from ..trial import progress  # only when a trial is about to run: status and prepare never load trial/

    folder = campaign.paths.resolve(row.artifacts)
    return progress.read_curve(Path(folder) / "simulation", metric)


def status_fields(campaign) -> dict:
    """What `status` shows of the setting: on or off, and the rule's terms."""
    rule = prune.Rule()
    return {
        "pruning": {
            "enabled": bool(campaign.settings.prune),
            "k": rule.k,
            "min_fraction": rule.min_fraction,
            "margin": (
                f"{rule.noise_factor:g} x the noise band (at least {rule.min_relative:.0%} of the best's value at "
                f"that round); {rule.conservative_relative:.0%} of it while no noise was measured"
            ),
        }
    }
