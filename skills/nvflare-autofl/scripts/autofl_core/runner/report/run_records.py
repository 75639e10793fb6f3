"""What the runs' own records say, for the report: each scored row's budget verification, the latest runner
trial's trial.json and its network, the campaign's wall time from its stamps (read-only; unreadable records read
as no evidence)."""

from __future__ import annotations

from pathlib import Path

from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from ...common import bounded, stamps
from ..outcome import CampaignError
from ..store import external


def trial_network(trial: dict) -> str | None:
    """How the latest trial could reach the network, from its trial.json's `network_isolation`: `isolated`,
    `allowed` (null there: isolation was not requested) or `unavailable: <why>`; None when the runner ran no trial,
    as in poc/prod."""
    value = trial.get("network_isolation", "")
    if value is None:
        return "allowed"
    return value if isinstance(value, str) and value else None


def latest_trial(rows: list[LedgerRow], campaign) -> dict:
    """The trial.json of the latest runner trial ({} without one, as in poc/prod, or when it cannot be read)."""
    for row in reversed(rows):
        if row.artifacts and _is_runner_trial(run := campaign.paths.resolve(row.artifacts), campaign):
            return bounded.read_json_or_none(run / "trial.json") or {}
    return {}


def _is_runner_trial(run: Path, campaign) -> bool:
    return run.parent == campaign.paths.output_root  # not an external run


def budgets(campaign, rows: list[LedgerRow]) -> dict[str, str | None]:
    """Per scored row, whether its fixed budget was verified from what ran: the manifest's `result.budget` for
    candidates, the external-run record for an external baseline, trial.json for the runner's baseline and
    replicate trials."""
    recorded = {m.candidate_id: m.result.budget for m in campaign.manifests()}
    found = {}
    for row in rows:
        if row.score is None:
            continue
        budget = recorded.get(row.name) if row.candidate_manifest else None
        if budget is None and row.status == v.BASELINE:  # an external baseline (record --baseline, submit)
            try:
                budget = (external.read(campaign.paths, row.name) or {}).get("budget")
            except CampaignError:  # the report is read-only: a damaged record reads as no evidence
                pass
        if budget is None and not row.candidate_manifest and row.artifacts:
            run = campaign.paths.resolve(row.artifacts)
            if _is_runner_trial(run, campaign):
                budget = (bounded.read_json_or_none(run / "trial.json") or {}).get("budget")
        found[row.name] = budget.get("status") if isinstance(budget, dict) else v.BUDGET_UNVERIFIED
    return found


def wall_time(campaign, state: dict) -> dict:
    """From the campaign's creation to its latest stamp: the state is stamped when each action's step finished
    (trials ended and decided), so the last action's own run time is inside; manifests and campaign.json carry
    action start times, which only matter for a state file older than them."""
    found = [campaign.meta.get("updated_at"), state.get("updated_at")]
    found += [m.updated_at for m in campaign.manifests()]
    start = stamps.parse(campaign.meta.get("created_at"))
    ends = [stamp for stamp in (stamps.parse(s) for s in found) if stamp is not None]
    if start is None or not ends:
        return {"started_at": campaign.meta.get("created_at"), "last_activity_at": None, "wall_time_seconds": None}
    end = max(ends)
    return {
        "started_at": campaign.meta["created_at"],
        "last_activity_at": stamps.text_of(end),
        "wall_time_seconds": max((end - start).total_seconds(), 0.0),
    }
