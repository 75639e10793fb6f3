"""results.tsv ledger and ledger-precision comparison."""

import math

import pytest
from autofl_core.campaign import compare, ledger, vocabulary


def _header() -> str:
    return "\t".join(ledger.COLUMNS) + "\n"


def _line(**values) -> str:
    return "\t".join(str(values.get(column, "")) for column in ledger.COLUMNS) + "\n"


def test_columns_are_the_spec_order():
    assert (
        list(ledger.COLUMNS)
        == (
            "status name score runtime_seconds changed_files diff_summary run_command artifacts failure_reason "
            "candidate_manifest base_candidate patch_sha256 metric_name metric_source metric_artifact candidate_kind "
            "algorithm_family literature_event_id"
        ).split()
    )
    assert set(vocabulary.LEDGER_STATUSES) == {
        "baseline",
        "keep",
        "discard",
        "crash",
        "literature",
        "infrastructure_retry",
        "replicate",
    }


def test_parse_types_scores_and_keeps_text():
    text = _header() + _line(status="baseline", name="baseline", score="0.812500", runtime_seconds="17.250")
    text += _line(status="crash", name="broken", failure_reason="exit_code=1")
    rows = ledger.parse(text)
    assert [row.status for row in rows] == ["baseline", "crash"]
    assert rows[0].score == 0.8125 and rows[0].runtime_seconds == 17.25
    assert rows[1].score is None and rows[1].runtime_seconds is None
    assert rows[1].failure_reason == "exit_code=1"
    assert list(rows[0].to_row()) == list(ledger.COLUMNS)


def test_parse_empty_and_header_only_and_crlf():
    assert ledger.parse("") == []
    assert ledger.parse(_header()) == []
    crlf = (_header() + _line(status="keep", name="a", score="0.5")).replace("\n", "\r\n")
    assert ledger.parse(crlf)[0].score == 0.5


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("status\tname\n", "line 1: header"),
        (_header() + "keep\tx" + "\t" * 17 + "\n", "line 2: expected 18 tab-separated fields, found 19"),
        (_header() + _line(status="kept", name="x"), "line 2: unknown status 'kept'"),
        (_header() + _line(status="keep", name="x", score="abc"), "line 2: score must be a number"),
        (_header() + _line(status="keep", name="x", score="nan"), "line 2: score must be finite"),
        (
            _header() + _line(status="keep", name="ok", score="1") + _line(status="keep", name="x", score="inf"),
            "line 3",
        ),
        (_header() + _line(status="keep", name="x", runtime_seconds="-1"), "runtime_seconds must be >= 0"),
        (_header() + _line(status="keep", name="x", candidate_kind="magic"), "unknown candidate_kind"),
    ],
)
def test_parse_rejects_corrupt_input_with_one_line(text, fragment):
    with pytest.raises(ledger.LedgerError) as caught:
        ledger.parse(text, "ws/results.tsv")
    message = str(caught.value)
    assert fragment in message and message.startswith("ws/results.tsv: ") and "\n" not in message


def test_short_rows_are_padded_with_empty_trailing_fields():
    """Editors that trim trailing whitespace drop trailing tabs; the reference's eval ledgers have such rows."""
    rows = ledger.parse(_header() + "keep\tonly-two\t0.5\n" + "literature\tlit\n")
    assert [(r.status, r.name, r.score, r.literature_event_id) for r in rows] == [
        ("keep", "only-two", 0.5, ""),
        ("literature", "lit", None, ""),
    ]
    assert all(len(row.to_row()) == len(ledger.COLUMNS) for row in rows)


def test_read_rows_missing_file_is_empty(tmp_path):
    assert ledger.read_rows(tmp_path / "results.tsv") == []


def test_read_rows_invalid_utf8_names_line(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_bytes(_header().encode() + b"keep\t\xff\xfe" + b"\t" * 16 + b"\n")
    with pytest.raises(ledger.LedgerError, match=r"line 2: not valid UTF-8"):
        ledger.read_rows(path)


def test_format_row_precision_and_sanitizing():
    line = ledger.format_row(
        {
            "status": "discard",
            "name": "a\tb",
            "score": 0.9060000000000001,
            "runtime_seconds": 3.14159,
            "diff_summary": "line1\nline2\r\x00end\u2028x",
        }
    )
    fields = line.split("\t")
    assert len(fields) == len(ledger.COLUMNS)
    assert fields[2] == "0.906000" and fields[3] == "3.142"
    assert fields[1] == "a b" and fields[5] == "line1 line2  end x"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "-inf", "abc", True])
def test_format_row_rejects_non_finite_score(bad):
    with pytest.raises(ledger.LedgerError, match="score must be"):
        ledger.format_row({"status": "keep", "name": "x", "score": bad})


def test_format_row_rejects_unknown_column_and_status():
    with pytest.raises(ledger.LedgerError, match="unknown ledger column"):
        ledger.format_row({"status": "keep", "scroe": 1})
    with pytest.raises(ledger.LedgerError, match="invalid ledger status"):
        ledger.format_row({"status": "won"})


