"""What an evaluate, record or replicate did, in the envelope: the candidate's score, the best after the decision,
the gain over the best it was compared with (at ledger precision) and the noise verdict when one is known.

Take `compared_with(campaign)` before finalizing (the best and the noise band the decision used), then
`outcome(campaign, compared, score=...)` after it. Usage::

    compared = compared_with(campaign)
    finalize.finalize(campaign, manifest, status=status, ...)
    extras.update(outcome(campaign, compared, score=manifest.result.score, name="lr-x2"))
    # {"score": 0.77, "best_score": 0.77, "best_candidate": "lr-x2", "compared_with": "baseline",
    #  "compared_score": 0.75, "delta": 0.02, "noise_verdict": None, "sites": {"site-1": 0.79, "site-2": 0.75}}
"""

from __future__ import annotations

from dataclasses import dataclass

from ..campaign import gains
from ..campaign import vocabulary as v
from ..campaign.compare import improvement
from . import noise
from .report import curves


@dataclass(frozen=True)
class Compared:
    """The best a result is judged against, and what its noise verdict rests on."""

    name: str | None
    score: float | None
    band: float | None
    metric: str | None
    resolution: float | None


def compared_with(campaign) -> Compared:
    best = campaign.best_row()
    known = noise.facts(campaign)
    return Compared(
        name=best.name if best else None,
        score=v.bar_to_beat(campaign.rows(), campaign.settings.mode),  # the best's mean once replicates exist
        band=gains.band(noise.latest_measured(campaign)),
        metric=campaign.settings.metric,
        resolution=known["metric_resolution"],
    )


def outcome(campaign, compared: Compared, *, score: float | None, name: str | None = None) -> dict:
    """The envelope fields of one finalized result (`campaign` re-read after the decision); `sites` is each site's
    value in the final round of the run called `name`, from its round records ({} without them)."""
    best = campaign.best_row()
    delta = improvement(score, compared.score, campaign.settings.mode)  # direction-adjusted, at ledger precision
    return {
        "score": score,
        "best_score": best.score if best else None,
        "best_candidate": best.name if best else None,
        "compared_with": compared.name,
        "compared_score": compared.score,
        "delta": delta,
        "noise_verdict": gains.verdict(
            delta, compared.band, metric=compared.metric, reference=compared.score, resolution=compared.resolution
        ),
        "sites": curves.sites_of_run(campaign, name),
    }
