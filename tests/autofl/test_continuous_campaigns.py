"""Continuous campaigns without waste or confusion (issue 26), on the stand-in job.

One or more tests per point of the issue: (1) replicate advice asked once, one rerun without a seed option;
(2) one rule for stopping; (3) campaign_guard.py reads the campaign's thresholds; (4) the plateau counter in
every envelope; (5) report wording; (6) the plot's ticks, labels and title; (7) a linked candidate that
cannot teach anything is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from autofl_core.campaign import ledger
from runner_support import (
    REPO,
    initialized_standin,
    ledger_records,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    set_bonus,
    source_dir,
    tree_digest,
)

pytestmark = pytest.mark.slow
SKILL = REPO / "skills" / "nvflare-autofl"


@pytest.fixture(scope="module")
def uncapped(tmp_path_factory):
    """One initialized uncapped stand-in campaign (baseline 0.75, plateau threshold 2), copied per test."""
    return initialized_standin(tmp_path_factory.mktemp("continuous"), "--plateau-threshold", "2")


@pytest.fixture
def ws(uncapped, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(uncapped, workspace)
    return workspace


def _state(workspace) -> dict:
    return json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())


def _candidate(workspace, name: str, *, bonus: float | None = None, run_args: str | None = None, **extra) -> dict:
    """prepare + (edit) + evaluate one candidate; returns the evaluate envelope."""
    args = ["--name", name, "--hypothesis", f"try {name}"]
    for key, value in extra.items():
        args += [f"--{key.replace('_', '-')}", value]
    if run_args is not None:
        args += ["--run-args", run_args]
    prepared = run_inproc(workspace, "prepare", *args)
    assert prepared.code == 0, prepared.stderr
    if bonus is not None:
        set_bonus(source_dir(workspace, name), bonus)
    done = run_inproc(workspace, "evaluate")
    assert done.code in (0, 1), done.stderr
    return done.envelope


# --- 1. replicates asked once per campaign, one rerun without a seed option ---------------------------


def test_point1_uncapped_campaign_asks_for_one_rerun_once(ws):
    """Point 1: the job has no seed option, so the uncapped advice asks for `replicate --count 1`, never 3; after
    one replicate, a new best with a clear gain is not asked again."""
    first = _state(ws)["agent_instruction"]
    assert "run `replicate --count 1` once" in first and "--count 3" not in first
    assert "identical reruns" in first
    assert run_inproc(ws, "replicate", "--count", "1").code == 0
    assert "replicate" not in _state(ws)["agent_instruction"]
    kept = _candidate(ws, "lr-up", run_args="--lr 0.2")
    assert kept["candidate_status"] == "keep"
    assert "replicate" not in kept["agent_instruction"], "a new best does not repeat the once-per-campaign advice"
    assert ledger_rows(ws)[-1]["name"] == "lr-up"


def test_point1_a_new_best_before_any_replicate_is_asked_once_not_per_best(ws):
    """Point 1: the advice repeats only while the campaign has no replicate row; after one, a kept gain is asked
    about again only when it falls under the noise rule (here: unverified, below the typical spread)."""
    kept = _candidate(ws, "lr-up", run_args="--lr 0.2")
    assert "`replicate --count 1` once" in kept["agent_instruction"]
    assert run_inproc(ws, "replicate", "--count", "1").code == 0
    clear = _candidate(ws, "bonus-big", bonus=0.05)
    assert clear["candidate_status"] == "keep" and "replicate" not in clear["agent_instruction"]
    beyond = _candidate(ws, "bonus-more", bonus=0.053)
    assert beyond["candidate_status"] == "keep" and beyond["noise_verdict"] == "beyond noise"
    assert "replicate" not in beyond["agent_instruction"], "the measured spread (0: deterministic) covers it"
    within = _candidate(ws, "bonus-hair", bonus=0.0533)
    assert within["candidate_status"] == "keep" and within["noise_verdict"] == "within noise"
    assert _state(ws)["noise_context"]["best_gain_verdict"] == "within noise", "envelope and state agree"
    assert "run `replicate --count 1` before more candidates build on it" in within["agent_instruction"]
    assert "--count 3" not in within["agent_instruction"]


def test_point1_seeded_or_unknown_replicates_still_ask_for_three():
    """Point 1: three reruns only when replicates can vary (seeded) or nothing is known (guard CLI)."""
    from autofl_core.campaign import gains, guard, instructions

    rows = [ledger.LedgerRow(status="baseline", score=0.8, name="baseline", metric_name="accuracy")]
    for kind, count in ((gains.SEEDED_RERUNS, 3), (None, 3), (gains.IDENTICAL_RERUNS, 1)):
        state = guard.compute_state(rows, {}, stop_files_present=[], noise_facts={"replicates": kind})
        assert f"`replicate --count {count}` once" in instructions.replicate_advice(state)


# --- 2. one rule for stopping -------------------------------------------------------------------------


def test_point2_skill_gives_one_stop_rule():
    """Point 2: SKILL.md says plainly that a user's stop is the stop file, then status, then report, and that
    --confirm-interrupted is for a campaign whose runner was killed; no other section offers it."""
    text = (SKILL / "SKILL.md").read_text()
    stopping = text[text.index("## 9. Stopping") :]
    stopping = stopping[: stopping.index("\n## ", 5)]
    assert 'A user\'s "stop" means the stop file**, then `status`, then `report`' in stopping
    assert "touch my_job/STOP_AUTOFL" in stopping and "runner was killed" in stopping
    assert text.count("--confirm-interrupted") == stopping.count("--confirm-interrupted") == 1


def test_point2_a_stop_file_then_status_then_report_needs_no_confirmation(ws):
    """Point 2: the mechanics behind the rule: an unfinished campaign's report refusal points to the stop file;
    with it, status allows the final answer and `report` (without --confirm-interrupted) writes the report."""
    refused = run_inproc(ws, "report")
    assert refused.code == 2 and "create the stop file STOP_AUTOFL, then run status and report" in refused.stderr
    assert "--confirm-interrupted is only for a campaign whose runner was killed" in refused.stderr
    (ws / "STOP_AUTOFL").write_text("")
    status = run_inproc(ws, "status").envelope
    assert (status["next_action"], status["final_response_allowed"]) == ("final_report", True)
    assert "run `report` for the final report (not --confirm-interrupted" in status["agent_instruction"]
    done = run_inproc(ws, "report")
    assert done.code == 0, done.stderr
    assert json.loads((ws / "autofl_report.json").read_text())["provenance"]["confirm_interrupted"] is False


def test_point2_a_pending_candidate_is_abandoned_before_the_report(ws):
    """Point 2: with a candidate pending, the stop file asks for `abandon`, then status and report."""
    assert run_inproc(ws, "prepare", "--name", "open", "--hypothesis", "h").code == 0
    (ws / "STOP_AUTOFL").write_text("")
    status = run_inproc(ws, "status").envelope
    assert status["next_action"] == "abandon_candidate"
    assert (
        "run `abandon`" in status["agent_instruction"]
        and "then run `status` and `report`" in (status["agent_instruction"])
    )
    assert run_inproc(ws, "abandon").code == 0
    assert run_inproc(ws, "report").code == 0


# --- 3. campaign_guard.py reads the campaign's settings -----------------------------------------------


def _guard(workspace, *args: str) -> subprocess.CompletedProcess:
    script = SKILL / "scripts" / "campaign_guard.py"
    command = [sys.executable, str(script), str(workspace / "results.tsv"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=_no_autofl_env())


def _no_autofl_env() -> dict:
    return {key: value for key, value in os.environ.items() if not key.startswith("AUTOFL_")}


def test_point3_guard_reads_thresholds_from_the_campaign_and_flags_override(ws):
    """Point 3: beside a campaign with plateau threshold 2 the guard says `of 2` (not its default 8), and agrees
    with the runner's state; a flag overrides."""
    text = _guard(ws, "--format", "text")
    assert text.returncode == 0, text.stderr
    assert "0 of 2 scored" in text.stdout and "of 8" not in text.stdout
    state = json.loads(_guard(ws).stdout)
    runner = _state(ws)
    for key in ("plateau", "candidate_cap", "next_action", "exploration_batch"):
        assert state[key] == runner[key], key
    overridden = json.loads(_guard(ws, "--plateau-threshold", "5").stdout)
    assert overridden["plateau"]["threshold"] == 5


