"""The report's `score` section: where the campaign's score comes from, and measured vs reported per trial.

With a frozen evaluator every scored trial shows the measured value (the score) beside the job's own reported
one, and the trials whose reported value diverged (`metric_divergence`). Without one, the section says the score
is the clients' own report. Usage::

    data["score"] = section(campaign, rows)        # JSON-ready; markdown.render shows it as "Score"
"""

from __future__ import annotations

from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from .. import frozen_eval
from ..store import frozen


def section(campaign, rows: list[LedgerRow]) -> dict:
    found = frozen.section(campaign.config)
    trials = []
    if found:
        for row in rows:
            if row.status == v.LITERATURE or row.score is None:
                continue
            record = frozen_eval.recorded(campaign, row.name) or {}
            trials.append(
                {
                    "name": row.name,
                    "status": row.status,
                    "measured": row.score,
                    "reported": record.get("reported_score"),
                    "metric_divergence": record.get("metric_divergence"),
                    "divergence_text": frozen_eval.divergence_text(record["metric_divergence"])
                    if record.get("metric_divergence")
                    else None,
                }
            )
    return {
        "provenance": frozen_eval.provenance(campaign),
        "evaluator": found["script"] if found else None,
        "frozen_files": sorted(found.get("frozen") or {}) if found else [],
        "trials": trials,
    }
