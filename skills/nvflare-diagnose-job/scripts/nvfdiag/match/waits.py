"""A CLI envelope whose wait ran out is not a refused command; the scheduler's reason is the fact. Pure.

Usage: `hits = drop_wait_hits(hits, evidence)`; `clause = scheduler_said(scheduler_reasons(lines, index),
flagged)`. `nvflare job wait`, `job monitor` and the `system` commands that wait answer `error_code: TIMEOUT` when the user's own bounded wait
ends (nvflare/tool/cli_errors.py; job_cli.py raises it from the FLARE API's JobTimeout, `job ... did not finish
within Ns`). The command was accepted and the job may still be queued or running, so such an envelope supports no
row. What the server says about the job instead is the DefaultJobScheduler's `Try to schedule job <id>, get result:
(<reason>)`: when the job never started, that reason is said in likely_cause.
"""

from __future__ import annotations

import re

from ..logline import message
from ..read.structured import command_errors
from .scan import Hit

WAIT_ENDED_CODES = frozenset({"TIMEOUT"})
_SCHEDULE = re.compile(r"Try to schedule job ([\w-]{1,64}), get result: \(([\w .,:'<>=()/-]{0,160})\)\.?\s*$")
MAX_REASONS = 2
_NEEDLE = "Try to schedule job"
STARTED = "scheduled"  # DefaultJobScheduler's result when it starts the job (job_scheduler.py)


def wait_ended_lines(evidence) -> set[int]:
    """Lines that carry a CLI envelope's TIMEOUT error (the envelope reader writes one line per error envelope)."""
    errors = command_errors(evidence, range(len(evidence.lines)))
    return {index for index, code in errors.items() if code in WAIT_ENDED_CODES}


def drop_wait_hits(hits: dict[str, list[Hit]], evidence) -> dict[str, list[Hit]]:
    """Every row's hits minus those on a wait that ran out; rows left without hits are dropped."""
    ended = wait_ended_lines(evidence)
    if not ended:
        return hits
    kept = {row_id: [h for h in row_hits if h.index not in ended] for row_id, row_hits in hits.items()}
    return {row_id: row_hits for row_id, row_hits in kept.items() if row_hits}


def scheduler_reasons(lines, index) -> list[tuple[int, str]]:
    """(line, reason) of each of the scheduler's `Try to schedule job` records that refused a job it did not
    schedule later: `get result: (scheduled).` (NVFLARE 2.9's word for an empty result; older releases print
    `()`) is the scheduler starting the job, which voids the reasons it gave that job before (a TextIndex finds the
    lines)."""
    found: list[tuple[int, str, str]] = []
    for number in sorted(index.lines_with_text(_NEEDLE)):
        match = _SCHEDULE.search(message(lines[number].text[:4096]))
        if not match:
            continue
        job, reason = match.group(1), match.group(2).strip()
        if reason and reason != STARTED:
            found.append((number, job, reason))
        else:
            found = [record for record in found if record[1] != job]
    return [(number, reason) for number, _, reason in found]


def scheduler_said(reasons: list[tuple[int, str]], flagged: set[int]) -> str:
    """The scheduler's reasons for not starting a job, as a likely_cause clause ('' when it gave none)."""
    distinct: list[str] = []
    for number, reason in reasons:
        if number not in flagged and reason and reason not in distinct:
            distinct.append(reason)
    if not distinct:
        return ""
    quoted = "; ".join(f"`{reason}`" for reason in distinct[:MAX_REASONS])
    return f"the server's job scheduler did not start the job: {quoted}"
