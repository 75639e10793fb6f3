"""The pure campaign state machine: definitions, every decision-table row, plateau and batch rules."""

import time

import pytest
from autofl_core.campaign import guard, ledger
from autofl_core.campaign.instructions import NO_FINAL

_counter = iter(range(10**9))


def row(status, score=None, *, kind="", family="", lit="", name=None):
    """A ledger row as `ledger.parse` returns it."""
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(score=None, runtime_seconds=None)
    values.update(status=status, score=score, candidate_kind=kind, algorithm_family=family, literature_event_id=lit)
    values["name"] = name or f"{status}-{next(_counter)}"
    return ledger.LedgerRow(**values)


def base(score=0.8):
    return row("baseline", score, name="baseline")


def discards(n, score=0.7, **extra):
    return [row("discard", score, **extra) for _ in range(n)]


def state_of(rows, *, stop=(), pending=0, ready=0, **settings):
    return guard.compute_state(
        rows,
        guard.GuardSettings(**settings),
        stop_files_present=list(stop),
        pending_manifests=pending,
        ready_manifests=ready,
    )


def decision(state):
    return state["decision"], state["reason"], state["next_action"], state["final_response_allowed"]


# --- definitions -----------------------------------------------------------------------------------


def test_attempts_exclude_baseline_literature_and_infrastructure_retry():
    rows = [
        base(),
        row("infrastructure_retry"),
        row("literature", lit="lit-0001"),
        row("keep", 0.9),
        row("discard", 0.85),
        row("crash"),
        row("infrastructure_retry"),
    ]
    state = state_of(rows, max_candidates=5)
    assert state["candidate_attempts"] == 3
    assert state["scored_attempts"] == 2
    assert state["remaining_candidates"] == 2
    assert state["candidate_cap_source"] == "explicit"


def test_literature_rows_are_recognised_by_status_only():
    rows = [base(), row("discard", 0.7, name="literature-review", kind="source_edit"), row("keep", 0.9, name="lit")]
    state = state_of(rows)
    assert state["candidate_attempts"] == 2
    assert state["plateau"]["last_literature_event_index"] == -1, "the reference's 'none'"
    assert state["exploration_batch"] is None


def test_best_baseline_and_improvement_max():
    rows = [base(0.8), row("discard", 0.95), row("keep", 0.85), row("keep", 0.9)]
    state = state_of(rows)
    assert state["best_score"] == 0.9, "discarded scores are never the best"
    assert state["baseline_status"] == "complete" and state["baseline_score"] == 0.8
    assert state["improvement"] == pytest.approx(0.1)
    assert state["plateau"]["best_name"] == rows[3].name
    assert state["plateau"]["best_scored_index"] == 2, "position among the retained scored rows, not ledger row 3"


def test_best_and_improvement_min_mode_are_direction_adjusted():
    rows = [base(0.5), row("keep", 0.4), row("discard", 0.45), row("keep", 0.3)]
    state = state_of(rows, mode="min")
    assert state["best_score"] == 0.3
    assert state["improvement"] == pytest.approx(0.2)
    assert state["plateau"]["best_scored_index"] == 2, "third retained scored row (ledger row 3)"


def test_tie_at_ledger_precision_is_not_better():
    rows = [base(0.906), row("keep", 0.9060000000000001)]
    state = state_of(rows)
    assert state["plateau"]["best_scored_index"] == 0
    assert state["best_score"] == 0.906
    assert state["improvement"] == 0.0


def test_unscored_baseline_is_pending():
    state = state_of([row("baseline", None, name="baseline"), row("infrastructure_retry")])
    assert state["baseline_status"] == "pending" and state["baseline_score"] is None
    assert state["best_score"] is None and state["improvement"] is None
    assert state["plateau"]["available"] is False


def test_baseline_retry_scores_complete_the_baseline():
    rows = [row("baseline", None, name="baseline"), row("baseline", 0.7, name="baseline_retry_1")]
    state = state_of(rows)
    assert state["baseline_status"] == "complete" and state["baseline_score"] == 0.7 and state["best_score"] == 0.7


def test_empty_ledger():
    state = state_of([])
    assert decision(state) == ("continue", "continue", "propose_candidate", False)
    assert state["candidate_attempts"] == 0 and state["remaining_candidates"] is None
    assert state["candidate_cap_source"] == "uncapped"


# --- the decision table, row by row ----------------------------------------------------------------


