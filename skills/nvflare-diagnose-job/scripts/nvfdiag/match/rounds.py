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

import bisect
import re
from dataclasses import dataclass

from ..logline import timestamp
from ..model import Line

_BANNER = re.compile(r"(?:^|\s)Round (\d{1,6}) started\.(?:\s|$)")
_BANNER_TEXT = " started."  # literal every banner holds (found with the text index)
MAX_BACKWARD = 50  # candidate lines walked back per source to find the last real banner
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
    """The highest round whose banner was printed before the failure. Per source, the banners before it are found
    by line order (the failure's own source) or by a binary search on their records' timestamps (other sources;
    a log's timestamps grow), then walked back to the nearest real banner: a few lines read per source, not every
    banner of a long run."""
    candidates = range(len(lines)) if index is None else index.lines_with_text(_BANNER_TEXT)
    by_source: dict[str, list[int]] = {}
    for number in candidates:
        by_source.setdefault(lines[number].source, []).append(number)
    when, best = None, None
    for source, numbers in by_source.items():
        if source == lines[failure].source:
            end = bisect.bisect_left(numbers, failure)
        else:
            when = when if when is not None else _stamp_at(lines, failure)
            if when is None:
                continue
            end = _count_before(lines, numbers, when)
        found = _last_match(lines, numbers[:end])
        if found is not None and (best is None or found > best):
            best = found
    return best


def _count_before(lines: list[Line], numbers: list[int], when: str) -> int:
    """How many of a source's candidate lines belong to records stamped at or before `when` (binary search; a line
    whose record has no timestamp counts as later)."""
    low, high = 0, len(numbers)
    while low < high:
        middle = (low + high) // 2
        stamp = _stamp_at(lines, numbers[middle])
        if stamp is not None and stamp <= when:
            low = middle + 1
        else:
            high = middle
    return low


def _last_match(lines: list[Line], numbers: list[int]) -> int | None:
    """The round of the last banner among the candidate lines (looking back at most MAX_BACKWARD of them)."""
    for number in reversed(numbers[-MAX_BACKWARD:]):
        text = lines[number].text[:400]
        match = _BANNER.search(text) if _BANNER_TEXT in text else None
        if match:
            return int(match.group(1))
    return None


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
