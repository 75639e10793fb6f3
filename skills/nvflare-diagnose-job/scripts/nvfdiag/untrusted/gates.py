"""Where in a text the gates of the injection rules can open: the few lines worth the full injection scan. Pure.

Usage: `anchored, opened = gate_lines(index, skip, near)` for a textindex.TextIndex. `anchored` maps each rule
whose every gate group may occur somewhere in the text to the lines of `near` (the lines a window of joined lines
may use) that hold an alternative of its first group (exact; a window can only open such a rule where one of its
lines does); `opened` holds the lines, not in `skip`, on which every gate group of some rule is open (exact, on
the plain lower-cased line).

A gate group (rules.py) is a set of words (whole letter runs, inflections included) and substrings (a
space in one matches any run of whitespace). Each question is first asked of the line shapes (textindex.py),
where it costs a search over a few KB, and only the lines of the shapes that pass every group of a rule are
checked exactly, all at once over their joined text (textindex.Subset). Shapes may miss on lines with non-ASCII
characters: those always get the full injection scan (injection.py), so they are not looked for here.
"""

from __future__ import annotations

import functools
import re

from ..regexfacts import BOUNDARY, required_literals
from ..textindex import Subset, TextIndex, shape_of
from .rules import RULE_COUNT, gate_of, regex_of

# Whitespace inside a line, as str patterns' \s sees it in ASCII text (bytes patterns leave out \x1c-\x1f).
_SHAPE_SPACE = rb"(?:[^\S\n]|[\x1c-\x1f])+"
_SPACE = r"[^\S\n]+"


def gate_lines(
    index: TextIndex, skip: set[int] | frozenset = frozenset(), near: set[int] | frozenset = frozenset()
) -> tuple[dict[int, set[int]], set[int]]:
    """({rule: lines of `near` holding an alternative of its first gate group}, lines where a rule's gates open)."""
    shapes: dict[tuple, set[int]] = {}  # gate group -> shape ids (groups repeat across rules)
    anchors = _Anchors(index, near)
    anchored: dict[int, set[int]] = {}
    opened: set[int] = set()
    for rule_index in range(RULE_COUNT):
        groups = gate_of(rule_index)
        if not all(_may_occur(index, *group) for group in groups):
            continue
        first = _shapes_of(index, shapes, groups[0])
        anchored[rule_index] = anchors.holding(index.lines_of(sorted(first)), groups[0])
        needed = _needed(rule_index)
        both = set(first)
        for group in needed[1:] if not index.shapes.large else ():  # large: lines are checked group by group
            both &= _shapes_of(index, shapes, group)
        numbers = [n for n in index.lines_of(sorted(both)) if n not in skip and n not in opened]
        opened.update(_open_lines(index, numbers, needed))
    return anchored, opened


@functools.cache
def _needed(rule_index: int) -> tuple:
    """The rule's gate groups plus, as substring groups, the literal text its regex cannot match without
    (regexfacts.py; runs without whitespace of four characters or more, or with punctuation: shorter words are
    everywhere): on a plain line, which is its own normalized text up to whitespace, a match needs them all."""
    extra = []
    for group in required_literals(regex_of(rule_index)):
        alternatives = tuple(sorted({alt.rstrip(BOUNDARY) for alt in group}))
        if all((len(alt) > 3 or not alt.isalnum()) and not any(ch.isspace() for ch in alt) for alt in alternatives):
            extra.append((frozenset(), alternatives))
    return gate_of(rule_index) + tuple(extra)


def _may_occur(index: TextIndex, words: frozenset[str], substrings: tuple[str, ...]) -> bool:
    """Whether some alternative of a gate group may occur anywhere in the text (cheap; a superset). A phrase counts
    by its last word: in a window of joined lines it may start on one line and end on the next."""
    return bool(index.words_present(words)) or any(index.has(sub.split()[-1]) for sub in substrings)


def _shapes_of(index: TextIndex, cache: dict, group: tuple) -> set[int]:
    """Ids of the shapes that may hold an alternative of the gate group within one line."""
    if group not in cache:
        words, substrings = group
        ids = {i for word in index.words_present(words) for i in index.shapes_with_word(word)}
        ids.update(i for sub in substrings if " " not in sub for i in index.shapes_with(sub))
        phrases = _phrases_re(tuple(sub for sub in substrings if " " in sub), shape=True)
        if phrases is not None:
            ids.update(index.shapes_matching(phrases))
        cache[group] = ids
    return cache[group]


def _open_lines(index: TextIndex, numbers: list[int], groups: tuple) -> list[int]:
    """The lines of `numbers` on which every gate group is open, as _Rule.opens decides it on the plain line:
    per group, one search per alternative over the joined text of the lines still in question."""
    for group in groups:
        if not numbers:
            break
        numbers = sorted(_group_lines(index, Subset(index, numbers), group))
    return numbers


def _group_lines(index: TextIndex, few: Subset, group: tuple, cache: dict | None = None) -> set[int]:
    """The lines of `few` on which the gate group is open; `cache` keeps each alternative's lines for reuse."""
    cache = {} if cache is None else cache
    words, substrings = group
    alternatives = [("word", word) for word in index.words_present(words)]
    alternatives += [("sub", sub) for sub in substrings if " " not in sub and index.has(sub)]
    phrases = _phrases_re(tuple(sub for sub in substrings if " " in sub), shape=False)
    alternatives += [("re", phrases)] if phrases is not None else []
    found: set[int] = set()
    for kind, alternative in alternatives:
        if (kind, alternative) not in cache:
            search = {"word": few.lines_with_word, "sub": few.lines_with, "re": few.lines_matching}[kind]
            cache[kind, alternative] = search(alternative)
        found.update(cache[kind, alternative])
    return found


class _Anchors:
    """Exact first-group lines among the lines a window may use: few candidates are checked on their own, many
    (prose, where every line continues the one before) against one joined text of all those lines."""

    def __init__(self, index: TextIndex, near: set[int] | frozenset):
        self.index, self.near = index, near
        self._all: Subset | None = None
        self._found: dict = {}

    def holding(self, candidates: list[int], group: tuple) -> set[int]:
        lines = self.near.intersection(candidates)
        if len(lines) * 4 < len(self.near):
            return set(_open_lines(self.index, sorted(lines), (group,)))
        if self._all is None:
            self._all = Subset(self.index, sorted(self.near))
        return lines & _group_lines(self.index, self._all, group, self._found)


@functools.cache
def _phrases_re(phrases: tuple[str, ...], shape: bool) -> re.Pattern | None:
    """Gate substrings with spaces as one regex for lines joined by newlines: a space matches a run of whitespace
    other than a newline (as _substrings_re does within one line), alternatives grouped by their first word.
    `shape`: a bytes pattern for lower-cased line shapes (hex digits a-f written as '0')."""
    by_head: dict[str, list[str]] = {}
    for phrase in phrases:
        head, _, rest = phrase.partition(" ")
        by_head.setdefault(head, []).append(rest)
    if not by_head:
        return None
    if shape:

        def escape(word: str) -> bytes:
            return re.escape(shape_of(word))

        space = _SHAPE_SPACE
        branches = [
            escape(head) + space + b"(?:" + b"|".join(space.join(map(escape, rest.split(" "))) for rest in rests) + b")"
            for head, rests in by_head.items()
        ]
        return re.compile(b"|".join(branches))
    branches = [
        re.escape(head)
        + _SPACE
        + "(?:"
        + "|".join(_SPACE.join(map(re.escape, rest.split(" "))) for rest in rests)
        + ")"
        for head, rests in by_head.items()
    ]
    return re.compile("|".join(branches))
