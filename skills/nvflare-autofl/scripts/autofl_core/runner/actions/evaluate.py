"""evaluate: one candidate, or a batch (`--manifest A --manifest B ...`, `--all-prepared`, `--parallel K`); a single
candidate is a batch of one, with the envelope of one candidate.

Every candidate is validated (see `runner/evaluation.py`) before anything is written, all against the best the
batch starts from (each must have been prepared from it); more candidates than the remaining cap are refused
(exit 2, nothing run). In poc/prod nothing runs: every candidate becomes ready for external execution
(`evaluation.make_ready`; the cap counts those already ready too) and `record` takes them in any order (see
`runner/ready.py`). In a simulation every manifest goes `running`, with the execution fingerprint (and
`crash_replay` provenance when an identical fingerprint crashed before); then the trials run:
- sealed (see `trial/seal.py`): each trial sees the draft on its own view of the job, so the live workspace is
  never written before a keep installs it; several run at once, at most K (see `batch_trials`);
- contained (the host cannot seal): one at a time, each candidate applied to the workspace only while its own
  trial runs, the best restored after it.
Only then are the candidates finalized, one at a time, in the order given: each is compared with the best at the
moment it is finalized (an earlier keep of the batch included), so the ledger, the best and every decision are
those of running the batch one by one in that order. A later keep replaces an earlier one's source: candidates of
a batch are siblings from the same best.

An interruption (signal, error) before the first finalize ends every trial and leaves every candidate prepared
again; a killed runner's next action does the same (`recovery`), finishing a finalize that was under way. A batch's
envelope has one entry per candidate under `batch` (status, score, reason, comparison), `parallel` (the trials run
at a time) and `batch_sealed`; one candidate's envelope has its fields at the top. The exit code is 75 when any
trial met the sandbox, else 1 when any crashed, else 0.
"""

from __future__ import annotations

import sys

from ...campaign import vocabulary as v
from .. import batch_trials, campaign_trial, evaluation, frozen_eval
from .. import state as state_mod
from ..checks import pick_pending, require_open, require_status
from ..outcome import ActionResult, CampaignError, Interrupted
from ..store import manifests, snapshots

ENTRY_FIELDS = ("score", "compared_with", "compared_score", "delta", "noise_verdict", "sites")


def run(campaign, options, now: str) -> ActionResult:
    # a batch: --all-prepared, several --manifest, or --parallel; else one candidate
    batch = bool(options.all_prepared or len(options.manifest or []) > 1 or options.parallel is not None)
    chosen = _chosen(campaign, options)
    if options.run_args is not None and len(chosen) > 1:
        raise CampaignError(
            "--run-args applies to one candidate; give each candidate of a batch its run args at prepare"
        )
    state = state_mod.compute(campaign, now)
    require_open(state, "evaluate")
    env = campaign.settings.env
    if env != "sim" and options.parallel is not None:
        raise CampaignError(
            f"--parallel sets how many simulation trials run at once; in {env} the runner runs nothing (each "
            "candidate is submitted outside it), so leave --parallel out"
        )
    evaluation.check_room(campaign, state, chosen)  # the cap
    if env == "sim":
        campaign_trial.start_probe(campaign)  # runs while the candidates are validated and re-imported
    staged = [evaluation.validate(campaign, manifest, options.run_args, now) for manifest in chosen]
    if env != "sim":
        return _make_ready(campaign, staged, now, batch=batch)
    sealed = campaign_trial.sealing(campaign)
    best = campaign.best()
    try:
        running = [evaluation.materialize(campaign, item, best, now, applied=not sealed) for item in staged]
        results, width = _trials(campaign, staged, running, sealed=sealed, parallel=options.parallel, batch=batch)
        concluded = _finalize_all(campaign, staged, running, results, width if batch else None, now)
    except (CampaignError, Interrupted, KeyboardInterrupt, OSError):
        if not campaign.paths.journal.exists():  # every candidate still running: out of the workspace, prepared again
            evaluation.unapply_unfinished(campaign, staged, (v.RUNNING,))
        raise
    code = evaluation.exit_code([extras["candidate_status"] for _result, _final, extras in concluded])
    if not batch:
        [(result, _final, extras)] = concluded
        extras = {**extras, **campaign_trial.envelope_extras(campaign, result)}
        return ActionResult(extras=extras, exit_code=code, ledger_changed=True)
    best_row = campaign.best_row()
    extras = {
        "batch": [_entry(result, final, extras) for result, final, extras in concluded],
        "parallel": width,
        "batch_sealed": sealed,
        "best_candidate": best_row.name if best_row else None,
        "best_score": best_row.score if best_row else None,
    }
    return ActionResult(extras=extras, exit_code=code, ledger_changed=True)