def test_row1_stop_file_with_pending_candidate():
    state = state_of([base()], stop=["STOP_AUTOFL"], pending=1)
    assert decision(state) == ("stop", "manual_stop_pending_candidate", "abandon_candidate", False)
    assert state["stop_files"] == ["STOP_AUTOFL"]
    assert state["agent_instruction"].startswith(NO_FINAL) and "`abandon`" in state["agent_instruction"]


def test_row2_stop_file_without_pending():
    state = state_of([base(), row("keep", 0.9)], stop=["STOP_AUTOFL", ".nvflare/autofl/STOP", "STOP_AUTOFL"])
    assert decision(state) == ("stop", "manual_stop_file", "final_report", True)
    assert state["stop_files"] == ["STOP_AUTOFL", ".nvflare/autofl/STOP"]
    assert not state["agent_instruction"].startswith(NO_FINAL)
    assert "final report" in state["agent_instruction"]


def test_row3_pending_prepared_candidate():
    state = state_of([base()], pending=1, max_candidates=1)
    assert decision(state) == ("continue", "pending_candidates", "edit_candidate", False)
    assert state["pending_candidates"] == 1
    assert "`evaluate`" in state["agent_instruction"]


def test_row3_candidate_ready_for_external_execution():
    state = state_of([base()], ready=1)
    assert decision(state) == ("continue", "pending_candidates", "submit_candidate", False)
    assert "`record`" in state["agent_instruction"]


def test_row3_pending_beats_exhausted_cap():
    state = state_of([base(), row("discard", 0.5)], pending=1, max_candidates=1)
    assert state["reason"] == "pending_candidates"


def test_row4_cap_exhausted():
    rows = [base(), row("literature", lit="lit-0001"), row("discard", 0.5), row("infrastructure_retry"), row("crash")]
    state = state_of(rows, max_candidates=2)
    assert decision(state) == ("stop", "candidate_cap_exhausted", "final_report", True)
    assert state["remaining_candidates"] == 0
    assert "2 of 2" in state["agent_instruction"]


def test_row4_cap_not_yet_exhausted():
    state = state_of([base(), row("discard", 0.5)], max_candidates=2)
    assert state["reason"] == "continue" and state["remaining_candidates"] == 1


def test_row5_hard_crash_blocker():
    rows = [base(), row("keep", 0.9)] + [row("crash") for _ in range(3)] + [row("infrastructure_retry")]
    rows += [row("crash") for _ in range(3)]
    state = state_of(rows)
    assert decision(state) == ("stop", "hard_repeated_crash_blocker", "final_report", True)
    assert "crashed" in state["agent_instruction"]


def test_row5_crash_streak_broken_by_a_scored_attempt():
    rows = [base()] + [row("crash") for _ in range(5)] + [row("discard", 0.1), row("crash")]
    assert state_of(rows)["reason"] == "continue"


def test_row5_threshold_zero_disables_the_blocker():
    rows = [base()] + [row("crash") for _ in range(10)]
    assert state_of(rows, hard_crash_threshold=0)["reason"] == "continue"
    assert state_of(rows, hard_crash_threshold=10)["reason"] == "hard_repeated_crash_blocker"
    assert state_of(rows, hard_crash_threshold=11)["reason"] == "continue"


def test_row4_cap_takes_precedence_over_crash_blocker():
    rows = [base()] + [row("crash") for _ in range(6)]
    assert state_of(rows, max_candidates=6)["reason"] == "candidate_cap_exhausted"


def test_row6_incomplete_batch_labelled():
    rows = [base(), row("literature", lit="lit-0001"), row("discard", 0.7, kind="source_edit", lit="lit-0001")]
    state = state_of(rows)
    assert decision(state) == ("continue", "literature_exploration_batch", "develop_literature_batch", False)
    assert state["required_exploration"] == "source_backed_exploration"
    assert state["exploration_batch"] == {
        "literature_event_id": "lit-0001",
        "event_index": 1,
        "required": 3,
        "completed": 1,
        "completion_index": None,
    }
    text = state["agent_instruction"]
    assert text.startswith(NO_FINAL)
    assert "lit-0001" in text and "2 more" in text and "a tuned variant, an ablation" in text
    assert "a faithful implementation" not in text and "--literature-event lit-0001" in text


def test_row6_crash_blocker_takes_precedence_over_batch():
    rows = [base(), row("literature", lit="lit-0001")] + [row("crash", kind="source_edit", lit="lit-0001")] * 6
    assert state_of(rows)["reason"] == "hard_repeated_crash_blocker"


