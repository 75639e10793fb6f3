"""All evidence lines as one text, so a few C-speed steps find the few lines worth a detailed look. Pure.

Usage:
    index = TextIndex([line.text for line in lines])
    index.lines_with("timed out")        # lines whose lower-cased text may contain the needle (a superset)
    index.has("<("), index.may_have_word("curl")       # may the text contain it anywhere (as a whole word)?
    index.shapes_with_word("set"), index.lines_of(ids) # the shapes that may hold a word, the lines of shapes
    index.shape_lines(re.compile(rb"%00"))              # lines whose shape a bytes pattern matches
    Subset(index, numbers).lines_with("set")            # exact, over just those lines

Line shapes: ordinary logs repeat a few hundred message templates with other ids, numbers and times. A line's
shape is its text as ASCII bytes with every hex digit (0-9, a-f, A-F) replaced by '0' (non-ASCII characters by
'?'): 30,000 lines of healthy NVFLARE runs have about 250 distinct shapes, 33 KB. A needle occurs in a line only if
its own shape occurs in the line's shape, so "which lines may hold X" is answered by a search over the distinct
shapes, and every line of a matching shape is returned. Those answers are supersets: callers check each line they
get, exactly, usually all at once over their joined text (Subset). Lines holding non-ASCII characters are checked
on their own text (lower-casing may turn them into ASCII letters). A Python loop over 30,000 lines costs
microseconds per line and per step, a search over 33 KB a few microseconds.
"""

from __future__ import annotations

import bisect
import collections
import functools
import itertools
import re

MAX_LINE_CHARS = 16384  # like untrusted/normalize.py: a longer line is looked at through its first 16 KiB
MANY_LINES = 2000  # more lines than this from an ambiguous shape: search the whole text
SMALL_SHAPES = 1 << 18  # bytes of distinct shapes up to which words are read off the shapes (healthy 4 MiB: 33 KB)
_LETTERS_NL = bytes(c if 97 <= c <= 122 or c == 10 else 32 for c in range(256))  # letters and newlines stay
_LETTER_RUNS = re.compile(rb"[a-z]+")
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_SHAPE = bytes(48 if c in _HEX_DIGITS else c for c in range(256))  # every hex digit becomes '0'
_RUNS = bytes(c if c == 48 or 103 <= c <= 122 else 32 for c in range(256))  # '0' and g-z: what a word may become
_ODD = b"?"  # what encode("ascii", "replace") leaves of a non-ASCII character


