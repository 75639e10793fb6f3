"""P4t guard: ordinary log lines get no per-line Python work in the detailed scan.

Work is counted, not timed (bench/diagnose_throughput.py times it): every evidence line counts how often its text
is read. Building the joined text index reads each line once; after that, only the lines a whole-text step picked
(not DEBUG/INFO records, a keyword, an unusual character, a gate that may open) may be read again. A change that
brings back a loop over every line (the reads of the ordinary DEBUG/INFO records double) fails here.
"""

from __future__ import annotations

import dataclasses
import random

import test_scan_skipping
from nvfdiag import logline, pipeline
from nvfdiag.match import tracebacks
from nvfdiag.match.catalog import load_catalog
from nvfdiag.model import Line
from nvfdiag.untrusted import injection

ordinary = test_scan_skipping.ordinary  # the fixture: about 1 MiB of healthy real log text, read as evidence

EXTRA_READS = 0.03  # share of the DEBUG/INFO records that may be read again: picked by a keyword, an open gate or
# the round-banner binary search (measured 2.4 % with a traceback on this text: 1.4 % the signal keywords of every
# catalog family, e.g. "Set the client status ready" opens a config-change gate, 0.8 % the timestamp bisection of
# match/rounds.py, a few lines per source; a loop over every line reads 100 %). An error record without a
# traceback adds at most a few: the rule whether work went on past it reads the records after it up to one answer,
# and only those the index says may name the record's participant (session 19: 2.9's `Aggregated N/M results` of
# `identity=simulator_server` after an `identity=server` error are not read; +3 records here, +4 before the wording).
TRACEBACK = [
    "2026-11-30 10:00:01,000 - ClientRunner - ERROR - [identity=site-2, run=simulate_job] - task train failed",
    "Traceback (most recent call last):",
    '  File "/work/job/client.py", line 42, in main',
    "    weights = model.fit(batch)",
    '  File "/work/job/model.py", line 17, in fit',
    "    return x @ self.w",
    "ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0",
]

ERROR_RECORD = (
    "2026-11-30 10:00:01,000 - ServerRunner - ERROR - [identity=server, run=simulate_job, wf=controller] - Aborting"
    " current RUN due to FATAL_SYSTEM_ERROR received: Task train failed on site-2: ModuleNotFoundError: No module"
    " named 'torchvision'"
)


class CountingLine:
    """A model.Line whose text counts its reads."""

    __slots__ = ("source", "site", "line", "part", "_text", "reads")

    def __init__(self, source: str, site: str | None, line: int | None, text: str, part: int = 0):
        self.source, self.site, self.line, self.part, self._text, self.reads = source, site, line, part, text, 0

    @property
    def text(self) -> str:
        self.reads += 1
        return self._text


def counted(evidence, lines):
    return dataclasses.replace(evidence, lines=[CountingLine(x.source, x.site, x.line, x.text, x.part) for x in lines])


def quiet_records(lines) -> list[CountingLine]:
    return [line for line in lines if logline.level(line._text) in logline.QUIET_LEVELS]


def test_ordinary_lines_are_read_once(ordinary):
    evidence = counted(ordinary, ordinary.lines)
    report = pipeline.diagnose(evidence, load_catalog())
    quiet = quiet_records(evidence.lines)
    again = [line for line in quiet if line.reads > 1]
    assert report["matched_pattern"] == "UNKNOWN" and report["suspicious_content"] == []
    assert len(quiet) > 6000 and all(line.reads >= 1 for line in quiet)
    assert len(again) <= EXTRA_READS * len(quiet), f"{len(again)} of {len(quiet)} DEBUG/INFO records read again"
    assert sum(line.reads for line in evidence.lines) <= 1.25 * len(evidence.lines)


def test_a_traceback_is_followed_without_a_walk_over_every_line(ordinary, monkeypatch):
    middle = len(ordinary.lines) // 2
    failing = (
        list(ordinary.lines[:middle])
        + [
            dataclasses.replace(ordinary.lines[0], source="site-2/log.txt", site="site-2", line=n + 1, text=text)
            for n, text in enumerate(TRACEBACK)
        ]
        + list(ordinary.lines[middle:])
    )
    visited = []
    real = tracebacks._reachable
    monkeypatch.setattr(
        tracebacks,
        "_reachable",
        lambda lines, index: (visited.append(n) or (n, line) for n, line in real(lines, index)),
    )
    evidence = counted(ordinary, failing)
    report = pipeline.diagnose(evidence, load_catalog())
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    assert len(visited) <= tracebacks.MAX_BLOCK_LINES + 1 < len(failing) // 10
    quiet = quiet_records(evidence.lines)
    again = [line for line in quiet if line.reads > 1]
    assert len(again) <= EXTRA_READS * len(quiet), f"{len(again)} of {len(quiet)} DEBUG/INFO records read again"


def _read_again(lines) -> int:
    return sum(line.reads > 1 for line in quiet_records(lines))


def test_an_error_record_without_a_traceback_reads_no_more_ordinary_lines_again(ordinary):
    """The rule that asks whether NVFLARE's records of completed work follow an error (calibration._went_on) reads
    them in line order after the error, up to the first that answers: not every such record of the text."""
    healthy = counted(ordinary, ordinary.lines)
    pipeline.diagnose(healthy, load_catalog())
    middle = len(ordinary.lines) // 2
    error = dataclasses.replace(ordinary.lines[middle], text=ERROR_RECORD)
    failing = counted(ordinary, [*ordinary.lines[:middle], error, *ordinary.lines[middle:]])
    report = pipeline.diagnose(failing, load_catalog())
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert _read_again(failing.lines) <= _read_again(healthy.lines) + 5


def test_prose_windows_are_checked_only_where_a_first_gate_word_is(monkeypatch):
    """Plain output (no log records) makes every line a continuation window of the one before; only windows with
    a first-gate word (found exactly, not through shapes) may be joined and checked."""
    rng = random.Random(8)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)
    ]
    lines = [
        Line("stdout.txt", None, n + 1, " ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 14))))
        for n in range(4000)
    ]
    checked = []
    real = injection._open
    monkeypatch.setattr(injection, "_open", lambda rules, lowered: checked.append(lowered) or real(rules, lowered))
    assert injection.scan_lines(lines) == []
    assert len(checked) <= 0.05 * len(lines), f"{len(checked)} of {len(lines)} windows joined and checked"