def _chosen(campaign, options) -> list[dict]:
    """The manifests in the order given (`--all-prepared`: every prepared one, oldest first; none given: the single
    pending one)."""
    given = options.manifest or []
    if options.all_prepared and given:
        raise CampaignError("pass either --all-prepared or --manifest, not both")
    if options.all_prepared:
        chosen = manifests.in_preparation_order([m for m in campaign.manifests() if m.status == v.PREPARED])
        if not chosen:
            raise CampaignError("there is no prepared candidate; run prepare first")
    elif given:
        chosen = [manifests.read_path(campaign.paths, path) for path in given]
    else:
        chosen = [pick_pending(campaign, None, want=v.PREPARED)]
    names = [m.candidate_id for m in chosen]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CampaignError(f"candidate {repeated[0]} is named twice in the batch; name each candidate once")
    for manifest in chosen:
        require_status(campaign, manifest, v.PREPARED)
    return chosen


def _trials(campaign, staged, running, *, sealed: bool, parallel: int | None, batch: bool) -> tuple[list, int]:
    """Every trial: (result, drift) each, and the trials run at a time. Sealed ones run concurrently; contained
    ones one by one, each candidate applied to the workspace while its own trial runs and the best restored after."""
    if sealed:
        requests = [
            batch_trials.Request(m.candidate_id, list(m.effective_run_args), item.draft.files)
            for item, m in zip(staged, running, strict=True)
        ]
        results, width = batch_trials.run_all(campaign, requests, parallel=parallel)
        drift = evaluation.drift_of(campaign, None, sealed=True)
        return [(result, drift) for result in results], width
    if batch:
        print("autofl: trials cannot be sealed on this host; the batch runs one candidate at a time", file=sys.stderr)

    def restore(index: int, result) -> tuple:
        drift = evaluation.drift_of(campaign, staged[index].draft, sealed=False)
        manifest = running[index]
        snapshots.restore_workspace(
            campaign.paths, campaign.best(), remove=manifest.created_files, candidate=manifest.candidate_id
        )
        return result, drift

    requests = [batch_trials.Request(m.candidate_id, list(m.effective_run_args), None) for m in running]
    before = lambda index: evaluation.apply(campaign, running[index].candidate_id, staged[index].draft)  # noqa: E731
    return batch_trials.run_in_turn(campaign, requests, before=before, after=restore), 1


def _make_ready(campaign, staged, now: str, *, batch: bool) -> ActionResult:
    """poc/prod: every candidate becomes ready for external execution; nothing runs or is submitted. One entry
    each, in the order given, saying where to export it from (`ready.entry`)."""
    entries = evaluation.make_ready(campaign, staged, now)
    if not batch:
        [entry] = entries
        extras = {key: entry[key] for key in ("candidate_manifest", "export_from", "job_argv")}
        return ActionResult(extras={**extras, "candidate_status": v.READY})
    best = campaign.best_row()
    extras = {
        "batch": entries,
        "best_candidate": best.name if best else None,
        "best_score": best.score if best else None,
    }
    return ActionResult(extras=extras)


def _finalize_all(campaign, staged, running, results, width: int | None, now: str) -> list[tuple]:
    """Finalize in the order given, each against the best at that moment: (result, final manifest, envelope fields)
    each. In a batch (`width`: its trials at a time) each manifest records its batch for the report."""
    concluded = []
    batch = {"members": [m.candidate_id for m in running], "parallel": width}
    for item, manifest, (result, drift) in zip(staged, running, results, strict=True):
        manifest = manifest.replace(batch=batch) if width is not None else manifest
        final, extras = evaluation.conclude(campaign, manifest, item.draft, result, drift, now)
        concluded.append((result, final, extras))
    return concluded


def _entry(result, final: manifests.CandidateManifest, extras: dict) -> dict:
    """One candidate's entry of a batch envelope."""
    return {
        "candidate_id": final.candidate_id,
        "candidate_manifest": extras["candidate_manifest"],
        "candidate_status": extras["candidate_status"],
        "reason": final.result.failure_reason,
        "runtime_seconds": result.runtime_seconds,
        "tampering": list(result.tampering),
        **{key: extras[key] for key in ENTRY_FIELDS},
        **frozen_eval.manifest_fields(result),  # measured vs reported, with a frozen evaluator
    }
