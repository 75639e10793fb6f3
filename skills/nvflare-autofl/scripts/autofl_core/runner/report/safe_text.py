"""Recorded strings (names, hypotheses, reasons, paths, commands, settings) as markdown that cannot change the
report's structure (pure). Usage: `recorded(value)` inline text, `code(value)` an inline code span, `cell(value)`
a table cell ("-" when empty), `joined(values)` a comma-separated list; `recorded(value, "block" | "fence")` a
fenced block's line and fence."""

from __future__ import annotations

import re
import unicodedata

_MARKDOWN_ESCAPES = re.compile(r"[\\`<>|]|!(?=\[)|(?<=\])\(")
_BACKTICK_RUN = re.compile(r"`+")


def recorded(value, style: str = "text") -> str:
    """A recorded string as markdown that cannot change the report's structure: control and line-break
    characters become spaces, invisible format characters (bidirectional overrides, zero-width marks) are
    dropped, and then per `style`:
    - "text": inline markdown with `\\`, backticks, `<`, `>`, `|` and the `!` / `(` of images and links escaped;
    - "code": an inline code span, its fence longer than any backtick run inside;
    - "block": the one line of a fenced code block (only cleaned), and "fence": that block's fence (at least
      three backticks, longer than any backtick run in `value`).
    """
    text = "".join(_clean_char(char) for char in str(value))
    if style == "block":
        return text
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    if style == "fence":
        return "`" * max(3, longest + 1)
    if style == "code":
        fence = "`" * (longest + 1)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        return f"{fence}{pad}{text}{pad}{fence}"
    return _MARKDOWN_ESCAPES.sub(lambda match: "\\" + match.group(0), text)


def _clean_char(char: str) -> str:
    category = unicodedata.category(char)
    if category in ("Cc", "Zl", "Zp"):
        return " "
    return "" if category in ("Cf", "Co", "Cs") else char


def code(value) -> str:
    return recorded(value, "code")


def cell(text) -> str:
    return recorded(text) if text not in (None, "") else "-"


def joined(values, style: str = "text") -> str:
    return ", ".join(recorded(value, style) for value in values)