def test_row7_family_stall_after_a_literature_event():
    rows = [base(), row("literature", lit="lit-0001")] + discards(3, kind="source_edit", lit="lit-0001")
    rows += discards(6, kind="argument_only", family="lr")
    state = state_of(rows)
    assert decision(state) == ("continue", "family_repeat_limit", "diversify_candidates", False)
    assert "'lr'" in state["agent_instruction"] and state["agent_instruction"].startswith(NO_FINAL)


def test_row7_no_family_stall_before_any_literature_event():
    rows = [base()] + discards(6, kind="argument_only", family="lr")
    assert state_of(rows)["reason"] == "continue"


@pytest.mark.parametrize(
    "tail",
    [
        discards(5, kind="argument_only", family="lr"),  # fewer than the limit
        discards(5, kind="argument_only", family="lr") + discards(1, kind="argument_only", family="momentum"),
        discards(5, kind="argument_only", family="lr") + discards(1, kind="source_edit", family="lr"),
        discards(6, kind="argument_only", family=""),  # no family named
    ],
)
def test_row7_no_family_stall_cases(tail):
    rows = [base(), row("literature", lit="lit-0001")] + discards(3, kind="source_edit") + tail
    assert state_of(rows)["reason"] == "continue"


def test_row7_crashes_do_not_hide_a_family_stall_and_limit_zero_disables():
    rows = [base(), row("literature", lit="lit-0001")] + discards(3, kind="source_edit")
    rows += (
        discards(3, kind="argument_only", family="lr") + [row("crash")] + discards(3, kind="argument_only", family="lr")
    )
    assert state_of(rows)["reason"] == "family_repeat_limit", "the window holds the last scored attempts"
    assert state_of(rows, family_repeat_limit=0)["reason"] == "continue"


def test_row6_batch_takes_precedence_over_family_stall():
    rows = [base(), row("literature", lit="lit-0001")] + discards(6, kind="argument_only", family="lr")
    assert state_of(rows)["reason"] == "literature_exploration_batch"


def test_row8_plateau_recommends_literature():
    rows = [base(0.8)] + discards(8)
    state = state_of(rows)
    assert decision(state) == ("continue", "plateau_literature", "run_literature_loop", False)
    plateau = state["plateau"]
    assert plateau["recommendation"] == "literature" and plateau["scored_since_reset"] == 8
    assert plateau["reset_row_index"] == 0 and plateau["threshold"] == 8
    assert "record --literature" in state["agent_instruction"]


def test_row8_family_stall_takes_precedence_over_plateau():
    rows = [base(), row("literature", lit="lit-0001")] + discards(3, kind="source_edit")
    rows += discards(8, kind="argument_only", family="lr")
    assert state_of(rows)["reason"] == "family_repeat_limit"


def test_row9_continue():
    state = state_of([base(0.8)] + discards(7), max_candidates=20)
    assert decision(state) == ("continue", "continue", "propose_candidate", False)
    assert state["plateau"]["recommendation"] == "continue", "never null"
    assert "13 of 20" in state["agent_instruction"]


def test_instruction_prefix_matches_final_flag_for_every_reason():
    scenarios = [
        state_of([base()], stop=["S"], pending=1),
        state_of([base()], stop=["S"]),
        state_of([base()], pending=1),
        state_of([base(), row("crash")], max_candidates=1),
        state_of([base()] + [row("crash")] * 6),
        state_of([base(), row("literature", lit="lit-0001")]),
        state_of([base()] + discards(8)),
        state_of([base()]),
    ]
    for state in scenarios:
        assert state["agent_instruction"].startswith(NO_FINAL) is (not state["final_response_allowed"]), state["reason"]


# --- plateau clock ---------------------------------------------------------------------------------


def test_plateau_new_best_resets_the_clock():
    rows = [base(0.8)] + discards(5) + [row("keep", 0.82)] + discards(7)
    state = state_of(rows)
    assert state["plateau"]["reset_row_index"] == 6 and state["plateau"]["scored_since_reset"] == 7
    assert state["reason"] == "continue"
    assert state_of(rows + discards(1))["reason"] == "plateau_literature"