def test_point3_guard_takes_the_campaign_cap_stop_files_and_every_threshold(tmp_path):
    """Point 3: the cap, the stop files and the other thresholds come from campaign.json too (the environment
    does not override the campaign); a damaged campaign.json is one line, exit 2."""
    workspace = initialized_standin(
        tmp_path,
        "--max-candidates",
        "3",
        "--plateau-min-delta",
        "0.01",
        "--stop-file",
        "HALT",
        "--family-repeat-limit",
        "4",
    )
    env = {**_no_autofl_env(), "AUTOFL_PLATEAU_MIN_DELTA": "0.3"}
    script = SKILL / "scripts" / "campaign_guard.py"
    state = json.loads(
        subprocess.run(
            [sys.executable, str(script), str(workspace / "results.tsv")], capture_output=True, text=True, env=env
        ).stdout
    )
    assert (state["candidate_cap"], state["remaining_candidates"], state["plateau"]["min_delta"]) == (3, 3, 0.01)
    (workspace / "HALT").write_text("")
    halted = json.loads(_guard(workspace).stdout)
    assert (halted["stop_files"], halted["next_action"]) == (["HALT"], "final_report")
    assert json.loads(_guard(workspace, "--max-candidates", "7").stdout)["candidate_cap"] == 7
    (workspace / ".nvflare/autofl/campaign.json").write_text("{not json")
    broken = _guard(workspace)
    assert broken.returncode == 2 and len(broken.stderr.strip().splitlines()) == 1 and "campaign.json" in broken.stderr


