"""The sentences an agent reads in the campaign state (`agent_instruction`, `accounting_instruction`).

Pure text from state fields. While a final answer is not allowed, every agent instruction starts with
`NO_FINAL` and names the exact next step. Usage: called by `guard.compute_state` and the runner overrides.
"""

from __future__ import annotations

from . import gains, prune
from . import vocabulary as v
from .compare import format_score
from .ledger import LedgerRow

NO_FINAL = "Do not produce a final answer."
BATCH_ROLES = ("a faithful implementation", "a tuned variant", "an ablation")
ARM_DESIGN = (
    "Make each arm able to teach something (a linked candidate that would run the same source and arguments as the "
    "best or another arm is refused): an ablation removes one component of the faithful version; when the faithful "
    "version did not beat the best, the third arm tests the idea's strongest alternative setting instead of "
    "switching it off (switched off, it usually runs like the best: a guaranteed tie)."
)


UNCAPPED_ASK = "This campaign is uncapped:"


def agent_instruction(state: dict, settings, family: str | None) -> str:
    """The instruction for `state["reason"]`; `settings` is the GuardSettings the state was computed with."""
    builder = _BUILDERS[state["reason"]]
    sentence = builder(state, settings, family)
    return sentence if state["final_response_allowed"] else f"{NO_FINAL} {sentence}"


def accounting_instruction(state: dict, abandoned: int | None) -> str:
    """How the candidate budget is being counted, in one or two sentences."""
    attempts, scored = state["candidate_attempts"], state["scored_attempts"]
    if state["candidate_cap"] is None:
        budget = "the campaign is uncapped"
    else:
        budget = f"cap {state['candidate_cap']}, {state['remaining_candidates']} remaining"
    drafts = "abandoned drafts" if abandoned is None else f"abandoned drafts ({abandoned} so far)"
    return (
        f"{attempts} candidate attempt(s) counted ({scored} scored; {budget}). Only keep, discard and crash rows "
        f"count; the baseline, literature rows, infrastructure retries and {drafts} never count."
    )


def pruned_note(rows: list[LedgerRow]) -> str | None:
    """What a prune of the latest candidate attempt means for the next hypothesis, or None when it was not pruned."""
    last = next((row for row in reversed(rows) if row.status in v.ATTEMPTS), None)
    if last is None or not prune.is_pruned(last):
        return None
    return (
        f"The last candidate, {last.name}, was pruned ({last.failure_reason}): it trailed the best at the "
        "same rounds by more than the noise margin, so it has no final score or model and is never kept. Do not "
        "retry small variations of that change; move the next hypothesis away from it (the opposite direction, a "
        "gentler setting, or another component)."
    )


_OVERRIDES = {  # the runner's lifecycle overrides of next_action, and what each tells the agent
    v.NextAction.REPAIR_BASELINE: (
        "The baseline has no score yet: read its run.log, fix the environment or the metric extraction "
        "(never the job's objective or budget), then rerun `initialize` to retry the baseline."
    ),
    v.NextAction.SUBMIT_BASELINE: (
        "The baseline must run in the real environment: with the user's explicit authorization for it, run "
        "`submit --baseline --confirm-user-authorized --startup-kit KIT` (it exports, submits, waits, downloads "
        "and records; after a submission by hand, `record --baseline --artifacts DIR` instead)."
    ),
    v.NextAction.AWAIT_SIMULATION_RUNNER_APPROVAL: (
        "The host sandbox denied the simulation (exit 75, not counted as a candidate): ask the user to approve "
        "running the runner outside the sandbox for this exact interpreter, runner and job.py, then retry."
    ),
    v.NextAction.EVALUATE_CANDIDATE: (
        "A prepared candidate with run args recorded at prepare is pending: run `evaluate` (it uses those run "
        "args; --run-args is not needed again). Edit its candidate source directory first only if it should "
        "also change source, or run `abandon` to drop it without counting it."
    ),
    v.NextAction.SUBMIT_EVALUATION: (
        "A run was downloaded and awaits its frozen evaluation: with the user's yes, run the same submit with "
        "--evaluation (`submit --baseline --evaluation` or `submit --manifest M --evaluation`, "
        "--confirm-user-authorized and the same kit). It submits the evaluation job of the run's global model "
        "to the sites and records the measured score; keep or discard is decided only then."
    ),
}


def override_instruction(next_action: str) -> str:
    """The instruction for a runner lifecycle override of `next_action`."""
    if next_action not in _OVERRIDES:
        raise ValueError(f"unknown next_action override {next_action!r}; expected one of: {', '.join(_OVERRIDES)}")
    return f"{NO_FINAL} {_OVERRIDES[next_action]}"


