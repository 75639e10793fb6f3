"""Evidence that disagrees with itself: the exception class a line carries against the row its message points at.

Usage: `hits = contest(hits, lines, blocks, catalog)` before ranking. Pure. A signal's row comes from one source (a
catalog rule on the message, an NVFLARE template, the raising frame); the exception class the message was raised as
(`ConfigError: Cannot find component class "X"`, the innermost `Class: ` on the line, else the traceback's) is a
second source. The rows a class points at are the rows whose strong catalog rule matches the class name alone
(ConfigError -> CONFIG_FILE_VALIDATION_ERROR, FileNotFoundError -> DATA_PATH_NOT_FOUND, ...). When they exclude the
row the message decided, and that row's own rules do not name the class, the line contradicts itself: its message
hits are marked `contested` (a diagnosis resting only on contested hits is at most medium, matcher._confidence) and
each class row gets a weak hit on the line: it never outranks what the message says (the reviewed mapping and the
catalog's rules decide the row), and it shows in other_candidates.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..model import Line
from .catalog import Catalog
from .scan import Hit
from .tracebacks import Traceback, block_containing

MAX_TEXT = 8192
# an exception class followed by its message: `ConfigError: `, `nvflare.fuel.utils.config.ConfigError: `
_CLASS = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|NotAuthorized|NotFound))(?=: |:$)")
# hits whose source is not the message: a structural condition, a process exit, a job status
_NOT_MESSAGE = ("condition user_traceback", "condition job_status", "process exit")
CLASS_BASIS = "exception class"


def exception_class(text: str, block: Traceback | None = None) -> str | None:
    """The innermost exception class a line names before a message (the last `Class: ` on it: a wrapper's
    `..., exception: ConfigError: ...` ends in the class of what it wraps), else the traceback's own class."""
    found = None
    for match in _CLASS.finditer(text[:MAX_TEXT]):
        found = match.group(1)
    if found is None and block is not None and block.exc_type:
        found = block.exc_type.rsplit(".", 1)[-1]
    return found


def class_rows(name: str, catalog: Catalog) -> dict[str, int]:
    """Rows a class points at: row id -> the number of its first strong signal matching the class name alone."""
    found = {}
    for row in catalog.rows:
        if row.finding_only:
            continue
        for signal in row.signals:
            if signal.strength == "strong" and signal.may_match(name.lower()) and signal.regex.search(name):
                found[row.id] = signal.number
                break
    return found


def names_class(row, name: str) -> bool:
    """The row's own rules name the class (ABSOLUTE_DATA_PATH's rule reads `FileNotFoundError ... /home/...`): the
    class is part of what the row means, not a second opinion."""
    low = name.lower()
    return any(low in signal.regex.pattern.lower() for signal in row.signals)


def _from_message(hit: Hit) -> bool:
    return hit.strength == "strong" and hit.index is not None and not any(w in hit.basis for w in _NOT_MESSAGE)


def contest(hits: dict[str, list[Hit]], lines: list[Line], blocks: list[Traceback], catalog: Catalog) -> dict:
    """Hits per row with the contradictions of each line marked (see the module docstring)."""
    by_line: dict[int, set[str]] = {}
    for row_id, row_hits in hits.items():
        for hit in row_hits:
            if _from_message(hit):
                by_line.setdefault(hit.index, set()).add(row_id)
    verdicts: dict[int, tuple[str, dict[str, int], set[str]]] = {}
    for index, rows in by_line.items():
        line = lines[index]
        name = exception_class(line.text, block_containing(blocks, index, line.source))
        pointed = class_rows(name, catalog) if name else {}
        if not pointed:
            continue
        against = {r for r in rows if r not in pointed and not names_class(catalog.row(r), name)}
        if against:
            verdicts[index] = (name, pointed, against)
    if not verdicts:
        return hits
    out: dict[str, list[Hit]] = {}
    for row_id, row_hits in hits.items():
        out[row_id] = [_marked(hit, verdicts) for hit in row_hits]
    for index, (name, pointed, against) in sorted(verdicts.items()):
        decided = ", ".join(sorted(against))
        for row_id, number in sorted(pointed.items()):
            if any(h.index == index for h in out.get(row_id, ())):
                continue
            basis = f"{CLASS_BASIS} {name} on the line (catalog rule {row_id} signal {number}); its message points at {decided}"
            out.setdefault(row_id, []).append(
                Hit(row_id, index, "weak", basis=basis, loose=True, contested=f"the message points at {decided}")
            )
    return out


def _marked(hit: Hit, verdicts: dict) -> Hit:
    verdict = verdicts.get(hit.index) if _from_message(hit) else None
    if verdict is None or hit.pattern not in verdict[2]:
        return hit
    name, pointed, _ = verdict
    return replace(hit, contested=f"{CLASS_BASIS} {name} points at {', '.join(sorted(pointed))}")
