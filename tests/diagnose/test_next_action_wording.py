"""Issue 25 point 7: words for the person at hand, and the catalog data that carries them.

Next-action cases per runtime mode and fact (match/actions.py), the user_calls table (match/usercalls.py), the
evidence_quality note, one signal row per fact, a capped count that says so, and SKILL.md's word on the formats.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest
from nvfdiag import pipeline
from nvfdiag.match import actions, usercalls
from nvfdiag.match import catalog as cat
from nvfdiag.match.scan import MAX_HITS_PER_ROW
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.report import render
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
RENDERED = json.loads((REPO / "skills/nvflare-diagnose-job/references/failure_patterns.json").read_text())
CATALOG = cat.load_catalog()
OPERATOR_WORDS = ("resubmit", "submit the job", "operator")


def run(texts_by_source, mode="simulation") -> dict:
    evidence = Evidence()
    for source, site, texts in texts_by_source:
        evidence.sources.append(Source(source, "log", site, "complete", 100))
        evidence.lines += [Line(source, site, number, text) for number, text in enumerate(texts, 1)]
    return validated(pipeline.diagnose(evidence, CATALOG, mode=mode))


@pytest.mark.parametrize("row_id", [row.id for row in CATALOG.rows if "simulation" in row.modes])
def test_no_simulation_wording_sends_the_user_to_an_operator_or_a_resubmission(row_id):
    row = CATALOG.row(row_id)
    for size in range(len(actions.FACTS) + 1):
        for facts in itertools.combinations(actions.FACTS, size):
            text = row.next_action_for("simulation", set(facts)).lower()
            assert not any(word in text for word in OPERATOR_WORDS), (row_id, facts)
    assert not any(word in CATALOG.fallback_for("simulation").lower() for word in OPERATOR_WORDS)


def test_production_keeps_the_default_wording_and_ambiguous_mode_uses_no_mode_case():
    row = CATALOG.row("USER_CODE_EXCEPTION")
    assert row.next_action_for("production") == row.next_action
    assert row.next_action_for("ambiguous") == row.next_action
    assert "before resubmitting" in row.next_action_for("ambiguous", {"rounds_completed"})  # the fact-only case
    assert row.next_action_for("simulation") != row.next_action


def test_the_category_and_the_row_stay_exact_whatever_the_wording():
    line = "ModuleNotFoundError: No module named 'torchvision'"
    for mode in ("simulation", "production"):
        report = run([("site-1/log.txt", "site-1", [line])], mode=mode)
        row = CATALOG.row("IMPORT_ERROR")
        assert report["matched_pattern"] == "IMPORT_ERROR" and report["recovery_category"] == row.recovery_category
        assert report["next_action"] == row.next_action_for(mode)
    assert "rerun python job.py" in run([("site-1/log.txt", "site-1", [line])])["next_action"]


def _broken(mutate) -> str:
    document = copy.deepcopy(RENDERED)
    mutate(document)
    with pytest.raises(cat.CatalogError) as info:
        cat.parse_catalog(document)
    assert "\n" not in str(info.value)
    return str(info.value)


def _row(document, row_id="USER_CODE_EXCEPTION") -> dict:
    return next(r for r in document["patterns"] if r["id"] == row_id)


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: _row(d)["next_action_cases"].append({"mode": "poc", "text": "x"}), "mode 'poc'"),
        (lambda d: _row(d)["next_action_cases"].append({"fact": "it_rained", "text": "x"}), "fact 'it_rained'"),
        (lambda d: _row(d)["next_action_cases"].append({"text": "x"}), "needs a `mode` or a `fact`"),
        (lambda d: _row(d)["next_action_cases"].append({"mode": "simulation", "text": ""}), "non-empty `text`"),
        (lambda d: _row(d)["next_action_cases"].append({"mode": "simulation", "text": "see {url}"}), "{url}"),
        (lambda d: _row(d).update(next_action="Fix it at {line}."), "{line}"),
        (lambda d: d["user_calls"][0].update(via="sim_env.deploy"), "via"),
        (lambda d: d["user_calls"][0].update(call="rm -rf /"), "call"),
        (lambda d: d["user_calls"][0].update(change="use {x}"), "change"),
    ],
)
def test_malformed_cases_and_user_calls_fail_with_one_line(mutate, needle):
    assert needle in _broken(mutate)


def test_cases_apply_in_order_and_fill_only_known_placeholders():
    cases = (actions.ActionCase("A{rounds}", "simulation", "rounds_completed"), actions.ActionCase("B", "simulation"))
    assert actions.choose("D", cases, "simulation", {"rounds_completed"}) == "A{rounds}"
    assert actions.choose("D", cases, "simulation", set()) == "B"
    assert actions.choose("D", cases, "production", {"rounds_completed"}) == "D"
    assert actions.fill("x{where}{at}{rounds}{sites}{change}", {"{sites}": " (site-3)"}) == "x (site-3)"


def test_user_calls_first_fitting_row_wins():
    frames = [("/v/nvflare/recipe/sim_env.py", 126, "deploy"), ("/v/nvflare/job_config/api.py", 692, "simulator_run")]
    message = "ValueError: You already specified clients using `to()`. Don't use `n_clients` in simulator_run."
    assert usercalls.find(CATALOG.user_calls, message, frames).call == "SimEnv(num_clients=...)"
    assert usercalls.find(CATALOG.user_calls, message, frames[1:]).call == "job.simulator_run(..., n_clients=...)"
    assert usercalls.find(CATALOG.user_calls, "ValueError: other", frames) is None


def test_evidence_quality_is_explained_in_json_and_markdown():
    report = run([("stdout.txt", None, ["ModuleNotFoundError: No module named 'x'"])])
    assert report["evidence_quality"] == "complete"
    assert report["evidence_quality_note"].startswith("every evidence source given was read whole; this says nothing")
    markdown = render.to_markdown(report)
    assert "- **Evidence quality:** complete (every evidence source given was read whole; this says nothing" in markdown


def test_a_fact_two_patterns_match_is_one_signal_row():
    line = "2026-06-02 10:00:05,000 - X - ERROR - FileNotFoundError: [Errno 2] No such file or directory: '/home/a/b/c.csv'"
    report = run([("site-1/log.txt", "site-1", [line])], mode="production")
    assert report["matched_pattern"] == "ABSOLUTE_DATA_PATH"
    assert "DATA_PATH_NOT_FOUND" in {c["pattern"] for c in report["other_candidates"]}
    assert [s["pattern"] for s in report["signals"]] == ["ABSOLUTE_DATA_PATH"]


def test_a_capped_count_says_it_was_capped():
    lines = [
        f"2026-06-02 10:00:{n % 60:02d},000 - X - ERROR - torch.OutOfMemoryError: CUDA out of memory"
        for n in range(250)
    ]
    report = run([("site-1/log.txt", "site-1", lines)])
    oom = report["signals"][0]
    assert oom["count"] == MAX_HITS_PER_ROW and oom["count_capped"] is True
    markdown = render.to_markdown(report)
    assert f"at least {MAX_HITS_PER_ROW} times (count capped), first 8 places" in markdown
    few = run([("site-1/log.txt", "site-1", lines[:3])])["signals"][0]
    assert few["count"] == 3 and few["count_capped"] is False


def test_skill_md_says_json_is_the_default_and_markdown_is_for_a_person():
    text = (REPO / "skills/nvflare-diagnose-job/SKILL.md").read_text()
    assert "The default output is JSON" in text and "--format markdown" in text
    assert "evidence_quality_note" in text and "consequence" in text


def test_the_rendered_table_lists_the_cases_and_the_translations():
    text = (REPO / "skills/nvflare-diagnose-job/references/failure-patterns.md").read_text()
    assert "## Next action by runtime mode and fact" in text and "## NVFLARE's words in the user's (user_calls)" in text
    assert "`SimEnv(num_clients=...)`" in text
