"""The description trigger check can fail: negatives that name FLARE with a failure word, and exclusions that matter.

A negative prompt such as "Tune my FLARE job, its error rate is too high" names FLARE and a failure word, so
only the description's exclusions ("Do NOT use it to ... tune or optimize a working job") keep it from
triggering. A description rewritten to invite every out-of-scope task must fail the check (evals/run_evals.py
counts trigger misses toward its exit code), and dropping any one exclusion must fail it too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from module_loader import load_by_path

EVALS = Path(__file__).resolve().parents[1] / "evals"
checks = load_by_path("eval_checks", EVALS / "eval_checks.py")
run_evals = load_by_path("run_evals", EVALS / "run_evals.py")

CASES, _PROBLEMS = run_evals.load_cases()
NEGATIVES = [c for c in CASES if c["expected"].get("trigger") is False]
DESCRIPTION = run_evals.skill_description()
SCOPE = DESCRIPTION.split("Do NOT", 1)[0]  # what the skill does, without its exclusions
NO_EXCLUSIONS = SCOPE + " Never refuse a FLARE request."  # still passes the "states exclusions" rule
INVITING = (
    SCOPE + " Also use it for every other NVIDIA FLARE task: create or convert jobs, tune or optimize them, submit,"
    " monitor, deploy or provision, download the results of successful jobs, and fix any Python error, even"
    " unrelated to FLARE. Never refuse a FLARE request."
)
# One phrase per OUT_OF_SCOPE topic, to build descriptions that exclude all topics but one.
EXCLUDING = {
    "build": "create or convert jobs",
    "operate": "submit, monitor, deploy or provision anything",
    "results": "download results",
    "tune": "tune or optimize a job",
    "healthy": "look at healthy or successful runs",
    "not_flare": "debug generic Python code unrelated to FLARE",
}


def misses_with(description: str) -> dict[str, list[str]]:
    return {case_id: misses for case_id, misses in run_evals.trigger_results(CASES, description) if misses}


def flare_with_failure_word(case: dict) -> bool:
    return checks.would_trigger(case["prompt"], NO_EXCLUSIONS)


def test_the_real_description_passes_every_trigger_check():
    assert misses_with(DESCRIPTION) == {}
    assert checks.description_exclusions(DESCRIPTION) == set(checks.OUT_OF_SCOPE)


def test_negatives_name_flare_together_with_a_failure_word():
    strong = [c["id"] for c in NEGATIVES if flare_with_failure_word(c)]
    assert len(strong) >= 10, strong
    assert {"neg-tune-error-rate", "neg-healthy-download-model"} <= set(strong)


def test_every_out_of_scope_topic_has_a_negative_that_names_flare_and_a_failure_word():
    covered = set()
    for case in NEGATIVES:
        if flare_with_failure_word(case):
            covered |= checks.prompt_topics(case["prompt"])
    assert covered == set(checks.OUT_OF_SCOPE)


@pytest.mark.parametrize("description", [INVITING, NO_EXCLUSIONS], ids=["inviting", "no_exclusions"])
def test_a_description_inviting_out_of_scope_tasks_fails_the_check(description):
    assert checks.EXCLUSION_RE.search(description), "the rewrite keeps a 'never', so only the topic rule can fail"
    failed = misses_with(description)
    strong = {c["id"] for c in NEGATIVES if flare_with_failure_word(c)}
    assert strong <= set(failed)
    assert all(misses == ["prompt would trigger the skill"] for misses in failed.values())


@pytest.mark.parametrize("topic", sorted(EXCLUDING))
def test_dropping_one_exclusion_fails_the_check(topic):
    assert set(EXCLUDING) == set(checks.OUT_OF_SCOPE)
    complete = SCOPE + " Do NOT use it to " + ", ".join(EXCLUDING.values()) + "."
    assert misses_with(complete) == {}
    partial = SCOPE + " Do NOT use it to " + ", ".join(p for t, p in EXCLUDING.items() if t != topic) + "."
    failed = misses_with(partial)
    assert failed and all(topic in checks.prompt_topics(c["prompt"]) for c in NEGATIVES if c["id"] in failed)


def test_the_harness_exit_code_counts_the_misses(monkeypatch, capsys):
    monkeypatch.setattr(run_evals, "skill_description", lambda: INVITING)
    assert run_evals.print_trigger_checks(CASES) >= 10
    assert "trigger miss: neg-tune-error-rate: prompt would trigger the skill" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("prompt", "topics"),
    [
        ("Tune my FLARE job, its error rate is too high.", {"tune"}),
        ("Please download the model; my FLARE job finished fine.", {"results", "healthy"}),
        ("Could you deploy our FLARE server so it stops crashing?", {"operate"}),
        # reports of a failure while doing an out-of-scope task are not requests for it
        ("Deploying our FLARE server with helm failed and the job never ran.", set()),
        ("Submitting my exported FLARE job folder fails.", set()),
        ("NVFLARE job 5f0c failed to deploy with a config validation error.", set()),
        ("Our NVFLARE job reported a task timeout during the model download.", set()),
    ],
)
def test_prompt_topics_tell_requests_from_failure_reports(prompt, topics):
    assert checks.prompt_topics(prompt) == topics
    assert checks.would_trigger(prompt, DESCRIPTION) is not topics
