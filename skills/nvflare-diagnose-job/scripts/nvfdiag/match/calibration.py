"""Evidence too thin for a high-confidence diagnosis, whatever the row. Pure.

Usage: `uncorroborated(an, primary)` (an: matcher.Analysis) -> the reason the primary's evidence cannot carry
`high`, or "" when it can (matcher._confidence caps the level at medium on a reason). The reasons:
- the row needs the job's code (the job's exception, its data path) and no strong hit lies in a traceback with a
  frame surely of the job's code (jobframes.py): a library outside site-packages reads like the job's code;
- every strong hit is a catalog regex on the words of one bare line (not a log record, not the end of a
  traceback), and no other line or fact supports the row (a second hit line, a failed job status): a line pasted
  alone says too little on its own;
- the job being diagnosed is known and every strong hit lies in a record of another run (its `run=<id>` prefix, a
  job id in one of NVFLARE's shapes, the run folder of its file or of its traceback's paths): evidence of another
  job in the same bundle;
- the primary rests on one record alone in its file (a pasted line) dated more than GAP outside the time span of
  the records in the evidence's other files: a line of another run, whatever job is diagnosed.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ..logline import is_record, timestamp
from .jobframes import job_frame
from .refine import Candidate
from .tracebacks import Traceback, block_containing

USER_CODE_ID = "USER_CODE_EXCEPTION"
UNSURE_JOB_CODE = "no frame the evidence shows is the job's own code"
LONE_LINE = "one catalog regex hit on one line, nothing else supports it"
OTHER_RUN = "the evidence is another run's"
OUT_OF_SPAN = "the one record it rests on is dated outside the other logs' time span"
GAP = timedelta(hours=1)
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RUN = re.compile(rf"\brun[=:] ?({_UUID})\b", re.IGNORECASE)
_RUN_FOLDER = re.compile(rf"[\\/]({_UUID})[\\/]", re.IGNORECASE)
# NVFLARE's job-id shapes (`Job <id>`, `job_id='<id>'`, `"job_id": "<id>"`, `job=<id>`; the catalog's mode hint):
# `job_id=<id>` unquoted is an experiment tracker's print.
_JOB = re.compile(rf"\bjob(?:[ _]?id)?['\"]?\s*[=:]?\s*['\"]?(?<!id=)({_UUID})\b", re.IGNORECASE)
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
    if _outside_the_logs(lines, primary, placed):
        return OUT_OF_SPAN
    return ""


def _outside_the_logs(lines, primary: Candidate, placed) -> bool:
    """One hit line, a record outside any traceback, the only record of its file, and dated more than GAP before or
    after every record of the other files."""
    if len({h.index for h in primary.hits}) != 1 or len(placed) != len(primary.hits) or placed[0][1] is not None:
        return False
    hit = lines[placed[0][0].index]
    when = _when(hit.text)
    if when is None:
        return False
    others = []
    for line in lines:
        stamp = _when(line.text) if line is not hit and line.text[:1].isdigit() else None
        if stamp is not None and line.source == hit.source:
            return False  # a record among its own log's records, not a line pasted alone
        if stamp is not None:
            others.append(stamp)
    return bool(others) and (when < min(others) - GAP or when > max(others) + GAP)


def _when(text: str) -> datetime | None:
    stamp = timestamp(text[:64])
    try:
        return datetime.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S") if stamp else None
    except ValueError:  # a date that does not exist (month 13)
        return None


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
    """Run ids the hit's record names: its own line and its file's run folder, or for a traceback also the record
    line before it and its frames' run folders."""
    texts = [lines[index].text[:MAX_LINE]]
    folders = {m.group(1).lower() for m in _RUN_FOLDER.finditer("/" + lines[index].source)}
    if block is not None:
        if block.start > 0 and lines[block.start - 1].source == lines[index].source:
            texts.append(lines[block.start - 1].text[:MAX_LINE])
        found = {m.group(1).lower() for path, _, _ in block.frames for m in _RUN_FOLDER.finditer(path)}
    else:
        found = set()
    named = {m.group(1).lower() for text in texts for pattern in (_RUN, _JOB) for m in pattern.finditer(text)}
    return found | folders | named
