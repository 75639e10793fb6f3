"""An absolute path is not the cause when the same root works: ABSOLUTE_DATA_PATH vs DATA_PATH_NOT_FOUND. Pure.

Usage: `paths = same_root(lines, hits, flagged, index)` -> Paths (the missing absolute paths and the paths of the
same layout other lines show working), then `refine(ranked, demoted, catalog, mode, paths)` moves
ABSOLUTE_DATA_PATH aside when it cannot be the cause. ABSOLUTE_DATA_PATH means a path written on one machine that
another site cannot resolve. That cannot be the cause in a simulation (every site runs on this machine), nor when
other sites opened paths of the same layout under the same root (`.../data/site-1/train.csv` and
`.../data/site-2/train.csv` load, `.../data/site_3/train.csv` does not: a per-site folder typo): then it is
DATA_PATH_NOT_FOUND on the site that failed. A path "worked" when a line that is not an error, not suspicious and
not quoted code names it and it differs from a missing path in exactly one folder or file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..logline import level
from .refine import Candidate, Demoted
from .scan import Hit

ABSOLUTE_ID, NOT_FOUND_ID = "ABSOLUTE_DATA_PATH", "DATA_PATH_NOT_FOUND"
_PATH = re.compile(r"(?<![\w.~/-])(/[\w.@+-]{1,80}(?:/[\w.@+-]{1,80}){1,24})")
_ERRORISH = re.compile(r"Error|No such file|not found|does not exist|cannot (?:open|find|access)|Traceback", re.I)
MAX_PATHS = 4  # missing paths looked at
MAX_WORKED = 5  # paths that worked, named in likely_cause
_SAME_ROOT = (
    "catalog rule ABSOLUTE_DATA_PATH re-read as DATA_PATH_NOT_FOUND (the same root works: mapping rule same_root)"
)
MAX_LINES = 4000  # lines holding the root looked at
MIN_DEPTH = 3  # a layout needs a root of at least two folders (/home/user) above the part that differs


@dataclass(frozen=True)
class Paths:
    missing: tuple[str, ...]
    worked: tuple[str, ...]


def _paths_in(text: str) -> list[str]:
    return [path.rstrip(".") for path in _PATH.findall(text[:4096])]


def _same_layout(path: str, other: str) -> bool:
    """Same depth, different in exactly one component below the root's first two folders."""
    a, b = path.split("/"), other.split("/")
    if len(a) != len(b) or len(a) <= MIN_DEPTH or a == b:
        return False
    differing = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return len(differing) == 1 and differing[0] >= MIN_DEPTH


def same_root(lines, hits: dict[str, list[Hit]], flagged, code_lines: set[int], index=None) -> Paths | None:
    """The missing paths of ABSOLUTE_DATA_PATH's runtime hits and the same-layout paths that worked elsewhere."""
    strong = sorted({h.index for h in hits.get(ABSOLUTE_ID, []) if h.strength == "strong" and h.index is not None})
    missing: list[str] = []
    for number in strong:
        missing += [p for p in _paths_in(lines[number].text) if p not in missing]
    missing = missing[:MAX_PATHS]
    if not missing:
        return None
    worked: list[str] = []
    roots = sorted({"/".join(path.split("/")[:MIN_DEPTH]) + "/" for path in missing})
    numbers = sorted({n for root in roots for n in (index.lines_with_text(root) if index else range(len(lines)))})
    for number in numbers[:MAX_LINES]:
        text = lines[number].text
        if number in flagged or number in code_lines or number in strong or _ERRORISH.search(text[:4096]):
            continue
        if level(text) in ("ERROR", "CRITICAL", "FATAL"):
            continue
        for path in _paths_in(text):
            if path not in worked and path not in missing and any(_same_layout(m, path) for m in missing):
                worked.append(path)
    return Paths(tuple(missing), tuple(sorted(worked)[:MAX_WORKED]))


def refine(ranked: list[Candidate], demoted: list[Demoted], catalog, mode: str, paths: Paths | None) -> list[Candidate]:
    """ABSOLUTE_DATA_PATH yields to DATA_PATH_NOT_FOUND (same hits) in a simulation or when the same root worked."""
    absolute = next((c for c in ranked if c.row.id == ABSOLUTE_ID), None)
    if absolute is None or paths is None or not catalog.has(NOT_FOUND_ID) or not (mode == "simulation" or paths.worked):
        return ranked
    if paths.worked:
        reason = "other sites opened paths under the same root, so the absolute path itself resolves"
    else:
        reason = "in a simulation every site runs on this machine, so an absolute path written here resolves"
    runtime = [h for h in absolute.hits if h.strength == "strong"]
    demoted.insert(0, Demoted(absolute.row, reason, tuple(runtime)))
    kept = [c for c in ranked if c is not absolute]
    found = next((c for c in kept if c.row.id == NOT_FOUND_ID), None)
    if found is None:
        kept.append(
            Candidate(
                catalog.row(NOT_FOUND_ID), [Hit(NOT_FOUND_ID, h.index, "strong", basis=_SAME_ROOT) for h in runtime]
            )
        )
    else:
        known = {h.index for h in found.hits}
        found.hits.extend(
            Hit(NOT_FOUND_ID, h.index, "strong", basis=_SAME_ROOT) for h in runtime if h.index not in known
        )
    return sorted(kept, key=Candidate.sort_key)
