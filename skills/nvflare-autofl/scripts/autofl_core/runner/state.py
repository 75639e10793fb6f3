"""The campaign state the runner writes, and the envelope every action prints.

`compute` = the pure guard (`guard.compute_state`) over the ledger, settings, stop files and pending
manifests, plus the runner-only fields and the lifecycle overrides the ledger cannot see (`repair_baseline`,
`submit_baseline`, `await_simulation_runner_approval`, `evaluate_candidate` for a pending candidate whose run
args prepare recorded: there is nothing left to edit, and `submit_evaluation` for a poc/prod run that awaits its
evaluation job); with candidates ready for external execution the agent
instruction names each of them. Usage::

    state = compute(campaign, now)
    write(campaign, state)                         # only when more than updated_at changed (or stamp=True)
    document = envelope(campaign.paths, state, {"initialized": True})
"""

from __future__ import annotations

from ..campaign import guard, guard_inputs, instructions
from ..campaign import vocabulary as v
from ..campaign.ledger import LedgerRow
from ..common import atomic, bounded
from . import frozen_eval, frozen_submit, noise, pointers
from . import settings as settings_mod
from .outcome import CampaignError
from .store import manifests as manifest_store

ENVELOPE_STATE_FIELDS = (
    "candidate_attempts",
    "decision",
    "reason",
    "next_action",
    "final_response_allowed",
    "candidate_cap",
    "candidate_cap_source",
    "remaining_candidates",
    "baseline_status",
    "baseline_score",
    "best_candidate",
    "best_score",
    "improvement",
    "abandoned_candidates",
    "agent_instruction",
    "required_exploration",
    "noise",
)
STOP_REASONS = (v.Reason.MANUAL_STOP_FILE, v.Reason.MANUAL_STOP_PENDING_CANDIDATE)


def compute(campaign, now: str, *, ignore_stop_files: bool = False) -> dict:
    """The full campaign state (schema nvflare.autofl.campaign_state.v1); with `ignore_stop_files`, the state the
    campaign would be in without its stop files (what was pending at a stop: `pending_at_stop`)."""
    paths, settings = campaign.paths, campaign.settings
    manifests = campaign.manifests()
    pending = [m for m in manifests if m.status in v.MANIFEST_IN_WORK]
    ready = [m for m in manifests if m.status == v.READY]
    stop_files = [] if ignore_stop_files else guard_inputs.present_stop_files(paths.workspace, settings.stop_files)
    rows = campaign.rows()
    state = guard.compute_state(
        rows,
        settings_mod.guard_settings(settings),
        stop_files_present=stop_files,
        pending_manifests=len(pending),
        ready_manifests=len(ready),
        noise_facts=noise.facts(campaign),
    )
    best = campaign.best_row()
    first_pending = (pending + ready)[0] if pending or ready else None
    state = guard.with_runner_fields(
        state,
        results=str(paths.results),
        mode=settings.mode,
        updated_at=now,
        abandoned_candidates=sum(1 for m in manifests if m.status == v.ABANDONED),
        best_candidate=best.name if best else None,
        best_source_sha256=_best_digest(campaign),
        pending_candidate_manifest=paths.rel(paths.manifest(first_pending.candidate_id)) if first_pending else None,
    )
    argument_only = bool(pending) and all(m.status == v.PREPARED and m.run_args for m in pending)
    scored_baseline = any(row.status == v.BASELINE and row.score is not None for row in rows)
    ready_names = [m.candidate_id for m in manifest_store.in_preparation_order(ready)]
    # a recorded baseline awaits nothing (a kill before the mark)
    evaluations = frozen_submit.awaiting(campaign, ([] if scored_baseline else [v.BASELINE_NAME]) + ready_names)
    override = lifecycle_override(
        state, rows, settings.env, argument_only_pending=argument_only, awaiting_evaluation=bool(evaluations)
    )
    state = guard.with_next_action_override(state, override) if override else state
    if settings.env != "sim":  # replicate runs simulations only
        state = dict(state, agent_instruction=instructions.without_replicate_advice(state))
    if state["next_action"] == v.NextAction.SUBMIT_EVALUATION:
        state = dict(state, agent_instruction=f"{state['agent_instruction']} Awaiting: {', '.join(evaluations)}.")
    if state["next_action"] == v.NextAction.SUBMIT_CANDIDATE:  # the guard counts them; the runner names them
        text = instructions.ready_candidates(ready_names)
        state = dict(state, agent_instruction=f"{state['agent_instruction']} {text}")
    return frozen_eval.with_state_fields(campaign, state, manifests)


def pending_at_stop(campaign, state: dict, now: str) -> dict | None:
    """What the campaign would have done next had no stop file been present, when `state` is a stop-file stop
    (`next_action`, `reason`, and the plateau and batch behind it); None otherwise."""
    if state["reason"] not in STOP_REASONS:
        return None
    unstopped = compute(campaign, now, ignore_stop_files=True)
    return {key: unstopped[key] for key in ("next_action", "reason", "plateau", "exploration_batch")}


def lifecycle_override(
    state: dict,
    rows: list[LedgerRow],
    env: str,
    *,
    argument_only_pending: bool = False,
    awaiting_evaluation: bool = False,
) -> v.NextAction | None:
    """The runner's next_action override for facts the ledger rows alone cannot express."""
    if state["reason"] in STOP_REASONS:
        return None
    if rows and rows[-1].status == v.INFRASTRUCTURE_RETRY:
        return v.NextAction.AWAIT_SIMULATION_RUNNER_APPROVAL
    if awaiting_evaluation:  # poc/prod with a frozen evaluator: a downloaded run waits for its measured score
        return v.NextAction.SUBMIT_EVALUATION
    if state["baseline_status"] != v.BaselineStatus.COMPLETE:
        return v.NextAction.REPAIR_BASELINE if env == "sim" else v.NextAction.SUBMIT_BASELINE
    if state["next_action"] == v.NextAction.EDIT_CANDIDATE and argument_only_pending:
        return v.NextAction.EVALUATE_CANDIDATE
    return None


def write(campaign, state: dict, *, stamp: bool = False) -> bool:
    """Write the state file unless only `updated_at` would change; True when it was written. With `stamp` (an
    action that added ledger rows) it is written anyway: its `updated_at` is when the campaign last ran a step."""
    previous = bounded.read_json_or_none(campaign.paths.state)
    if not stamp and not guard.differs_beyond_timestamp(previous, state):
        return False
    atomic.write_json(campaign.paths.state, state)
    return True


def envelope(paths, state: dict, extras: dict) -> dict:
    """The action's JSON answer: the named paths (each one exists, or is null with its reason under
    `unavailable`), the state fields and the action's extras."""
    document, unavailable = pointers.checked(paths.envelope_paths())
    if unavailable:
        document["unavailable"] = unavailable
    document.update({key: state[key] for key in ENVELOPE_STATE_FIELDS})
    document["plateau"] = guard.plateau_progress(state)
    document.update(extras)
    return document


def _best_digest(campaign) -> str | None:
    try:
        return campaign.best().digest
    except CampaignError:  # a damaged snapshot is reported by the actions that need it
        return None
