"""Noise floor in the runner, on the stand-in job: `replicate`, the noise estimate in state and envelope,
`--noise-sigmas` (audited) deciding keep vs `within noise` discards, the plot band and the report's verdicts.

The seeded stand-in (`seeded_workspace`) adds a `--seed` option whose value shifts the score by a fixed
amount, so replicates differ the way real shuffled runs do: seed 0 +0, seed 1 +0.004, seed 2 -0.004.
"""

import json
import time
from datetime import datetime, timezone

import pytest
from runner_support import ledger_rows, manifest, run_inproc, set_bonus, source_dir, standin_workspace, tree_digest

pytestmark = pytest.mark.slow
SEED_SHIFT = "SEED_SHIFT = {0: 0.0, 1: 0.004, 2: -0.004, 3: 0.002, 4: -0.002}\n"


def seeded_workspace(tmp_path, name="ws"):
    workspace = standin_workspace(tmp_path, name)
    job = workspace / "job.py"
    text = job.read_text()
    text = text.replace(
        '    parser.add_argument("--use_bonus", action="store_true")\n',
        '    parser.add_argument("--use_bonus", action="store_true")\n'
        '    parser.add_argument("--seed", type=int, default=0)\n',
    )
    text = text.replace(
        '+ (" --use_bonus" if args.use_bonus else "")',
        '+ (" --use_bonus" if args.use_bonus else "") + f" --seed {args.seed}"',
    )
    job.write_text(text)
    client = workspace / "client.py"
    text = client.read_text().replace("BONUS = 0.0\n", "BONUS = 0.0\n" + SEED_SHIFT)
    text = text.replace(
        '    parser.add_argument("--use_bonus", action="store_true")\n',
        '    parser.add_argument("--use_bonus", action="store_true")\n'
        '    parser.add_argument("--seed", type=int, default=0)\n',
    )
    text = text.replace(
        "    return round(score",
        "    if args.seed == 99:\n        raise RuntimeError('seed 99 breaks')\n"
        "    score += SEED_SHIFT.get(args.seed % 5, 0.0)\n    return round(score",
    )
    client.write_text(text)
    return workspace


def init(workspace, *flags):
    done = run_inproc(workspace, "initialize", "--max-candidates", "5", *flags)
    assert done.code == 0, done.stderr
    return done


def evaluate_bonus(workspace, name, bonus, *flags):
    assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"bonus {bonus}").code == 0
    set_bonus(source_dir(workspace, name), bonus)
    return run_inproc(workspace, "evaluate", *flags)


