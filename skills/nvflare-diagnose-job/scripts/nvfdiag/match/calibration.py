"""Evidence too thin for a high-confidence diagnosis, whatever the row. Pure.

Usage: `uncorroborated(an, primary)` (an: matcher.Analysis) -> the reason the primary's evidence cannot carry
`high`, or "" when it can (matcher._confidence caps the level at medium on a reason). The reasons:
- the row needs the job's code (the job's exception, its data path) and no strong hit lies in a traceback with a
  frame surely of the job's code (jobframes.py): a library outside site-packages reads like the job's code;
- every strong hit is a catalog regex on the words of one bare line (not a log record, not the end of a
  traceback), and no other line or fact supports the row (a second hit line, a failed job status): a line pasted
  alone says too little on its own;
- the job being diagnosed is known and every strong hit lies in a record of another run (its `run=<id>` prefix,
  or the run folder in its traceback's paths): evidence of another job in the same bundle.
"""

from __future__ import annotations

import re

from ..logline import is_record
from .jobframes import job_frame
from .refine import Candidate
from .tracebacks import Traceback, block_containing

USER_CODE_ID = "USER_CODE_EXCEPTION"
UNSURE_JOB_CODE = "no frame the evidence shows is the job's own code"
LONE_LINE = "one catalog regex hit on one line, nothing else supports it"
OTHER_RUN = "the evidence is another run's"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RUN = re.compile(rf"\brun[=:] ?({_UUID})\b", re.IGNORECASE)
_RUN_FOLDER = re.compile(rf"[\\/]({_UUID})[\\/]", re.IGNORECASE)
MAX_LINE = 4096


def uncorroborated(an, primary: Candidate) -> str:
    """The first reason the primary's evidence cannot carry high, or ""."""
    lines, blocks, job_id = an.evidence.lines, an.tracebacks, an.job_id
    strong = [h for h in primary.hits if h.strength == "strong"]
    placed = [(h, _block(lines, blocks, h.index)) for h in strong if h.index is not None]
    needs_job_code = primary.row.id == USER_CODE_ID or primary.row.job_code_only
    if needs_job_code and not any(b is not None and job_frame(b, an.scripts) is not None for _, b in placed):
        return UNSURE_JOB_CODE
    if _lone_line(lines, primary, placed, an.job_status):
        return LONE_LINE
    if job_id and placed and all(_other_run(_runs(lines, h.index, b), job_id) for h, b in placed):
        return OTHER_RUN
    return ""


def _lone_line(lines, primary: Candidate, placed, job_status: str | None) -> bool:
    at = {h.index for h in primary.hits}
    if len(at) != 1 or None in at or not placed or not all(h.words for h, _ in placed) or placed[0][1] is not None:
        return False
    failed = job_status is not None and any(word in job_status for word in ("EXCEPTION", "ABORT"))
    return not failed and not is_record(lines[placed[0][0].index].text[:MAX_LINE])


def _other_run(runs: set[str], job_id: str) -> bool:
    return bool(runs) and job_id.lower() not in runs


def _block(lines, blocks: list[Traceback], index: int) -> Traceback | None:
    return block_containing(blocks, index, lines[index].source)


def _runs(lines, index: int, block: Traceback | None) -> set[str]:
    """Run ids the hit's record names: its own line, or for a traceback the record line before it and its frames'
    run folders."""
    texts = [lines[index].text[:MAX_LINE]]
    if block is not None:
        if block.start > 0 and lines[block.start - 1].source == lines[index].source:
            texts.append(lines[block.start - 1].text[:MAX_LINE])
        found = {m.group(1).lower() for path, _, _ in block.frames for m in _RUN_FOLDER.finditer(path)}
    else:
        found = set()
    return found | {m.group(1).lower() for text in texts for m in _RUN.finditer(text)}
