"""Edges of the Auto-FL pure cores (compare, ledger, guard) that mutation testing found untested.

Each test pins behaviour a surviving mutant changed (`make mutate`, docs/mutation.md): error messages that
name the setting or file, CRLF ledgers, rows after a blank line, a ledger without a final newline, ledger
precision of `min_delta`, and state fields that no other test read.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from autofl_core.campaign import compare, guard, ledger

# --- compare ------------------------------------------------------------------------------------------


def test_min_delta_is_compared_in_fractional_ledger_units():
    # 1.5e-6 is 1.5 ledger steps: a 2-step gain beats it, a 1-step gain does not (no rounding to whole steps)
    assert compare.better(0.500002, 0.5, "max", min_delta=0.0000015)
    assert not compare.better(0.500001, 0.5, "max", min_delta=0.0000015)
    assert compare.better(0.499998, 0.5, "min", min_delta=0.0000015)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.1, "0.1", None])
def test_min_delta_must_be_a_finite_non_negative_number(bad):
    with pytest.raises(ValueError, match="min_delta must be a finite number >= 0"):
        compare.better(0.6, 0.5, "max", min_delta=bad)


@pytest.mark.parametrize("bad", [True, False, math.nan, math.inf, "0.5"])
def test_a_score_must_be_a_finite_number_not_a_bool(bad):
    with pytest.raises(ValueError, match="score must be a finite number"):
        compare.format_score(bad)
    with pytest.raises(ValueError, match="score must be a finite number"):
        compare.better(bad, None, "max")


# --- ledger -------------------------------------------------------------------------------------------


def _row(status="keep", name="c1", score="0.5", runtime="1.000"):
    fields = {"status": status, "name": name, "score": score, "runtime_seconds": runtime}
    return "\t".join(fields.get(column, "") for column in ledger.COLUMNS)


def test_crlf_ledger_parses_like_lf():
    text = ledger.HEADER + "\r\n" + _row(name="a") + "\r\n" + _row(name="b", score="0.7") + "\r\n"
    rows = ledger.parse(text)
    assert [(r.name, r.score, r.runtime_seconds) for r in rows] == [("a", 0.5, 1.0), ("b", 0.7, 1.0)]
    assert rows[0].literature_event_id == ""  # the trailing \r is not part of the last field


def test_a_carriage_return_at_the_start_of_a_line_is_corruption():
    with pytest.raises(ledger.LedgerError, match="line 2: unknown status '\\\\rkeep'"):
        ledger.parse(ledger.HEADER + "\n\r" + _row() + "\n")


def test_rows_after_a_blank_line_are_still_read():
    rows = ledger.parse(ledger.HEADER + "\n" + _row(name="a") + "\n\n" + _row(name="b") + "\n")
    assert [r.name for r in rows] == ["a", "b"]


def test_a_ledger_without_final_newline_keeps_its_last_row():
    assert [r.name for r in ledger.parse(ledger.HEADER + "\n" + _row(name="last"))] == ["last"]


def test_parse_errors_name_the_source():
    with pytest.raises(ledger.LedgerError, match=r"^results\.tsv: line 1: header"):
        ledger.parse("status\tname\n")
    with pytest.raises(
        ledger.LedgerError,
        match=r"^mine\.tsv: line 2: unknown status 'won'; expected one of: "
        r"baseline, keep, discard, crash, literature, infrastructure_retry, replicate$",
    ):
        ledger.parse(ledger.HEADER + "\n" + _row(status="won") + "\n", "mine.tsv")


def test_read_and_append_errors_name_the_ledger_path(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_text(ledger.HEADER + "\n" + _row(status="won") + "\n", encoding="utf-8")
    for call in (lambda: ledger.read_rows(path), lambda: ledger.append_row(path, {"status": "keep", "name": "x"})):
        with pytest.raises(ledger.LedgerError, match=f"^{path}: line 2: unknown status"):
            call()


def test_append_returns_the_row_as_read_back(tmp_path):
    path = tmp_path / "results.tsv"
    row = ledger.append_row(path, {"status": "keep", "name": "a\tb", "score": 0.25, "runtime_seconds": 0})
    assert row.name == "a b" and row.score == 0.25 and row.runtime_seconds == 0.0
    assert ledger.read_rows(path) == [row]


def test_invalid_utf8_names_its_line(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_bytes((ledger.HEADER + "\n" + _row() + "\n").encode() + b"keep\t\xff\n")
    with pytest.raises(ledger.LedgerError, match=r"line 3: not valid UTF-8"):
        ledger.read_rows(path)
    path.write_bytes(b"\xff" + ledger.HEADER.encode())
    with pytest.raises(ledger.LedgerError, match=r"line 1: not valid UTF-8"):
        ledger.read_rows(path)


@pytest.mark.parametrize("runtime", [0, 0.5, "0", 1])
def test_runtime_seconds_may_be_zero_or_fractional(runtime):
    line = ledger.format_row({"status": "keep", "name": "x", "runtime_seconds": runtime})
    assert ledger.parse(ledger.HEADER + "\n" + line + "\n")[0].runtime_seconds == float(runtime)


def test_format_errors_name_the_problem():
    with pytest.raises(ledger.LedgerError, match=r"^runtime_seconds must be a number, got 'x'$"):
        ledger.format_row({"status": "keep", "runtime_seconds": "x"})
    with pytest.raises(ledger.LedgerError, match=r"^unknown ledger column\(s\): a, b$"):
        ledger.format_row({"status": "keep", "b": 1, "a": 2})
    with pytest.raises(ledger.LedgerError, match=r"^invalid ledger status 'won'; expected one of: baseline, keep, "):
        ledger.format_row({"status": "won"})
    with pytest.raises(ledger.LedgerError, match=r"^invalid candidate_kind 'other'; expected source_edit or arg"):
        ledger.format_row({"status": "keep", "candidate_kind": "other"})
    assert (
        ledger.format_row({"status": "keep", "candidate_kind": "argument_only"}).split("\t")[
            ledger.COLUMNS.index("candidate_kind")
        ]
        == "argument_only"
    )
    assert ledger.format_row({"status": "keep", "name": ""}).split("\t")[1] == ""


# --- guard --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "minimum"),
    [
        ("max_candidates", 0, 1),
        ("plateau_threshold", 0, 1),
        ("hard_crash_threshold", -1, 0),
        ("exploration_batch_size", -1, 0),
        ("family_repeat_limit", -1, 0),
    ],
)
def test_settings_errors_name_the_setting(field, value, minimum):
    with pytest.raises(ValueError, match=f"^{field} must be an integer >= {minimum}, got {value}$"):
        guard.GuardSettings(**{field: value})


@pytest.mark.parametrize("delta", [True, math.nan, -0.001, "0.1"])
def test_plateau_min_delta_must_be_a_finite_number(delta):
    with pytest.raises(ValueError, match=f"^plateau_min_delta must be a finite number >= 0, got {delta!r}$"):
        guard.GuardSettings(plateau_min_delta=delta)


def test_settings_mapping_errors_and_dict_form():
    with pytest.raises(ValueError, match=r"^unknown guard setting\(s\): a, b$"):
        guard.GuardSettings.from_mapping({"b": 1, "a": 2})
    settings = guard.GuardSettings(max_candidates=5)
    assert settings.as_dict()["max_candidates"] == 5
    assert guard.GuardSettings.from_mapping(settings.as_dict()) == settings


@pytest.mark.parametrize("field", ["pending_manifests", "ready_manifests"])
def test_manifest_counts_are_checked_by_name(field):
    with pytest.raises(ValueError, match=f"^{field} must be an integer >= 0, got -1$"):
        guard.compute_state([], guard.GuardSettings(), stop_files_present=[], **{field: -1})


def test_state_carries_schema_version_and_accounting():
    state = guard.compute_state([], guard.GuardSettings(), stop_files_present=[])
    assert state["schema_version"] == guard.SCHEMA_VERSION
    assert "0 candidate attempt(s)" in state["accounting_instruction"]


def test_no_baseline_row_means_no_baseline_score():
    rows = [
        ledger.LedgerRow(status="keep", name="a", score=0.6),
        ledger.LedgerRow(status="baseline", name="b", score=0.5),
    ]
    state = guard.compute_state(rows[:1], guard.GuardSettings(), stop_files_present=[])
    assert state["baseline_status"] == "pending" and state["baseline_score"] is None
    assert guard.compute_state(rows, guard.GuardSettings(), stop_files_present=[])["baseline_score"] == 0.5


def test_unnamed_best_row_is_reported_with_an_empty_name():
    rows = [ledger.LedgerRow(status="baseline", name="", score=0.5), ledger.LedgerRow(status="keep", score=0.6)]
    plateau = guard.compute_state(rows, guard.GuardSettings(), stop_files_present=[])["plateau"]
    assert plateau["best_name"] == "" and plateau["best_score"] == 0.6


def test_argument_only_rows_without_a_family_never_stall_a_family():
    settings = guard.GuardSettings(family_repeat_limit=2)
    rows = [
        ledger.LedgerRow(status="baseline", score=0.5),
        ledger.LedgerRow(status="literature", literature_event_id="e1"),
    ]
    rows += [ledger.LedgerRow(status="discard", score=0.4, candidate_kind="argument_only", algorithm_family="")] * 2
    assert guard._stalled_family(guard._scan(rows, settings), settings) is None
    rows[-1] = dataclasses.replace(rows[-1], algorithm_family="lr")
    rows[-2] = dataclasses.replace(rows[-2], algorithm_family="lr")
    assert guard._stalled_family(guard._scan(rows, settings), settings) == "lr"


def test_overrides_and_runner_fields_set_every_key():
    state = guard.compute_state([], guard.GuardSettings(), stop_files_present=[])
    over = guard.with_next_action_override(state, "repair_baseline")
    assert over["final_response_allowed"] is False and over["next_action"] == "repair_baseline"
    assert isinstance(over["agent_instruction"], str) and over["agent_instruction"] != state["agent_instruction"]
    merged = guard.with_runner_fields(state, results="r.tsv", mode="min", updated_at="2026-01-01T00:00:00Z")
    assert (merged["results"], merged["mode"], merged["updated_at"]) == ("r.tsv", "min", "2026-01-01T00:00:00Z")
    with pytest.raises(ValueError, match=r"^unknown runner field\(s\): a, b$"):
        guard.with_runner_fields(state, results="r", mode="max", updated_at="t", b=1, a=2)
    with pytest.raises(ValueError, match=r"^runner fields come together; missing: best_candidate, best_source_sha"):
        guard.with_runner_fields(state, results="r", mode="max", updated_at="t", abandoned_candidates=0)


def test_an_empty_score_is_an_empty_field():
    assert ledger.format_row({"status": "crash", "name": "x", "score": ""}).split("\t")[2] == ""


def test_a_header_with_trailing_spaces_is_not_the_header():
    with pytest.raises(ledger.LedgerError, match="line 1: header does not match"):
        ledger.parse(ledger.HEADER + " \n" + _row() + "\n")


def test_trailing_letters_of_the_last_field_are_kept():
    fields = {"status": "keep", "name": "x", "score": "0.5", "literature_event_id": "EVENTX"}
    line = "\t".join(fields.get(column, "") for column in ledger.COLUMNS)
    assert ledger.parse(ledger.HEADER + "\n" + line + "\n")[0].literature_event_id == "EVENTX"


def test_utf8_error_line_counts_a_leading_empty_line(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_bytes(b"\n\xff")
    with pytest.raises(ledger.LedgerError, match=r"line 2: not valid UTF-8"):
        ledger.read_rows(path)


def test_an_override_always_forbids_a_final_answer():
    state = dict(guard.compute_state([], guard.GuardSettings(), stop_files_present=[]), final_response_allowed=True)
    over = guard.with_next_action_override(state, "submit_baseline")
    assert over["final_response_allowed"] is False and set(over) == set(state)


def test_initialize_refuses_outputs_that_alias_each_other_a_source_or_the_private_folder(tmp_path):
    from autofl_core.runner.actions.initialize import check_outputs
    from autofl_core.runner.outcome import CampaignError
    from autofl_core.runner.store.paths import CampaignPaths

    (tmp_path / "job.py").write_text("")
    cases = [
        ({"report": "job.py"}, "^--report .*job.py would overwrite the job source job.py; pick another path$"),
        (
            {"report": "same.md", "progress": "same.md"},
            "^--report and --progress name the same path .*same.md; give each its own$",
        ),
        ({"results": ".nvflare/autofl/r.tsv"}, "^--results .*r.tsv is inside the campaign's private folder; pick"),
    ]
    for outputs, message in cases:
        with pytest.raises(CampaignError, match=message):
            check_outputs(CampaignPaths.for_job(tmp_path / "job.py", outputs), [])