# --- 4. the plateau counter in every envelope ---------------------------------------------------------


def test_point4_every_envelope_shows_the_plateau_counter_and_when_literature_is_due(ws):
    """Point 4: status, suggest, prepare, evaluate, replicate, abandon and record envelopes all carry
    `plateau` (scored_since_reset of threshold, literature_due_in), equal to the state file; the continue
    instruction says when the literature pass will be due."""
    envelopes = [run_inproc(ws, "status").envelope, run_inproc(ws, "suggest").envelope]
    assert envelopes[0]["plateau"] == {"scored_since_reset": 0, "threshold": 2, "literature_due_in": 2}
    assert (
        "Plateau: 0 of 2 scored candidates without a real gain; a literature pass is due after 2 more"
        in (envelopes[0]["agent_instruction"])
    )
    envelopes.append(run_inproc(ws, "replicate", "--count", "1").envelope)
    envelopes.append(run_inproc(ws, "prepare", "--name", "drop", "--hypothesis", "h").envelope)
    envelopes.append(run_inproc(ws, "abandon").envelope)
    worse = _candidate(ws, "lr-down", run_args="--lr 0.05")
    assert worse["candidate_status"] == "discard"
    assert worse["plateau"] == {"scored_since_reset": 1, "threshold": 2, "literature_due_in": 1}
    assert "a literature pass is due after 1 more scored candidate(s)" in worse["agent_instruction"]
    envelopes.append(worse)
    due = _candidate(ws, "lr-down-more", run_args="--lr 0.01")
    assert (due["next_action"], due["plateau"]["literature_due_in"]) == ("run_literature_loop", 0)
    envelopes.append(due)
    lit = run_inproc(ws, "record", "--literature", "--hypothesis", "FedProx [src: x]", "--family", "fedprox")
    envelopes.append(lit.envelope)
    for envelope in envelopes:
        plateau = _state(ws)["plateau"] if envelope is envelopes[-1] else None
        assert set(envelope["plateau"]) == {"scored_since_reset", "threshold", "literature_due_in"}
        if plateau:
            assert envelope["plateau"]["scored_since_reset"] == plateau["scored_since_reset"]
            assert envelope["plateau"]["threshold"] == plateau["threshold"] == 2


# --- 5. report wording --------------------------------------------------------------------------------


