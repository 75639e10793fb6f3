"""One pass over the evidence lines: catalog signal hits, text mode hints and status markers.

Usage: `result = scan_signals(lines, catalog, skip={indexes of suspicious lines}[, index=TextIndex(...)])`. Pure;
regexes come compiled from the catalog; the text index finds the few lines worth trying them on.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .. import logline
from ..model import Line
from ..read.prefixes import echoes_a_script
from ..regexfacts import BOUNDARY, contains, required_literals
from ..textindex import Subset, TextIndex
from .catalog import Catalog

MAX_SCAN_CHARS = 8192
MAX_HITS_PER_ROW = 200
FEW_LINES = 32  # below this many lines to try, _signal_matches looks at each itself
MARKER = re.compile(r"\[(USER_CODE_EXCEPTION|FLARE)\]")
# loggers only the job's own code logs to (NVFLARE's log config formats them like its own records)
_JOB_LOGGERS = ("root", "__main__")


@dataclass(frozen=True)
class Hit:
    pattern: str
    index: int | None  # index into Evidence.lines; None for structured facts (job status)
    strength: str
    after_partner: bool = False  # from a signal that counts only after a partner row's hit (refine.py)
    # Why it matched (not part of a hit's identity): `catalog rule ROW signal n`, an NVFLARE message template, a
    # peeled wrapper, a traceback condition, a process exit. loose: a generic template or a rule that matches words
    # (the diagnosis it supports is at most medium); wrapper: the wrapper template peeled to reach the message.
    basis: str = field(default="", compare=False)
    loose: bool = field(default=False, compare=False)
    wrapper: str = field(default="", compare=False)
    # contested: another source on the same line points at another row (dissent.py): what it is and where it points
    contested: str = field(default="", compare=False)
    # words: a catalog signal's regex matched the line's words (not a message template, a traceback condition or an
    # exit); foreign: why the line is not what the row means (a web download's or the job's own connection)
    words: bool = field(default=False, compare=False)
    foreign: str = field(default="", compare=False)
    # generic: the signal's words are ones many libraries print (the catalog's `generic`), not NVFLARE's own text
    generic: bool = field(default=False, compare=False)
    # kind: the kind of the NVFLARE message template that decided a line outside a traceback (messages.RAISE, LOG,
    # PANIC; "" for any other hit): a logged message says NVFLARE reported it, not that the run failed
    kind: str = field(default="", compare=False)


@dataclass
class ScanResult:
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    markers: list[tuple[int, str]] = field(default_factory=list)
    # {mode: [reasons]}, looked for when called (optional keyword own_calls: see _mode_hints)
    find_mode_hints: Callable[..., dict[str, list[str]]] = field(default=lambda **_: {})

    @property
    def mode_hints(self) -> dict[str, list[str]]:
        return self.find_mode_hints()


def scan_signals(
    lines: list[Line], catalog: Catalog, skip: set[int] | frozenset = frozenset(), index: TextIndex | None = None
) -> ScanResult:
    """Match every non-skipped line once against the catalog signals, mode hints and markers.

    A regex runs only on a line where one of its keywords occurs (and the literal text the regex cannot match
    without, regexfacts.py), and DEBUG/INFO lines are tried only against signals marked any_level. The text
    index (textindex.py) finds those lines without a Python loop over every line: lines that are not DEBUG/INFO
    records ("loud" lines: few in an ordinary log) get every signal, DEBUG/INFO lines only the any_level ones.
    Mode hints are looked for when the mode decision asks for them; markers once per line.
    """
    index = index or TextIndex([line.text for line in lines])
    result = ScanResult()
    checks = [(row.id, sig) for row in catalog.rows for sig in row.signals]
    noisy = [n for n in _loud_lines(lines, index) if n not in skip]
    noisy_set = set(noisy)
    # Keyword lookups for the loud lines are answered on their own shapes, unless they are most of the text.
    noisy_index = index.of_lines(noisy) if 2 * len(noisy) < len(lines) else None
    waiting = _waiting_rows(catalog)
    found: dict[str, set[int]] = {}  # row -> lines where one of its signals matches
    for row_id, sig in sorted(checks, key=lambda check: check[0] in waiting):  # partners before waiting rows
        seen = found.setdefault(row_id, set())
        if noisy_index is None:
            tries = [n for n in _keyword_lines(index, sig.keywords) if n in noisy_set]
        else:
            tries = [noisy[n] for n in _keyword_lines(noisy_index, sig.keywords)]
        if sig.any_level and not (row_id in waiting and not any(found.get(p) for p in waiting[row_id])):
            tries += [n for n in _keyword_lines(index, sig.keywords) if n not in noisy_set and n not in skip]
        matched = 0
        for number in _with_literals(index, sorted(tries), sig):  # only the first MAX_HITS_PER_ROW lines count
            if number in seen or _signal_matches(lines[number].text, sig, True):
                seen.add(number)
                matched += 1
                if matched >= MAX_HITS_PER_ROW:
                    break
    strength, generic = _strengths(lines, checks, found, noisy_set)
    for row_id, numbers in strength.items():
        if numbers:
            result.hits[row_id] = [
                Hit(row_id, n, *numbers[n], words=True, generic=n in generic[row_id])
                for n in sorted(numbers)[:MAX_HITS_PER_ROW]
            ]
    result.markers = _markers(lines, index, skip)
    result.find_mode_hints = functools.partial(_mode_hints, lines, catalog, index, skip)
    return result


def _strengths(lines: list[Line], checks: list, found: dict[str, set[int]], noisy: set[int]) -> tuple[dict, dict]:
    """Per row, each matched line's (strength, after_partner, basis, loose) from the first matching signal of the
    row (catalog order), and the lines only generic signals match (no signal of the row that is not generic does)."""
    strength: dict[str, dict[int, tuple]] = {row_id: {} for row_id in found}
    generic: dict[str, set[int]] = {row_id: set() for row_id in found}
    for row_id, sig in checks:
        for number in found[row_id]:
            first = number not in strength[row_id]
            if not (first or (number in generic[row_id] and not sig.generic)):
                continue
            if not _signal_matches(lines[number].text, sig, number in noisy):
                continue
            if first:
                strength[row_id][number] = (sig.strength, sig.after_partner, rule_basis(row_id, sig), sig.loose)
            if sig.generic and first:
                generic[row_id].add(number)
            elif not sig.generic:
                generic[row_id].discard(number)
    return strength, generic


def rule_basis(row_id: str, sig) -> str:
    """match_basis of a catalog-rule hit: the row, the signal's number in it, and whether the rule is loose."""
    return f"catalog rule {row_id} signal {sig.number}" + (
        " (loose: words, not a specific message)" if sig.loose else ""
    )


