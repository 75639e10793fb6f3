"""The vocabulary's closed value sets are enums whose members print, format and serialize as their value on every
supported Python, so every message, report line and file stays the bytes the plain strings gave; the records hold
members after a read and write the same text back."""

import json
import sys
from enum import Enum

import pytest
import yaml
from autofl_core.campaign import ledger
from autofl_core.campaign import vocabulary as v

WORD_SETS = (
    v.LedgerStatus,
    v.CandidateKind,
    v.ManifestStatus,
    v.TrialOutcome,
    v.BudgetCheck,
    v.Decision,
    v.BaselineStatus,
    v.Reason,
    v.NextAction,
)
MEMBERS = [member for words in WORD_SETS for member in words]


def _renderings(word) -> dict:
    return {
        "str": str(word),
        "format": format(word),
        "format spec": format(word, ">25").strip(),
        "f-string": f"{word}",
        "percent": "%s" % word,  # noqa: UP031 (the %-format is what is checked)
        "json": json.loads(json.dumps(word)),
        "json key": next(iter(json.loads(json.dumps({word: 1})))),
        "json text": json.dumps([word]),
        "yaml": yaml.safe_dump(word),
        "yaml (C dumper)": yaml.dump({"s": word}, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)),
    }


def _expected(value: str) -> dict:
    return {
        "str": value,
        "format": value,
        "format spec": value,
        "f-string": value,
        "percent": value,
        "json": value,
        "json key": value,
        "json text": f'["{value}"]',
        "yaml": yaml.safe_dump(value),
        "yaml (C dumper)": yaml.dump({"s": value}, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)),
    }


@pytest.mark.parametrize("word", MEMBERS, ids=lambda word: f"{type(word).__name__}.{word.name}")
def test_each_member_is_written_as_its_value(word):
    assert isinstance(word, v.Word) and type(word.value) is str
    assert _renderings(word) == _expected(word.value)
    assert word == word.value and hash(word) == hash(word.value)


def test_a_plain_str_enum_would_fail_these_checks():
    """The override is what makes the checks pass: without it a member formats as `Class.NAME` (3.11+) and PyYAML's
    safe dumper refuses it."""

    class Plain(str, Enum):
        KEEP = "keep"

    if sys.version_info >= (3, 11):
        assert f"{Plain.KEEP}" == "Plain.KEEP" and "%s" % Plain.KEEP == "Plain.KEEP"  # noqa: UP031
    with pytest.raises(yaml.representer.RepresenterError):
        yaml.safe_dump(Plain.KEEP)


def test_the_module_names_are_the_enum_members():
    assert v.KEEP is v.LedgerStatus.KEEP and v.LEDGER_STATUSES == tuple(v.LedgerStatus)
    assert v.PREPARED is v.ManifestStatus.PREPARED and v.MANIFEST_STATUSES == tuple(v.ManifestStatus)
    assert v.MANIFEST_PENDING == (v.PREPARED, v.RUNNING, v.READY)
    assert v.MANIFEST_TERMINAL == ("keep", "discard", "crash", "abandoned")
    assert v.OUTCOME_PRUNED is v.TrialOutcome.PRUNED and v.SOURCE_EDIT is v.CandidateKind.SOURCE_EDIT
    assert v.ManifestStatus.KEEP == v.KEEP and v.ManifestStatus.KEEP in v.ATTEMPTS


def test_a_ledger_row_holds_members_and_writes_the_same_line():
    line = "\t".join(
        ["keep", "lr-x2", "0.500000", "", "", "", "", "", "", "", "", "", "", "", "", "source_edit", "", ""]
    )
    row = ledger.LedgerRow.from_fields(line.split("\t"))
    assert type(row.status) is v.LedgerStatus and type(row.candidate_kind) is v.CandidateKind
    assert row.to_line() == line
    assert ledger.LedgerRow.from_row(row.to_row()) == row
    bare = ledger.LedgerRow.from_row({"status": "literature", "name": "lit-0001"})
    assert bare.status is v.LITERATURE and bare.candidate_kind == ""
    assert ledger.LedgerRow(status="crash").status is v.CRASH  # any way a record is built


def test_an_unknown_word_in_a_row_is_the_one_line_refusal():
    with pytest.raises(ledger.LedgerError, match=r"^invalid ledger status 'kept'; expected one of: baseline, keep,"):
        ledger.LedgerRow.from_row({"status": "kept", "name": "x"})
    with pytest.raises(ledger.LedgerError, match=r"^invalid candidate_kind 'both'; expected source_edit or arg"):
        ledger.LedgerRow.from_row({"status": "keep", "name": "x", "candidate_kind": "both"})


def test_the_guard_state_holds_members_and_writes_their_values():
    from autofl_core.campaign import guard

    state = guard.compute_state([], guard.GuardSettings(mode="max", max_candidates=2), stop_files_present=["STOP"])
    assert (type(state["decision"]), type(state["reason"]), type(state["next_action"])) == (
        v.Decision,
        v.Reason,
        v.NextAction,
    )
    assert state["baseline_status"] is v.BaselineStatus.PENDING
    written = json.loads(json.dumps(state))
    assert (written["decision"], written["reason"], written["next_action"]) == (
        "stop",
        "manual_stop_file",
        "final_report",
    )
    assert "manual_stop_file" in json.dumps(state) and "Reason" not in json.dumps(state)
