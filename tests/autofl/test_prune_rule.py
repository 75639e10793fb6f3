"""The pruning rule (campaign/prune.py) on synthetic curves, pure."""

import math

import pytest
from autofl_core.campaign import ledger, prune

BEST = {0: 0.50, 1: 0.70, 2: 0.80, 3: 0.85, 4: 0.88, 5: 0.90}  # six rounds


def _row(**values):
    """A ledger row as the ledger reads it back (a writer's columns, the rest empty)."""
    return ledger.LedgerRow.from_row(values)


def curve(*values):
    return dict(enumerate(values))


def decide(candidate, *, best=BEST, replicates=(), mode="max", band=None, total=6, rule=None):
    return prune.decide(
        candidate, best, list(replicates), mode=mode, band=band, total_rounds=total, rule=rule or prune.Rule()
    )


def test_a_hopeless_candidate_is_pruned_at_half_the_budget_with_the_reason():
    decision = decide(curve(0.30, 0.31, 0.32))
    assert decision.prune and decision.round == 3
    assert decision.reason == "pruned at round 3 of 6: 0.32 vs best 0.8, margin 0.08"
    assert prune.is_pruned(_row(status="discard", failure_reason=decision.reason))


def test_never_before_the_minimum_fraction_of_the_budget():
    assert not decide(curve(0.1, 0.1)).prune  # round 2 of 6 < 3
    assert decide(curve(0.1, 0.1), rule=prune.Rule(min_fraction=0.3)).prune  # ceil(1.8) = 2
    assert not decide(curve(0.1, 0.1, 0.1, 0.1), rule=prune.Rule(min_fraction=0.8)).prune  # 4 < ceil(4.8)
    assert decide(curve(0.1, 0.1, 0.1, 0.1, 0.1), rule=prune.Rule(min_fraction=0.8)).prune


def test_a_late_bloomer_that_catches_up_after_half_is_not_pruned():
    # trails badly at rounds 1-2, within the margin from round 3 on, wins at the end
    bloomer = [0.20, 0.40, 0.75, 0.84, 0.89, 0.93]
    for rounds in range(1, 6):
        assert not decide(curve(*bloomer[:rounds])).prune, rounds


def test_k_consecutive_trailing_rounds_are_needed():
    # rounds 2 and 4 are within the margin, 3 and 5 trail: never two in a row
    zigzag = [0.3, 0.68, 0.5, 0.84, 0.5]
    assert not any(decide(curve(*zigzag[:n])).prune for n in range(1, 6))
    assert decide(curve(*zigzag[:3]), rule=prune.Rule(k=1)).prune
    assert not decide(curve(0.1, 0.1, 0.1), rule=prune.Rule(k=4)).prune  # k above the rounds seen so far
    assert decide(curve(0.1, 0.1, 0.1, 0.1), rule=prune.Rule(k=4)).prune


def test_the_last_round_is_never_pruned():
    assert not decide(curve(0.1, 0.1, 0.1, 0.1, 0.1, 0.1)).prune
    assert not decide(curve(0.1, 0.1), total=2).prune
    assert not decide(curve(0.1), total=None).prune


@pytest.mark.parametrize(
    ("band", "value", "pruned"),
    [
        (0.01, 0.80 - 0.0301, True),  # margin 3 x 0.01 = 0.03 at round 3 (reference 0.80)
        (0.01, 0.80 - 0.0299, False),
        (0.0, 0.80 - 0.0161, True),  # a band of 0 (identical reruns): 2 % of the reference, 0.016
        (0.0, 0.80 - 0.0159, False),
        (None, 0.80 - 0.0801, True),  # nothing measured: 10 % of the reference, 0.08
        (None, 0.80 - 0.0799, False),
    ],
)
def test_noise_band_edges(band, value, pruned):
    # round 2 trails by far more than any margin: round 3 alone decides
    assert decide({0: 0.1, 1: 0.1, 2: value}, band=band).prune is pruned


