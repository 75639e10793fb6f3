"""Finalize a candidate: keep / discard / crash (or an infrastructure retry), crash-safe through a journal.

The outcome is decided first (`decide`), then written in idempotent steps: stage the new best snapshot (keep),
write the journal (`.nvflare/autofl/finalize.json`: the decided manifest, ledger row and new best digest),
swap the snapshot, make the workspace equal the best source (a keep installs the candidate here, right after the
swap, after `created.settle_keep` recorded the files it creates and removed those of an earlier best the new one
lacks; created files of a discarded candidate that was applied to the workspace are removed; a sealed trial's
discard has nothing to undo), let kept created files join `allowed_edit_paths` (and the runner-added ones the new
best lacks leave it), write the manifest, append the ledger row (once),
drop the journal. A crash at any point is finished by `replay` on the next action. Usage::

    status = decide("success", 0.91, best_score=0.90, mode="max", margin=noise.keep_margin(campaign))
    finalize(campaign, manifest, status=status, draft_files=draft.files, now=ts)

A discard whose gain the noise margin swallowed carries `within noise (delta=..., margin=...)` as its reason
(manifest `result.failure_reason` and the ledger row).
"""

from __future__ import annotations

from ..campaign import compare, ledger
from ..campaign import vocabulary as v
from ..common import atomic, bounded, faults
from . import noise
from .outcome import CampaignError
from .store import contract, created, manifests, snapshots

SCHEMA = "nvflare.autofl.finalize.v1"
OUTCOME_STATUS = {v.OUTCOME_CRASH: v.CRASH, v.OUTCOME_INFRASTRUCTURE_RETRY: v.INFRASTRUCTURE_RETRY}


def decide(
    outcome: str, score: float | None, *, best_score: float | None, mode: str, margin: float | None = None
) -> str:
    """keep when strictly better than the best retained score at ledger precision, by more than `margin` when the
    noise rule applies (`noise.keep_margin`); a tie is a discard."""
    if outcome in OUTCOME_STATUS:
        return OUTCOME_STATUS[outcome]
    if outcome == v.OUTCOME_PRUNED:  # stopped by the pruning rule: never kept, no score
        return v.DISCARD
    if score is None:
        return v.CRASH
    return v.KEEP if compare.better(score, best_score, mode, margin or 0.0) else v.DISCARD


def within_noise(score: float | None, *, best_score: float | None, mode: str, margin: float | None) -> str | None:
    """The reason of a discard that beat the best by no more than the noise margin, else None."""
    if margin is None or score is None or best_score is None:
        return None
    if not compare.better(score, best_score, mode) or compare.better(score, best_score, mode, margin):
        return None
    delta = compare.improvement(score, best_score, mode)
    return f"within noise (delta={delta:+.6f}, margin={margin:.6f})"


def finalize(
    campaign, manifest: manifests.CandidateManifest, *, status: str, draft_files: dict | None, now: str
) -> manifests.CandidateManifest:
    """Write the decided outcome of `manifest` (already holding its result); returns the final manifest."""
    paths = campaign.paths
    retry = status == v.INFRASTRUCTURE_RETRY
    final = manifest.replace(status=v.PREPARED if retry else status, updated_at=now)
    if status == v.DISCARD:
        reason = within_noise(
            manifest.result.score,
            best_score=v.bar_to_beat(campaign.rows(), campaign.settings.mode),
            mode=campaign.settings.mode,
            margin=noise.keep_margin(campaign),
        )
        if reason:
            final = final.replace(result=manifest.result.replace(failure_reason=reason))
    digest = None
    if status == v.KEEP:
        if draft_files is None:
            raise CampaignError("internal error: a kept candidate needs its source files")
        digest = snapshots.stage(paths, draft_files, candidate=manifest.candidate_id).digest
        faults.checkpoint("finalize:staged")
    journal = {
        "schema_version": SCHEMA,
        "candidate_id": manifest.candidate_id,
        "status": status,
        "new_best_digest": digest,
        "created_files": list(manifest.created_files),
        "workspace_applied": manifest.workspace_applied,
        "manifest": final.to_json(),
        "row": candidate_row(paths, final, status),
        "ledger_rows_before": len(campaign.rows()),
    }
    atomic.write_json(paths.journal, journal)
    faults.checkpoint("finalize:journal_written")
    paths.trial_marker.unlink(missing_ok=True)
    faults.checkpoint("finalize:marker_cleared")
    _apply(campaign, journal)
    return final


def replay(campaign) -> str | None:
    """Finish an interrupted finalize; returns the candidate id it finished, or None when there was none."""
    journal = _read_journal(campaign.paths)
    if journal is None:
        return None
    _apply(campaign, journal)
    return journal["candidate_id"]