def test_append_row_creates_then_appends_and_round_trips(tmp_path):
    path = tmp_path / "results.tsv"
    first = ledger.append_row(path, {"status": "baseline", "name": "baseline", "score": 0.8, "metric_name": "accuracy"})
    ledger.append_row(path, {"status": "keep", "name": "lr", "score": 0.8123456789, "candidate_kind": "argument_only"})
    assert first.score == 0.8 and first.metric_name == "accuracy"
    text = path.read_text()
    assert text.startswith(_header()) and text.endswith("\n") and text.count("\n") == 3
    rows = ledger.read_rows(path)
    assert [row.name for row in rows] == ["baseline", "lr"]
    assert rows[1].score == 0.812346
    assert ledger.format_ledger([row.to_row() for row in rows]) == text
    assert [p.name for p in tmp_path.iterdir()] == ["results.tsv"], "no temp file may be left behind"


def test_append_row_adds_missing_final_newline(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_text(_header() + _line(status="baseline", name="b", score="0.5").rstrip("\n"))
    ledger.append_row(path, {"status": "discard", "name": "c", "score": 0.4})
    assert [row.name for row in ledger.read_rows(path)] == ["b", "c"]


def test_append_row_refuses_corrupt_ledger_and_leaves_it_untouched(tmp_path):
    path = tmp_path / "results.tsv"
    original = (_header() + "keep\tbroken" + "\t" * 18 + "\n").encode()
    path.write_bytes(original)
    with pytest.raises(ledger.LedgerError, match="line 2"):
        ledger.append_row(path, {"status": "keep", "name": "x", "score": 1.0})
    assert path.read_bytes() == original


def test_append_row_invalid_row_leaves_file_untouched(tmp_path):
    path = tmp_path / "results.tsv"
    ledger.append_row(path, {"status": "baseline", "name": "b", "score": 0.5})
    before = path.read_bytes()
    with pytest.raises(ledger.LedgerError):
        ledger.append_row(path, {"status": "keep", "name": "x", "score": math.nan})
    assert path.read_bytes() == before


def test_append_row_crash_before_replace_keeps_old_ledger(tmp_path, monkeypatch):
    path = tmp_path / "results.tsv"
    ledger.append_row(path, {"status": "baseline", "name": "b", "score": 0.5})
    before = path.read_bytes()

    def killed(*_args):
        raise KeyboardInterrupt("simulated kill between write and replace")

    monkeypatch.setattr("os.replace", killed)
    with pytest.raises(KeyboardInterrupt):
        ledger.append_row(path, {"status": "keep", "name": "x", "score": 0.9})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["results.tsv"]


# --- compare: the one "better" rule ---------------------------------------------------------------


def test_ledger_round_matches_stored_text():
    assert compare.ledger_round(0.9060000000000001) == 0.906
    assert compare.ledger_round(0.1234565) == float(f"{0.1234565:.6f}")


@pytest.mark.parametrize(
    "new, old, mode, delta, expected",
    [
        (0.9060000000000001, 0.906, "max", 0.0, False),  # tie at ledger precision
        (0.906, 0.9060000000000001, "min", 0.0, False),
        (0.9060004, 0.906, "max", 0.0, False),  # rounds to the same 6 decimals
        (0.906001, 0.906, "max", 0.0, True),
        (0.905999, 0.906, "min", 0.0, True),
        (0.905999, 0.906, "max", 0.0, False),
        (0.5, None, "max", 0.0, True),  # anything beats no score
        (0.5, None, "min", 0.0, True),
        (None, 0.5, "max", 0.0, False),
        (None, None, "max", 0.0, False),
        (0.9065, 0.906, "max", 0.0005, False),  # exactly min_delta is not more than it
        (0.9070, 0.9065, "max", 0.0005, False),  # binary noise must not create a win
        (0.906501, 0.906, "max", 0.0005, True),
        (0.9055, 0.906, "min", 0.0005, False),
        (0.905499, 0.906, "min", 0.0005, True),
    ],
)
def test_better(new, old, mode, delta, expected):
    assert compare.better(new, old, mode, delta) is expected


def test_better_rejects_bad_inputs():
    with pytest.raises(ValueError, match="mode"):
        compare.better(1.0, 0.5, "maximize")
    with pytest.raises(ValueError, match="min_delta"):
        compare.better(1.0, 0.5, "max", -0.1)
    with pytest.raises(ValueError, match="finite"):
        compare.better(math.inf, None, "max")


def test_improvement_is_direction_adjusted():
    assert compare.improvement(0.91, 0.9, "max") == pytest.approx(0.01)
    assert compare.improvement(0.2, 0.25, "min") == pytest.approx(0.05)
    assert compare.improvement(0.3, 0.25, "min") == pytest.approx(-0.05)
    assert compare.improvement(None, 0.25, "min") is None


def test_parse_tolerates_a_utf8_bom_and_joins_lists():
    text = "\ufeff" + _header() + _line(status="keep", name="x", score="0.5")
    assert ledger.parse(text)[0].name == "x"
    line = ledger.format_row({"status": "keep", "name": "x", "changed_files": ["client.py", "job.py"]})
    assert line.split("\t")[4] == "client.py,job.py"


def test_oversized_ledger_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    path = tmp_path / "results.tsv"
    path.write_text(_header() + _line(status="keep", name="x", score="0.5") * 20)
    monkeypatch.setattr(ledger, "MAX_LEDGER_BYTES", 200)
    with pytest.raises(ledger.LedgerError, match="larger than"):
        ledger.read_rows(path)
    with pytest.raises(ledger.LedgerError, match="larger than"):
        ledger.append_row(path, {"status": "keep", "name": "y"})


def test_append_row_refuses_invalid_utf8(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_bytes(_header().encode() + b"\xff\n")
    with pytest.raises(ledger.LedgerError, match="UTF-8"):
        ledger.append_row(path, {"status": "keep", "name": "y"})
