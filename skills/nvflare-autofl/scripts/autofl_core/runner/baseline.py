"""Run the baseline trial (or a retry) and record its row: scored, unscored (exit 1) or a sandbox denial (75)."""

from __future__ import annotations

import re

from .. import ledger
from . import trials
from .errors import EXIT_OK, EXIT_SANDBOX, EXIT_UNSCORED

RETRY_RE = re.compile(r"baseline_retry_(\d+)")


def next_name(rows: list[dict]) -> str:
    """`baseline` for the first attempt, then `baseline_retry_N`."""
    used = [row["name"] for row in rows if row["name"] == "baseline" or RETRY_RE.fullmatch(row["name"])]
    return "baseline" if not used else f"baseline_retry_{len(used)}"


def run(campaign) -> tuple[int, str | None]:
    """Run the next baseline attempt; returns the exit code and how the trial's network was isolated."""
    paths = campaign.paths
    name = next_name(campaign.rows())
    result = trials.run(campaign, name=name, run_args=[], kind="baseline")
    status = {"success": "baseline", "crash": "baseline"}.get(result.outcome, "infrastructure_retry")
    row = {
        "status": status,
        "name": name,
        "score": result.score,
        "runtime_seconds": result.runtime_seconds,
        "diff_summary": "baseline: job.py as imported",
        "run_command": result.run_command,
        "artifacts": paths.rel(paths.run_dir(name)),
        "failure_reason": result.failure_reason,
        "metric_name": result.metric_name,
        "metric_source": result.metric_source,
        "metric_artifact": result.metric_artifact,
    }
    ledger.append_row(paths.results, row)
    trials.clear_marker(campaign)
    campaign.forget()
    network = trials.network_status(campaign, result)
    if result.outcome == "infrastructure_retry":
        return EXIT_SANDBOX, network
    return (EXIT_OK if result.score is not None else EXIT_UNSCORED), network
