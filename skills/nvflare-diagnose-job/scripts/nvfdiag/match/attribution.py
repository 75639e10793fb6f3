"""Which site a signal belongs to: the line's own site label, else the site its text or its traceback names. Pure.

Usage: `site = hit_site(lines, blocks, index)`. Lines of a site's own log carry the site label their folder gives
(read/walk.py) and keep it. Lines without one (the stdout of `python job.py`, a pasted log) are attributed from
what NVFLARE writes into them (read/sites.site_in_text): the simulator's per-site folder in a path
(`.../site-3/simulate_job/app_site-3/custom/client.py`), `Result from site-3 is bad`, `peer=site-3`. An exception
line names no site itself: its traceback's frames (deepest first) and the line that opened the traceback do.
Only used for reporting (signals, likely_cause, the failing sites of a next action); which sites' logs were supplied
(matcher.Analysis.supplied_sites) still counts only lines with a label.
`mentioned_sites(text, known)` and `dependent_sites(...)` give the client sites a symptom's text names (the
sites a PARTIAL_LOG_VISIBILITY verdict depends on).
"""

from __future__ import annotations

import re

from ..model import Line
from ..read import sites
from .tracebacks import Traceback, block_containing

_PEER = re.compile(r"\bpeer=([A-Za-z0-9][A-Za-z0-9._-]{0,63})")
_SITE_TOKEN = re.compile(r"\b(site-\d{1,6})\b")


def hit_site(lines: list[Line], blocks: list[Traceback], index: int | None) -> str | None:
    """The site of line `index` (None for a job-status hit, or when nothing names one)."""
    if index is None:
        return None
    line = lines[index]
    if line.site:
        return line.site
    named = sites.site_in_text(line.text)
    if named:
        return named
    block = block_containing(blocks, index, line.source)
    if block is None:
        return None
    for path, _, _ in reversed(block.frames):
        named = sites.site_in_text(path)
        if named:
            return named
    return sites.site_in_text(lines[block.start].text)


def failing_sites(lines: list[Line], blocks: list[Traceback], hits) -> list[str]:
    """The client sites the hits belong to, sorted (the server and unknown sites left out)."""
    found = {hit_site(lines, blocks, h.index) for h in hits}
    return sorted(s for s in found if s and sites.valid_site(s) and not sites.is_server(s))


def mentioned_sites(text: str, known: set[str]) -> set[str]:
    """Client sites a line names: peer=..., site-N tokens, or any known site label appearing as a word."""
    found = set(_PEER.findall(text)) | {m.rstrip(".,;:") for m in _SITE_TOKEN.findall(text)}
    for name in known:
        if not sites.is_server(name) and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            found.add(name)
    return {name for name in found if sites.valid_site(name) and not sites.is_server(name)}


def dependent_sites(texts: list[str], hit_sites: list[str | None], known: set[str]) -> tuple[set[str], bool]:
    """Sites a symptom depends on, and whether it is a server-side view that names no site."""
    named: set[str] = set()
    for text in texts:
        named |= mentioned_sites(text[:4096], known)
    named |= {site for site in hit_sites if not sites.is_server(site) and sites.valid_site(site)}
    server_only = not named and all(sites.is_server(site) for site in hit_sites)
    return named, server_only
