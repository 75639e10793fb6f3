"""SimEnv workspaces the job's stdout names that exist here but were not given: the report asks to add them.

Usage: `ev.named_workspaces = named_workspaces(ev.lines, ev.sources, roots_real)` once the lines are final. Only lines without a
site label (stdout of `python job.py`, a pasted log) are looked at; the path is one NVFLARE printed
(read/sites.workspace_named: the simulator's `Logs are in per-site subdirectories under X`, or the part of a
`<root>/<job>/<site>/simulate_job/...` path before the site folder), checked with one `os.path.isdir` (no file is
opened, nothing is listed). A workspace is left out when a given folder lies inside it or it lies inside one.
The match stage decides which entry may be used (never one from a suspicious line).
"""

from __future__ import annotations

import os

from ..model import Line, Source
from . import sites

MAX_CHECKED = 4  # distinct paths stat-ed at most
_HINTS = ("simulate_job/", "per-site subdirectories")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def named_workspaces(lines: list[Line], sources: list[Source], roots_real: list[str]) -> list[tuple[int, str]]:
    """(line index, path) of each existing, not given workspace a site-less line names, first mention first."""
    site_less = {source.path for source in sources if source.site is None and source.kind == "log"}
    seen: dict[str, bool] = {}
    found: list[tuple[int, str]] = []
    if not site_less:
        return found  # a workspace's own logs: every line has its site label
    for index, line in enumerate(lines):
        if line.site is not None or not any(hint in line.text[: sites.MAX_TEXT] for hint in _HINTS):
            continue
        path = sites.workspace_named(line.text)
        if path is None:
            continue
        if path not in seen:
            if len(seen) >= MAX_CHECKED:
                break
            real = os.path.realpath(path) if os.path.isabs(path) else None
            seen[path] = bool(
                real
                and os.path.isdir(real)
                and not any(_inside(real, root) or _inside(root, real) for root in roots_real)
            )
        if seen[path]:
            found.append((index, path))
    return found
