"""A class or module under `nvflare.` that the NVFLARE which ran the job lacks: a job written for another release.

Usage: `name = missing_nvflare_name(hit_indexes, lines, blocks)` -> the dotted name (`nvflare.app_opt.pt.recipes.
FedAvgRecipe`) or None. Pure. Looked for on the lines of the primary's strong hits and the message lines of the
tracebacks they end, whatever row they matched: a line that says something is missing (`No module named`,
`cannot import name ... from`, `has no attribute`, `Cannot find component class`, `Can't load class`, `does not
exist`, ...) and names a dotted name in NVFLARE's own namespace. The exception class a line is raised as
(`nvflare.fuel.utils.config_service.ConfigError: `) and a logger name (`nvflare.x - ERROR - `) are not names the line
says are missing. `nvflare` alone (the package not installed at all) is not a release mismatch.
"""

from __future__ import annotations

import re

from ..model import Line
from .tracebacks import Traceback, block_containing

MAX_TEXT = 8192
MAX_LINES = 64
MAX_NAME = 160  # a dotted name goes into next_action: identifiers and dots only, this long at most
_ABSENT = re.compile(
    r"No module named|cannot import name|has no attribute|\bcannot find\b|\bcan't (?:load|import|find)\b|"
    r"\bcould not (?:find|import|load)\b|\bdoes not exist\b|\bnot found\b|\bno such\b|\bunknown class\b",
    re.IGNORECASE,
)
_NAME = r"nvflare(?:\.[A-Za-z_]\w{0,63}){1,12}"
# Python's own wordings name exactly what is missing (another dotted name on the line, such as the module being
# run in `Error while finding module specification for 'nvflare.x' (ModuleNotFoundError: No module named
# 'nvflare')`, is not it): the module, or the module and the attribute it lacks
_PYTHON = (
    re.compile(r"No module named '?([\w.]{1,800})'?"),
    re.compile(r"cannot import name '(\w{1,64})' from '([\w.]{1,800})'"),
    re.compile(r"module '?([\w.]{1,800})'? has no attribute '?(\w{1,64})'?"),
)
_UNDER_NVFLARE = re.compile(rf"{_NAME}")
_DOTTED = re.compile(rf"(?<![\w./\\-])({_NAME})(?!\w|\.\w|: | - |:$)")


def name_in(text: str) -> str | None:
    """The dotted name under `nvflare.` that `text` says is missing, or None."""
    text = text[:MAX_TEXT]
    if not _ABSENT.search(text):
        return None
    for number, pattern in enumerate(_PYTHON):
        match = pattern.search(text)
        if match:
            parts = match.groups() if number != 1 else (match.group(2), match.group(1))
            name = ".".join(parts)
            return name if _UNDER_NVFLARE.fullmatch(name) and len(name) <= MAX_NAME else None
    match = _DOTTED.search(text)
    return match.group(1) if match and len(match.group(1)) <= MAX_NAME else None


def missing_nvflare_name(indexes: list[int], lines: list[Line], blocks: list[Traceback]) -> str | None:
    """The first missing name under `nvflare.` on the given hit lines or the message lines of their tracebacks."""
    seen: set[int] = set()
    for index in sorted(indexes)[:MAX_LINES]:
        block = block_containing(blocks, index, lines[index].source)
        around = [index] + ([block.end, *block.detail] if block is not None and block.end is not None else [])
        for number in around:
            if number in seen:
                continue
            seen.add(number)
            found = name_in(lines[number].text)
            if found:
                return found
    return None