def replicate_advice(state: dict) -> str | None:
    """When to rerun the best configuration with `replicate`, or None.

    Measured spread: before the final report when the best beat the baseline by less than twice it (stdev of the
    best's scores). A best whose own gain is `within noise` of the spread measured on an earlier best: a replicate
    before more candidates build on it. Nothing measured: one replicate before more candidates build on a best
    whose own gain is `unverified` (below the metric's resolution or the spread typical for the metric, `gains.verdict`), and once
    per uncapped campaign while the ledger holds no replicate row at all (a new best does not ask again). The
    count is `replicate_count`: one rerun when job.py has no seed option.
    """
    noise = state.get("noise")
    if noise is None or state["baseline_status"] != v.BaselineStatus.COMPLETE:
        return None
    gain = state["improvement"]
    context = state.get("noise_context") or {}
    count = replicate_count(context)
    if noise["stdev"] is not None:
        if gain is not None and 0 < gain < 2 * noise["stdev"]:
            return (
                f"The best beat the baseline by {gain:+.6f}, less than twice the measured spread (stdev "
                f"{noise['stdev']} over {noise['replicates'] + 1} runs of {noise['of']}): run `replicate --count "
                f"{count}` before the final report, and call the gain unproven if it stays inside the spread."
            )
        return None
    if context.get("best_gain_verdict") == gains.WITHIN:
        return (
            f"The best {noise['of']} gained {context['best_gain']:+.6f} over {context['best_gain_over']}, within the "
            f"run-to-run noise this campaign measured: run `replicate --count {count}` before more candidates build "
            f"on it (the report marks the gain within noise).{replicate_note(context)}"
        )
    if context.get("best_gain_verdict") == gains.UNVERIFIED:
        return (
            f"The best {noise['of']} gained {context['best_gain']:+.6f} over {context['best_gain_over']}, "
            f"{context['unverified_because']}, and no run-to-run noise is measured yet: run `replicate --count 1` "
            f"before more candidates build on it (the report marks the gain unverified).{replicate_note(context)}"
        )
    if state["candidate_cap"] is None and not context.get("campaign_replicates"):
        return (
            f"{UNCAPPED_ASK} run `replicate --count {count}` once (this campaign asks only once; "
            "replicates never count as attempts) to measure the run-to-run spread of the best."
            f"{replicate_note(context)}"
        )
    return None


def without_replicate_advice(state: dict) -> str:
    """`agent_instruction` without the replicate advice: `replicate` runs simulations only, so a poc/prod campaign
    is never asked for one (its noise stays unmeasured and its small gains `unverified`)."""
    advice = replicate_advice(state)
    text = state["agent_instruction"]
    return text.replace(f" {advice}", "") if advice else text


def replicate_count(context: dict) -> int:
    """How many reruns to ask for: one when replicates are identical reruns (it shows whether the job is
    deterministic; more identical reruns teach nothing more), otherwise three."""
    return 1 if context.get("replicates") == gains.IDENTICAL_RERUNS else 3


def replicate_note(context: dict) -> str:
    """What a replicate of this job shows: with a seed option another seed, without one an identical rerun."""
    how = context.get("replicates")
    if how == gains.IDENTICAL_RERUNS:
        return (
            " job.py has no seed option, so replicates are identical reruns: a different score shows the runs are "
            "not deterministic (thread scheduling, GPU kernels, unseeded shuffling) and how much that moves the "
            "metric; an identical score shows they are reproducible, not that the gain would survive another data "
            "order or initialisation."
        )
    if how == gains.SEEDED_RERUNS:
        return " Replicates pass other seeds, so their spread includes data order and initialisation."
    return ""


def asks_to_replicate(state: dict) -> bool:
    """True when the agent would otherwise propose a candidate but the instruction asks to replicate the best first
    because its gain is within the measured noise or unverified (then `next_action` is `replicate`). The
    once-per-uncapped-campaign ask and the advice beside a literature loop or the final report leave it as is."""
    if state["reason"] != v.Reason.CONTINUE:
        return False
    advice = replicate_advice(state)
    return bool(advice) and advice in state["agent_instruction"] and not advice.startswith(UNCAPPED_ASK)


def _with_advice(sentence: str, state: dict) -> str:
    advice = replicate_advice(state)
    return f"{sentence} {advice}" if advice else sentence


def batch_roles(completed: int, required: int) -> list[str]:
    """What the remaining members of a literature batch should be, in order."""
    roles = [BATCH_ROLES[i] if i < len(BATCH_ROLES) else "another source-backed variant" for i in range(required)]
    return roles[completed:]


def _stop_pending(state: dict, settings, family) -> str:
    return (
        f"A stop file is present ({', '.join(state['stop_files'])}) while a candidate is pending: run `abandon` "
        "to release it (`abandon --manifest PATH` for each one when several are pending, as `status` lists them; "
        "it does not count as an attempt), then run `status` and `report`, and write the final "
        "answer from autofl_report.md."
    )


def _stop_file(state: dict, settings, family) -> str:
    return (
        f"A stop file is present ({', '.join(state['stop_files'])}): propose no more candidates; run `report` "
        f"for the final report (not --confirm-interrupted: a stop file finishes the campaign) and write the final "
        f"answer from autofl_report.md ({_best_vs_baseline(state)})."
    )