def _literature_campaign(workspace) -> None:
    """Two discards (plateau 2 of 2), a literature event with a batch of three linked source edits (one an
    exact tie), then two more discards: a second literature pass is due."""
    _candidate(workspace, "lr-down", run_args="--lr 0.05")
    _candidate(workspace, "lr-down-more", run_args="--lr 0.01")
    lit = run_inproc(workspace, "record", "--literature", "--hypothesis", "Idea [src: x]", "--family", "idea")
    event = lit.envelope["literature_event_id"]
    for name, bonus in (("idea-faithful", -0.01), ("idea-tuned", 0.00000001), ("idea-other", -0.02)):
        done = _candidate(workspace, name, bonus=bonus, literature_event=event, family="idea")
        assert done["candidate_status"] == "discard", name
    _candidate(workspace, "steps-down", run_args="--local_steps 4")
    due = _candidate(workspace, "steps-down-more", run_args="--local_steps 3")
    assert due["next_action"] == "run_literature_loop"


def test_point5_report_wording_budget_outcomes_and_what_was_pending_at_the_stop(ws):
    """Point 5: "7 attempt(s), uncapped" (not "of uncapped"); the tie is `matched` in both the literature and
    the families table; the stop that came when a second literature pass was due says so."""
    _literature_campaign(ws)
    (ws / "STOP_AUTOFL").write_text("")
    assert run_inproc(ws, "report").code == 0
    text = (ws / "autofl_report.md").read_text()
    data = json.loads((ws / "autofl_report.json").read_text())
    assert "- Candidate budget: 7 attempt(s), uncapped;" in text and "of uncapped" not in text
    assert [event["outcome"] for event in data["literature"]] == ["matched"]
    assert {entry["family"]: entry["outcome"] for entry in data["families"]["families"]}["idea"] == "matched"
    pending = data["state"]["pending_at_stop"]
    assert pending["next_action"] == "run_literature_loop"
    assert "- Pending at the stop: a literature pass was due (2 of 2 scored candidates without a real gain)" in text


def test_point5_capped_budget_line_and_no_pending_without_a_stop(tmp_path):
    """Point 5: a capped campaign reads "1 of 1 attempt(s) used, 0 remaining"; a campaign that finished by its
    cap has no pending-at-stop line."""
    workspace = initialized_standin(tmp_path, "--max-candidates", "1")
    _candidate(workspace, "lr-up", run_args="--lr 0.2")
    assert run_inproc(workspace, "report").code == 0
    text = (workspace / "autofl_report.md").read_text()
    assert "- Candidate budget: 1 of 1 attempt(s) used, 0 remaining;" in text
    assert "Pending at the stop" not in text
    assert json.loads((workspace / "autofl_report.json").read_text())["state"]["pending_at_stop"] is None


def test_point5_every_outcome_word_is_defined_in_the_contract_and_skill_md():
    """Point 5: every outcome word the report schema allows is defined in references/report-contract.md and
    named in SKILL.md."""
    schema = json.loads((REPO / "shared/schemas/autofl_report.v1.schema.json").read_text())
    words = set(schema["properties"]["literature"]["items"]["properties"]["outcome"]["enum"])
    family = schema["properties"]["families"]["properties"]["families"]["items"]["properties"]["outcome"]["enum"]
    words |= set(family)
    assert "matched" in family, "one word per fact: a tie is `matched` in both tables"
    contract = (SKILL / "references/report-contract.md").read_text()
    skill = (SKILL / "SKILL.md").read_text()
    for word in sorted(words):
        assert f"| `{word}` |" in contract, word
        assert f"`{word}`" in skill, word
    for verdict in ("beyond noise", "within noise", "unverified"):
        assert f"| `{verdict}` |" in contract


# --- 6. the plot: integer ticks, labels that fit, counts that match the report -------------------------


@pytest.fixture
def figures(monkeypatch, matplotlib_plot):
    """The matplotlib figures the plot draws, captured at savefig (read as objects, not pixels)."""
    from matplotlib.figure import Figure

    drawn = []
    original = Figure.savefig

    def capture(self, *args, **kwargs):
        drawn.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return drawn


