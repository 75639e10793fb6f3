"""The one rule for the NVFLARE log-line prefix: `<date> <time>[,ms] - <logger> - <LEVEL> - [<fl_ctx>] - <message>`.

Usage: `level(text)` -> "ERROR" | ... | None; `logger(text)` -> the logger name | None; `timestamp(text)` ->
sortable "YYYY-MM-DD HH:MM:SS,ffffff" | None; `message(text)` -> the text after the prefix (the whole text when
there is none); `is_record(text)` -> whether the line is a log record of its own (it starts with a timestamp),
not a continuation of the one before. Pure.
"""

from __future__ import annotations

import re

_STAMP = r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d+))?"
_TIMESTAMP = re.compile(rf"^{_STAMP}")
_RECORD = re.compile(rf"^\s*{_STAMP}")
QUIET_LEVELS = ("DEBUG", "INFO")
# In a "\n"-joined text: a newline before a line that is not a DEBUG/INFO record in one of the two layouts
# NVFLARE writes (log.txt, console). It also flags the odd DEBUG/INFO record with other spacing, which level()
# then clears (see loud_lines).
# ASCII bytes, [0-9] and a possessive logger name make the regex engine's work per line half of what it was.
_NOT_COMMON_QUIET_LINE = re.compile(
    rb"\n(?![0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]{3} - "
    rb"(?:[^ \n]++ - )?(?:INFO|DEBUG) - )"
)

# Where a line shape (textindex.py: digits written as '0') may start with a timestamp _PREFIX accepts.
_STAMP_SHAPE = re.compile(rb"(?m)^(?:[^\S\n]|[\x1c-\x1f])*0000-00-00[ T]00:00:00")

_PREFIX = re.compile(
    rf"^\s*{_STAMP}\s*-\s*(?:(\S+)\s+-\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s+-(?:\s+\[[^\]]*\]\s+-)?\s*"
)


def level(text: str) -> str | None:
    """Log level of an NVFLARE-style log line, or None for tracebacks, stdout and other text."""
    match = _PREFIX.match(text)
    return match.group(5) if match else None


def logger(text: str) -> str | None:
    """The logger name of an NVFLARE-style log record (`root`, `ClientRunner`), or None (none written, or no record)."""
    match = _PREFIX.match(text)
    return match.group(4) if match else None


def timestamp(text: str) -> str | None:
    """Sortable timestamp of a line that starts with one, or None."""
    match = _TIMESTAMP.match(text)
    if not match:
        return None
    return f"{match.group(1)} {match.group(2)}," + (match.group(3) or "0").ljust(6, "0")


def message(text: str) -> str:
    """The message part of a log line (the text after logger, level and fl_ctx); other text unchanged."""
    match = _PREFIX.match(text)
    return text[match.end() :] if match else text


def is_record(text: str) -> bool:
    """True for a complete log record (timestamped line); False for tracebacks, continuations and other text."""
    return _RECORD.match(text) is not None


def loud_lines(index, text_of) -> list[int]:
    """Indexes of the lines that are not DEBUG/INFO records (exactly what level() says) in a
    textindex.TextIndex; `text_of(n)` gives line n. One pass over the joined text flags the candidates; level()
    decides only on those whose shape can start with a timestamp (the others have no level)."""

    def compute() -> list[int]:
        unstamped = set(index.lines_of(set(range(index.shapes.count)) - set(index.shapes_matching(_STAMP_SHAPE, True))))
        unstamped.difference_update(index.odd)  # \d also matches digits that are not ASCII
        return [
            n
            for n in index.lines_after_newlines(_NOT_COMMON_QUIET_LINE)
            if n in unstamped or level(text_of(n)) not in QUIET_LEVELS
        ]

    return index.memo("loud lines", compute)