class TextIndex:
    def __init__(self, texts: list[str]):
        self.text = "\n".join(texts)
        sizes = list(map(len, texts))
        if texts and (self.text.count("\n") != len(texts) - 1 or max(sizes) > MAX_LINE_CHARS):
            texts = [_clean(text) for text in texts]
            self.text, sizes = "\n".join(texts), list(map(len, texts))
        self.count = len(texts)
        self.starts = _offsets(sizes)  # offsets of each line in `text` (and a sentinel at the end)
        self.low = self.text.lower()
        self.ascii = self.low.isascii()
        self.low_starts = self.starts
        if len(self.low) != len(self.text):  # a few Unicode letters change length when lower-cased
            lowered = [text.lower() for text in texts]
            self.low, self.low_starts = "\n".join(lowered), _starts(lowered)
        self._memo: dict[str, object] = {}
        self._lines: dict[object, list[int]] = {}
        self._ascii_text: bytes | None = None
        self._shapes: _Shapes | None = None
        self._odd: Subset | None = None

    def line_at(self, pos: int) -> int:
        """Index of the line holding character `pos` of the joined text."""
        return bisect.bisect_right(self.starts, pos) - 1

    def low_line_at(self, pos: int) -> int:
        """Index of the line holding character `pos` of the lower-cased joined text."""
        return bisect.bisect_right(self.low_starts, pos) - 1

    def line_text(self, number: int) -> str:
        """Line `number` as the index holds it (cut at MAX_LINE_CHARS, newlines inside it made spaces)."""
        return self.text[self.starts[number] : self.starts[number + 1] - 1]

    def memo(self, key: str, compute):
        """`compute()` once per index and key (for results several scanners share)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # --- supersets, answered on the line shapes -------------------------------------------------------------
    @property
    def shapes(self) -> _Shapes:
        if self._shapes is None:
            self._shapes = _Shapes(self.ascii_lines.translate(_SHAPE).split(b"\n")[1:], self.low)
        return self._shapes

    @property
    def odd(self) -> list[int]:
        """Indexes of the lines holding a non-ASCII character (exact)."""
        if self.ascii:
            return []
        return self.memo(
            "odd lines",
            lambda: [
                n for n in self.shape_lines(re.compile(re.escape(_ODD)), case=True) if not self.line_text(n).isascii()
            ],
        )

    def _odd_lines(self) -> Subset:
        if self._odd is None:
            self._odd = Subset(self, self.odd)
        return self._odd

    def has(self, needle: str) -> bool:
        """False when the lower-cased text surely does not contain `needle` (lower case)."""
        if needle in self._lines:
            return bool(self._lines[needle])
        return (self.shapes.may_contain(needle) and shape_of(needle) in self.shapes.low) or (
            bool(self.odd) and bool(self._odd_lines().lines_with(needle))
        )

    def may_have_word(self, word: str) -> bool:
        """False when no line surely holds the lower-case `word` as a whole letter run (see _Shapes.words)."""
        shaped = shape_of(word)
        return shaped in self.shapes.words or not shaped.strip(b"0")  # all a-f: any run of hex digits might be it

    def words_present(self, words: frozenset[str]) -> list[str]:
        """The words of a (reused) set that may_have_word keeps, one per shape, found with one set intersection."""
        by_shape, vague = _by_shape(words)
        return [by_shape[shaped] for shaped in self.shapes.words.intersection(by_shape)] + vague

    def lines_with(self, needle: str) -> list[int]:
        """Sorted indexes of the lines whose lower-cased text may contain `needle` (lower case). When the needle's
        shape says little (a digit, or fewer than three characters that are not hex digits: `-9` is in most
        dates and ids) and is in many lines, the lines that do hold it are found with a search of the whole text."""
        if needle not in self._lines:
            found = self.lines_of(self.shapes_with(needle))
            vague = any(ch.isdigit() for ch in needle) or len(shape_of(needle).replace(b"0", b"")) < 3
            if vague and len(found) > MANY_LINES:
                self._lines[needle] = _matching(self.low, _literal_re(needle), self.low_starts)
            else:
                self._lines[needle] = _merge(found, self._odd_lines().lines_with(needle) if self.odd else [])
        return self._lines[needle]

    def lines_with_text(self, needle: str) -> list[int]:
        """Like lines_with, but for a case-sensitive needle (still a superset)."""
        shapes = self.shapes
        found = self.lines_of(_scan(shapes.text, shape_of(needle), shapes.starts))
        return _merge(found, self._odd_lines().lines_with(needle.lower()) if self.odd else [])

    def shape_lines(self, pattern: re.Pattern, case: bool = False, table: bytes | None = None) -> list[int]:
        """Lines whose shape (lower-cased unless `case`) a bytes `pattern` matches (see shapes_matching). With a
        translate `table` (case kept; it must map a newline to a space), the pattern runs over the shapes mapped
        through it after one leading space: a match found at its leading space is a match at the next byte."""
        if table is None:
            return self.lines_of(self.shapes_matching(pattern, case))
        shapes = self.shapes
        return self.lines_of(_matching((b"\n" + shapes.text).translate(table), pattern, shapes.starts))

    # The shapes themselves (ids), for callers that combine several questions before they look at lines. On
    # non-ASCII lines these answers may miss: such callers treat those lines (`odd`) on their own.
    def shapes_with(self, needle: str) -> list[int]:
        """Ids of the lower-cased shapes that hold the shape of `needle` (lower case)."""
        key = ("shapes with", needle)
        if key not in self._lines:
            shapes = self.shapes
            self._lines[key] = _scan(shapes.low, shape_of(needle), shapes.starts) if shapes.may_contain(needle) else []
        return self._lines[key]

    def shapes_with_word(self, word: str) -> list[int]:
        """Ids of the lower-cased shapes where the shape of `word` (lower case) has no letter g-z next to it."""
        shaped = shape_of(word)
        key = ("shapes with word", shaped)
        if key not in self._lines:
            shapes = self.shapes
            found = self.may_have_word(word) and shaped in shapes.low  # a plain search first: most are absent
            self._lines[key] = _scan_shape_word(shapes.low, shaped, shapes.starts) if found else []
        return self._lines[key]

    def shapes_matching(self, pattern: re.Pattern, case: bool = False) -> list[int]:
        """Ids of the shapes (lower-cased unless `case`) a bytes `pattern` matches; the pattern must never match
        a newline (`(?m)^` starts a line)."""
        shapes = self.shapes
        return _matching(shapes.text if case else shapes.low, pattern, shapes.starts)

    def lines_of(self, shape_ids) -> list[int]:
        """Sorted indexes of the lines of these shapes."""
        return self.shapes.lines(list(shape_ids))

    # --- exact, over the whole text -----------------------------------------------------------------------
    def lines_after_newlines(self, regex: re.Pattern) -> list[int]:
        """Lines whose preceding newline `regex` matches (a pattern that starts with a newline and looks ahead
        into the line), line 0 included (a newline is put in front of the text). A bytes pattern runs over the
        text as ASCII bytes (see ascii_lines): faster, for patterns that only name ASCII characters. Cached."""
        key = ("after newline", regex.pattern)
        if key not in self._lines:
            if not self.count:
                self._lines[key] = []
            elif isinstance(regex.pattern, bytes):
                self._lines[key] = [self.line_at(m.start()) for m in regex.finditer(self.ascii_lines)]
            else:
                first = [0] if self.count and regex.match("\n" + self.text[: self.starts[1]]) else []
                self._lines[key] = first + [self.line_at(m.start() + 1) for m in regex.finditer(self.text)]
        return self._lines[key]

    @property
    def ascii_lines(self) -> bytes:
        """The original text as bytes (one per character; non-ASCII becomes '?') after a leading newline:
        character `pos` of the text is byte `pos + 1`."""
        if self._ascii_text is None:
            self._ascii_text = b"\n" + self.text.encode("ascii", "replace")
        return self._ascii_text

    def mapped(self, table: bytes) -> bytes:
        """ascii_lines through `table` (tables map a newline to a space: one leading space)."""
        return self.ascii_lines.translate(table)

    def of_lines(self, numbers: list[int]) -> TextIndex:
        """A TextIndex of just these lines (their index there: their position in `numbers`)."""
        return TextIndex([self.line_text(n) for n in numbers])


class _Shapes:
    """The distinct line shapes, joined by newlines, and the lines of each. When the lines do not repeat
    templates (prose, say: more than SMALL_SHAPES bytes of distinct shapes), the words are read off the text
    itself instead, and `stems` rules out most absent needles before a search over the large shape text."""

    def __init__(self, parts: list[bytes], low: str):
        distinct = dict.fromkeys(parts)
        if len(distinct) * 2 > len(parts):  # lines that do not repeat templates: each line is its own shape
            self.numbers: list[list[int]] | None = None
        else:
            by_shape: dict[bytes, list[int]] = collections.defaultdict(list)
            for number, shape in enumerate(parts):
                by_shape[shape].append(number)
            self.numbers = list(by_shape.values())  # the lines of shape i
        self.count = len(parts) if self.numbers is None else len(self.numbers)
        self.text = b"\n".join(parts if self.numbers is None else distinct)
        self.low = self.text.lower()
        self.starts = _starts(parts if self.numbers is None else distinct)
        self.large = len(self.text) > SMALL_SHAPES
        self._text_low = low
        self._words: set[bytes] | None = None
        self._stems: bytes | None = None

    @property
    def words(self) -> set[bytes]:
        """The shapes of every word a line may hold. From the shapes: in a run of '0' and g-z of a lower-cased
        shape, each stretch that starts at the run's start or after a '0' and ends at its end or before a '0' (a
        '0' may have been a digit, which ends a word, or a letter a-f, which does not); stretches without a letter
        g-z are left out. From the text (large): the shape of each of its words."""
        if self._words is None:
            if self.large:
                self._words = {word.translate(_SHAPE) for word in self._letter_words}
            else:
                self._words = set()
                for run in set(self.low.translate(_RUNS).split()):
                    if run.strip(b"0"):
                        starts = [0] + [k for k in range(1, len(run)) if run[k - 1] == 48]
                        ends = [k for k in range(1, len(run)) if run[k] == 48] + [len(run)]
                        self._words.update(run[i:j] for i in starts for j in ends if j > i)
        return self._words

    def may_contain(self, needle: str) -> bool:
        """False when a run of letters of `needle` lies in no word of the text (large shapes only; else True)."""
        if not self.large:
            return True
        if self._stems is None:
            self._stems = b" ".join(sorted(self._letter_words))
        return all(run in self._stems for run in _LETTER_RUNS.findall(needle.encode("ascii", "replace")))

    @functools.cached_property
    def _letter_words(self) -> set[bytes]:
        """The distinct words (runs of letters a-z) of the lower-cased text; lines that differ only in digits and
        punctuation are split once."""
        letters = self._text_low.encode("ascii", "replace").translate(_LETTERS_NL)
        return set(b" ".join(set(letters.split(b"\n"))).split())

    def lines(self, shape_ids: list[int]) -> list[int]:
        """The lines of these shapes, sorted."""
        if self.numbers is None:
            return sorted(shape_ids)
        if len(shape_ids) <= 1:
            return list(self.numbers[shape_ids[0]]) if shape_ids else []
        return sorted(itertools.chain.from_iterable(self.numbers[i] for i in shape_ids))


class Subset:
    """Some lines of a TextIndex, lower-cased and joined into a text of their own, so a question that concerns only
    these lines costs one pass over them (not a look at each line, not a pass over the whole text). Exact.

    Usage: `few = Subset(index, [3, 17, 40])`; `few.lines_with("set")`, `few.lines_with_word("py")`,
    `few.lines_matching(regex)` return the indexes (in `index`) of those of the lines that match. With `limit`,
    each line is looked at through its first `limit` characters.
    """

    def __init__(self, index: TextIndex, numbers: list[int], limit: int = MAX_LINE_CHARS):
        low, starts = index.low, index.low_starts
        if limit >= MAX_LINE_CHARS:  # no line of the index is longer
            texts = [low[starts[n] : starts[n + 1] - 1] for n in numbers]
        else:
            texts = [low[starts[n] : min(starts[n + 1] - 1, starts[n] + limit)] for n in numbers]
        self.numbers = numbers
        self.low = "\n".join(texts)
        self.starts = _starts(texts)

    def lines_with(self, needle: str) -> list[int]:
        return [self.numbers[i] for i in _scan(self.low, needle, self.starts)]

    def lines_with_word(self, word: str) -> list[int]:
        """The lines holding `word` as a whole letter run: no letter a-z right before or after it."""
        return [self.numbers[i] for i in _scan_word(self.low, word, self.starts)]

    def lines_matching(self, regex: re.Pattern) -> list[int]:
        """The lines where `regex` (a pattern that never matches a newline) matches their lower-cased text."""
        return [self.numbers[i] for i in _matching(self.low, regex, self.starts)]


@functools.lru_cache(maxsize=4096)
def shape_of(needle: str) -> bytes:
    """The shape of a text: ASCII bytes, every hex digit written as '0', any other character as '?'."""
    return needle.encode("ascii", "replace").translate(_SHAPE)


def _merge(a: list[int], b: list[int]) -> list[int]:
    return sorted(set(a).union(b)) if b else a


def _clean(text: str) -> str:
    text = text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS]
    return text.replace("\n", " ") if "\n" in text else text


def _starts(texts) -> list[int]:
    return _offsets(map(len, texts))


def _offsets(sizes) -> list[int]:
    return list(itertools.accumulate(map((1).__add__, sizes), initial=0))  # each line and its newline


def _scan(haystack, needle, starts: list[int]) -> list[int]:
    """Indexes of the lines (by `starts`) holding `needle`, each once; the search jumps to the next line."""
    out, pos = [], haystack.find(needle)
    while pos != -1:
        line = bisect.bisect_right(starts, pos) - 1
        out.append(line)
        pos = haystack.find(needle, starts[line + 1]) if line + 1 < len(starts) else -1
    return out


def _scan_word(low: str, word: str, starts: list[int]) -> list[int]:
    """Like _scan for a letters-only `word` that must be a whole letter run: no letter a-z next to it."""
    return _matching(low, _word_re(word), starts)


def _scan_shape_word(low: bytes, word: bytes, starts: list[int]) -> list[int]:
    """Like _scan_word on lower-cased shapes: the word's shape with no letter g-z next to it (a '0' next to it
    may have been a digit)."""
    return _matching(low, _word_re(word), starts)


@functools.cache
def _by_shape(words: frozenset[str]) -> tuple[dict[bytes, str], list[str]]:
    """{shape: a word of that shape} for the words with a letter g-z, and the words of only letters a-f."""
    by_shape = {shape_of(word): word for word in sorted(words)}
    return {s: w for s, w in by_shape.items() if s.strip(b"0")}, [w for s, w in by_shape.items() if not s.strip(b"0")]


@functools.cache
def _literal_re(needle: str) -> re.Pattern:
    return re.compile(re.escape(needle))


@functools.cache
def _word_re(word: str | bytes) -> re.Pattern:
    """`word` with no letter right before or after it (a-z in text, g-z in shapes). The look-behind comes after
    the word, so the regex engine can jump from one occurrence of the word to the next."""
    if isinstance(word, bytes):
        letter, escaped = b"[g-z]", re.escape(word)
        return re.compile(escaped + b"(?<!" + letter + escaped + b")(?!" + letter + b")")
    escaped = re.escape(word)
    return re.compile(f"{escaped}(?<![a-z]{escaped})(?![a-z])")


def _matching(haystack, regex: re.Pattern, starts: list[int]) -> list[int]:
    """Indexes of the lines where `regex` (never matching a newline) matches, each once."""
    out, match = [], regex.search(haystack) if len(starts) > 1 else None
    while match:
        line = bisect.bisect_right(starts, match.start()) - 1
        out.append(line)
        match = regex.search(haystack, starts[line + 1]) if line + 2 < len(starts) else None
    return out