def test_replicate_reruns_the_best_with_seeds_and_is_never_counted(tmp_path):
    ws = seeded_workspace(tmp_path)
    init(ws)
    assert evaluate_bonus(ws, "better", 0.02).envelope["candidate_status"] == "keep"
    meta_before = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    done = run_inproc(ws, "replicate", "--count", "2")
    assert done.code == 0, done.stderr
    assert done.envelope["seed_option"] == "--seed"
    assert [(r["name"], r["seed"], r["score"]) for r in done.envelope["replicates"]] == [
        ("replicate_better_1", "1", 0.774),
        ("replicate_better_2", "2", 0.766),
    ]
    assert done.envelope["candidate_attempts"] == 1 and done.envelope["remaining_candidates"] == 4
    rows = ledger_rows(ws)[-2:]
    assert [(r["status"], r["base_candidate"], r["candidate_kind"]) for r in rows] == [("replicate", "better", "")] * 2
    assert rows[0]["run_command"].endswith("--seed 1") and rows[1]["diff_summary"] == "replicate 2 of better; --seed 2"
    assert (ws / "autofl_runs" / "replicate_better_2" / "run.log").exists()
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert (meta["best_candidate"], meta["best_score"]) == (meta_before["best_candidate"], 0.77)
    noise = done.envelope["noise"]
    assert (noise["of"], noise["replicates"], noise["mean"], noise["stdev"], noise["min"], noise["max"]) == (
        "better",
        2,
        0.77,
        0.004,
        0.766,
        0.774,
    )
    state = json.loads((ws / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["noise"] == noise and state["best_candidate"] == "better"
    again = run_inproc(ws, "replicate", "--count", "1")
    assert [(r["name"], r["seed"]) for r in again.envelope["replicates"]] == [("replicate_better_3", "3")]
    assert again.envelope["noise"]["replicates"] == 3


def test_replicate_seeds_skip_the_configurations_own_seed(tmp_path):
    ws = seeded_workspace(tmp_path)
    init(ws, "--base-args", "--seed 2")
    done = run_inproc(ws, "replicate", "--count", "2")
    assert [r["seed"] for r in done.envelope["replicates"]] == ["1", "3"]
    assert [r["score"] for r in done.envelope["replicates"]] == [0.754, 0.752]


def test_without_a_seed_option_replicates_are_identical_reruns(tmp_path):
    ws = standin_workspace(tmp_path)
    init(ws)
    done = run_inproc(ws, "replicate")
    assert done.envelope["seed_option"] is None and len(done.envelope["replicates"]) == 3
    assert {r["score"] for r in done.envelope["replicates"]} == {0.75}
    assert done.envelope["noise"]["stdev"] == 0.0
    assert all("identical rerun" in r["diff_summary"] for r in ledger_rows(ws)[1:])


def test_an_unscored_replicate_is_recorded_exits_1_and_is_not_a_crash(tmp_path):
    ws = seeded_workspace(tmp_path)
    client = ws / "client.py"
    client.write_text(client.read_text().replace("if args.seed == 99:", "if args.seed == 1:"))
    init(ws, "--hard-crash-threshold", "1")
    done = run_inproc(ws, "replicate", "--count", "2")
    assert done.code == 1
    first, second = done.envelope["replicates"]
    assert first["score"] is None and first["failure_reason"].startswith("exit_code=1")
    assert "RuntimeError: seed 99 breaks" in first["failure_reason"] and second["score"] == 0.746
    assert done.envelope["candidate_attempts"] == 0 and done.envelope["reason"] == "continue"
    assert [r["status"] for r in ledger_rows(ws)] == ["baseline", "replicate", "replicate"]


SLOW_SEED_1 = "    if args.seed == 1:\n        import time\n\n        time.sleep(2.5)\n"


@pytest.mark.parametrize("last", ["replicate", "unscored replicate", "evaluate"])
def test_campaign_wall_time_ends_when_the_last_action_finished(tmp_path, last):
    """The report's campaign wall time spans the last action's own run (its seed-1 trial sleeps 2.5 s), not just
    up to its start; an unscored replicate (no new score, nothing for the noise estimate) moves the end too."""
    ws = seeded_workspace(tmp_path)
    client = ws / "client.py"
    text = client.read_text().replace("    if args.seed == 99:", SLOW_SEED_1 + "    if args.seed == 99:")
    client.write_text(
        text.replace("if args.seed == 99:", "if args.seed == 1:") if last.startswith("unscored") else text
    )
    init(ws)
    started = time.time()
    if last == "evaluate":
        prepared = run_inproc(ws, "prepare", "--name", "lr", "--hypothesis", "h", "--run-args", "--lr 0.15 --seed 1")
        assert prepared.code == 0, prepared.stderr
        assert run_inproc(ws, "evaluate").code == 0
    else:
        assert run_inproc(ws, "replicate", "--count", "1").code == (1 if last.startswith("unscored") else 0)
    last_run = ledger_rows(ws)[-1]["runtime_seconds"]
    assert last_run >= 2.5
    done = run_inproc(ws, "report", "--confirm-interrupted")
    assert done.code == 0, done.stderr
    compute = json.loads((ws / "autofl_report.json").read_text())["compute"]
    end = datetime.strptime(compute["last_activity_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert end.timestamp() > started + last_run - 1, "the stamps are whole seconds; the end is after the last run"
    start = datetime.strptime(compute["started_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert compute["wall_time_seconds"] == (end - start).total_seconds() > last_run - 1


@pytest.mark.parametrize("case", ["poc", "pending", "stop", "drift", "count"])
def test_replicate_refusals_change_nothing(tmp_path, case):
    ws = standin_workspace(tmp_path)
    init(ws, *(["--env", "poc"] if case == "poc" else []))
    args = ["--count", "11"] if case == "count" else []
    if case == "pending":
        assert run_inproc(ws, "prepare", "--name", "open", "--hypothesis", "h").code == 0
    if case == "stop":
        (ws / "STOP_AUTOFL").write_text("")
    if case == "drift":
        (ws / "client.py").write_text((ws / "client.py").read_text() + "\n# edited in place\n")
    before = tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",))
    done = run_inproc(ws, "replicate", *args)
    expected = {
        "poc": "simulations only",
        "pending": "candidate is pending",
        "stop": "stop file",
        "drift": "differs from the best snapshot",
        "count": "between 1 and 10",
    }[case]
    assert done.code == 2 and expected in done.stderr, done.stderr
    assert tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",)) == before


def within_noise_campaign(tmp_path, name, *flags):
    """Best `better` (0.77) with replicates 0.774 and 0.766 (stdev 0.004), then a +0.003 candidate."""
    ws = seeded_workspace(tmp_path, name)
    init(ws)
    evaluate_bonus(ws, "better", 0.02)
    assert run_inproc(ws, "replicate", "--count", "2").code == 0
    return ws, evaluate_bonus(ws, "tiny", 0.023, *flags)


def test_noise_sigmas_turns_a_gain_inside_the_spread_into_a_discard(tmp_path):
    ws, done = within_noise_campaign(tmp_path, "on", "--noise-sigmas", "2")
    assert done.code == 0 and done.envelope["candidate_status"] == "discard"
    assert done.envelope["settings_changed"] == ["noise_sigmas"]
    row = ledger_rows(ws)[-1]
    assert (row["status"], row["score"]) == ("discard", 0.773)
    assert row["failure_reason"] == "within noise (delta=+0.003000, margin=0.008000)"
    assert manifest(ws, "tiny")["result"]["failure_reason"] == row["failure_reason"]
    meta = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"]["noise_sigmas"] == 2.0 and meta["best_candidate"] == "better"
    change = meta["setting_changes"][-1]
    assert (change["setting"], change["old"], change["new"], change["action"]) == ("noise_sigmas", 0.0, 2.0, "evaluate")
    assert "BONUS = 0.02\n" in (ws / "client.py").read_text(), "the best source is restored"
    assert done.envelope["noise"]["applied"] is True and done.envelope["noise"]["margin"] == 0.008
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["best_observed"]["name"] == "tiny" and report["selected"]["name"] == "better"
    beyond = evaluate_bonus(ws, "clear", 0.04)
    assert beyond.envelope["candidate_status"] == "keep", "a gain beyond the margin is still kept"


def test_without_noise_sigmas_the_same_gain_is_kept(tmp_path):
    ws, done = within_noise_campaign(tmp_path, "off")
    assert done.envelope["candidate_status"] == "keep" and ledger_rows(ws)[-1]["failure_reason"] == ""
    report = json.loads((ws / "autofl_report.json").read_text())
    verdicts = {item["name"]: item["noise"] for item in report["what_helped"]["improvements"]}
    assert verdicts == {"better": "beyond noise", "tiny": "within noise"}
    markdown = (ws / "autofl_report.md").read_text()
    assert "`tiny` 0.770000 -> 0.773000 (+0.003000 over `better`, within noise)" in markdown
    assert "2 replicate(s) of `better` (with other seeds) plus its own run" in markdown


def test_the_noise_rule_needs_three_scores_of_the_best(tmp_path):
    ws = seeded_workspace(tmp_path)
    init(ws)
    evaluate_bonus(ws, "better", 0.02)
    assert run_inproc(ws, "replicate", "--count", "1").code == 0
    done = evaluate_bonus(ws, "tiny", 0.0225, "--noise-sigmas", "2")  # 0.7725 beats the best's mean 0.772
    assert done.envelope["candidate_status"] == "keep"


def test_with_replicates_a_candidate_is_compared_with_the_best_mean_not_its_lucky_run(tmp_path):
    """The best ran with a lucky seed (0.774); its replicates (seeds 2 and 3: 0.766, 0.772) put its mean at 0.770667.
    A candidate at 0.7715 beats that mean but not the lucky run: it is kept, and the envelope compares with the mean;
    one at 0.7705 is below the mean: a discard."""
    ws = seeded_workspace(tmp_path)
    init(ws)
    assert run_inproc(ws, "prepare", "--name", "lucky", "--hypothesis", "h", "--run-args", "--seed 1").code == 0
    set_bonus(source_dir(ws, "lucky"), 0.02)
    assert run_inproc(ws, "evaluate").envelope["candidate_status"] == "keep"
    assert run_inproc(ws, "replicate", "--count", "2").code == 0
    assert [r["score"] for r in ledger_rows(ws) if r["status"] == "replicate"] == [0.766, 0.772]
    below = evaluate_bonus(ws, "below-mean", 0.0205, "--run-args", "--seed 0")
    assert below.envelope["candidate_status"] == "discard" and below.envelope["compared_score"] == 0.770667
    above = evaluate_bonus(ws, "above-mean", 0.0215, "--run-args", "--seed 0")
    assert above.envelope["candidate_status"] == "keep"
    assert above.envelope["compared_with"] == "lucky" and above.envelope["compared_score"] == 0.770667
    assert json.loads((ws / ".nvflare/autofl/campaign.json").read_text())["best_candidate"] == "above-mean"


def test_progress_plot_shades_the_noise_band(tmp_path, monkeypatch, matplotlib_plot):
    import matplotlib  # noqa: F401  (the runner's default renderer must be importable here)
    from autofl_core.campaign import ledger, plot
    from PIL import Image

    rows = ledger.parse(
        ledger.format_ledger(
            [
                {"status": "baseline", "name": "baseline", "score": 0.70},
                {"status": "keep", "name": "k", "score": 0.80},
                {"status": "replicate", "name": "replicate_k_1", "score": 0.79, "base_candidate": "k"},
            ]
        )
    )
    plain = plot.render(rows, tmp_path / "plain.png", metric="accuracy", mode="max")
    banded = plot.render(rows, tmp_path / "band.png", metric="accuracy", mode="max", band=0.02)
    assert plain["backend"] == banded["backend"] == "matplotlib"
    assert (tmp_path / "plain.png").read_bytes() != (tmp_path / "band.png").read_bytes()
    image = Image.open(tmp_path / "band.png").convert("RGB")
    band_rgb = tuple(round((int(plot.COLORS["band"][i : i + 2], 16) + 255) / 2) for i in (1, 3, 5))  # alpha 0.5

    def shaded(picture):  # a band is thousands of pixels of its color; antialiased lines give a few
        return (
            sum(
                count
                for count, color in picture.getcolors(1 << 20)
                if all(abs(a - b) <= 3 for a, b in zip(color, band_rgb, strict=True))
            )
            > 5000
        )

    assert shaded(image), "the band is shaded"
    assert not shaded(Image.open(tmp_path / "plain.png").convert("RGB"))
    replicate_rgb = tuple(int(plot.COLORS["replicate"][i : i + 2], 16) for i in (1, 3, 5))
    assert replicate_rgb in {color for _count, color in image.getcolors(1 << 20)}
