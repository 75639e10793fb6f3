"""abandon: a pending candidate becomes `abandoned` (never counted); a materialized one is taken out of the
workspace first (best source restored, its created files removed)."""

from __future__ import annotations

from ..outcome import ActionResult, CampaignError
from ..store import manifests, snapshots


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    if options.manifest:
        manifest = manifests.read_path(paths, options.manifest)
    else:
        pending = campaign.pending()
        if not pending:
            raise CampaignError("there is no pending candidate to abandon")
        if len(pending) > 1:
            raise CampaignError("several candidates are pending; pass --manifest to pick one")
        manifest = pending[0]
    if manifest["status"] not in manifests.PENDING:
        raise CampaignError(
            f"candidate {manifest['candidate_id']} is {manifest['status']}; only a pending candidate can be abandoned"
        )
    if manifest["status"] == "ready_for_external_execution":
        snapshots.restore_workspace(paths, campaign.best(), remove=manifest["created_files"])
    manifests.write(paths, dict(manifest, status="abandoned", updated_at=now))
    campaign.forget()
    return ActionResult(
        extras={"candidate_manifest": str(paths.manifest(manifest["candidate_id"])), "candidate_status": "abandoned"}
    )
