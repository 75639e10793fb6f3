"""bench/prune_replay.py: the replay finds campaigns, replays the rule round by round and counts false prunes; and
bench/prune_campaign.py's quick run judges its own pair of campaigns."""

import json
import re
import shutil
from pathlib import Path

import pytest
from module_loader import load_by_path
from runner_support import ledger_rows, run_inproc, standin_workspace

REPO = Path(__file__).resolve().parents[2]
replay = load_by_path("prune_replay", REPO / "bench" / "prune_replay.py")
BEST = {0: 0.5, 1: 0.7, 2: 0.8, 3: 0.85, 4: 0.88, 5: 0.9}


def candidate(status, score, curve, *, band=None, tolerance=0.01):
    return replay.Candidate(
        where=f"ws:{status}",
        status=status,
        score=score,
        runtime=60.0,
        curve=dict(enumerate(curve)),
        total=6,
        best_curve=BEST,
        replicates=[],
        best_score=0.9,
        band=band,
        tolerance=tolerance,
        mode="max",
    )


def test_a_hopeless_discard_is_pruned_at_half_and_is_no_false_prune():
    hopeless = candidate("discard", 0.3, [0.5, 0.3, 0.3, 0.3, 0.3, 0.3])
    assert replay.replay(hopeless, replay.prune.Rule()) == 3
    assert not replay.is_false_prune(hopeless)


def test_a_pruned_keep_or_a_finish_within_the_band_is_a_false_prune():
    slow_start = [0.5, 0.3, 0.3, 0.85, 0.9, 0.95]  # trails at rounds 2-3, then wins: pruned at round 3
    kept = candidate("keep", 0.95, slow_start)
    assert replay.replay(kept, replay.prune.Rule()) == 3 and replay.is_false_prune(kept)
    close = candidate("discard", 0.895, slow_start, tolerance=0.01)  # 0.005 below the best: within the spread
    assert replay.is_false_prune(close)
    far = candidate("discard", 0.85, slow_start, tolerance=0.01)
    assert not replay.is_false_prune(far)


@pytest.mark.slow
def test_replay_of_a_finished_standin_campaign_counts_its_candidates(tmp_path):
    workspace = standin_workspace(tmp_path / "corpus")
    assert run_inproc(workspace, "initialize", "--max-candidates", "2").code == 0
    for name, args in (("far", "--lr 0.9"), ("near", "--lr 0.22")):
        assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", name, "--run-args", args).code == 0
        assert run_inproc(workspace, "evaluate").code in (0, 1)
    assert [row["status"] for row in ledger_rows(workspace)] == ["baseline", "discard", "keep"]
    shutil.copytree(workspace, tmp_path / "corpus" / "nested" / "copy")  # a campaign deeper in the tree
    found = replay.find_campaigns([tmp_path / "corpus"])
    assert set(found) == {workspace, tmp_path / "corpus" / "nested" / "copy"}
    tallies, count, live = replay.replay_campaigns([workspace])
    assert (count, live) == (2, 0)
    default = tallies[replay.SETTINGS[0][0]]
    # 3 rounds: round 0..2, never prunable at the last round, and round 2 of 3 needs rounds 1 and 2 to trail
    assert default.replayed == 2 and default.false_prunes == []
    assert default.pruned == 1 and default.rounds_saved == 1  # `far` (0.15 vs 0.75) stopped at round 2 of 3
    broken = tmp_path / "corpus" / "nested" / "copy" / ".nvflare" / "autofl" / "campaign.json"
    meta = json.loads(broken.read_text())
    meta["settings"]["mode"] = "maximize"  # a test's deliberately invalid campaign: skipped, never a traceback
    broken.write_text(json.dumps(meta))
    assert replay.replay_campaigns(found)[1:] == (2, 0)


def test_the_replay_uses_the_noise_a_live_judge_would_have_used():
    """A best without replicates of its own is judged with the band of the latest retained row that has some
    (the baseline's here), as `runner/noise.latest_measured` gives the live judge; with none, no band."""
    from types import SimpleNamespace as Row

    best = Row(name="lr-up", score=0.9)
    baseline_reruns = {"baseline": [Row(score=0.80), Row(score=0.81), Row(score=0.79)]}
    retained = [(0.8, 0, "baseline"), (0.9, 1, "lr-up")]
    noise = replay.measured_noise(best, retained, baseline_reruns, "max")
    assert noise["of"] == "baseline" and noise["stdev"] == pytest.approx(0.008165, abs=1e-6)  # 4 scores
    band = replay.gains.band(noise)
    assert band is not None and band > 0
    assert replay.gains.band(replay.measured_noise(best, retained, {}, "max")) is None


def test_a_false_prune_is_judged_by_at_least_the_typical_spread(tmp_path):
    """Identical reruns measure a band of ~0 (the plateau's min delta): the false-prune tolerance stays at the metric's typical spread, so a
    finish 0.005 below the best still counts as a false prune."""
    from types import SimpleNamespace as Row

    best = Row(name="baseline", score=0.9, artifacts=None)
    reruns = {"baseline": [Row(score=0.9)]}
    noise = replay.measured_noise(best, [(0.9, 0, "baseline")], reruns, "max")
    assert replay.gains.band(noise) == pytest.approx(0.0005)  # the plateau's min delta: no spread measured
    row = Row(name="close", status="discard", score=0.895, runtime_seconds=1.0, artifacts=None)
    item = replay._candidate(tmp_path, row, best, [], noise, "max", "accuracy", 6)
    assert item.band == pytest.approx(0.0005) and item.tolerance == pytest.approx(0.01)
    assert replay.is_false_prune(item)


@pytest.mark.slow
def test_the_p8_bench_quick_run_prunes_the_hopeless_and_judges_its_own_campaigns(repo_root, python_exe, tmp_path):
    import subprocess

    done = subprocess.run(
        [
            python_exe,
            str(repo_root / "bench" / "prune_campaign.py"),
            "--quick",
            "--rounds",
            "6",
            "--keep",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=repo_root,
    )
    assert done.returncode == 0 and done.stdout.rstrip().endswith(
        "RESULT: PASS (quick smoke run: hopeless ones pruned, same best; no timing bar)"
    ), done.stdout + done.stderr
    assert "pruned live: lr-far, lr-farther; false prunes live: 0" in done.stdout
    rounds = re.search(r"^candidate rounds: without 36, with (\d+): ", done.stdout, re.M)
    assert rounds and 30 <= int(rounds.group(1)) <= 34  # each stopped at round 3, 4 or 5 of 6 (judged every tick)
    assert "noise band the judges used: None" in done.stdout  # the quick run replicates nothing
    tallies, count, live = replay.replay_campaigns([tmp_path / "without-prune", tmp_path / "with-prune"])
    assert (count, live) == (6 + 4, 2) and tallies[replay.SETTINGS[0][0]].false_prunes == []
