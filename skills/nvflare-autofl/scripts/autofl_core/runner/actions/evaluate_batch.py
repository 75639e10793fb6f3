"""evaluate of a batch: `--manifest A --manifest B ...`, `--all-prepared`, or `--parallel K` (issue 24).

Every candidate is validated as a single evaluate validates it, all before anything is written, and all against
the best the batch starts from (each must have been prepared from it). A batch larger than the remaining cap is
refused (exit 2, nothing run). Then every manifest goes `running`, the trials run (sealed ones concurrently, at
most K at a time, see `batch_trials`; where trials cannot be sealed, one by one, each candidate applied to the
workspace only while its own trial runs), and only then are the candidates finalized, one at a time, in the order
given: each is compared with the best at the moment it is finalized (an earlier keep of the batch included), so
the ledger, the best and every decision are those of running the batch one by one in that order. A later keep
replaces an earlier one's source: candidates of a batch are siblings from the same best.

An interruption (signal, error) before the first finalize ends every trial and leaves every candidate prepared
again; a killed runner's next action does the same (`recovery`), finishing a finalize that was under way.
The envelope has one entry per candidate under `batch` (status, score, reason, comparison), `parallel` (the
trials run at a time) and `batch_sealed`; its exit code is 75 when any trial met the sandbox, else 1 when any
crashed, else 0.

In poc/prod nothing runs: after the same validation every candidate becomes ready for external execution
(`evaluation.make_ready`; the cap counts those already ready too), one entry each with where to export it from;
`record` then takes them in any order (see `runner/ready.py`).
"""

from __future__ import annotations

import sys

from ...campaign import vocabulary as v
from ...common import faults
from .. import batch_trials, campaign_trial, evaluation
from .. import state as state_mod
from ..checks import pick_pending, require_open, require_status
from ..outcome import ActionResult, CampaignError, Interrupted
from ..store import created, manifests, snapshots, sources

ENTRY_FIELDS = ("score", "compared_with", "compared_score", "delta", "noise_verdict", "sites")


