"""Noise floor in the pure parts: replicate rows in the ledger and the guard, the noise estimate and margin,
the keep decision with a margin, the replicate advice, and campaign_guard.py's display of it."""

import copy
import dataclasses
import json
import math
import random
import subprocess
import sys

import pytest
from autofl_core.campaign import guard, instructions, ledger
from autofl_core.runner import finalize
from test_guard import row, state_of
from test_guard_oracle import random_rows, random_settings

GUARD = __import__("runner_support").SCRIPTS / "campaign_guard.py"


def rep(score, of="baseline", name=None):
    return dataclasses.replace(row("replicate", score, name=name), base_candidate=of)


def test_replicate_rows_are_never_attempts_retained_or_crashes():
    rows = [row("baseline", 0.8, name="baseline"), rep(0.95), rep(None), rep(None), rep(0.99)]
    state = state_of(rows, max_candidates=2, hard_crash_threshold=2)
    assert (state["candidate_attempts"], state["scored_attempts"], state["remaining_candidates"]) == (0, 0, 2)
    assert state["best_score"] == 0.8, "a replicate never becomes the best, even when it scored higher"
    assert state["reason"] == "continue", "unscored replicates are not crashes"
    assert state["plateau"]["scored_since_reset"] == 0


def test_replicate_rows_change_nothing_but_noise_on_random_ledgers():
    """Metamorphic: inserting replicate rows of configurations that are not the running best anywhere leaves every
    state field except `noise` (and the noise verdict of the best's gain) unchanged (with the noise rule off); row
    indices shift and the agent instruction names rows and the replicate advice. (Replicates of the running best
    move the bar later candidates must beat to its mean: test_replicates_of_the_best_set_the_bar_to_its_mean.)"""
    rng = random.Random(7)
    for _case in range(300):
        rows = [ledger.LedgerRow(**values) for values in random_rows(rng, rng.randint(0, 40))]
        settings = random_settings(rng)
        with_replicates = copy.deepcopy(rows)
        for _ in range(rng.randint(1, 6)):
            spot = rng.randint(0, len(with_replicates))
            with_replicates.insert(spot, rep(rng.choice((None, 0.5, 0.52, 0.9)), of=f"gone{rng.randint(0, 40)}"))
        plain = guard.compute_state(rows, settings, stop_files_present=[])
        mixed = guard.compute_state(with_replicates, settings, stop_files_present=[])
        for state in (plain, mixed):
            state.pop("noise"), state.pop("agent_instruction")
            # judged against the noise band, or counting the replicate rows themselves
            for key in ("best_gain_verdict", "unverified_because", "campaign_replicates"):
                state["noise_context"].pop(key)
        for key in ("plateau", "exploration_batch"):  # row indices shift with the inserted rows
            for state in (plain, mixed):
                if state[key]:
                    state[key] = {k: v for k, v in state[key].items() if not k.endswith("index")}
        assert plain == mixed


def test_replicates_of_the_best_set_the_bar_to_its_mean():
    from autofl_core.campaign import vocabulary as v

    rows = [row("baseline", 0.80, name="baseline"), row("keep", 0.90, name="lucky")]
    assert v.bar_to_beat(rows, "max") == 0.90
    rows += [rep(0.86, of="lucky"), rep(0.85, of="lucky"), rep(0.99, of="baseline")]
    assert v.bar_to_beat(rows, "max") == 0.87
    rows.append(row("keep", 0.88, name="steady"))  # above the mean, below the lucky run: the new best
    assert v.best_row(rows, "max").name == "steady" and v.bar_to_beat(rows, "max") == 0.88


def test_noise_estimate_uses_the_best_and_its_replicates_only():
    rows = [
        row("baseline", 0.80, name="baseline"),
        rep(0.70, of="baseline"),
        row("keep", 0.90, name="good"),
        rep(0.91, of="good"),
        rep(0.88, of="good"),
        rep(0.5, of="other"),
    ]
    noise = state_of(rows, noise_sigmas=2.0)["noise"]
    scores = [0.90, 0.91, 0.88]
    mean = sum(scores) / 3
    stdev = math.sqrt(sum((x - mean) ** 2 for x in scores) / 2)
    assert noise == {
        "replicates": 2,
        "of": "good",
        "mean": round(mean, 6),
        "stdev": round(stdev, 6),
        "min": 0.88,
        "max": 0.91,
        "margin": round(2 * stdev, 6),
        "sigmas": 2.0,
        "applied": True,
    }


