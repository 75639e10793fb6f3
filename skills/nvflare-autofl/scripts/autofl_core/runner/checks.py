"""Checks several actions share, so no action needs another: which candidate an action works on, and whether
the campaign still accepts new work. Each raises CampaignError (nothing written) naming the fix. Usage::

    manifest = pick_pending(campaign, one_manifest(options, "record"), want=v.READY)   # evaluate: prepared ones
    manifest = chosen_manifest(campaign, one_manifest(options, "abandon"), none_pending="nothing to abandon")
    require_open(state_mod.compute(campaign, now), "prepare")                 # stop file / final campaign
"""

from __future__ import annotations

from ..campaign import vocabulary as v
from .outcome import CampaignError
from .store import manifests


def one_manifest(options, action: str) -> str | None:
    """The single `--manifest` given (repeatable only for a batch evaluate), or None."""
    given = getattr(options, "manifest", None) or []
    if len(given) > 1:
        raise CampaignError(f"--manifest was given {len(given)} times; {action} takes one candidate")
    return given[0] if given else None


def chosen_manifest(campaign, given: str | None, *, none_pending: str) -> manifests.CandidateManifest:
    """The manifest named by --manifest, or the single pending one (`none_pending`: the error when there is none)."""
    if given:
        return manifests.read_path(campaign.paths, given)
    pending = campaign.pending()
    if not pending:
        raise CampaignError(none_pending)
    if len(pending) > 1:
        raise CampaignError("several candidates are pending; pass --manifest to pick one")
    return pending[0]


def pick_pending(campaign, given: str | None, *, want: str) -> manifests.CandidateManifest:
    """The manifest named by --manifest, or the single pending one; it must have status `want`."""
    manifest = chosen_manifest(campaign, given, none_pending="there is no pending candidate; run prepare first")
    require_status(campaign, manifest, want)
    return manifest


def require_status(campaign, manifest: manifests.CandidateManifest, want: str) -> None:
    """`manifest` must have status `want` and no ledger result yet (else a hand-edited status)."""
    if manifest.status != want:
        hint = {
            v.READY: "record its result with record, or abandon it",
            v.PREPARED: "evaluate it first",
        }.get(manifest.status, "prepare a new candidate")
        raise CampaignError(f"candidate {manifest.candidate_id} is {manifest.status}, not {want}; {hint}")
    if any(row.name == manifest.candidate_id and row.status in v.ATTEMPTS for row in campaign.rows()):
        raise CampaignError(
            f"candidate {manifest.candidate_id} already has a ledger result; its manifest status "
            "was edited by hand; abandon it and prepare a new candidate"
        )


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
