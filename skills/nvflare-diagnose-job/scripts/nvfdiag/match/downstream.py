"""NVFLARE's server-side reactions to a client that failed are consequences, not causes. Pure.

Usage: `later = consequences(lines, hits, blocks)` -> the hit lines that are such reactions; then
`refine(ranked, demoted, later)` moves aside every candidate that only they support (USER_CODE_EXCEPTION stays:
its supporting signals are exactly the server's view of a client's failure). When a client's task fails, the server
still receives its (empty) result and NVFLARE reacts: the model selector cannot read it (`shareable data is not a
valid DXO`, with a ValueError traceback inside nvflare/apis/dxo.py), the controller reports `Result from site-3 is
bad` and that it `Cannot reach min_responses`, and every such record carries the peer's return code
(`peer_rc=EXECUTION_EXCEPTION`). A line is a consequence when it says one of these on the server side (a server log,
or stdout that carries no site label) and is not the exception line of a traceback through user code.
"""

from __future__ import annotations

import re

from ..read import sites
from .refine import Candidate, Demoted
from .scan import Hit
from .tracebacks import Traceback, block_containing

KEEPS = ("USER_CODE_EXCEPTION",)  # rows whose supporting evidence is the server's view of a client failure
_REACTIONS = re.compile(
    r"not a valid DXO|Result from \S{1,64} is bad|Cannot reach min_responses|remaining good clients"
    r"|\bpeer_rc=(?:EXECUTION_EXCEPTION|TASK_ABORTED|EXECUTION_RESULT_ERROR|UNSAFE_JOB)\b"
)
MAX_TEXT = 8192
REASON = "a consequence of a client's failure (NVFLARE's reaction on the server), not a cause"


def is_reaction(text: str) -> bool:
    """True for NVFLARE's server-side wording of a client's failed task."""
    return bool(_REACTIONS.search(text[:MAX_TEXT]))


def consequences(lines, hits: dict[str, list[Hit]], blocks: list[Traceback]) -> set[int]:
    """Indexes of hit lines that are NVFLARE's server-side reactions to a client's failure."""
    found: set[int] = set()
    for index in {h.index for row_hits in hits.values() for h in row_hits if h.index is not None}:
        line = lines[index]
        if not sites.is_server(line.site) or not is_reaction(line.text):
            continue
        block = block_containing(blocks, index, line.source)
        if block is None or not block.user_frame:
            found.add(index)
    return found


def refine(ranked: list[Candidate], demoted: list[Demoted], later: set[int]) -> list[Candidate]:
    """Candidates that only consequences support are not selected (listed with REASON instead)."""
    kept = []
    for cand in ranked:
        lines = [h.index for h in cand.hits]
        if cand.row.id not in KEEPS and lines and all(i is not None and i in later for i in lines):
            demoted.append(Demoted(cand.row, REASON, tuple(cand.hits)))
        else:
            kept.append(cand)
    return kept