def test_margin_is_at_least_the_plateau_min_delta_and_needs_three_scores():
    identical = [row("baseline", 0.8, name="baseline"), rep(0.8), rep(0.8)]
    noise = state_of(identical, noise_sigmas=3.0, plateau_min_delta=0.002)["noise"]
    assert (noise["stdev"], noise["margin"], noise["applied"]) == (0.0, 0.002, True)
    two = state_of([row("baseline", 0.8, name="baseline"), rep(0.81)], noise_sigmas=3.0)["noise"]
    assert two["stdev"] is not None and two["applied"] is False, "three scores of the best are needed"
    alone = state_of([row("baseline", 0.8, name="baseline")], noise_sigmas=3.0)["noise"]
    assert (alone["replicates"], alone["stdev"], alone["margin"], alone["applied"]) == (0, None, None, False)
    assert state_of([], noise_sigmas=1.0)["noise"] is None
    off = state_of([row("baseline", 0.8, name="baseline"), rep(0.81), rep(0.79)])["noise"]
    assert off["applied"] is False and off["margin"] == 0.0005


def test_plateau_uses_the_noise_margin_when_it_applies():
    rows = [row("baseline", 0.80, name="baseline"), rep(0.79), rep(0.81), row("keep", 0.805, name="small")]
    rows += [rep(0.80, of="small"), rep(0.81, of="small")] + [row("discard", 0.7) for _ in range(3)]
    off = state_of(rows, plateau_threshold=3)
    assert off["plateau"]["best_name"] == "small" and off["plateau"]["scored_since_reset"] == 3
    on = state_of(rows, plateau_threshold=3, noise_sigmas=2.0)
    margin = on["noise"]["margin"]
    assert margin > 0.005 and on["plateau"]["min_delta"] == margin
    assert on["plateau"]["best_name"] == "baseline", "a keep inside the margin does not restart the plateau clock"
    assert on["plateau"]["scored_since_reset"] == 4 and on["reason"] == "plateau_literature"
    assert on["best_score"] == 0.805, "the best itself is still the true best"


def test_noise_sigmas_is_validated():
    with pytest.raises(ValueError, match="noise_sigmas"):
        guard.GuardSettings(noise_sigmas=-1.0)
    with pytest.raises(ValueError, match="noise_sigmas"):
        guard.GuardSettings(noise_sigmas=float("nan"))


@pytest.mark.parametrize(
    ("score", "margin", "status"),
    [
        (0.91, None, "keep"),
        (0.905, 0.004, "keep"),
        (0.904, 0.004, "discard"),
        (0.9035, 0.004, "discard"),
        (0.89, 0.004, "discard"),
        (0.9, None, "discard"),
    ],
)
def test_keep_needs_a_gain_above_the_margin(score, margin, status):
    assert finalize.decide("success", score, best_score=0.9, mode="max", margin=margin) == status


def test_within_noise_reason_names_delta_and_margin():
    assert finalize.within_noise(0.903, best_score=0.9, mode="max", margin=0.004) == (
        "within noise (delta=+0.003000, margin=0.004000)"
    )
    assert finalize.within_noise(0.297, best_score=0.3, mode="min", margin=0.004) == (
        "within noise (delta=+0.003000, margin=0.004000)"
    )
    assert finalize.within_noise(0.95, best_score=0.9, mode="max", margin=0.004) is None, "beyond the margin"
    assert finalize.within_noise(0.89, best_score=0.9, mode="max", margin=0.004) is None, "simply worse"
    assert finalize.within_noise(0.903, best_score=0.9, mode="max", margin=None) is None, "rule off"


