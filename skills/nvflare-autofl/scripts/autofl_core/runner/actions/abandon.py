"""abandon: a pending candidate becomes `abandoned` (never counted); one the workspace holds (a lone candidate
ready for external execution) is taken out of it first (best source restored, its created files removed). With
several pending, `--manifest` names the one."""

from __future__ import annotations

from ...campaign import vocabulary as v
from ..checks import chosen_manifest, one_manifest
from ..outcome import ActionResult, CampaignError
from ..store import manifests, snapshots


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    manifest = chosen_manifest(
        campaign, one_manifest(options, "abandon"), none_pending="there is no pending candidate to abandon"
    )
    if manifest.status not in v.MANIFEST_PENDING:
        raise CampaignError(
            f"candidate {manifest.candidate_id} is {manifest.status}; only a pending candidate can be abandoned"
        )
    if manifest.status == v.READY and manifest.workspace_applied:  # the workspace holds it
        snapshots.restore_workspace(
            paths, campaign.best(), remove=manifest.created_files, candidate=manifest.candidate_id
        )
    manifests.write(paths, manifest.replace(status=v.ABANDONED, updated_at=now))
    return ActionResult(
        extras={"candidate_manifest": str(paths.manifest(manifest.candidate_id)), "candidate_status": v.ABANDONED}
    )
