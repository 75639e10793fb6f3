"""The lines Python prints for a traceback: its start, the exception line, the sentences between chained ones. Pure.

Usage: `exception_name(text)` -> the class an exception line names, or None; `is_traceback_line(text)` -> whether
a line can be part of a traceback (its start, an indented frame or code line, a chaining sentence, the exception
line). match/tracebacks.py finds the blocks; read/prefixes.py peels an echo only from such lines.
"""

from __future__ import annotations

import re

START_TEXT = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))\b(?::|$)")
# NVFLARE also raises exceptions without such a suffix (JobNotFound, ComponentNotAuthorized, SessionClosed).
_CAMEL_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)(?::\s|$)")
# The sentences Python prints between the tracebacks of one chained failure (the cause first).
CHAIN = re.compile(
    r"^(During handling of the above exception, another exception occurred|"
    r"The above exception was the direct cause of the following exception):?$"
)


def exception_name(text: str) -> str | None:
    """The exception class named at the start of an exception line, or None."""
    match = _EXCEPTION.match(text) or _CAMEL_EXCEPTION.match(text)
    return match.group(1) if match else None


def is_traceback_line(text: str) -> bool:
    """A line that can be part of a traceback: its start, an indented line, a chaining sentence, the exception."""
    return (
        text[:1].isspace()
        or text.startswith(START_TEXT)
        or CHAIN.match(text) is not None
        or exception_name(text) is not None
    )
