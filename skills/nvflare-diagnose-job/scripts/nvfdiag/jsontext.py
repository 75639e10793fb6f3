"""JSON parsing of untrusted evidence text: one rule for every reader.

Usage::

    value = parse(text)              # the parsed value, or None when the text is not JSON
    record = parse_object_line(line)  # a dict for a one-line `{...}` JSON object, else None

Evidence is hostile input: besides invalid JSON, a document nested thousands of levels deep makes `json.loads`
raise RecursionError, which would abort the whole diagnosis. Here every such text is simply "not JSON".
"""

from __future__ import annotations

import json


def parse(text: str | bytes) -> object | None:
    """The JSON value of `text`, or None when it is invalid, not UTF-8 or nested too deeply to parse."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_object_line(text: str) -> dict | None:
    """The object of a line that holds exactly one JSON object (`{...}` after stripping), else None."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    value = parse(stripped)
    return value if isinstance(value, dict) else None
