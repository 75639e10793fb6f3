"""Hits a traceback's frames say do not carry their row's meaning are loose (rank below specific hits, confidence at
most medium): the catalog flags the rows (`job_code_only`, `nvflare_connections_only`). Pure."""

from __future__ import annotations

from dataclasses import replace

from .catalog import Catalog
from .scan import Hit
from .tracebacks import Traceback, block_containing

# Rows whose hits on some tracebacks are loose: (row flag, which tracebacks, why). A row that means the job's own
# code or data (job_code_only) on a traceback ending in third-party code with no job frame: the library or NVFLARE
# chose the path or value. A row that means NVFLARE's own connections (nvflare_connections_only) on a traceback the
# job's code raised with no NVFLARE frame below it: the job's own download or connection failed, not NVFLARE's.
_LOOSE_ON = (
    (
        "job_code_only",
        lambda b: b.third_party is not None,
        "raised in third-party code with no frame of the job's code",
    ),
    (
        "nvflare_connections_only",
        lambda b: b.job_own_call,
        "raised in the job's own call, with no NVFLARE frame below it",
    ),
)


def loosen(hits: dict[str, list[Hit]], catalog: Catalog, blocks: list[Traceback], lines) -> dict:
    """`hits` with each _LOOSE_ON row's hits on the tracebacks that do not carry its meaning made loose."""
    for flag, carries_not, why in _LOOSE_ON:
        foreign = [b for b in blocks if carries_not(b)]
        if not foreign:
            continue
        hits = {
            row_id: [
                replace(h, loose=True, basis=f"{h.basis}; {why}")
                if h.index is not None and block_containing(foreign, h.index, lines[h.index].source) is not None
                else h
                for h in row_hits
            ]
            if getattr(catalog.row(row_id), flag)
            else row_hits
            for row_id, row_hits in hits.items()
        }
    return hits