def _visible_ticks(axes) -> list[str]:
    low, high = axes.get_xlim()
    return [label.get_text() for label in axes.get_xticklabels() if low <= label.get_position()[0] <= high]


def _inside(inner, outer) -> bool:
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


def test_point6_plot_ticks_labels_and_title_match_the_report(ws, figures, tmp_path, monkeypatch):
    """Point 6: integer ticks on the experiment axis, literature labels shown in full inside the axes and clear
    of the legend, and a title that counts attempts as the report does (not the baseline or replicates)."""
    from autofl_core.campaign import plot

    # the campaign's own redraws (one per action, seventeen) are not read: they write the text summary, and
    # matplotlib draws only the picture checked below
    monkeypatch.setenv(plot.RENDERER_VARIABLE, "text")
    _literature_campaign(ws)
    assert run_inproc(ws, "replicate", "--count", "1").code == 0
    (ws / "STOP_AUTOFL").write_text("")
    assert run_inproc(ws, "report").code == 0
    report = json.loads((ws / "autofl_report.json").read_text())
    monkeypatch.delenv(plot.RENDERER_VARIABLE)
    assert figures == []
    plot.render(ledger_records(ws), tmp_path / "p.png", metric="accuracy", mode="max")
    (figure,) = figures
    axes = figure.axes[0]
    renderer = figure.canvas.get_renderer()
    ticks = _visible_ticks(axes)
    assert ticks and all(text.lstrip("\u2212-").isdigit() for text in ticks), ticks
    assert all(float(x).is_integer() for x in axes.get_xticks())
    frame, legend = axes.get_window_extent(renderer), axes.get_legend().get_window_extent(renderer)
    (label,) = [text for text in axes.texts if text.get_text().startswith("lit-")]
    assert label.get_text() == "lit-0001"
    extent = label.get_window_extent(renderer)
    assert _inside(extent, frame) and not extent.overlaps(legend)
    title = axes.title.get_text()
    attempts, scored = (
        report["candidate_budget"]["attempts"],
        len(
            [row for row in report["leaderboard"] if row["status"] in ("keep", "discard") and row["score"] is not None]
        ),
    )
    assert f"{attempts} attempt(s) ({scored} scored)" in title and (attempts, scored) == (7, 7)
    assert "1 replicate(s) (not attempts)" in title
    assert _inside(axes.title.get_window_extent(renderer), figure.bbox)


def test_point6_few_experiments_still_get_integer_ticks(figures, tmp_path):
    """Point 6: two experiments used to get ticks at 0.75, 1.25, ...; now only whole experiment numbers; events
    recorded back to back share one label that fits."""
    from autofl_core.campaign import plot

    rows = [
        ledger.LedgerRow(status="baseline", name="baseline", score=0.7),
        ledger.LedgerRow(status="literature", name="lit-0001", literature_event_id="lit-0001"),
        ledger.LedgerRow(status="literature", name="lit-0002", literature_event_id="lit-0002"),
        ledger.LedgerRow(status="discard", name="a", score=0.69),
    ]
    plot.render(rows, tmp_path / "p.png", metric="accuracy", mode="max")
    axes = figures[-1].axes[0]
    assert _visible_ticks(axes) == ["1", "2"]
    (label,) = axes.texts[:1]
    assert label.get_text() == "lit-0001, lit-0002"
    renderer = figures[-1].canvas.get_renderer()
    assert _inside(label.get_window_extent(renderer), axes.get_window_extent(renderer))


# --- 7. a linked candidate that cannot teach anything is refused --------------------------------------


