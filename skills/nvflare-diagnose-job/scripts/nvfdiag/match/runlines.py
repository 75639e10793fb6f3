"""NVFLARE's own log records about the run's course: a peer gone, work completed. Pure.

Usage: `peer_gone_lines(lines, index, flagged)` -> the records where NVFLARE says a participant is gone;
`progress_lines(lines, index, flagged)` -> the records where NVFLARE says work completed. Both find candidates
through the text index (index: textindex.TextIndex of the same lines), keep log records only (not prose quoting
the words) and leave flagged lines out. calibration.py weighs them:
- a peer gone (`Client site-2 is deemed disconnected!`, `... is dead - set task ...`, dead-job notices; 2.4-2.9)
  supports a connection error beside it;
- ordinary lifecycle lines (`FL server shutdown.`, `Client shutdown...`, `Shutting down client`, `shutting down
  server`, `starting shutdown process`) end every run, failed or not: they support nothing and are not read;
- progress (`finished processing task`, `task result sent to ...`, `got task assignment`, `Round N finished.`,
  `aggregating N update(s)`, `End aggregation.`, `Finished FedAvg.`, `Received result from client...`,
  `Contribution from ... ACCEPTED`; 2.4-2.9) after an error shows the run went on past it.
"""

from __future__ import annotations

import re

from ..logline import is_record

MAX_LINE = 4096
_PEER_GONE = re.compile(r"\bis deemed disconnected\b|\bis dead - set task\b|\bdead[- ]job\b")
_PEER_GONE_NEEDLES = ("deemed disconnected", "is dead", "dead-job", "dead job")
_PROGRESS = re.compile(
    r"\bfinished processing task\b|\btask result sent to \S|\bgot task assignment\b|\bRound \d{1,6} finished\.|"
    r"\baggregating \d{1,9} update|\bEnd aggregation\.|\bFinished FedAvg\.|\bReceived result from client\b|"
    r"\bContribution from \S{1,200} ACCEPTED\b"
)
_PROGRESS_NEEDLES = (
    "finished processing task",
    "task result sent to",
    "got task assignment",
    " finished.",
    "aggregating",
    "end aggregation.",
    "finished fedavg.",
    "received result from client",
    "contribution from",
)


def peer_gone_lines(lines, index, flagged) -> tuple[int, ...]:
    """Log records (not flagged) where NVFLARE says a participant or its job is gone."""
    return _records(lines, index, flagged, _PEER_GONE_NEEDLES, _PEER_GONE)


def progress_lines(lines, index, flagged) -> tuple[int, ...]:
    """Log records (not flagged) where NVFLARE says a task, a round or the workflow completed."""
    return _records(lines, index, flagged, _PROGRESS_NEEDLES, _PROGRESS)


def _records(lines, index, flagged, needles: tuple[str, ...], regex: re.Pattern) -> tuple[int, ...]:
    numbers = sorted({n for needle in needles for n in index.lines_with(needle)} - set(flagged))
    texts = ((n, lines[n].text[:MAX_LINE]) for n in numbers)
    return tuple(n for n, text in texts if regex.search(text) and is_record(text))