def candidate_row(paths, manifest: manifests.CandidateManifest, status: str) -> dict:
    """The ledger row of a finalized candidate (`vocabulary.candidate_row` from its manifest)."""
    result = manifest.result
    touched = manifest.touched
    return v.candidate_row(
        status,
        name=manifest.candidate_id,
        score=result.score,
        runtime_seconds=result.runtime_seconds,
        changed_files=",".join(touched),
        diff_summary=diff_summary(manifest),
        run_command=result.run_command or "",
        artifacts=manifest.artifacts.run or "",
        failure_reason=result.failure_reason or "",
        candidate_manifest=paths.rel(paths.manifest(manifest.candidate_id)),
        base_candidate=manifest.base_candidate,
        patch_sha256=manifest.patch_sha256 or "",
        metric_name=result.metric_name or "",
        metric_source=result.metric_source or "",
        metric_artifact=result.metric_artifact or "",
        candidate_kind=candidate_kind(manifest),
        algorithm_family=manifest.algorithm_family,
        literature_event_id=manifest.literature_event_id or "",
    )


def candidate_kind(manifest: manifests.CandidateManifest) -> str:
    return v.SOURCE_EDIT if manifest.patch_sha256 else v.ARGUMENT_ONLY


def diff_summary(manifest: manifests.CandidateManifest) -> str:
    """`2 files (+5 -3); run args: --lr 0.1` from the manifest's recorded patch stats and own run args."""
    stats = manifest.patch_stats or {}
    parts = []
    if stats.get("files"):
        parts.append(f"{stats['files']} file(s) (+{stats.get('added', 0)} -{stats.get('removed', 0)})")
    if manifest.run_args:
        parts.append("run args: " + " ".join(manifest.run_args))
    return "; ".join(parts) or "no change"


def _apply(campaign, journal: dict) -> None:
    paths = campaign.paths
    if journal["new_best_digest"]:
        snapshots.swap(paths, journal["new_best_digest"])
    else:
        snapshots.repair(paths)
    faults.checkpoint("finalize:swapped")
    keep, drop = journal["status"] == v.KEEP, set()
    if keep:
        drop = created.settle_keep(
            paths,
            campaign.best().hashes,
            candidate=journal["candidate_id"],
            created=journal["created_files"],
            allowed=contract.allowed_edit_paths(campaign.config),
        )
        faults.checkpoint("finalize:installed_recorded")
    snapshots.restore_workspace(
        paths, campaign.best(), remove=journal["created_files"], candidate=journal["candidate_id"]
    )
    faults.checkpoint("finalize:workspace_restored")
    if keep and (journal["created_files"] or drop):
        updated = contract.with_edit_paths(campaign.config, journal["created_files"], drop)
        if updated != campaign.config:
            contract.write(paths.autofl_yaml, updated)
            campaign.config = updated
    faults.checkpoint("finalize:contract_updated")
    atomic.write_json(paths.manifest(journal["candidate_id"]), journal["manifest"])
    faults.checkpoint("finalize:manifest_written")
    append_once(paths, journal["row"], journal["ledger_rows_before"])
    faults.checkpoint("finalize:ledger_appended")
    paths.journal.unlink(missing_ok=True)
    faults.checkpoint("finalize:journal_removed")
    paths.trial_marker.unlink(missing_ok=True)


def append_once(paths, row: dict, rows_before: int) -> None:
    """Append `row` unless the ledger already grew past `rows_before` with exactly this row (a replay)."""
    existing = ledger.read_rows(paths.results)
    if len(existing) > rows_before:
        landed = existing[rows_before]
        if landed.name == row["name"] and landed.status == row["status"]:
            return
        raise CampaignError(
            f"{paths.results} gained rows that do not belong to {row['name']} while it was being "
            "finalized; check the ledger by hand"
        )
    ledger.append_row(paths.results, row)


def _read_journal(paths) -> dict | None:
    try:
        journal = bounded.read_json(paths.journal)
    except bounded.BoundedReadError as error:
        raise CampaignError(
            f"{paths.journal} {error}; check the last candidate by hand, then remove the file"
        ) from None
    if journal is not None and not _journal_shape_ok(journal):
        raise CampaignError(f"{paths.journal} is damaged; check the last candidate by hand, then remove the file")
    return journal


def _journal_shape_ok(journal: dict) -> bool:
    """The fields `_apply` uses have their types (a hand-edited journal is refused, never half-applied)."""
    return (
        journal.get("schema_version") == SCHEMA
        and isinstance(journal.get("candidate_id"), str)
        and journal.get("status") in v.LEDGER_STATUSES
        and isinstance(journal.get("created_files"), list)
        and isinstance(journal.get("manifest"), dict)
        and isinstance(journal.get("row"), dict)
        and isinstance(journal.get("ledger_rows_before"), int)
        and (journal.get("new_best_digest") is None or isinstance(journal.get("new_best_digest"), str))
    )
