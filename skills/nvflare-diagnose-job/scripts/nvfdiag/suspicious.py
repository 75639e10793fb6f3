"""Run the injection scanner and work out which evidence lines it flagged (those never count as signals).

Usage: `findings, flagged = scan_suspicious(lines)`; `flagged` holds indexes into `lines`. Pure.
"""

from __future__ import annotations

import re

from . import injection
from .model import Line

_SPLIT = re.compile(r"split across lines (\d+)-(\d+)")
MAX_SPLIT_SPAN = 3


def _indexes_by_position(lines: list[Line]) -> dict[tuple[str, int], int]:
    return {(line.source, line.line): i for i, line in enumerate(lines) if line.line is not None}


def flagged_indexes(lines: list[Line], findings: list[dict]) -> set[int]:
    """Indexes of every line a finding covers, including the lines of a directive split across lines."""
    where = _indexes_by_position(lines)
    flagged: set[int] = set()
    unnumbered = {f["source"] for f in findings if f.get("line") is None}
    for finding in findings:
        if finding.get("line") is None:
            continue
        first = last = finding["line"]
        split = _SPLIT.search(finding.get("summary", ""))
        if split and 0 <= int(split.group(2)) - int(split.group(1)) < MAX_SPLIT_SPAN:
            first, last = int(split.group(1)), int(split.group(2))
        for number in range(first, last + 1):
            if (finding["source"], number) in where:
                flagged.add(where[(finding["source"], number)])
    # Lines from the tail of a truncated file carry no number: re-check those of the affected sources one by one.
    for index, line in enumerate(lines):
        if line.line is None and line.source in unnumbered and injection.scan_lines([line]):
            flagged.add(index)
    return flagged


def scan_suspicious(lines: list[Line]) -> tuple[list[dict], set[int]]:
    findings = injection.scan_lines(lines)
    return findings, flagged_indexes(lines, findings)
