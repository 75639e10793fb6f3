"""Literal text a regular expression cannot match without: a cheap test before running the regex on a line. Pure.

Usage:
    needs = required_literals(re.compile(r"(exit code|return ?code|\\brc)\\s*[=:]?\\s*-9\\b", re.I))
    # (("exit code", "return", "rc"), ("-9",)): some alternative of every group occurs in any match
    if all(any(contains(lowered, alt) for alt in group) for group in needs): ...

Only what is certain is kept: runs of literal characters that every match contains, and for an alternation the
leading literal of each branch (when every branch has one). A run followed by \b ends in BOUNDARY: test it with
contains(). Lower-cased for IGNORECASE patterns, so the test runs on the lower-cased line. A pattern the parser
cannot read gives no requirement (the regex decides alone).
"""

from __future__ import annotations

import re

try:  # Python 3.11+; 3.10 has the same module under its old name
    from re import _constants as _c
    from re import _parser as _sre
except ImportError:  # pragma: no cover - exercised on Python 3.10 only
    import sre_constants as _c
    import sre_parse as _sre


BOUNDARY = "\x00"  # ends a literal that must be followed by a non-word character (a \b after it)


def contains(text: str, literal: str) -> bool:
    """Whether `text` holds `literal` (one from required_literals, honouring a trailing BOUNDARY)."""
    if not literal.endswith(BOUNDARY):
        return literal in text
    word, pos = literal[:-1], text.find(literal[:-1])
    while pos != -1:
        after = pos + len(word)
        if after == len(text) or not (text[after].isalnum() or text[after] == "_"):
            return True
        pos = text.find(word, pos + 1)
    return False


def required_literals(regex: re.Pattern) -> tuple[tuple[str, ...], ...]:
    try:
        groups = _sequence(list(_sre.parse(regex.pattern, regex.flags)))
    except Exception:  # an unknown construct: no shortcut, the regex alone decides
        return ()
    if regex.flags & re.IGNORECASE:
        groups = [tuple(alt.lower() for alt in group) for group in groups]
    return tuple(tuple(sorted(set(group))) for group in groups if all(group))


def _sequence(items) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, av in items:
        if op is _c.LITERAL:
            run.append(chr(av))
            continue
        if run:
            bounded = op is _c.AT and av is _c.AT_BOUNDARY and run[-1].isalnum()
            out.append(("".join(run) + (BOUNDARY if bounded else ""),))
            run = []
        if op is _c.SUBPATTERN:
            out += _sequence(av[-1])
        elif op is _c.BRANCH:
            leads = [_leading(list(branch)) for branch in av[1]]
            if all(leads):
                out.append(tuple(leads))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] >= 1:
            out += _sequence(av[2])
    if run:
        out.append(("".join(run),))
    return out


def _leading(items) -> str:
    """The literal text a branch starts with (after anchors such as \\b), or ''."""
    text = []
    for op, av in items:
        if op is _c.AT and not text:
            continue
        if op is not _c.LITERAL:
            break
        text.append(chr(av))
    return "".join(text)
