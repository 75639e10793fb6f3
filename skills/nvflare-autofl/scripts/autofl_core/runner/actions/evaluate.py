"""evaluate: validate the pending draft, re-import job.py with it, then run it (sim) and finalize, or mark it
ready for external execution (poc/prod: other candidates may be ready too, each counted against the cap; see
`runner/ready.py`). A batch (several `--manifest`s, `--all-prepared`, `--parallel`) is `evaluate_batch`, which the
shell loads instead (`batch_requested`).

The validation and the shared steps are in `runner/evaluation.py`. Then: candidate.patch, manifest `running`
with the execution fingerprint (and `crash_replay` provenance when an identical fingerprint crashed before),
trial, finalize. A sealed trial (see `trial/seal.py`) sees the draft on its own view of the job, so the live
workspace is never written before a keep installs it; without the sandbox (and in poc/prod, where the user
exports a lone ready candidate from the job's folder) the draft is applied to the workspace first and restored
afterwards.
"""

from __future__ import annotations

from ...campaign import vocabulary as v
from .. import campaign_trial
from .. import state as state_mod
from ..checks import one_manifest, pick_pending, require_open
from ..evaluation import check_room, conclude, drift_of, exit_code, make_ready, materialize, unapply, validate
from ..outcome import ActionResult, CampaignError, Interrupted


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    manifest = pick_pending(campaign, one_manifest(options, "evaluate"), want=v.PREPARED)
    state = state_mod.compute(campaign, now)
    require_open(state, "evaluate")
    if campaign.settings["env"] != "sim":
        return _make_ready(campaign, manifest, options, state, now)
    campaign_trial.start_probe(campaign)  # runs while the candidate is validated and re-imported
    staged = validate(campaign, manifest, options.run_args, now)
    prepared = manifest
    sealed = campaign_trial.sealing(campaign)
    manifest = materialize(campaign, staged, campaign.best(), now, apply=not sealed)
    try:
        return _simulate(campaign, manifest, staged.draft, now, sealed=sealed)
    except (CampaignError, Interrupted, KeyboardInterrupt, OSError):
        if not paths.journal.exists():
            try:
                unapply(campaign, manifest, prepared)
            except OSError:  # e.g. the disk is still full: the next action's recovery finishes the undo
                pass
        raise


def _make_ready(campaign, manifest: dict, options, state: dict, now: str) -> ActionResult:
    """poc/prod: the candidate becomes ready for external execution (others may be ready too; see `ready`)."""
    check_room(campaign, state, [manifest])
    staged = validate(campaign, manifest, options.run_args, now)
    [entry] = make_ready(campaign, [staged], now)
    return ActionResult(
        extras={
            "candidate_manifest": entry["candidate_manifest"],
            "candidate_status": v.READY,
            "export_from": entry["export_from"],
            "job_argv": entry["job_argv"],
        }
    )


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
