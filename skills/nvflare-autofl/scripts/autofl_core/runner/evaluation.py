"""The steps of evaluating candidates (`actions/evaluate`): validation before any write (`check_room`: the cap for
what is evaluated at once), materializing the `running` manifest, applying the draft where the trial cannot be
sealed, the decision and finalize of a trial's result, the undo, and in poc/prod `make_ready`.

Validation (nothing written on a rejection): best snapshot, fixed budget and workspace unchanged; the draft's
deterministic diff within the trust contract (see `drafts`); run args canonical and within bounds (see
`runargs`); not empty; literature-linked candidates edit source; the draft's job.py re-imported over the
workspace with the same fixed budget and objective. Usage::

    staged = validate(campaign, manifest, options.run_args, now)
    running = materialize(campaign, staged, campaign.best(), now, applied=not sealed)
    apply(campaign, running.candidate_id, staged.draft)                 # only where the trial cannot be sealed
    final, extras = conclude(campaign, running, staged.draft, result, drift_of(campaign, staged.draft, sealed=sealed), now)
    unapply_unfinished(campaign, [staged, ...], (v.RUNNING,))              # the undo of an interrupted evaluate
    entries = make_ready(campaign, [staged, ...], now)       # poc/prod: ready for external execution instead
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass

from ..campaign import vocabulary as v
from ..common import atomic, faults
from ..importer import runner_view as importer
from . import campaign_trial, data_fixed, drafts, finalize, frozen_eval, noise, ready, runargs, what_happened
from .outcome import EXIT_OK, EXIT_SANDBOX, EXIT_UNSCORED, CampaignError, Interrupted
from .store import contract, created, manifests, snapshots, sources


@dataclass
class Staged:
    """A validated candidate, ready to materialize: its manifest as prepared, draft and run args."""

    manifest: manifests.CandidateManifest
    draft: object
    own: list[str]
    effective: list[str]


def validate(campaign, manifest: manifests.CandidateManifest, given_run_args: str | None, now: str) -> Staged:
    """Every check before anything is written for `manifest` (see the module docstring); raises CampaignError."""
    paths = campaign.paths
    check_unchanged(campaign, manifest)
    best_files = snapshots.files_of(paths, campaign.best())
    draft = drafts.read_draft(
        paths.candidate_dir(manifest.candidate_id) / "source", best_files, campaign.config, paths.workspace
    )
    own = runargs.settle(campaign.config, recorded=manifest.run_args, given=given_run_args)
    best_args = campaign.best_run_args()
    effective = runargs.flatten(runargs.merge(runargs.pairs_from_tokens(campaign.config, best_args), own))
    if not draft.patch and runargs.same_configuration(campaign.config, effective, best_args):
        raise CampaignError(
            "the candidate changes nothing (no source edit, run args equal the best configuration's); "
            f"edit files in {paths.candidate_dir(manifest.candidate_id) / 'source'} or pass "
            "--run-args"
        )
    if manifest.literature_event_id and not draft.patch:
        raise CampaignError(
            f"candidate {manifest.candidate_id} belongs to literature event "
            f"{manifest.literature_event_id} and must edit source, not only arguments"
        )
    if manifest.literature_event_id:
        refuse_repeated_arm(campaign, manifest, draft.digest, effective, campaign.best().digest, best_args)
    campaign_trial.check_args(campaign, manifest.candidate_id, effective)
    faults.checkpoint("evaluate:validated")
    check_reimport(campaign, manifest, draft, effective, now)
    faults.checkpoint("evaluate:reimported")
    return Staged(manifest, draft, runargs.flatten(own), effective)


def check_unchanged(campaign, manifest: manifests.CandidateManifest) -> None:
    """Best source, fixed budget and workspace must be what the candidate was prepared against."""
    best = campaign.best()
    if manifest.base_source_sha256 != best.digest:
        raise CampaignError(
            f"candidate {manifest.candidate_id} was prepared against an older best source; abandon it and prepare again"
        )
    budget = contract.budget_digest(campaign.config)
    if not (budget == campaign.meta["fixed_budget_sha256"] == manifest.fixed_budget_sha256):
        raise CampaignError(
            "the fixed budget in autofl.yaml no longer matches the campaign's; restore autofl.yaml "
            "(the budget cannot change within a campaign)"
        )
    drift = ready.workspace_drift(campaign)  # a ready candidate the workspace holds (poc/prod) is expected there
    if drift:
        raise CampaignError(
            f"the workspace differs from the best snapshot ({', '.join(drift)}); undo those edits, "
            "candidates are edited only in their prepared source folder"
        )


def check_room(campaign, state: dict, chosen: list[manifests.CandidateManifest]) -> None:
    """Before anything is written: the candidates about to be evaluated (`chosen`, prepared manifests) and those
    already ready for external execution fit the remaining cap (candidates ready at once are siblings of one
    best, like a batch: they count together). Any of them may create files: a later keep of a sibling removes
    the files an earlier keep created that its own best lacks (`store/created.settle_keep`)."""
    check_cap(state, len(chosen), waiting=[m.candidate_id for m in ready.ready_ones(campaign)])


def check_cap(state: dict, size: int, *, waiting: list[str] = ()) -> None:
    """Every candidate counts: a batch (or one candidate) larger than the remaining cap is refused before anything
    runs; candidates ready for external execution (`waiting`) hold their places until they are recorded (the
    state's `remaining_candidates` already counts them as used)."""
    free = state["remaining_candidates"]  # the ready ones already count as used
    if free is None or size <= free:
        return
    what = f"the batch has {size} candidates" if size > 1 else "this candidate needs one place"
    held = (
        f" ({len(waiting)} held by the candidates ready for external execution: {', '.join(waiting)})"
        if waiting
        else ""
    )
    advice = [f"evaluate at most {free}"] if free else []
    advice += ["record or abandon the ready ones first"] if waiting else []
    advice = ", ".join(
        [*advice, "or ask the user to approve a higher cap"] if advice else ["ask the user to approve a higher cap"]
    )
    raise CampaignError(f"{what} but only {free} of the cap of {state['candidate_cap']} remain{held}; {advice}")


def make_ready(campaign, staged: list[Staged], now: str) -> list[dict]:
    """poc/prod: every validated candidate becomes `ready_for_external_execution` (nothing is submitted); returns
    one envelope entry each (`ready.entry`). A lone candidate is applied to the workspace (the user exports it from
    the job's folder); with several ready none is (see `ready`). On an error every candidate of this evaluate is
    prepared again."""
    alone = len(staged) == 1 and not ready.ready_ones(campaign)
    try:
        if not alone:
            ready.take_out(campaign, now)
        best = campaign.best()
        for item in staged:
            running = materialize(campaign, item, best, now, applied=alone)
            if alone:
                apply(campaign, running.candidate_id, item.draft)
            manifests.write(campaign.paths, running.replace(status=v.READY, updated_at=now))
    except (CampaignError, Interrupted, KeyboardInterrupt, OSError):
        unapply_unfinished(campaign, staged, (v.RUNNING, v.READY))
        raise
    return [ready.entry(campaign, campaign.manifest_of(item.manifest.candidate_id)) for item in staged]


def fingerprint(base: str, budget: str, patch_sha: str | None, effective: list[str]) -> str:
    document = json.dumps([base, budget, patch_sha or "", effective])
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def materialize(campaign, staged: Staged, best, now: str, *, applied: bool) -> manifests.CandidateManifest:
    """Write candidate.patch and the `running` manifest (`workspace_applied`: whether the draft will be applied to
    the workspace, see `apply`) and record the files the draft creates; the workspace is not written here."""
    manifest, draft, own, effective = staged.manifest, staged.draft, staged.own, staged.effective
    paths = campaign.paths
    candidate_id = manifest.candidate_id
    patch_path = paths.candidate_dir(candidate_id) / "candidate.patch"
    budget = campaign.meta["fixed_budget_sha256"]
    print_ = fingerprint(best.digest, budget, draft.patch_sha256, effective)
    replay = next((m for m in campaign.manifests() if m.status == v.CRASH and m.execution_fingerprint == print_), None)
    if draft.patch:
        atomic.write_text(patch_path, draft.patch)
    else:
        patch_path.unlink(missing_ok=True)
    updated = manifest.replace(
        status=v.RUNNING,
        updated_at=now,
        run_args=own,
        effective_run_args=effective,
        changed_files=draft.changed,
        created_files=draft.created,
        patch_sha256=draft.patch_sha256,
        patch_stats=_patch_stats(draft),
        candidate_source_sha256=draft.digest,
        execution_fingerprint=print_,
        workspace_applied=applied,
        crash_replay={
            "execution_fingerprint": print_,
            "replay_of": replay.candidate_id,
            "previous_failure_reason": replay.result.failure_reason,
        }
        if replay
        else None,
        artifacts=manifest.artifacts.replace(patch=paths.rel(patch_path) if draft.patch else None),
    )
    faults.checkpoint("evaluate:patch_written")
    manifests.write(paths, updated)
    faults.checkpoint("evaluate:manifest_running")
    created.record(paths, candidate_id, {rel: draft.files[rel] for rel in draft.created})  # before any write
    return updated


def apply(campaign, candidate_id: str, draft) -> None:
    """Write the draft into the workspace (a trial that cannot be sealed, a lone ready candidate), one file at a
    time so recovery undoes a partial apply. The record of the files the runner creates is one file: this
    candidate's, again, just before its own apply (a batch records each candidate in turn)."""
    created.record(campaign.paths, candidate_id, {rel: draft.files[rel] for rel in draft.created})
    for rel in draft.touched:
        sources.write_files(campaign.paths.workspace, {rel: draft.files[rel]})
        faults.checkpoint("evaluate:applied_partially")
    faults.checkpoint("evaluate:applied")


def refuse_repeated_arm(
    campaign,
    manifest: manifests.CandidateManifest,
    source: str,
    effective: list[str],
    best_source: str,
    best_args: list[str],
) -> None:
    """A literature-linked candidate must run something new: refused (exit 2, nothing written) when its effective
    source and run args equal the best's or a scored linked candidate's (the same execution, a guaranteed tie
    that would spend one attempt). Crashed candidates may be replayed (`crash_replay`)."""
    config = campaign.config
    same = None
    if source == best_source and runargs.same_configuration(config, effective, best_args):
        same = f"the best configuration ({campaign.best_row().name})"
    for other in campaign.manifests():
        if same or other.candidate_id == manifest.candidate_id or other.status not in (v.KEEP, v.DISCARD):
            continue
        if other.literature_event_id and other.candidate_source_sha256 == source:
            if runargs.same_configuration(config, effective, other.effective_run_args or []):
                same = f"linked candidate {other.candidate_id} (literature event {other.literature_event_id})"
    if same:
        raise CampaignError(
            f"candidate {manifest.candidate_id} would run exactly what {same} ran (same source and run args): "
            "a guaranteed tie that teaches nothing; change its source so the arm tests something else, or abandon it"
        )


def check_reimport(campaign, manifest: manifests.CandidateManifest, draft, effective: list[str], now: str) -> None:
    """The candidate's job.py, seen over the workspace, must import with the same fixed budget and objective, and
    must not read any of the `effective` run args as a file of more arguments."""
    paths = campaign.paths
    folder = paths.candidate_dir(manifest.candidate_id)
    settings = campaign.settings.to_json()
    known = not draft.patch and contract.run_args_known_unmoving(
        campaign.config, paths, settings.get("base_args") or [], effective
    )
    if known:  # the job as imported, and its perturbed runs already cleared every option these args set
        config = copy.deepcopy(campaign.config)
        config["import"]["dry_run"]["run_args_changes"] = []
        config["import"]["dry_run"]["run_args_settled_by"] = "perturbed runs of the import"
    else:
        try:
            config = contract.import_config(paths.job, settings, overlay=draft.files, run_args=effective)
        except CampaignError as error:
            atomic.write_text(folder / "import.log", f"{now} re-import rejected: {error}\n")
            raise CampaignError(f"the candidate's job.py is no longer admissible ({error}); fix the draft") from None
    contract.write(folder / "candidate_autofl.yaml", config)
    problems = []
    if contract.budget_digest(config) != campaign.meta["fixed_budget_sha256"]:
        problems.append("it changes the fixed budget " + _budget_text(campaign.config, config))
    before, after = contract.objective_invariants(campaign.config), contract.objective_invariants(config)
    changed = [key for key in before if before[key] != after[key]]
    if changed:
        problems.append(f"it changes the objective ({', '.join(changed)})")
    problems += data_fixed.reimport_problems(campaign.config, config)
    ran = (config.get("import") or {}).get("dry_run") or {}
    if ran.get("run_args_changes"):
        problems.append(f"its dry run asks NVFLARE for something else ({'; '.join(ran['run_args_changes'])})")
    smuggled = importer.fromfile_arguments(config, effective)
    if smuggled:
        problems.append(
            f"its job.py reads the run arg {smuggled[0]!r} as a file of more arguments (fromfile_prefix_chars)"
        )
    verdict = "; ".join(problems) if problems else "fixed budget and objective unchanged"
    how = " (settled by the import's perturbed runs, no dry run)" if known else ""
    log = f"{now} re-import: {verdict}{how}\n"
    atomic.write_text(folder / "import.log", log)
    if problems:
        raise CampaignError(
            f"candidate {manifest.candidate_id} rejected: {'; '.join(problems)}; the comparison "
            "budget and the metric must stay as imported"
        )


def _budget_text(old: dict, new: dict) -> str:
    parts = []
    for key in contract.BUDGET_FIELDS:
        a = ((old.get("fixed_budget") or {}).get(key) or {}).get("value")
        b = ((new.get("fixed_budget") or {}).get(key) or {}).get("value")
        if a != b:
            parts.append(f"{key} {a} -> {b}")
    return f"({', '.join(parts)})" if parts else "(pinning arguments differ)"


def drift_of(campaign, draft, *, sealed: bool) -> list[str]:
    """Managed files of the workspace that differ from the best (plus the draft, when it was applied)."""
    applied = {} if sealed else sources.file_hashes({rel: draft.files[rel] for rel in draft.touched})
    return sources.differing(campaign.paths.workspace, dict(campaign.best().hashes, **applied))


def exit_code(statuses: list[str]) -> int:
    """75 when any trial met the sandbox, else 1 when any crashed, else 0."""
    if v.INFRASTRUCTURE_RETRY in statuses:
        return EXIT_SANDBOX
    return EXIT_UNSCORED if v.CRASH in statuses else EXIT_OK


def conclude(
    campaign, manifest: manifests.CandidateManifest, draft, result, drift: list[str], now: str
) -> tuple[manifests.CandidateManifest, dict]:
    """Decide `manifest`'s trial `result` against the best at this moment and finalize it; returns the final
    manifest and the envelope fields of what happened."""
    paths = campaign.paths
    candidate_id = manifest.candidate_id
    outcome, reason = result.outcome, result.failure_reason
    if drift and outcome != v.OUTCOME_INFRASTRUCTURE_RETRY:
        outcome, reason = v.OUTCOME_CRASH, f"managed source changed while the candidate ran: {', '.join(drift)}"
    status = finalize.decide(
        outcome,
        result.score if outcome == v.OUTCOME_SUCCESS else None,
        best_score=v.bar_to_beat(campaign.rows(), campaign.settings.mode),  # the best's mean with replicates
        mode=campaign.settings.mode,
        margin=noise.keep_margin(campaign),
    )
    manifest = manifest.replace(
        result=manifests.ManifestResult.of(
            score=result.score if outcome == v.OUTCOME_SUCCESS else None,
            metric_name=result.metric_name or None,
            metric_source=result.metric_source or None,
            metric_artifact=result.metric_artifact or None,
            runtime_seconds=result.runtime_seconds,
            run_command=result.run_command,
            failure_reason=reason or None,
            budget=result.budget,
            **frozen_eval.manifest_fields(result),
        ),
        artifacts=manifest.artifacts.replace(
            run=paths.rel(paths.run_dir(candidate_id)),
            simulator_result_name=result.artifacts.get("simulator_result_name"),
        ),
    )
    compared = what_happened.compared_with(campaign)
    final = finalize.finalize(
        campaign, manifest, status=status, draft_files=draft.files if status == v.KEEP else None, now=now
    )
    extras = {
        "candidate_manifest": str(paths.manifest(candidate_id)),
        "candidate_status": status,
        **what_happened.outcome(campaign, compared, score=manifest.result.score, name=candidate_id),
    }
    return final, extras


def unapply(campaign, manifest: manifests.CandidateManifest, prepared: manifests.CandidateManifest) -> None:
    """Take a rejected or interrupted candidate out of the workspace; its manifest is exactly as prepared again."""
    paths = campaign.paths
    snapshots.restore_workspace(paths, campaign.best(), remove=manifest.created_files, candidate=manifest.candidate_id)
    campaign_trial.clear_marker(campaign)
    if not prepared.artifacts.patch:
        (paths.candidate_dir(manifest.candidate_id) / "candidate.patch").unlink(missing_ok=True)
    manifests.write(paths, prepared)


def unapply_unfinished(campaign, staged: list[Staged], statuses: tuple[str, ...]) -> None:
    """The undo of an evaluate that stopped before its first finalize: every candidate of it still in one of
    `statuses` is taken out of the workspace and prepared again. A failing undo (e.g. the disk is still full)
    stops here: the next action's recovery finishes it."""
    for item in staged:
        current = campaign.manifest_of(item.manifest.candidate_id)
        if current is None or current.status not in statuses:
            continue
        try:
            unapply(campaign, current, item.manifest)
        except OSError:
            return
    campaign_trial.clear_marker(campaign)


def _patch_stats(draft) -> dict:
    added = sum(1 for line in draft.patch.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in draft.patch.splitlines() if line.startswith("-") and not line.startswith("---"))
    return {"files": len(draft.touched), "added": added, "removed": removed}
