"""One pass over the evidence lines: catalog signal hits, text mode hints and status markers.

Usage: `result = scan_lines(lines, catalog, skip={indexes of suspicious lines}[, index=TextIndex(...)])`. Pure;
regexes come compiled from the catalog; the text index finds the few lines worth trying them on.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from . import logline
from .catalog import Catalog
from .model import Line
from .textindex import TextIndex

MAX_SCAN_CHARS = 8192
MAX_HITS_PER_ROW = 200
FREQUENT = 2000  # keyword occurrences above which a mode hint's regex is searched over the whole text
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
    markers: list[tuple[int, str]] = field(default_factory=list)
    find_mode_hints: Callable[[], dict[str, list[str]]] = dict  # {mode: [reasons]}, looked for when called

    @property
    def mode_hints(self) -> dict[str, list[str]]:
        return self.find_mode_hints()


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


def scan_lines(lines: list[Line], catalog: Catalog, skip: set[int] | frozenset = frozenset(),
               index: TextIndex | None = None) -> ScanResult:
    """Match every non-skipped line once against the catalog signals, mode hints and markers.

    A regex runs only on a line where one of its keywords occurs, and DEBUG/INFO lines are tried only against
    signals marked any_level. The text index (textindex.py) finds those lines without a Python loop over every
    line: lines that are not DEBUG/INFO records ("loud" lines: few in an ordinary log) get the keyword check,
    DEBUG/INFO lines only where an any_level keyword occurs. Mode hints and markers count once per line/hint.
    """
    index = index or TextIndex([line.text for line in lines])
    result = ScanResult()
    checks = [(row.id, sig) for row in catalog.rows for sig in row.signals]
    loud = _CheckIndex(checks)
    noisy = set(_loud_lines(lines, index)) - set(skip)
    found: dict[str, set[int]] = {}  # row -> lines
    for number in noisy:
        text = lines[number].text[:MAX_SCAN_CHARS]
        for row_id, sig in loud.candidates(text.lower()):
            if number not in found.get(row_id, ()) and sig.regex.search(text):
                found.setdefault(row_id, set()).add(number)
    waiting = _waiting_rows(catalog)
    for row_id, sig in checks:  # DEBUG/INFO lines: only any_level signals, tried where their keywords occur
        if sig.any_level and not (row_id in waiting and not any(found.get(p) for p in waiting[row_id])):
            seen = found.setdefault(row_id, set())
            for number in _keyword_lines(index, sig.keywords, len(lines)):
                if number not in seen and number not in noisy and number not in skip:
                    if sig.regex.search(lines[number].text[:MAX_SCAN_CHARS]):
                        seen.add(number)
    strength: dict[str, dict[int, str]] = {row_id: {} for row_id in found}
    for row_id, sig in checks:  # the first matching signal of a row (catalog order) gives the hit its strength
        for number in found.get(row_id, ()):
            if number not in strength[row_id] and _signal_matches(lines[number].text, sig, number in noisy):
                strength[row_id][number] = sig.strength
    for row_id, numbers in strength.items():
        if numbers:
            result.hits[row_id] = [Hit(row_id, n, numbers[n]) for n in sorted(numbers)[:MAX_HITS_PER_ROW]]
    result.markers = _markers(lines, index, skip)
    result.find_mode_hints = functools.partial(_mode_hints, lines, catalog, index, skip)
    return result


def _waiting_rows(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """Rows that count only next to a partner row (requires_any, e.g. transfer progress next to a timeout) whose
    partners can be found by the scan alone: their DEBUG/INFO signals are looked for only if a partner matched
    (the ranking drops them otherwise; ordinary logs are full of healthy transfer progress)."""
    by_id = {row.id: row for row in catalog.rows}
    return {row.id: row.requires_any for row in catalog.rows if row.requires_any
            and all(p in by_id and not by_id[p].conditions for p in row.requires_any)}


def _signal_matches(text: str, sig, loud: bool) -> bool:
    """The per-line rule: a keyword occurs, the line's level allows the signal, and the regex matches."""
    text = text[:MAX_SCAN_CHARS]
    return (loud or sig.any_level) and sig.may_match(text.lower()) and bool(sig.regex.search(text))