def _pending(state: dict, settings, family) -> str:
    if state["next_action"] == v.NextAction.SUBMIT_CANDIDATE:
        return (
            "A candidate is ready for external execution: only with the user's explicit authorization for this run, "
            "run `submit --confirm-user-authorized --startup-kit KIT` (it exports, submits, waits, downloads and "
            "records; after a submission by hand, `record` with --artifacts, --score or --failure-reason)."
        )
    return (
        "A prepared candidate is pending: edit only its candidate source directory, then run `evaluate` "
        "(or `abandon` to drop it without counting it)."
    )


def ready_candidates(names: list[str]) -> str:
    """The runner's addition to the `submit_candidate` instruction: which candidates are ready, and how each is
    submitted and recorded."""
    return (
        f"Ready for external execution: {', '.join(names)}. Each run needs its own explicit yes (a yes for one "
        "covers no other, unless the user approved these runs in writing up front within the cap); submit each "
        "with `submit --manifest` (or by hand from the `export_from` folder `status` lists, then `record "
        "--manifest`), in any order: each is decided against the best at the moment it is recorded."
    )


def _cap(state: dict, settings, family) -> str:
    return _with_advice(
        f"The candidate cap is used up ({state['candidate_attempts']} of {state['candidate_cap']} attempts): write "
        f"the final report ({_best_vs_baseline(state)}). Only the user can approve a higher cap.",
        state,
    )


def _crashes(state: dict, settings, family) -> str:
    return (
        f"The last {settings.hard_crash_threshold} candidate attempts all crashed: write the final report with "
        "their failure reasons and resolve the cause with the user before running more candidates."
    )


def _batch(state: dict, settings, family) -> str:
    batch = state["exploration_batch"]
    missing = batch["required"] - batch["completed"]
    roles = ", ".join(batch_roles(batch["completed"], batch["required"]))
    event = batch["literature_event_id"]
    if event:
        where = f"literature event {event} (ledger row {batch['event_index']})"
        how = f"`prepare --literature-event {event} --name <name> --hypothesis <why>`"
    else:
        where = f"the unlabelled literature event at ledger row {batch['event_index']}"
        how = "`prepare --name <name> --hypothesis <why>`"
    return (
        f"Develop the exploration batch of {where}: it needs {missing} more scored source-backed candidate(s): "
        f"{roles}. For each, run {how}, change the source in the returned directory (argument-only changes do "
        f"not count), then run `evaluate`. {ARM_DESIGN}"
    )


def _family(state: dict, settings, family) -> str:
    return (
        f"The last {settings.family_repeat_limit} scored candidates were all argument-only changes in the "
        f"'{family}' family: prepare a source-edit candidate from a different algorithm family next."
    )


def _plateau(state: dict, settings, family) -> str:
    plateau = state["plateau"]
    follow_up = (
        f"then develop its batch of {settings.exploration_batch_size} source-backed candidates"
        if settings.exploration_batch_size
        else "then prepare a source-edit candidate based on it"
    )
    return _with_advice(
        f"{plateau['scored_since_reset']} scored candidates since ledger row {plateau['reset_row_index']} brought no "
        f"improvement of more than {plateau['min_delta']}: run the literature loop (research a published method, "
        "record it with `record --literature --hypothesis <sources and decision> --family <family>`, "
        f"{follow_up}).",
        state,
    )


def _continue(state: dict, settings, family) -> str:
    if state["candidate_cap"] is None:
        budget = "the campaign is uncapped"
    else:
        budget = f"{state['remaining_candidates']} of {state['candidate_cap']} candidate attempts remain"
    return _with_advice(
        "Propose the next candidate: run `prepare --name <name> --hypothesis <why>`, edit only the returned "
        f"source directory, then run `evaluate`; {budget}.{plateau_note(state)}",
        state,
    )


def plateau_note(state: dict) -> str:
    """` Plateau: n of t ...`: the plateau counter and when the literature loop will be due ("" without one)."""
    plateau = state["plateau"]
    if not plateau["available"]:
        return ""
    since, threshold = plateau["scored_since_reset"], plateau["threshold"]
    left = max(threshold - since, 0)
    due = (
        "now"
        if left == 0
        else f"after {left} more scored candidate(s) without a gain of more than {plateau['min_delta']}"
    )
    return f" Plateau: {since} of {threshold} scored candidates without a real gain; a literature pass is due {due}."


def _best_vs_baseline(state: dict) -> str:
    best, baseline = state["best_score"], state["baseline_score"]
    if best is None:
        return "no scored result"
    if baseline is None:
        return f"best {format_score(best)}, no scored baseline"
    return f"best {format_score(best)} vs baseline {format_score(baseline)}"


_BUILDERS = {
    v.Reason.MANUAL_STOP_PENDING_CANDIDATE: _stop_pending,
    v.Reason.MANUAL_STOP_FILE: _stop_file,
    v.Reason.PENDING_CANDIDATES: _pending,
    v.Reason.CANDIDATE_CAP_EXHAUSTED: _cap,
    v.Reason.HARD_REPEATED_CRASH_BLOCKER: _crashes,
    v.Reason.LITERATURE_EXPLORATION_BATCH: _batch,
    v.Reason.FAMILY_REPEAT_LIMIT: _family,
    v.Reason.PLATEAU_LITERATURE: _plateau,
    v.Reason.CONTINUE: _continue,
}