def run(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    chosen = _chosen(campaign, options)
    if options.run_args is not None and len(chosen) > 1:
        raise CampaignError(
            "--run-args applies to one candidate; give each candidate of a batch its run args at prepare"
        )
    state = state_mod.compute(campaign, now)
    require_open(state, "evaluate")
    env = campaign.settings["env"]
    if env != "sim" and options.parallel is not None:
        raise CampaignError(
            f"--parallel sets how many simulation trials run at once; in {env} the runner runs nothing (each "
            "candidate is submitted outside it), so leave --parallel out"
        )
    evaluation.check_room(campaign, state, chosen)  # the cap
    if env == "sim":
        campaign_trial.start_probe(campaign)
    staged = [evaluation.validate(campaign, manifest, options.run_args, now) for manifest in chosen]
    if env != "sim":
        return _make_ready(campaign, staged, now)
    sealed = campaign_trial.sealing(campaign)
    best = campaign.best()
    running = []
    try:
        for item in staged:
            running.append(evaluation.materialize(campaign, item, best, now, apply=False, applied=not sealed))
        results, width = _trials(campaign, staged, running, sealed=sealed, parallel=options.parallel)
        entries = _finalize_all(campaign, staged, running, results, width, now)
    except (CampaignError, Interrupted, KeyboardInterrupt, OSError):
        if not paths.journal.exists():
            _unapply_unfinished(campaign, staged)
        raise
    extras = {
        "batch": entries,
        "parallel": width,
        "batch_sealed": sealed,
        "best_candidate": campaign.best_row()["name"] if campaign.best_row() else None,
        "best_score": campaign.best_row()["score"] if campaign.best_row() else None,
    }
    code = evaluation.exit_code([entry["candidate_status"] for entry in entries])
    return ActionResult(extras=extras, exit_code=code, ledger_changed=True)


def _chosen(campaign, options) -> list[dict]:
    """The batch's manifests in the order given (`--all-prepared`: every prepared one, oldest first)."""
    given = options.manifest or []
    if options.all_prepared and given:
        raise CampaignError("pass either --all-prepared or --manifest, not both")
    if options.all_prepared:
        chosen = manifests.in_preparation_order([m for m in campaign.manifests() if m["status"] == v.PREPARED])
        if not chosen:
            raise CampaignError("there is no prepared candidate; run prepare first")
    elif given:
        chosen = [manifests.read_path(campaign.paths, path) for path in given]
    else:
        chosen = [pick_pending(campaign, None, want=v.PREPARED)]
    names = [m["candidate_id"] for m in chosen]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CampaignError(f"candidate {repeated[0]} is named twice in the batch; name each candidate once")
    for manifest in chosen:
        require_status(campaign, manifest, v.PREPARED)
    return chosen


def _trials(campaign, staged, running, *, sealed: bool, parallel: int | None) -> tuple[list, int]:
    """Every trial of the batch: concurrent when sealed, else one by one with the candidate applied meanwhile."""
    if sealed:
        requests = [
            batch_trials.Request(m["candidate_id"], m["effective_run_args"], item.draft.files)
            for item, m in zip(staged, running, strict=True)
        ]
        results, width = batch_trials.run_all(campaign, requests, parallel=parallel)
        drift = evaluation.drift_of(campaign, None, sealed=True)
        return [(result, drift) for result in results], width
    print("autofl: trials cannot be sealed on this host; the batch runs one candidate at a time", file=sys.stderr)

    def apply(index: int) -> None:
        draft = staged[index].draft
        # the record of what the runner creates is one file: this candidate's, again, just before its own apply
        created.record(campaign.paths, running[index]["candidate_id"], {rel: draft.files[rel] for rel in draft.created})
        for rel in draft.touched:  # one file at a time: recovery undoes a partial apply
            sources.write_files(campaign.paths.workspace, {rel: draft.files[rel]})
        faults.checkpoint("evaluate:applied")

    def restore(index: int, result) -> tuple:
        drift = evaluation.drift_of(campaign, staged[index].draft, sealed=False)
        manifest = running[index]
        snapshots.restore_workspace(
            campaign.paths, campaign.best(), remove=manifest["created_files"], candidate=manifest["candidate_id"]
        )
        campaign.forget()
        return result, drift

    requests = [batch_trials.Request(m["candidate_id"], m["effective_run_args"], None) for m in running]
    return batch_trials.run_in_turn(campaign, requests, before=apply, after=restore), 1


def _make_ready(campaign, staged, now: str) -> ActionResult:
    """poc/prod: every candidate of the batch becomes ready for external execution; nothing runs or is
    submitted. One entry each, in the order given, saying where to export it from (`ready.entry`)."""
    entries = evaluation.make_ready(campaign, staged, now)
    best = campaign.best_row()
    extras = {
        "batch": entries,
        "best_candidate": best["name"] if best else None,
        "best_score": best["score"] if best else None,
    }
    return ActionResult(extras=extras)


def _finalize_all(campaign, staged, running, results, width: int, now: str) -> list[dict]:
    """Finalize in the order given, each against the best at that moment; one envelope entry per candidate.
    Each manifest records its batch (`members`, `parallel`) for the report."""
    entries = []
    batch = {"members": [m["candidate_id"] for m in running], "parallel": width}
    for item, manifest, (result, drift) in zip(staged, running, results, strict=True):
        manifest = dict(manifest, batch=batch)
        final, extras = evaluation.conclude(campaign, manifest, item.draft, result, drift, now)
        entry = {
            "candidate_id": manifest["candidate_id"],
            "candidate_manifest": extras["candidate_manifest"],
            "candidate_status": extras["candidate_status"],
            "reason": final["result"]["failure_reason"],
            "runtime_seconds": result.runtime_seconds,
            "tampering": list(result.tampering),
            **{key: extras[key] for key in ENTRY_FIELDS},
        }
        entries.append(entry)
        campaign.forget()
    return entries


def _unapply_unfinished(campaign, staged) -> None:
    """Every candidate of the batch still `running` is taken out of the workspace and prepared again."""
    campaign.forget()
    for item in staged:
        current = campaign.manifest_of(item.manifest["candidate_id"])
        if current is None or current["status"] != v.RUNNING:
            continue
        try:
            evaluation.unapply(campaign, current, item.manifest)
        except OSError:  # e.g. the disk is still full: the next action's recovery finishes the undo
            return
    campaign_trial.clear_marker(campaign)