def _waiting_rows(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """Rows that count only next to a partner row (requires_any, e.g. transfer progress next to a timeout) whose
    partners can be found by the scan alone: their DEBUG/INFO signals are looked for only if a partner matched
    (the ranking drops them otherwise; ordinary logs are full of healthy transfer progress)."""
    by_id = {row.id: row for row in catalog.rows}
    return {
        row.id: row.requires_any
        for row in catalog.rows
        if row.requires_any and all(p in by_id and not by_id[p].conditions for p in row.requires_any)
    }


def _signal_matches(text: str, sig, loud: bool) -> bool:
    """The per-line rule: a keyword occurs, the line's level allows the signal, and the regex matches."""
    if not (loud or sig.any_level):
        return False
    text = text[:MAX_SCAN_CHARS]
    lowered = text.lower()
    if not sig.may_match(lowered) or not all(any(contains(lowered, alt) for alt in alts) for alts in _needs(sig)):
        return False
    return bool(sig.regex.search(text))


@functools.cache
def _needs(sig) -> tuple[tuple[str, ...], ...]:
    """Literal text the signal's regex cannot match without (lower case: catalog regexes ignore case)."""
    return required_literals(sig.regex) if sig.regex.flags & re.IGNORECASE else ()


def _keyword_lines(index: TextIndex, keywords: tuple[str, ...]) -> list[int]:
    """Lines that may hold one of `keywords` (a superset; every line when there are no keywords)."""
    return sorted({n for word in keywords for n in index.lines_with(word)}) if keywords else list(range(index.count))


def _with_literals(index: TextIndex, numbers: list[int], sig) -> list[int]:
    """The lines of `numbers` holding the literal text the signal's regex needs (regexfacts.py), found with one
    search per literal over the joined text of just those lines; a few lines are left to _signal_matches. Exact
    for the first MAX_SCAN_CHARS characters when lower-casing keeps lengths (else all lines are kept)."""
    if index.low_starts is not index.starts:
        return numbers
    for group in _needs(sig):
        if len(numbers) < FEW_LINES:
            break
        few = Subset(index, numbers, MAX_SCAN_CHARS)
        numbers = sorted({n for literal in group for n in few.lines_matching(_literal_re(literal))})
    return numbers


@functools.cache
def _literal_re(literal: str) -> re.Pattern:
    """A regexfacts literal as a pattern (BOUNDARY: no letter, digit or underscore may follow)."""
    if literal.endswith(BOUNDARY):
        return re.compile(re.escape(literal[:-1]) + r"(?!\w)")
    return re.compile(re.escape(literal))


def _loud_lines(lines: list[Line], index: TextIndex) -> list[int]:
    """Lines that are not DEBUG/INFO log records (logline.level), found in one pass over the joined text."""
    return logline.loud_lines(index, lambda n: lines[n].text[:MAX_SCAN_CHARS])


def _markers(lines: list[Line], index: TextIndex, skip) -> list[tuple[int, str]]:
    found = {n for literal in ("[USER_CODE_EXCEPTION]", "[FLARE]") for n in index.lines_with_text(literal)}
    out = []
    for number in sorted(found - set(skip)):
        marker = MARKER.search(lines[number].text[:MAX_SCAN_CHARS])
        if marker:
            out.append((number, marker.group(0)))
    return out


def _mode_hints(
    lines: list[Line], catalog: Catalog, index: TextIndex, skip, own_calls: frozenset[int] = frozenset()
) -> dict[str, list[str]]:
    """Each mode hint once: the first non-skipped line holding one of its keywords where its regex matches.
    The hints of NVFLARE's own connections (nvflare_connections_only) do not read `own_calls` (the lines of
    tracebacks that are the job's own call) nor a web download's line (the catalog's web_downloads). A printable
    hint (an id the job's code can print in the same shape) found only on text that is not a record of NVFLARE's
    logger (bare text, a script's line NVFLARE echoes, a record of the root or __main__ logger) gives its weak
    `printed_reason`."""
    out: dict[str, list[str]] = {}
    for mode, entries in catalog.mode_hints.items():
        for hint in entries:
            reason = hint.reason
            if hint.nvflare_connections_only:
                found = _first_connection_match(lines, index, hint, set(skip) | own_calls, catalog.web_downloads)
            elif hint.printable:
                found, logged = _first_logged_match(lines, index, hint, skip)
                reason = reason if logged else hint.printed_reason
            else:
                found = _first_match(lines, index, hint, skip)
            if found is not None:
                out.setdefault(mode, []).append((found, reason))
    return {mode: [reason for _, reason in sorted(pairs)] for mode, pairs in out.items()}


def _first_connection_match(lines: list[Line], index: TextIndex, hint, unread: set[int], web) -> int | None:
    """_first_match, passing over the lines of a web download (`web`, a regex, or None)."""
    while (found := _first_match(lines, index, hint, unread)) is not None:
        if web is None or not web.search(lines[found].text[:MAX_SCAN_CHARS]):
            return found
        unread.add(found)
    return None


def _first_logged_match(lines: list[Line], index: TextIndex, hint, skip) -> tuple[int | None, bool]:
    """The first matching line that is a record of NVFLARE's logger (not its echo of a script's output, not the
    root or __main__ logger's) and True; else the first matching line (or None) and False."""
    first = None
    for number in _matches(lines, index, hint, skip):
        text = lines[number].text[:MAX_SCAN_CHARS]
        if logline.is_record(text) and not echoes_a_script(text) and logline.logger(text) not in _JOB_LOGGERS:
            return number, True
        first = number if first is None else first
    return first, False


def _first_match(lines: list[Line], index: TextIndex, hint, skip) -> int | None:
    """The first line (not skipped) holding a keyword of `hint` where its regex matches, or None."""
    return next(_matches(lines, index, hint, skip), None)


def _matches(lines: list[Line], index: TextIndex, hint, skip) -> Iterator[int]:
    """The lines (not skipped) holding a keyword of `hint` where its regex matches, in order."""

    def matches(number: int) -> bool:
        text = lines[number].text[:MAX_SCAN_CHARS]
        return number not in skip and hint.may_match(text.lower()) and bool(hint.regex.search(text))

    if not hint.keywords:
        yield from (n for n in range(len(lines)) if matches(n))
        return
    fast = _literal_led(hint.regex)
    if fast is not None:  # let the regex engine skip ahead over the whole (lower-cased) text
        seen = -1
        for match in fast.finditer(index.low):
            pos = match.start()
            if pos == 0 or not (index.low[pos - 1].isalnum() or index.low[pos - 1] == "_"):  # the \b left out
                number = index.low_line_at(pos)
                if number > seen:
                    seen = number
                    if matches(number):
                        yield number
        return
    found = heapq.merge(*(index.lines_with(word) for word in hint.keywords))
    yield from (n for n, _ in itertools.groupby(found) if matches(n))


def _literal_led(regex: re.Pattern) -> re.Pattern | None:
    """For `\\bword...` (ignoring case, no upper-case letter, no alternation): the same pattern without the \\b
    and case-sensitive, for lower-cased text, so the regex engine can jump to the literal; else None."""
    pattern = regex.pattern
    if (
        pattern.startswith("\\b")
        and pattern[2:3].isalnum()
        and "|" not in pattern
        and regex.flags & re.IGNORECASE
        and pattern == pattern.lower()
        and pattern.isascii()
    ):
        return re.compile(pattern[2:])
    return None
