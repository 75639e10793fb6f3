"""The one rule for quoting evidence text in a report: single line, bounded, long number/base64 runs elided.

Usage: `excerpt(text)` -> at most MAX_EXCERPT characters, safe to show a user.
"""

from __future__ import annotations

import re

MAX_EXCERPT = 240
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]+")
_DIGITS = re.compile(r"\d{9,}")
# Base64-like runs: long and mixing digits with upper- and lower-case letters (or padded), so that words
# and file paths are kept.
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")


def _elide_base64(match: re.Match) -> str:
    run = match.group(0)
    mixed = any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run)
    return "<elided>" if mixed or run.endswith("=") else run


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """One display line from `text`: control/invisible characters removed, long digit and base64 runs elided."""
    one_line = " ".join(_CONTROL.sub(" ", text[: limit * 8]).split())
    one_line = _DIGITS.sub("<digits>", one_line)
    one_line = _BASE64.sub(_elide_base64, one_line)
    if len(one_line) > limit:
        one_line = one_line[: limit - 3] + "..."
    return one_line