def _keyword_lines(index: TextIndex, keywords: tuple[str, ...], count: int):
    if not keywords:
        return range(count)
    return sorted({n for word in keywords for n in index.lines_with(word)})


_W = r"[^\S\n]"  # \s within one line of the joined text
_NOT_QUIET = re.compile(
    rf"\n(?!{_W}*\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{2}}:\d{{2}}:\d{{2}}(?:[,.]\d+)?{_W}*-{_W}*(?:\S+{_W}+-{_W}+)?"
    rf"(?:{'|'.join(QUIET_LEVELS)}){_W}+-)"
)


def _loud_lines(lines: list[Line], index: TextIndex) -> list[int]:
    """Lines that are not DEBUG/INFO log records (logline.level), found in one pass over the joined text."""
    out = [index.line_at(match.start() + 1) for match in _NOT_QUIET.finditer(index.text)]
    if lines and logline.level(lines[0].text[:MAX_SCAN_CHARS]) not in QUIET_LEVELS:
        out.insert(0, 0)
    return out


def _markers(lines: list[Line], index: TextIndex, skip) -> list[tuple[int, str]]:
    found = {n for literal in ("[USER_CODE_EXCEPTION]", "[FLARE]") for n in index.lines_with_text(literal)}
    out = []
    for number in sorted(found - set(skip)):
        marker = MARKER.search(lines[number].text[:MAX_SCAN_CHARS])
        if marker:
            out.append((number, marker.group(0)))
    return out


def _mode_hints(lines: list[Line], catalog: Catalog, index: TextIndex, skip) -> dict[str, list[str]]:
    """Each mode hint once: the first non-skipped line holding one of its keywords where its regex matches."""
    out: dict[str, list[str]] = {}
    for mode, entries in catalog.mode_hints.items():
        for hint in entries:
            found = _first_match(lines, index, hint, skip)
            if found is not None:
                out.setdefault(mode, []).append((found, hint.reason))
    return {mode: [reason for _, reason in sorted(pairs)] for mode, pairs in out.items()}


def _first_match(lines: list[Line], index: TextIndex, hint, skip) -> int | None:
    """The first line (not skipped) holding a keyword of `hint` where its regex matches, or None."""
    def matches(number: int) -> bool:
        text = lines[number].text[:MAX_SCAN_CHARS]
        return number not in skip and hint.may_match(text.lower()) and bool(hint.regex.search(text))

    if not hint.keywords:
        return next((n for n in range(len(lines)) if matches(n)), None)
    candidates = heapq.merge(*(index.iter_lines_with(word) for word in hint.keywords))
    fast = _without_leading_boundary(hint.regex)
    for tried, number in enumerate(candidates):
        if matches(number):
            return number
        if fast is not None and tried >= FREQUENT:  # thousands of keyword lines: let the regex engine skip ahead
            return _first_match_from(lines, index, fast, matches, index.starts[number + 1])
    return None


def _first_match_from(lines, index: TextIndex, fast: re.Pattern, matches, start: int) -> int | None:
    for match in fast.finditer(index.text, start):
        pos = match.start()
        if not (index.text[pos - 1].isalnum() or index.text[pos - 1] == "_"):  # the \b that was left out
            if matches(number := index.line_at(pos)):
                return number
    return None


def _without_leading_boundary(regex: re.Pattern) -> re.Pattern | None:
    """`\\bword...` without its leading \\b (so the regex engine can skip ahead to the literal), else None."""
    pattern = regex.pattern
    if pattern.startswith("\\b") and pattern[2:3].isalnum() and "|" not in pattern:
        return re.compile(pattern[2:], regex.flags)
    return None
