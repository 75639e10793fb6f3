"""One pass over the evidence lines: catalog signal hits, text mode hints and status markers.

Usage: `result = scan_lines(lines, catalog, skip={indexes of suspicious lines})`. Pure; regexes come compiled
from the catalog and a single combined prefilter keeps the pass linear and cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import logline
from .catalog import Catalog
from .model import Line

MAX_SCAN_CHARS = 8192
MAX_HITS_PER_ROW = 200
MARKER = re.compile(r"\[(USER_CODE_EXCEPTION|FLARE)\]")
QUIET_LEVELS = ("DEBUG", "INFO")


@dataclass(frozen=True)
class Hit:
    pattern: str
    index: int | None  # index into Evidence.lines; None for structured facts (job status)
    strength: str


@dataclass
class ScanResult:
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    mode_hints: dict[str, list[str]] = field(default_factory=dict)
    markers: list[tuple[int, str]] = field(default_factory=list)


class _CheckIndex:
    """(key, matcher) pairs grouped by keyword: a line costs one substring test per distinct keyword."""

    def __init__(self, checks: list[tuple[str, object]]):
        self.checks = checks
        by_word: dict[str, list[int]] = {}
        always = []
        for number, (_, check) in enumerate(checks):
            if not check.keywords:
                always.append(number)
            for word in check.keywords:
                by_word.setdefault(word, []).append(number)
        self.by_word = sorted(by_word.items())
        self.always = always

    def candidates(self, lowered: str) -> list[tuple[str, object]]:
        numbers = set(self.always)
        for word, group in self.by_word:
            if word in lowered:
                numbers.update(group)
        return [self.checks[n] for n in sorted(numbers)]


def scan_lines(lines: list[Line], catalog: Catalog, skip: set[int] | frozenset = frozenset()) -> ScanResult:
    """Match every non-skipped line once against the catalog signals, mode hints and markers.

    Each line is lower-cased once; a regex runs only when one of its keywords occurs, and DEBUG/INFO lines are
    tried only against signals marked any_level. Mode hints use the same keyword index and count once.
    """
    result = ScanResult()
    loud_checks = [(row.id, sig) for row in catalog.rows for sig in row.signals]
    loud = _CheckIndex(loud_checks)
    quiet = _CheckIndex([check for check in loud_checks if check[1].any_level])
    hints = _CheckIndex([(mode, hint) for mode, entries in catalog.mode_hints.items() for hint in entries])
    found_hints: set[int] = set()
    for index, line in enumerate(lines):
        if index in skip:
            continue
        text = line.text[:MAX_SCAN_CHARS]
        lowered = text.lower()
        if "[" in text and (marker := MARKER.search(text)):
            result.markers.append((index, marker.group(0)))
        for mode, hint in hints.candidates(lowered):
            if id(hint) not in found_hints and hint.regex.search(text):
                found_hints.add(id(hint))
                result.mode_hints.setdefault(mode, []).append(hint.reason)
        matched_rows: set[str] = set()
        checks = (quiet if logline.level(text) in QUIET_LEVELS else loud).candidates(lowered)
        for row_id, sig in checks:
            if row_id in matched_rows or not sig.regex.search(text):
                continue
            matched_rows.add(row_id)
            bucket = result.hits.setdefault(row_id, [])
            if len(bucket) < MAX_HITS_PER_ROW:
                bucket.append(Hit(row_id, index, sig.strength))
    return result
