"""Is a gain real (campaign/gains.py): the verdict, the metric's resolution, the spread typical for a metric; and
the replicate advice built on them (campaign/instructions.py), pure."""

import pytest
from autofl_core.campaign import gains, guard, instructions, ledger


@pytest.mark.parametrize(
    ("gain", "band", "metric", "reference", "resolution", "expected"),
    [
        (0.003, None, "accuracy", 0.75, None, "unverified"),  # below the typical 0.01 of an accuracy
        (0.02, None, "accuracy", 0.75, None, None),  # nothing suggests luck
        (0.015, None, "val_acc", 0.75, 0.025, "unverified"),  # below one evaluation sample
        (0.03, None, "val_acc", 0.75, 0.025, None),
        (0.01, 0.02, "accuracy", 0.75, None, "within noise"),  # measured band decides
        (0.03, 0.02, "accuracy", 0.75, 0.05, "beyond noise"),  # measured beats the rules of thumb
        (0.05, None, "loss", 3.0, None, "unverified"),  # 2% of a loss of 3.0 is 0.06
        (0.07, None, "loss", 3.0, None, None),
        (0.0, None, "accuracy", 0.75, None, None),  # a tie is no gain
        (-0.1, 0.02, "accuracy", 0.75, None, None),
        (None, None, "accuracy", 0.75, None, None),
        (0.001, None, "custom", None, None, None),  # no basis for a guess
    ],
)
def test_verdict(gain, band, metric, reference, resolution, expected):
    assert gains.verdict(gain, band, metric=metric, reference=reference, resolution=resolution) == expected


def test_why_a_gain_is_unverified_names_the_rule():
    assert gains.unverified_because(0.01, metric="acc", reference=0.8, resolution=0.02) == (
        "smaller than one evaluation sample (resolution 0.020000)"
    )
    assert gains.unverified_because(0.004, metric="accuracy", reference=0.8, resolution=None) == (
        "smaller than the run-to-run spread typical for accuracy (about 0.01)"
    )
    assert gains.unverified_because(0.2, metric="accuracy", reference=0.8, resolution=0.02) is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("Accuracy of the network on the 10000 test images: 54 %", 10000),
        ("site=site-1 val_size=180 accuracy=0.79", 180),
        ("Validation samples: 12\nvalidation_set_size = 250", 250),  # the last report wins
        ("n_val=64", 64),
        ("num_test_samples=99", 99),
        ("test_loss=0.99 samples_seen=400", None),  # not an evaluation-set size
        ("accuracy=0.79 round=3", None),
        ("on the 0 test images", None),
    ],
)
def test_eval_size_from_the_job_output(text, size):
    assert gains.eval_size(text) == size


def test_resolution_only_for_metrics_that_count_samples():
    assert gains.resolution_of("val_acc", 180) == 0.005556
    assert gains.resolution_of("recall", 50) == 0.02
    assert gains.resolution_of("loss", 180) is None and gains.resolution_of("auc", 180) is None
    assert gains.resolution_of("accuracy", None) is None


def test_band_is_the_keep_margin_when_applied_else_twice_the_spread():
    assert gains.band(None) is None
    assert gains.band({"stdev": None, "applied": False, "margin": None}) is None
    assert gains.band({"stdev": 0.01, "applied": True, "margin": 0.02}) == 0.02
    assert gains.band({"stdev": 0.01, "applied": False, "margin": 0.0005}) == 0.02


def _rows(*scores):
    rows = [ledger.LedgerRow(status="baseline", name="baseline", score=scores[0], metric_name="accuracy")]
    rows += [
        ledger.LedgerRow(status="keep", name=f"k{i}", score=s, candidate_kind="source_edit")
        for i, s in enumerate(scores[1:])
    ]
    return rows


def test_the_guard_judges_the_best_s_own_gain_and_advises_one_replicate():
    state = guard.compute_state(_rows(0.75, 0.76, 0.763), {"max_candidates": 10}, stop_files_present=[])
    context = state["noise_context"]
    assert (context["best_gain"], context["best_gain_over"], context["best_gain_verdict"]) == (
        0.003,
        "k0",
        "unverified",
    )
    assert "run `replicate --count 1` before more candidates build on it" in state["agent_instruction"]
    assert "job.py has no seed option" not in state["agent_instruction"], "unknown here: the guard CLI has no job"
    seeded = guard.compute_state(
        _rows(0.75, 0.76, 0.763), {}, stop_files_present=[], noise_facts={"replicates": gains.SEEDED_RERUNS}
    )
    assert "Replicates pass other seeds" in seeded["agent_instruction"]
    identical = guard.compute_state(
        _rows(0.75, 0.76, 0.763), {}, stop_files_present=[], noise_facts={"replicates": gains.IDENTICAL_RERUNS}
    )
    assert "replicates are identical reruns" in identical["agent_instruction"]
    assert (
        guard.compute_state(_rows(0.75, 0.8), {}, stop_files_present=[])["noise_context"]["best_gain_verdict"] is None
    )


def test_no_advice_before_a_keep_or_after_a_measurement():
    assert (
        instructions.replicate_advice(guard.compute_state(_rows(0.75), {"max_candidates": 3}, stop_files_present=[]))
        is None
    )
    rows = _rows(0.75, 0.753) + [
        ledger.LedgerRow(status="replicate", name="replicate_k0_1", score=0.753, base_candidate="k0")
    ]
    state = guard.compute_state(rows, {"max_candidates": 3}, stop_files_present=[])
    assert state["noise_context"]["best_gain_verdict"] == "beyond noise"
    assert instructions.replicate_advice(state) is None
