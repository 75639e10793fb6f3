"""All evidence lines as one text, so a few C-speed passes find the few lines worth a detailed look. Pure.

Usage:
    index = TextIndex([line.text for line in lines])
    index.lines_with("timed out")        # indexes of lines whose lower-cased text contains the needle
    index.lines_with_word("set")         # ... that contain the word (a whole run of letters a-z)
    index.has_word("curl"), index.has_stem("exfiltrat"), index.has("<(")   # anywhere in the text?
    index.lines_matching(regex)          # lines where a compiled regex matches (searched on the whole text)

A string search over the joined text runs at memchr speed; a Python loop over 30,000 lines costs microseconds per
line and per step. So the scanners ask the index first and run their regular expressions only on the lines it
returns. Words are letter runs of the lower-cased text (what injection_rules' gates call words): the set of
distinct words is built once, with bytes.translate and split, and answers "is this word anywhere" for free.
"""

from __future__ import annotations

import bisect
import itertools
import re

_LETTERS_NL = bytes(c if 97 <= c <= 122 or c == 10 else 32 for c in range(256))  # letters and newlines stay
_LETTER_RUNS = re.compile(r"[a-z]+")


MAX_LINE_CHARS = 16384  # like normalize.py: a longer line is looked at through its first 16 KiB
RARE_CHAR = 2000  # occurrences of a needle's rare character looked at before a plain search
_USUALLY_RARE = "$`~^!<>|\\{}@#&;*%?"  # rarest first in NVFLARE logs (a guess: a wrong one only costs time)


