"""Rounds that completed before a failure: NVFLARE's round banners and the metrics artifacts. Pure.

Usage: `rounds = rounds_before(lines, failure, metrics, index)` -> Rounds or None; `describe(rounds)` ->
` (round 0 completed; the failure came in round 1)` for a next action's `{rounds}` (`summary`: without parentheses). A failure after earlier rounds
completed is not a bug at the line that raised: the code ran fine at first and what it received changed (a client
that sends back part of the model works in round 0 and cannot reshape the global model in round 1).
Evidence, in this order:
- `Round N started.` banners (FedAvg, ScatterAndGather) before the failure: in the failure's own source by line
  order, in other sources by timestamp (the nearest timestamped line at or above the banner); round N starting
  means rounds 0..N-1 completed;
- `final_round` of metrics_summary.json / round_metrics.jsonl: that round completed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..logline import timestamp
from ..model import Line

_BANNER = re.compile(r"(?:^|\s)Round (\d{1,6}) started\.(?:\s|$)")
_BANNER_TEXT = " started."  # literal every banner holds (found with the text index)
MAX_BANNERS = 2000
MAX_LOOKBACK = 8  # lines above a banner searched for its record's timestamp


@dataclass(frozen=True)
class Rounds:
    completed: int  # the last round known to have completed
    failed_in: int | None  # the round that was running when it failed, when the banners say it
    evidence: tuple[str, ...]  # what says so: "round banners", "metrics final_round"


def _stamp_at(lines: list[Line], index: int) -> str | None:
    """Timestamp of the record a line belongs to (its own, or of the nearest record line above it)."""
    for number in range(index, max(-1, index - MAX_LOOKBACK), -1):
        if lines[number].source != lines[index].source:
            return None
        stamp = timestamp(lines[number].text)
        if stamp is not None:
            return stamp
    return None


def _last_banner(lines: list[Line], failure: int, index) -> int | None:
    """The highest round whose banner was printed before the failure. Banners of other sources are compared by
    timestamp, highest round first, so only a few record lines are looked up."""
    candidates = range(len(lines)) if index is None else index.lines_with_text(_BANNER_TEXT)
    source = lines[failure].source
    same, other = [], []
    for number in candidates:
        text = lines[number].text[:400]
        match = _BANNER.search(text) if _BANNER_TEXT in text else None
        if match:
            (same if lines[number].source == source else other).append((int(match.group(1)), number))
            if len(same) + len(other) >= MAX_BANNERS:
                break
    best = max((r for r, number in same if number < failure), default=None)
    when = _stamp_at(lines, failure) if other else None
    for round_no, number in sorted(other, reverse=True):
        if best is not None and round_no <= best:
            break
        stamp = _stamp_at(lines, number) if when is not None else None
        if stamp is not None and stamp <= when:
            best = round_no
            break
    return best


def rounds_before(lines: list[Line], failure: int, metrics: dict | None, index=None) -> Rounds | None:
    """What the evidence says about rounds that completed before line `failure` (None: nothing, or round 0 only)."""
    started = _last_banner(lines, failure, index)
    completed, failed_in, evidence = None, None, []
    if started is not None and started >= 1:
        failed_in, completed = started, started - 1
        evidence.append("round banners")
    final = (metrics or {}).get("final_round")
    if isinstance(final, int) and not isinstance(final, bool) and 0 <= final < 10**6:
        if completed is None or final > completed:
            completed = final
            failed_in = failed_in if failed_in is not None and failed_in > final else None
        evidence.append(f"metrics final_round {final}")
    if completed is None:
        return None
    return Rounds(completed, failed_in, tuple(evidence))


def summary(rounds: Rounds) -> str:
    """`round 0 completed; the failure came in round 1` (only numbers are filled in)."""
    done = f"round {rounds.completed}" if rounds.completed == 0 else f"rounds 0-{rounds.completed}"
    text = f"{done} completed"
    return text + (f"; the failure came in round {rounds.failed_in}" if rounds.failed_in is not None else "")


def describe(rounds: Rounds | None) -> str:
    """` (round 0 completed; the failure came in round 1)` for a next action's `{rounds}`, or ''."""
    return f" ({summary(rounds)})" if rounds is not None else ""