def test_point7_a_linked_arm_repeating_another_linked_arm_is_refused_and_nothing_changes(ws):
    """Point 7: the second arm with the same effective source and run args as the first (same execution) is
    refused with one line, exit 2, and nothing changes; a different argument makes it a new arm."""
    event = run_inproc(ws, "record", "--literature", "--hypothesis", "Idea [src: x]").envelope["literature_event_id"]
    first = _candidate(ws, "arm-1", bonus=-0.01, literature_event=event)
    assert first["candidate_status"] == "discard"
    assert run_inproc(ws, "prepare", "--name", "arm-2", "--hypothesis", "h", "--literature-event", event).code == 0
    set_bonus(source_dir(ws, "arm-2"), -0.01)
    before = tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",))
    refused = run_cli(ws, "evaluate")
    assert refused.code == 2 and refused.envelope is None
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "would run exactly what linked candidate arm-1 (literature event lit-0001) ran" in refused.stderr
    assert tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",)) == before, "nothing changed"
    assert manifest(ws, "arm-2")["status"] == "prepared"
    other = run_inproc(ws, "evaluate", "--run-args", "--local_steps 6")
    assert other.code == 0 and other.envelope["candidate_status"] in ("keep", "discard")
    assert [row["name"] for row in ledger_rows(ws)][-2:] == ["arm-1", "arm-2"]


def test_point7_a_linked_arm_equal_to_the_best_is_refused(ws):
    """Point 7: a linked candidate that would run the best configuration itself (no source change, the best's
    arguments) is refused, exit 2, before anything runs."""
    event = run_inproc(ws, "record", "--literature", "--hypothesis", "Idea [src: x]").envelope["literature_event_id"]
    assert run_inproc(ws, "prepare", "--name", "same", "--hypothesis", "h", "--literature-event", event).code == 0
    rows = len(ledger_rows(ws))
    refused = run_inproc(ws, "evaluate", "--run-args", "--lr 0.1")
    assert refused.code == 2 and "changes nothing" in refused.stderr
    assert len(ledger_rows(ws)) == rows


def test_point7_the_check_compares_effective_source_and_args():
    """Point 7: the rule itself, over manifests: the best's execution, a scored linked arm's, and what does not
    count (an unlinked candidate, a crash that may be replayed, other arguments)."""
    from autofl_core.runner import evaluation as evaluate  # the steps evaluate and a batch share
    from autofl_core.runner.outcome import CampaignError
    from autofl_core.runner.store.manifests import CandidateManifest

    class Campaign:
        config = {"argparse": {"flags": []}}

        def __init__(self, manifests):
            self._manifests = manifests

        def manifests(self):
            return self._manifests

        def best_row(self):
            return ledger.LedgerRow(status="baseline", name="baseline")

    fixture = REPO / "tests/fixtures/autofl_campaign_main/.nvflare/autofl/candidates/pending-one"
    base = CandidateManifest.from_json(json.loads((fixture / "candidate_manifest.json").read_text()))

    def arm(cid, status, source, args=(), event="lit-0001"):
        return base.replace(
            candidate_id=cid,
            status=status,
            candidate_source_sha256=source,
            effective_run_args=list(args),
            literature_event_id=event,
        )

    me = arm("me", "running", "S")
    for manifests, refused in (
        ([arm("a", "discard", "S")], "linked candidate a"),
        ([arm("a", "keep", "S")], "linked candidate a"),
        ([arm("a", "crash", "S")], None),
        ([arm("a", "discard", "S", event="")], None),
        ([arm("a", "discard", "T")], None),
    ):
        try:
            evaluate.refuse_repeated_arm(Campaign([me, *manifests]), me, "S", [], "B", [])
            outcome = None
        except CampaignError as error:
            outcome = str(error)
        assert (outcome is None) == (refused is None) and (refused is None or refused in outcome), manifests
    with pytest.raises(CampaignError, match=r"the best configuration \(baseline\)"):
        evaluate.refuse_repeated_arm(Campaign([me]), me, "B", [], "B", [])


def test_point7_skill_and_batch_instruction_explain_how_to_design_the_arms(ws):
    """Point 7: SKILL.md and the develop_literature_batch instruction say how each arm can teach something."""
    skill = " ".join((SKILL / "SKILL.md").read_text().split())
    assert "an ablation removes one component of the faithful version" in skill
    assert "the third arm tests the idea's strongest alternative setting instead of switching it off" in skill
    event = run_inproc(ws, "record", "--literature", "--hypothesis", "Idea [src: x]").envelope
    assert event["next_action"] == "develop_literature_batch"
    assert "an ablation removes one component of the faithful version" in event["agent_instruction"]