def test_replicate_advice():
    base = [row("baseline", 0.80, name="baseline"), row("keep", 0.805, name="small")]
    noisy = base + [rep(0.80, of="small"), rep(0.81, of="small")]
    capped = state_of(noisy, max_candidates=1)
    assert capped["reason"] == "candidate_cap_exhausted"
    assert "less than twice the measured spread" in capped["agent_instruction"]
    assert "`replicate --count 3`" in instructions.replicate_advice(capped)
    clear = state_of(base + [rep(0.805, of="small"), rep(0.805, of="small")], max_candidates=1)
    assert instructions.replicate_advice(clear) is None and "replicate" not in clear["agent_instruction"]
    uncapped = state_of([row("baseline", 0.8, name="baseline")])
    assert "uncapped" in uncapped["agent_instruction"] and "replicate --count 3" in uncapped["agent_instruction"]
    measured = state_of([row("baseline", 0.8, name="baseline"), rep(0.8), rep(0.8)])
    assert instructions.replicate_advice(measured) is None, "once measured, an uncapped campaign is not nagged"
    assert instructions.replicate_advice(state_of([row("baseline", 0.8, name="baseline")], max_candidates=3)) is None


def test_next_action_is_replicate_when_the_instruction_asks_for_it():
    base = [row("baseline", 0.80, name="baseline"), row("keep", 0.805, name="small")]
    noisy = state_of(base + [rep(0.80, of="small"), rep(0.81, of="small")], max_candidates=5)
    assert noisy["reason"] == "continue" and "less than twice the measured spread" in noisy["agent_instruction"]
    assert noisy["next_action"] == "replicate" and noisy["final_response_allowed"] is False
    clear = state_of(base + [rep(0.805, of="small"), rep(0.805, of="small")], max_candidates=5)
    assert clear["next_action"] == "propose_candidate"
    uncapped = state_of([row("baseline", 0.8, name="baseline")])  # the once-per-campaign ask keeps its action
    assert "replicate --count" in uncapped["agent_instruction"] and uncapped["next_action"] == "propose_candidate"


def test_ledger_round_trips_replicate_rows():
    text = ledger.format_ledger(
        [
            {
                "status": "replicate",
                "name": "replicate_best_1",
                "score": 0.5,
                "base_candidate": "best",
                "diff_summary": "replicate 1 of best; --seed 1",
            }
        ]
    )
    (parsed,) = ledger.parse(text)
    assert (parsed.status, parsed.score, parsed.base_candidate) == ("replicate", 0.5, "best")


def test_older_ledger_header_is_read_leniently_and_reported():
    header = "\t".join(ledger.COLUMNS[:9])
    text = header + "\nbaseline\tbaseline\t0.5\t1.0\n" + "keep\tx\t0.6\t1.0\ta.py\tedit\tcmd\truns/x\t\n"
    rows, missing = ledger.parse_any_version(text)
    assert [r.name for r in rows] == ["baseline", "x"] and missing == ledger.COLUMNS[9:]
    assert rows[1].literature_event_id == "" and rows[1].changed_files == "a.py"
    with pytest.raises(ledger.LedgerError, match="line 2"):
        ledger.parse_any_version(header + "\n" + "\t".join(["keep"] * 10) + "\n")
    with pytest.raises(ledger.LedgerError, match="header"):
        ledger.parse(text), "the strict reader still refuses an older ledger"
    assert ledger.parse_any_version(ledger.HEADER + "\n")[1] == ()


def test_campaign_guard_cli_takes_noise_sigmas_and_shows_noise(tmp_path):
    rows = [
        {"status": "baseline", "name": "baseline", "score": 0.8},
        {"status": "keep", "name": "k", "score": 0.81},
        {"status": "replicate", "name": "replicate_k_1", "score": 0.82, "base_candidate": "k"},
        {"status": "replicate", "name": "replicate_k_2", "score": 0.80, "base_candidate": "k"},
    ]
    (tmp_path / "results.tsv").write_text(ledger.format_ledger(rows))

    def guard_cli(*args):
        done = subprocess.run(
            [sys.executable, str(GUARD), str(tmp_path / "results.tsv"), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    state = json.loads(guard_cli("--noise-sigmas", "2"))
    assert state["noise"]["applied"] is True and state["noise"]["margin"] == 0.02
    assert state["plateau"]["min_delta"] == 0.02 and state["candidate_attempts"] == 1
    text = guard_cli("--format", "text")
    assert "noise: 2 replicate(s) of k: mean 0.81, stdev 0.01" in text and "keep rule off" in text
    bad = subprocess.run(
        [sys.executable, str(GUARD), str(tmp_path / "results.tsv"), "--noise-sigmas", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "noise_sigmas" in bad.stderr and "Traceback" not in bad.stderr
