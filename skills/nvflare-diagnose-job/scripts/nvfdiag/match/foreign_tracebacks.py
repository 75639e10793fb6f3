"""Hits whose traceback or line says they do not carry their row's meaning are loose (rank below specific hits,
confidence at most medium); the catalog flags the rows. Pure.

- `job_code_only` rows (the job's own code or data) on a traceback that ends in third-party code with no frame of
  the job's code: the library or NVFLARE chose the path or value.
- `nvflare_connections_only` rows (NVFLARE's TLS, its startup kits) on the job's own failing call (`own`:
  tracebacks.job_own_calls, chains read as one stack) or on a web download's line (the catalog's
  `web_downloads`): the job's own download or connection failed, not NVFLARE's. These hits also carry
  `foreign` (the reason): a row only they support is at most low (matcher._confidence).
"""

from __future__ import annotations

from dataclasses import replace

from .catalog import Catalog
from .scan import Hit
from .tracebacks import Traceback, block_containing

THIRD_PARTY = "raised in third-party code with no frame of the job's code"
OWN_CALL = "raised in the job's own call, with no NVFLARE frame below it"
WEB_DOWNLOAD = "on a web download's line, not NVFLARE's connection"
MAX_LINE = 4096  # characters of a line the web_downloads rule reads


def loosen(hits: dict[str, list[Hit]], catalog: Catalog, blocks: list[Traceback], own: list[Traceback], lines) -> dict:
    """`hits` with the flagged rows' hits loosened where their traceback or line does not carry the row."""
    third_party = [b for b in blocks if b.third_party is not None]
    out = {}
    for row_id, row_hits in hits.items():
        row = catalog.row(row_id)
        if row.job_code_only:
            row_hits = [_loose_in(h, third_party, lines, THIRD_PARTY) for h in row_hits]
        if row.nvflare_connections_only:
            row_hits = [_not_nvflares_connection(h, own, catalog.web_downloads, lines) for h in row_hits]
        out[row_id] = row_hits
    return out


def _loose_in(hit: Hit, blocks: list[Traceback], lines, why: str) -> Hit:
    if hit.index is not None and block_containing(blocks, hit.index, lines[hit.index].source) is not None:
        return replace(hit, loose=True, basis=f"{hit.basis}; {why}")
    return hit


def _not_nvflares_connection(hit: Hit, own: list[Traceback], web, lines) -> Hit:
    loosened = _loose_in(hit, own, lines, OWN_CALL)
    if loosened is not hit:
        return replace(loosened, foreign=OWN_CALL)
    if hit.index is None or web is None:
        return hit
    if web.search(lines[hit.index].text[:MAX_LINE]):
        return replace(hit, loose=True, basis=f"{hit.basis}; {WEB_DOWNLOAD}", foreign=WEB_DOWNLOAD)
    return hit
