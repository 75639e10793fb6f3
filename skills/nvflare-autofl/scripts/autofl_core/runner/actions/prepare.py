"""prepare: copy the best snapshot into `candidates/<id>/source/` (the only folder the agent edits) and
write the manifest (`prepared`, with `base_candidate`: the best it was prepared from). Several candidates may be
prepared at once (evaluate them one by one or as a batch); a candidate ready for external execution (poc/prod)
blocks it until it is recorded or abandoned. `--run-args` (the reference's way to give a candidate its arguments) is
validated exactly as at evaluate and recorded in the manifest (`run_args`, and `effective_run_args` merged
with the best's); evaluate then runs them without being told again."""

from __future__ import annotations

from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from .. import runargs
from .. import state as state_mod
from ..checks import require_open
from ..outcome import ActionResult, CampaignError
from ..store import manifests, snapshots, sources

RESERVED_NAMES = (v.BASELINE_NAME,)
RESERVED_PREFIXES = ("baseline_retry_", "replicate_")


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    name = manifests.check_id(options.name or "", "--name")
    hypothesis = (options.hypothesis or "").strip()
    if not hypothesis:
        raise CampaignError("--hypothesis is required: say what the candidate changes and why it should help")
    _check_preparable(campaign, name, now)
    event = check_literature_event(campaign.rows(), options.literature_event)
    own, effective = _run_args(campaign, options.run_args)
    best = campaign.best()
    drift = snapshots.workspace_drift(paths, best)
    if drift:
        raise CampaignError(
            f"the workspace differs from the best snapshot ({', '.join(drift)}); undo those edits "
            "(candidates are edited only in their prepared copy), then prepare again"
        )
    best_row = campaign.best_row()
    sources.write_files(paths.candidate_dir(name) / "source", snapshots.files_of(paths, best))
    manifest = manifests.CandidateManifest.of(
        schema_version=manifests.SCHEMA,
        candidate_id=name,
        name=name,
        hypothesis=hypothesis,
        algorithm_family=(options.family or "").strip(),
        literature_event_id=event,
        status=v.PREPARED,
        created_at=now,
        updated_at=now,
        workspace_root=str(paths.workspace),
        base_candidate=best_row.name if best_row else best.candidate,
        prepared_index=len(campaign.manifests()) + 1,
        base_source_sha256=best.digest,
        fixed_budget_sha256=campaign.meta["fixed_budget_sha256"],
        objective={"metric": campaign.settings.metric, "mode": campaign.settings.mode},
        environment=campaign.settings.env,
        run_args=own,
        effective_run_args=effective,
        changed_files=[],
        created_files=[],
        patch_sha256=None,
        candidate_source_sha256=None,
        execution_fingerprint=None,
        provenance={
            "job": paths.rel(paths.job),
            "autofl_yaml": paths.rel(paths.autofl_yaml),
            "import_source_sha256": campaign.config.get("source_sha256") or best.digest,
        },
        artifacts=manifests.ManifestArtifacts.of(patch=None, run=None),
        result=manifests.empty_result(),
    )
    manifests.write(paths, manifest)
    return ActionResult(
        extras={
            "candidate_manifest": str(paths.manifest(name)),
            "candidate_source": str(paths.candidate_dir(name) / "source"),
            "literature_event_id": event,
        }
    )


def _check_preparable(campaign, name: str, now: str) -> None:
    """CampaignError unless a candidate named `name` may be prepared now: the campaign is open with a scored
    baseline, no candidate waits for its external run, and the name is new."""
    state = state_mod.compute(campaign, now)
    require_open(state, "prepare")
    if state["baseline_status"] != v.BaselineStatus.COMPLETE:
        raise CampaignError("there is no scored baseline yet; follow next_action (repair_baseline or submit_baseline)")
    busy = [m for m in campaign.pending() if m.status != v.PREPARED]
    if busy:
        names = ", ".join(m.candidate_id for m in busy)
        raise CampaignError(
            f"{'candidate' if len(busy) == 1 else 'candidates'} {names} {'is' if len(busy) == 1 else 'are'} "
            f"{busy[0].status}; record or abandon "
            "them before preparing another (a new candidate starts from the best they leave)"
        )
    if name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES) or name in campaign.used_names():
        raise CampaignError(f"--name {name} is already used or reserved; pick a new name")


def _run_args(campaign, text: str | None) -> tuple[list[str], list[str]]:
    """(own, effective) run args of the new candidate: `--run-args` validated as evaluate validates it."""
    best_args = campaign.best_run_args()
    if text is None:
        return [], best_args
    own = runargs.candidate_args(campaign.config, text)
    effective = runargs.flatten(runargs.merge(runargs.pairs_from_tokens(campaign.config, best_args), own))
    return runargs.flatten(own), effective


def check_literature_event(rows: list[LedgerRow], event: str | None) -> str | None:
    if event is None:
        return None
    known = [row.literature_event_id for row in rows if row.status == v.LITERATURE and row.literature_event_id]
    if event not in known:
        listed = ", ".join(known) or "none yet; record one with record --literature"
        raise CampaignError(f"--literature-event {event} is not a recorded literature event (known: {listed})")
    return event