def test_plateau_min_delta_is_respected():
    rows = [base(0.9)] + discards(5) + [row("keep", 0.9003)] + discards(2)
    state = state_of(rows)
    assert state["best_score"] == 0.9003, "the keep is the live best"
    plateau = state["plateau"]
    assert plateau["best_scored_index"] == 0 and plateau["best_score"] == 0.9, "but not a plateau reset"
    assert plateau["scored_since_reset"] == 8 and state["reason"] == "plateau_literature"
    assert state_of(rows, plateau_min_delta=0.0)["plateau"]["reset_row_index"] == 6


def test_plateau_min_delta_min_mode():
    rows = [base(0.5)] + discards(5, score=0.6) + [row("keep", 0.4995)] + discards(2, score=0.6)
    assert state_of(rows, mode="min")["plateau"]["reset_row_index"] == 0
    rows[6] = row("keep", 0.4994)
    assert state_of(rows, mode="min")["plateau"]["reset_row_index"] == 6


def test_completed_batch_resets_the_clock():
    rows = [base(0.8)] + discards(6) + [row("literature", lit="lit-0001")]
    rows += discards(3, kind="source_edit", lit="lit-0001")
    state = state_of(rows)
    plateau = state["plateau"]
    assert plateau["last_literature_event_index"] == 7
    assert plateau["last_batch_completion_index"] == 10 == plateau["reset_row_index"]
    assert plateau["scored_since_reset"] == 0 and state["reason"] == "continue"
    assert state["exploration_batch"]["completion_index"] == 10
    assert state_of(rows + discards(8))["reason"] == "plateau_literature"
    assert state_of(rows + discards(7))["reason"] == "continue"


def test_reset_point_is_the_later_of_best_and_batch_completion():
    rows = [base(0.8), row("literature", lit="lit-0001")] + discards(3, kind="source_edit") + [row("keep", 0.9)]
    rows += discards(2)
    plateau = state_of(rows)["plateau"]
    assert plateau["last_batch_completion_index"] == 4
    assert plateau["best_scored_index"] == 1, "the keep at ledger row 5 is the second retained scored row"
    assert plateau["reset_row_index"] == 5 and plateau["scored_since_reset"] == 2


def test_plateau_threshold_setting():
    rows = [base()] + discards(3)
    assert state_of(rows, plateau_threshold=3)["reason"] == "plateau_literature"
    assert state_of(rows, plateau_threshold=4)["reason"] == "continue"


# --- exploration batches ---------------------------------------------------------------------------


def test_unlabelled_attempts_belong_to_the_latest_event_before_them():
    rows = [base(), row("literature", lit="lit-0001")] + discards(1, kind="source_edit")
    rows += [row("literature", lit="lit-0002")] + discards(2, kind="source_edit")
    batch = state_of(rows)["exploration_batch"]
    assert batch["literature_event_id"] == "lit-0001" and batch["completed"] == 1, "earliest incomplete batch"
    rows += discards(2, kind="source_edit", lit="lit-0001")
    state = state_of(rows)
    assert state["reason"] == "literature_exploration_batch"
    assert state["exploration_batch"]["literature_event_id"] == "lit-0002"
    assert state["exploration_batch"]["completed"] == 2 and "1 more" in state["agent_instruction"]


def test_labelled_attempts_link_across_later_events():
    rows = [base(), row("literature", lit="lit-0001"), row("literature", lit="lit-0002")]
    rows += discards(3, kind="source_edit", lit="lit-0001") + discards(3, kind="source_edit")
    state = state_of(rows)
    assert state["reason"] == "continue"
    assert state["exploration_batch"] == {
        "literature_event_id": "lit-0002",
        "event_index": 2,
        "required": 3,
        "completed": 3,
        "completion_index": 8,
    }
    assert state["plateau"]["last_batch_completion_index"] == 8


def test_batch_ignores_argument_only_crashes_unknown_and_future_labels():
    rows = [base(), discards(1, kind="source_edit", lit="lit-0001")[0], row("literature", lit="lit-0001")]
    rows += discards(1, kind="argument_only") + [row("crash", kind="source_edit", lit="lit-0001")]
    rows += discards(1, kind="source_edit", lit="lit-0009") + discards(1, kind="", lit="lit-0001")
    batch = state_of(rows)["exploration_batch"]
    assert batch["completed"] == 0 and batch["completion_index"] is None


def test_completion_index_is_the_last_member_needed():
    rows = [base(), row("literature", lit="lit-0001")] + discards(5, kind="source_edit")
    batch = state_of(rows)["exploration_batch"]
    assert batch["completion_index"] == 4 and batch["completed"] == 3


