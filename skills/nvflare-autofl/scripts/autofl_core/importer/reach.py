"""Which job options actually reach the job: the ones a candidate can tune to any effect.

An option reaches the job when its value (or a branch it decides) flows into something job.py builds or calls.
An argument string forwarded to the client script (`train_args=f"--lr {args.lr}"`) counts only for the parts
the script's own argparse accepts; when that parser cannot be read, every forwarded option is taken to reach it.
"""

from __future__ import annotations

import re
from typing import Any

from .argparse_flow import Parser
from .real_parser import parse
from .values import Bag, Val, option_flags

FORWARDED_KWARGS = ("train_args", "script_args", "task_args", "eval_args")
_TOKEN = re.compile(r"\S+")


def reaching_options(walk: Any, script: Parser | None) -> set[str]:
    """Canonical job options whose values reach the job (see the module docstring); `script`: the client script's
    parser (one without options when it reads no arguments), None when it cannot be read."""
    reached: set[str] = set()
    for obj in walk.objects:
        reached.update(option_flags(obj.control))
        reached.update(_flags_of(obj.args))
        for key, value in obj.kwargs.items():
            reached.update(_forwarded(value, script) if key in FORWARDED_KWARGS else _flags_of([value]))
    for call in walk.calls:
        reached.update(option_flags(call.control))
        reached.update(_flags_of([*call.args, *call.kwargs.values()]))
    return reached


def forwarded_options(walk: Any) -> set[str]:
    """Canonical job options whose values job.py writes into an argument string for the client script."""
    return _flags_of([value for obj in walk.objects for key, value in obj.kwargs.items() if key in FORWARDED_KWARGS])


def _flags_of(values: list) -> set[str]:
    """The job options the values were computed from (environment tags left out, as `option_flags` does)."""
    found: set[str] = set()
    for value in values:
        if isinstance(value, Val):
            found.update(option_flags(value.flags))
        elif isinstance(value, Bag):
            found.update(_flags_of(value.items))
    return found


def _forwarded(value: Any, script: Parser | None) -> set[str]:
    """Options of an argument string that the client script accepts."""
    readable = isinstance(value, Val) and value.resolved and isinstance(value.value, str) and value.parts
    if not readable or script is None or re.search(r"['\"\\\\]", value.value):
        return _flags_of([value])  # cannot tell which part goes where: assume every option reaches the script
    spans = _token_flags(value)
    accepted = parse(script, [text for text, _ in spans], "parse_known_args").accepted
    if accepted is None:  # the script's parser refuses the string: a candidate's value may be the one it takes
        return _flags_of([value])
    return {flag for (_, flags), used in zip(spans, accepted, strict=True) if used for flag in flags}


def _token_flags(value: Val) -> list[tuple[str, set[str]]]:
    """Whitespace tokens of an f-string value with the job options that produced each one."""
    bounds, offset = [], 0
    for text, flags in value.parts:
        bounds.append((offset, offset + len(text), set(option_flags(flags))))
        offset += len(text)
    out = []
    for match in _TOKEN.finditer(value.value):
        flags = {f for start, end, fs in bounds if start < match.end() and match.start() < end for f in fs}
        out.append((match.group(), flags))
    return out