def test_a_round_that_exactly_meets_the_margin_does_not_trail():
    assert not prune.trails(0.5, 0.75, 0.25, "max")
    assert prune.trails(0.5 - 1e-9, 0.75, 0.25, "max")


def test_direction_min_prunes_a_loss_that_stays_high():
    best_loss = {0: 2.0, 1: 1.0, 2: 0.6, 3: 0.5, 4: 0.45, 5: 0.4}
    decision = decide(curve(2.0, 1.9, 1.8), best=best_loss, mode="min")
    assert decision.prune and decision.reason == "pruned at round 3 of 6: 1.8 vs best 0.6, margin 0.06"
    assert not decide(curve(2.0, 1.0, 0.62, 0.5), best=best_loss, mode="min").prune  # within 10 % of 0.6
    assert not decide(curve(2.0, 0.5, 0.3), best=best_loss, mode="min").prune  # lower is better


def test_replicates_mean_is_the_reference():
    replicate = {0: 0.40, 1: 0.60, 2: 0.60}  # the best was lucky at round 3: the mean is 0.70
    assert decide(curve(0.1, 0.1, 0.71), replicates=[]).prune is True  # vs the best alone (0.80, margin 0.08)
    assert decide(curve(0.1, 0.1, 0.71), replicates=[replicate]).prune is False
    short = {0: 0.5}  # a replicate that did not reach the round is left out of that round's mean
    assert prune.reference_at(2, BEST, [short, replicate]) == pytest.approx(0.70)


def test_rounds_without_a_reference_or_missing_rounds_keep_it_running():
    assert not decide(curve(0.1, 0.1, 0.1), best={0: 0.5, 1: 0.7}).prune  # the best has no round 3
    assert not decide({0: 0.1, 2: 0.1}).prune  # round 2 never reported: not k consecutive
    assert not decide({}).prune


def test_a_non_finite_round_trails():
    assert decide(curve(0.1, math.nan, math.inf)).prune
    assert decide(curve(0.1, math.nan, math.inf)).reason.startswith("pruned at round 3 of 6: inf vs best 0.8")


def test_is_pruned_only_for_the_prune_reason():
    assert not prune.is_pruned(_row(status="discard", failure_reason="within noise (delta=+0.001, margin=0.01)"))
    assert not prune.is_pruned(_row(status="discard", failure_reason=None))


def test_the_plot_draws_a_pruned_discard_apart_from_crashes_and_counts_it():
    from autofl_core.campaign import plot

    reason = "pruned at round 3 of 6: 0.32 vs best 0.8, margin 0.08"
    rows = [
        _row(status="baseline", name="baseline", score=0.8),
        _row(status="discard", name="far", score=None, failure_reason=reason),
        _row(status="crash", name="broken", score=None, failure_reason="exit_code=1"),
    ]
    data = plot.plot_data(rows, "max")
    assert [(f["name"], f["pruned"]) for f in data["failures"]] == [("far", True), ("broken", False)]
    assert "1 discarded (1 pruned), 1 crashed" in plot.title_text(data, "accuracy", "max")
    assert "    2  discard   (pruned)  far" in plot.text_summary(data, "t")


def test_the_instruction_says_what_a_prune_means_only_while_the_latest_attempt_is_one():
    from autofl_core.campaign import instructions

    reason = "pruned at round 3 of 6: 0.32 vs best 0.8, margin 0.08"
    rows = [_row(status="baseline", name="baseline"), _row(status="discard", name="far", failure_reason=reason)]
    note = instructions.pruned_note(rows)
    assert note.startswith(f"The last candidate, far, was pruned ({reason})") and "move the next hypothesis" in note
    later = rows + [_row(status="literature", name="lit-0001")]  # not an attempt: the prune is still the latest
    assert instructions.pruned_note(later) == note
    assert instructions.pruned_note(rows + [_row(status="keep", name="near", failure_reason="")]) is None