def test_required_exploration_follows_next_action():
    """Exactly the two literature next actions require source-backed exploration (plateau included)."""
    plateau = [base()] + discards(8)
    state = state_of(plateau)
    assert state["next_action"] == "run_literature_loop"
    assert state["required_exploration"] == "source_backed_exploration"
    assert state_of([base()] + discards(2))["required_exploration"] is None
    overridden = guard.with_next_action_override(state, "repair_baseline")
    assert overridden["required_exploration"] is None


def test_batch_size_zero_disables_batches():
    rows = [base(), row("literature", lit="lit-0001")]
    state = state_of(rows, exploration_batch_size=0)
    assert state["exploration_batch"] is None and state["reason"] == "continue"
    assert state["required_exploration"] is None


def test_unlabelled_literature_event_instruction():
    rows = [base(), row("literature", lit="")]
    state = state_of(rows, exploration_batch_size=4)
    assert state["exploration_batch"]["literature_event_id"] is None
    assert "row 1" in state["agent_instruction"] and "another source-backed variant" in state["agent_instruction"]


# --- settings, runner merge, scale -----------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"mode": "up"},
        {"max_candidates": 0},
        {"plateau_threshold": 0},
        {"plateau_min_delta": -1},
        {"plateau_min_delta": float("nan")},
        {"hard_crash_threshold": -1},
        {"exploration_batch_size": 1.5},
        {"family_repeat_limit": True},
        {"unknown": 1},
    ],
)
def test_invalid_settings_raise(settings):
    with pytest.raises(ValueError):
        guard.compute_state([], settings, stop_files_present=[])


def test_settings_dict_equals_dataclass():
    rows = [base()] + discards(4)
    assert guard.compute_state(rows, {"plateau_threshold": 4}, stop_files_present=[]) == state_of(
        rows, plateau_threshold=4
    )


def test_with_runner_fields_merges_and_counts_abandoned():
    state = state_of([base()], max_candidates=3)
    view = guard.with_runner_fields(state, results="/w/results.tsv", mode="max", updated_at="2026-01-01T00:00:00Z")
    assert view["results"] == "/w/results.tsv" and view["mode"] == "max" and "best_candidate" not in view
    full = guard.with_runner_fields(
        state,
        results="/w/results.tsv",
        mode="max",
        updated_at="t",
        abandoned_candidates=2,
        best_candidate="baseline",
        best_source_sha256="0" * 64,
        pending_candidate_manifest=None,
    )
    assert full["abandoned_candidates"] == 2 and "(2 so far)" in full["accounting_instruction"]
    assert state["accounting_instruction"] != full["accounting_instruction"]
    with pytest.raises(ValueError, match="missing"):
        guard.with_runner_fields(state, results="r", mode="max", updated_at="t", abandoned_candidates=1)
    with pytest.raises(ValueError, match="unknown"):
        guard.with_runner_fields(state, results="r", mode="max", updated_at="t", best=1)


def test_next_action_override():
    state = state_of([row("baseline", None, name="baseline")])
    for action in ("repair_baseline", "submit_baseline", "await_simulation_runner_approval"):
        changed = guard.with_next_action_override(state, action)
        assert changed["next_action"] == action and changed["final_response_allowed"] is False
        assert changed["agent_instruction"].startswith(NO_FINAL) and changed["decision"] == state["decision"]
    with pytest.raises(ValueError):
        guard.with_next_action_override(state, "final_report")


def test_state_is_linear_in_literature_events():
    """Half the rows are literature events: a quadratic scan would take minutes here."""
    rows = [base()]
    for i in range(10_000):
        rows.append(row("literature", lit=f"lit-{i:04d}"))
        rows.append(row("discard", 0.5, kind="source_edit"))
    started = time.process_time()  # CPU time: a loaded machine does not make the scan look quadratic
    state = state_of(rows)
    assert time.process_time() - started < 2.0
    assert (
        state["exploration_batch"]["literature_event_id"] == "lit-0000" and state["exploration_batch"]["completed"] == 1
    )


def test_differs_beyond_timestamp():
    state = guard.with_runner_fields(state_of([base()]), results="/r", mode="max", updated_at="t1")
    assert not guard.differs_beyond_timestamp(state, {**state, "updated_at": "t2"})
    assert guard.differs_beyond_timestamp(state, {**state, "updated_at": "t2", "candidate_attempts": 1})
    assert guard.differs_beyond_timestamp(None, state)
