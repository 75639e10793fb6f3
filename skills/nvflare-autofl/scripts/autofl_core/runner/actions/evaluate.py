"""evaluate: validate the pending draft, re-import job.py with it, then run it (sim) and finalize, or mark it
ready for external execution (poc/prod). A batch (several `--manifest`s, `--all-prepared`, `--parallel`) is
`evaluate_batch`, which the shell loads instead (`batch_requested`).

The validation and the shared steps are in `runner/evaluation.py`. Then: candidate.patch, manifest `running`
with the execution fingerprint (and `crash_replay` provenance when an identical fingerprint crashed before),
trial, finalize. A sealed trial (see `trial/seal.py`) sees the draft on its own view of the job, so the live
workspace is never written before a keep installs it; without the sandbox (and in poc/prod, where the user
exports the job from its folder) the draft is applied to the workspace first and restored afterwards.
"""

from __future__ import annotations

from ...campaign import vocabulary as v
from .. import campaign_trial
from .. import state as state_mod
from ..checks import one_manifest, pick_pending, require_open
from ..evaluation import conclude, drift_of, exit_code, materialize, unapply, validate
from ..outcome import ActionResult, CampaignError, Interrupted
from ..store import manifests


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    manifest = pick_pending(campaign, one_manifest(options, "evaluate"), want=v.PREPARED)
    require_open(state_mod.compute(campaign, now), "evaluate")
    if campaign.settings["env"] == "sim":
        campaign_trial.start_probe(campaign)  # runs while the candidate is validated and re-imported
    staged = validate(campaign, manifest, options.run_args, now)
    prepared = manifest
    sealed = campaign.settings["env"] == "sim" and campaign_trial.sealing(campaign)
    manifest = materialize(campaign, staged, campaign.best(), now, apply=not sealed)
    try:
        if campaign.settings["env"] != "sim":
            ready = dict(manifest, status=v.READY, updated_at=now)
            manifests.write(paths, ready)
            campaign.forget()
            return ActionResult(
                extras={
                    "candidate_manifest": str(paths.manifest(manifest["candidate_id"])),
                    "candidate_status": v.READY,
                }
            )
        return _simulate(campaign, manifest, staged.draft, now, sealed=sealed)
    except (CampaignError, Interrupted, KeyboardInterrupt, OSError):
        if not paths.journal.exists():
            try:
                unapply(campaign, manifest, prepared)
            except OSError:  # e.g. the disk is still full: the next action's recovery finishes the undo
                pass
        raise


def _simulate(campaign, manifest: dict, draft, now: str, *, sealed: bool) -> ActionResult:
    candidate_id = manifest["candidate_id"]
    result = campaign_trial.run(
        campaign,
        name=candidate_id,
        run_args=manifest["effective_run_args"],
        kind="candidate",
        candidate=candidate_id,
        stage_files=draft.files if sealed else None,
    )
    _final, extras = conclude(campaign, manifest, draft, result, drift_of(campaign, draft, sealed=sealed), now)
    extras = {**extras, **campaign_trial.envelope_extras(campaign, result)}
    return ActionResult(extras=extras, exit_code=exit_code([extras["candidate_status"]]), ledger_changed=True)
