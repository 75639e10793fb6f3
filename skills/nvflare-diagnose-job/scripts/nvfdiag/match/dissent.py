"""Evidence that disagrees with itself: a message's exception class (or raising module) against the row it points at.

Usage: `hits = contest(hits, lines, blocks, catalog)` before ranking. Pure. A signal's row comes from one source (a
catalog rule on the message, an NVFLARE template, the raising frame); the exception class the message was raised as
(`ConfigError: Cannot find component class "X"`, the innermost `Class: ` on the line, else the traceback's) is a
second source. The rows a class points at are the rows whose strong catalog rule matches the class name alone
(ConfigError -> CONFIG_FILE_VALIDATION_ERROR, FileNotFoundError -> DATA_PATH_NOT_FOUND, ...). When they exclude the
row the message decided, and that row's own rules do not name the class, the line contradicts itself. Where the
class is one no row knows (ValueError, TypeError), the module that raised the decisive NVFLARE template is the
second source: NVFLARE's config processing (CONFIG_PROCESSING) points at CONFIG_FILE_VALIDATION_ERROR. Its message
hits are marked `contested` (a diagnosis resting only on contested hits is at most medium, matcher._confidence) and
each class row gets a weak hit on the line: it never outranks what the message says (the reviewed mapping and the
catalog's rules decide the row), and it shows in other_candidates.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..model import Line
from . import raiser
from .catalog import Catalog
from .scan import Hit
from .tracebacks import Traceback, block_containing

MAX_TEXT = 8192
# an exception class followed by its message: `ConfigError: `, `nvflare.fuel.utils.config.ConfigError: `
_CLASS = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|NotAuthorized|NotFound))(?=: |:$)")
# hits whose source is not the message: a structural condition, a process exit, a job status
_NOT_MESSAGE = ("condition user_traceback", "condition job_status", "process exit")
CLASS_BASIS = "exception class"
SECOND_OPINION = "second opinion: "  # the basis of a hit a dissenting source adds
CONFIG_ROW = "CONFIG_FILE_VALIDATION_ERROR"
CONFIG_ROWS = (CONFIG_ROW, "SIMULATION_CONFIG_ERROR", "NVFLARE_INTERNAL_ERROR")
# NVFLARE's config processing: the modules that resolve and build a config's components (nvflare 2.0-2.9). Its own
# class is ConfigError; where one of them raises a class no row knows, the module is the second source.
CONFIG_PROCESSING = (
    "fuel/utils/class_utils.py",
    "fuel/utils/class_loader.py",
    "fuel/utils/component_builder.py",
    "fuel/utils/json_scanner.py",
    "fuel/utils/wfconf.py",
    "fuel/utils/json_config_loader.py",
    "private/json_configer.py",
    "private/fed_json_config.py",
    "private/fed/client/client_json_config.py",
    "private/fed/server/server_json_config.py",
)


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


def config_module_rows(
    text: str, rows: set[str], catalog: Catalog, raised_at: str | None = None
) -> tuple[str, dict[str, str]]:
    """When NVFLARE's config processing raised the line's message (the traceback's raising module, else the module
    the mapping records for its template, is one of CONFIG_PROCESSING) and the template's row is not a config row:
    the source and {config row: its detail}."""
    if catalog.messages is None or not catalog.has(CONFIG_ROW):
        return "", {}
    for template in catalog.messages.match(text[:MAX_TEXT]):
        module = raised_at or template.at
        if template.group in rows and template.group not in CONFIG_ROWS and module in CONFIG_PROCESSING:
            return f"raised in NVFLARE's config processing ({module})", {CONFIG_ROW: "the module that raised it"}
    return "", {}
    for template in catalog.messages.match(text[:MAX_TEXT]):
        if template.group in rows and template.group not in CONFIG_ROWS and template.at in CONFIG_PROCESSING:
            return f"raised in NVFLARE's config processing ({template.at})", {
                CONFIG_ROW: "nvflare message template module"
            }
    return "", {}


def _from_message(hit: Hit) -> bool:
    return hit.strength == "strong" and hit.index is not None and not any(w in hit.basis for w in _NOT_MESSAGE)


def contest(hits: dict[str, list[Hit]], lines: list[Line], blocks: list[Traceback], catalog: Catalog) -> dict:
    """Hits per row with the contradictions of each line marked (see the module docstring)."""
    by_line: dict[int, set[str]] = {}
    for row_id, row_hits in hits.items():
        for hit in row_hits:
            if _from_message(hit):
                by_line.setdefault(hit.index, set()).add(row_id)
    verdicts: dict[int, tuple[str, dict[str, str], set[str]]] = {}
    for index, rows in by_line.items():
        line = lines[index]
        block = block_containing(blocks, index, line.source)
        # a hit on a traceback's frame line (the job.py call that reached NVFLARE) speaks for its exception line
        text = lines[block.end].text if block is not None and block.end is not None else line.text
        name = exception_class(text, block)
        pointed = (
            {row: f"catalog rule {row} signal {n}" for row, n in class_rows(name, catalog).items()} if name else {}
        )
        if pointed:
            against = {r for r in rows if r not in pointed and not names_class(catalog.row(r), name)}
            source = f"{CLASS_BASIS} {name}"
        else:  # a class no row knows (ValueError, TypeError): the module that raised it is the second source
            raised = raiser.raised_in(block) if block is not None else None
            raised_at = raised.split("/", 1)[1] if raised else None  # `nvflare/<module>` -> `<module>`
            source, pointed = config_module_rows(text, rows, catalog, raised_at)
            against = {r for r in rows if r not in pointed and r not in CONFIG_ROWS}
        if pointed and against:
            verdicts[index] = (source, pointed, against)
    if not verdicts:
        return hits
    out: dict[str, list[Hit]] = {}
    for row_id, row_hits in hits.items():
        out[row_id] = [_marked(hit, verdicts) for hit in row_hits]
    for index, (source, pointed, against) in sorted(verdicts.items()):
        decided = ", ".join(sorted(against))
        for row_id, detail in sorted(pointed.items()):
            if any(h.index == index for h in out.get(row_id, ())):
                continue
            basis = f"{SECOND_OPINION}{source} ({detail}); its message points at {decided}"
            out.setdefault(row_id, []).append(
                Hit(row_id, index, "weak", basis=basis, loose=True, contested=f"the message points at {decided}")
            )
    return out


def _marked(hit: Hit, verdicts: dict) -> Hit:
    verdict = verdicts.get(hit.index) if _from_message(hit) else None
    if verdict is None or hit.pattern not in verdict[2]:
        return hit
    source, pointed, _ = verdict
    return replace(hit, contested=f"{source} points at {', '.join(sorted(pointed))}")
