"""NVFLARE's own error messages: load the reviewed template mapping and find templates in evidence text.

Usage: `known = load_messages()` (references/nvflare_messages.json), then `known.match(text)` -> the templates
that occur in `text`, most specific first. The mapping covers every 2.x release line on the package registry (2.0, 2.3 to 2.9):
an entry is [template, module, release lines] (and its kind, `log` or `panic`, when NVFLARE does not raise it), so
an older release's wording of a fact is matched like the installed one's. A template is literal text with `{}` for values; it matches when its
literal pieces occur in order (case-sensitive), the first and last piece on word boundaries. Templates with fewer
than two words of three letters (`unreachable`, `Expected "{}"`) are never looked for: they are ordinary text. Matching is linear:
candidates come from a word index and each is checked with str.find, so hostile log lines cannot make it slow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..read.jsontext import REFERENCES, read_reference

DEFAULT_PATH = REFERENCES / "nvflare_messages.json"
WRAPPER = "wrapper"
RAISE, LOG, PANIC = "raise", "log", "panic"
MAX_MESSAGES_BYTES = 2 * 1024 * 1024
MAX_TEXT = 8192
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{3,}")
_WORDS_OF_THREE = re.compile(r"[A-Za-z]{3,}")
MIN_WORDS = 2
# the literal just before a template's last `{}` when that value is another message: `exception: {}`, `error: {}`,
# `{}: {}` (a class and its message), `failed to X: {}`
_CARRIER_TAIL = re.compile(r"(?:exception|error|reason|failed|failure|because|instantiate class)\W{0,3}$|^: $", re.I)
_GENERIC = re.compile(
    r"\b(?:Error processing|Error in JSON element|runtime error encountered|Config error in|"
    r"failed to instantiate|Error processing config file)\b",
    re.I,
)  # words of three or more letters a template needs before it is looked for in evidence


class MessagesError(ValueError):
    """The message mapping is missing or malformed; the message names the fix."""


@dataclass(frozen=True)
class Template:
    text: str
    group: str  # a catalog row id, or "wrapper"
    at: str  # module inside the nvflare package that raises it (in the newest release that does)
    pieces: tuple[str, ...]
    releases: tuple[str, ...] = ()  # release lines that raise it ("2.4", ...); empty when the mapping does not say
    # raise; log: only an error-level log call prints it (NVFLARE reported it and may have gone on); panic: the
    # reason of a system or task panic (the run ends)
    kind: str = RAISE

    @property
    def literal_length(self) -> int:
        return sum(len(piece) for piece in self.pieces)

    @property
    def carrier(self) -> bool:
        """True when the template ends in a value that is another message (`..., exception: {}`, `Config error in
        {}: {}`, `failed to instantiate class: {}`): the text standing there may be the real error, so it is peeled
        and matched on its own (raiser.peel)."""
        return len(self.pieces) > 1 and self.pieces[-1] == "" and bool(_CARRIER_TAIL.search(self.pieces[-2]))

    @property
    def generic(self) -> bool:
        """A template that only says an error happened while doing something broad (processing a config element,
        a runtime error, instantiating a class), with the error itself in its last value: alone it is a loose
        basis for a diagnosis (confidence at most medium)."""
        return self.carrier and (self.group == WRAPPER or bool(_GENERIC.search(" ".join(self.pieces))))

    def tail(self, text: str) -> str:
        """The text after the template's last literal piece (its last value and the rest of the line); '' when the
        template does not end in a value or does not occur in `text`."""
        spans = self._spans(text) if self.pieces and self.pieces[-1] == "" else None
        return text[spans[-1][1] :].strip() if spans else ""

    def occurs_in(self, text: str) -> bool:
        """Literal pieces in order; a leading/trailing literal must sit on a word boundary."""
        return self._spans(text) is not None

    def open_text(self, text: str) -> list[str]:
        """Everything in `text` the template's own words do not account for: the values standing where it has `{}`,
        and whatever comes before and after it on the line."""
        spans = self._spans(text)
        if spans is None:
            return []
        found, pos = [], 0
        for start, end in spans:
            found.append(text[pos:start])
            pos = end
        return [part for part in found + [text[pos:]] if part.strip()]

    def _spans(self, text: str) -> list[tuple[int, int]] | None:
        pieces, last = self.pieces, len(self.pieces) - 1
        spans, pos = [], 0
        for index, piece in enumerate(pieces):
            if piece:
                pos = _find_bounded(text, piece, pos, start_bound=index == 0, end_bound=index == last)
                if pos < 0:
                    return None
                spans.append((pos, pos + len(piece)))
                pos += len(piece)
        return spans


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _find_bounded(text: str, piece: str, start: int, *, start_bound: bool, end_bound: bool) -> int:
    """First occurrence of `piece` at or after `start` that does not cut a word where a bound is required."""
    at = text.find(piece, start)
    while at >= 0:
        end = at + len(piece)
        cuts_start = start_bound and _word_char(piece[0]) and at > 0 and _word_char(text[at - 1])
        cuts_end = end_bound and _word_char(piece[-1]) and end < len(text) and _word_char(text[end])
        if not (cuts_start or cuts_end):
            return at
        at = text.find(piece, at + 1)
    return -1


def _index_word(pieces: tuple[str, ...]) -> str | None:
    """The longest whole word of the literal text (a word cut by a placeholder does not count), lower-cased."""
    words = []
    for number, piece in enumerate(pieces):
        for match in _WORD.finditer(piece):
            cut_before = number > 0 and match.start() == 0
            cut_after = number < len(pieces) - 1 and match.end() == len(piece)
            if not (cut_before or cut_after):
                words.append(match.group(0).lower())
    return max(words, key=lambda w: (len(w), w)) if words else None


@dataclass
class MessageCatalog:
    nvflare_version: str
    templates: list[Template] = field(default_factory=list)
    by_word: dict[str, list[Template]] = field(default_factory=dict)

    def add(self, template: Template) -> None:
        self.templates.append(template)
        word = _index_word(template.pieces)
        words = _WORDS_OF_THREE.findall(" ".join(template.pieces))
        if word is not None and len(words) >= MIN_WORDS:  # `unreachable` alone is ordinary text, not a message
            self.by_word.setdefault(word, []).append(template)

    def match(self, text: str) -> list[Template]:
        """Templates occurring in `text`, most literal text first (ties: template text)."""
        text = text[:MAX_TEXT]
        candidates: dict[str, Template] = {}
        for word in {w.lower() for w in _WORD.findall(text)}:
            for template in self.by_word.get(word, ()):
                candidates[template.text] = template
        found = [t for t in candidates.values() if t.occurs_in(text)]
        return sorted(found, key=lambda t: (-t.literal_length, t.text))


def parse_messages(document: object, rows: set[str]) -> MessageCatalog:
    """Validate the rendered mapping against the catalog's row ids."""
    if not isinstance(document, dict) or not isinstance(document.get("templates"), dict):
        raise MessagesError("nvflare_messages.json has no `templates` object; re-render it with `make sync`")
    known = MessageCatalog(str(document.get("nvflare_version", "unknown")))
    for group, entries in sorted(document["templates"].items()):
        if group != WRAPPER and group not in rows:
            raise MessagesError(f"nvflare_messages.json names unknown row {group!r}; re-render it with `make sync`")
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, list) and len(entry) in (2, 3, 4) and all(isinstance(v, str) for v in entry):
                releases = tuple(entry[2].split()) if len(entry) >= 3 else ()
                kind = entry[3] if len(entry) == 4 and entry[3] in (LOG, PANIC) else RAISE
                known.add(Template(entry[0], group, entry[1], tuple(entry[0].split("{}")), releases, kind))
    return known


def load_messages(rows: set[str], path: str | Path = DEFAULT_PATH) -> MessageCatalog:
    """Read the rendered mapping (bounded); MessagesError with a one-line fix on any problem."""
    document = read_reference(path, MAX_MESSAGES_BYTES, error=MessagesError, what="NVFLARE message mapping")
    return parse_messages(document, rows)