class TextIndex:
    def __init__(self, texts: list[str]):
        self.text = "\n".join(texts)
        if texts and (self.text.count("\n") != len(texts) - 1 or max(map(len, texts)) > MAX_LINE_CHARS):
            texts = [_clean(text) for text in texts]
            self.text = "\n".join(texts)
        self.count = len(texts)
        self.starts = _starts(texts)  # offsets of each line in `text` (and a sentinel at the end)
        self.low = self.text.lower()
        self.ascii = self.low.isascii()
        self.low_starts = self.starts
        if len(self.low) != len(self.text):  # a few Unicode letters change length when lower-cased
            lowered = [text.lower() for text in texts]
            self.low, self.low_starts = "\n".join(lowered), _starts(lowered)
        self._found: dict[str, bool] = {}
        self._memo: dict[str, object] = {}
        self._lines: dict[str, list[int]] = {}
        self._letters: bytes | None = None
        self._letters_nl: bytes | None = None
        self._ascii_text: bytes | None = None
        self._words: frozenset[str] | None = None
        self._stems: str | None = None

    def line_at(self, pos: int) -> int:
        """Index of the line holding character `pos` of the joined text."""
        return bisect.bisect_right(self.starts, pos) - 1

    def low_line_at(self, pos: int) -> int:
        """Index of the line holding character `pos` of the lower-cased joined text."""
        return bisect.bisect_right(self.low_starts, pos) - 1

    def has(self, needle: str) -> bool:
        """True when the lower-cased text contains `needle` (lower case) anywhere. Each run of letters of the
        needle must lie inside a word of the text (free to check), so most absent needles cost no pass."""
        if needle not in self._found:
            runs = _LETTER_RUNS.findall(needle)
            self._found[needle] = ((needle.isascii() or not self.ascii) and all(map(self._inside_word, runs))
                                   and self._contains(needle))
        return self._found[needle]

    def _contains(self, needle: str) -> bool:
        """`needle in low`, but led by the needle's rarest punctuation character when that one is rare: a
        one-character search runs at memchr speed, a short needle's search does not."""
        marks = [ch for ch in _USUALLY_RARE if ch in needle]
        if not marks:
            return needle in self.low
        rare = marks[0]
        offset, pos = needle.index(rare), self.low.find(rare)
        for _ in range(RARE_CHAR):
            if pos == -1:
                return False
            if self.low.startswith(needle, pos - offset):
                return True
            pos = self.low.find(rare, pos + 1)
        return needle in self.low  # not so rare here after all

    def _inside_word(self, run: str) -> bool:
        if self._stems is None:
            self._stems = " ".join(sorted(self.words))
        return run in self._stems

    def lines_with(self, needle: str) -> list[int]:
        """Sorted indexes of the lines whose lower-cased text contains `needle`."""
        if needle not in self._lines:
            self._lines[needle] = _scan(self.low, needle, self.low_starts) if self.has(needle) else []
        return self._lines[needle]

    def iter_lines_with(self, needle: str):
        """Like lines_with, lazily: the search goes only as far as the caller reads."""
        if needle in self._lines:
            yield from self._lines[needle]
        elif self.has(needle):
            pos = self.low.find(needle)
            while pos != -1:
                line = bisect.bisect_right(self.low_starts, pos) - 1
                yield line
                pos = self.low.find(needle, self.low_starts[line + 1]) if line + 1 < len(self.low_starts) else -1

    def lines_with_text(self, needle: str) -> list[int]:
        """Like lines_with, but case-sensitive on the original text."""
        return _scan(self.text, needle, self.starts) if needle in self.text else []

    def memo(self, key: str, compute):
        """`compute()` once per index and key (for results several scanners share)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def lines_after_newlines(self, regex: re.Pattern) -> list[int]:
        """Lines whose preceding newline `regex` matches (a pattern that starts with a newline and looks ahead
        into the line), plus line 0 when `regex` matches a newline put in front of the text. Cached."""
        key = f"\x01{regex.pattern}"
        if key not in self._lines:
            first = [0] if self.count and regex.match("\n" + self.text[: self.starts[1]]) else []
            self._lines[key] = first + [self.line_at(m.start() + 1) for m in regex.finditer(self.text)]
        return self._lines[key]

    def lines_matching(self, regex: re.Pattern, limit: int | None = None) -> list[int]:
        """Sorted indexes of lines where `regex` matches within the line (searched once over the whole text)."""
        out: list[int] = []
        for match in regex.finditer(self.text):
            line = self.line_at(match.start())
            if "\n" not in match.group(0) and (not out or out[-1] != line):
                out.append(line)
                if limit is not None and len(out) >= limit:
                    break
        return out

    # --- words (letter runs), as the injection rule gates see them -------------------------------------------
    def mapped(self, table: bytes) -> bytes:
        """The original text as bytes (one per character; non-ASCII becomes '?') through `table`, after one
        leading space: character `pos` of the text is byte `pos + 1`."""
        if self._ascii_text is None:
            self._ascii_text = b" " + self.text.encode("ascii", "replace")
        return self._ascii_text.translate(table)  # tables map a space to a space

    @property
    def letters(self) -> bytes:
        """The lower-cased text as bytes with every non-letter replaced by a space, after one leading space."""
        if self._letters is None:
            self._letters = b" " + self._letter_lines().replace(b"\n", b" ") + b" "
        return self._letters

    def _letter_lines(self) -> bytes:
        if self._letters_nl is None:
            self._letters_nl = self.low.encode("ascii", "replace").translate(_LETTERS_NL)
        return self._letters_nl

    @property
    def words(self) -> frozenset[str]:
        """Distinct words of the text (lines that differ only in digits and punctuation are split once)."""
        if self._words is None:
            unique = set(self._letter_lines().split(b"\n"))
            self._words = frozenset(word.decode("ascii") for word in set(b" ".join(unique).split()))
        return self._words

    def has_word(self, word: str) -> bool:
        return word in self.words

    def has_stem(self, stem: str) -> bool:
        """True when some word contains the letters-only `stem` (any other needle: when the text contains it)."""
        if not (stem.isascii() and stem.isalpha()):
            return self.has(stem)
        return self._inside_word(stem)

    def lines_with_word(self, word: str) -> list[int]:
        """Sorted indexes of lines holding `word` as a whole letter run (exact for ASCII text)."""
        key = f"\x00{word}"
        if key not in self._lines:
            # " word " at byte p of `letters` is the word at character p of `low` (one leading space)
            self._lines[key] = _scan(self.letters, f" {word} ".encode("ascii"), self.low_starts) if self.has_word(word) else []
        return self._lines[key]


def _clean(text: str) -> str:
    text = text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS]
    return text.replace("\n", " ") if "\n" in text else text


def _starts(texts: list[str]) -> list[int]:
    return list(itertools.accumulate(map((1).__add__, map(len, texts)), initial=0))  # each line and its newline


def _scan(haystack, needle, starts: list[int]) -> list[int]:
    """Indexes of the lines (by `starts`) holding `needle`, each once; the search jumps to the next line."""
    out, pos = [], haystack.find(needle)
    while pos != -1:
        line = bisect.bisect_right(starts, pos) - 1
        out.append(line)
        pos = haystack.find(needle, starts[line + 1]) if line + 1 < len(starts) else -1
    return out
