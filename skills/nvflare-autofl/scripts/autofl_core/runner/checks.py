"""Checks several actions share, so no action needs another: which candidate an action works on, and whether
the campaign still accepts new work. Each raises CampaignError (nothing written) naming the fix. Usage::

    manifest = pick_pending(campaign, options.manifest, want="prepared")      # evaluate; record: ready ones
    require_open(state_mod.compute(campaign, now), "prepare")                 # stop file / final campaign
"""

from __future__ import annotations

from .outcome import CampaignError
from .store import manifests


def pick_pending(campaign, given: str | None, *, want: str) -> dict:
    """The manifest named by --manifest, or the single pending one; it must have status `want`."""
    paths = campaign.paths
    if given:
        manifest = manifests.read_path(paths, given)
    else:
        pending = campaign.pending()
        if not pending:
            raise CampaignError("there is no pending candidate; run prepare first")
        if len(pending) > 1:
            raise CampaignError("several candidates are pending; pass --manifest to pick one")
        manifest = pending[0]
    if manifest["status"] != want:
        hint = {
            "ready_for_external_execution": "record its result with record, or abandon it",
            "prepared": "evaluate it first",
        }.get(manifest["status"], "prepare a new candidate")
        raise CampaignError(f"candidate {manifest['candidate_id']} is {manifest['status']}, not {want}; {hint}")
    if any(
        row["name"] == manifest["candidate_id"] and row["status"] in ("keep", "discard", "crash")
        for row in campaign.rows()
    ):
        raise CampaignError(
            f"candidate {manifest['candidate_id']} already has a ledger result; its manifest status "
            "was edited by hand; abandon it and prepare a new candidate"
        )
    return manifest


def require_open(state: dict, action: str) -> None:
    """prepare/evaluate are refused by a stop file and once the campaign is final."""
    if state["stop_files"]:
        raise CampaignError(
            f"a stop file is present ({', '.join(state['stop_files'])}); {action} is blocked. Remove "
            "it to continue, or follow next_action"
        )
    if state["final_response_allowed"]:
        raise CampaignError(
            f"the campaign is final ({state['reason']}); write the final report, or ask the user to "
            "approve a higher cap (initialize --max-candidates N --confirm-user-approved-cap-change)"
        )
