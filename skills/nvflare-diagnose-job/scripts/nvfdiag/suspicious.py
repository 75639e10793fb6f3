"""Run the injection scanner and work out which evidence lines it flagged (those never count as signals).

Usage: `findings, flagged = scan_suspicious(lines)`; `flagged` holds indexes into `lines`. Pure.
"""

from __future__ import annotations

from . import injection
from .model import Line


def flagged_indexes(findings: list[dict]) -> set[int]:
    """Indexes of every line a finding covers (all lines of a directive split across lines included)."""
    flagged: set[int] = set()
    for finding in findings:
        first, last = finding["span"]
        flagged.update(range(first, last + 1))
    return flagged


def scan_suspicious(lines: list[Line], index=None) -> tuple[list[dict], set[int]]:
    """Findings and flagged line indexes; `index` is a textindex.TextIndex of the same lines (built if None)."""
    findings = injection.scan_lines(lines, index)
    return findings, flagged_indexes(findings)
