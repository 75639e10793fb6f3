"""What a careful reader sets aside before ranking: handled tracebacks, failed program launches, CLI waits that
ran out (handled.py, launches.py, waits.py). Pure.

Usage: `hits, reading = read_carefully(hits, evidence, blocks, catalog, index, flagged)` before ranking; after ranking
`reading.demote(ranked, demoted, catalog)`; `reading.caps_confidence(row_id)` and `reading.clauses(flagged)` for the
report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import handled, launches, waits
from .refine import Candidate, Demoted
from .scan import Hit
from .tracebacks import Traceback


@dataclass
class CarefulReading:
    aside: dict[str, list[Hit]] = field(default_factory=dict)  # hits on handled tracebacks, per row
    launches: list[launches.Launch] = field(default_factory=list)
    scheduler: list[tuple[int, str]] = field(default_factory=list)  # (line, reason) the job scheduler gave

    aside_lead: str | None = None  # the row the handled tracebacks' hits would have decided
    reasons: dict[str, str] = field(default_factory=dict)  # per row set aside: why (handled.REASON when absent)

    def caps_confidence(self, row_id: str) -> bool:
        """The handled tracebacks would have decided a row other than `row_id` (the chosen one): the chosen row is
        at most medium. When they point at the chosen row itself, setting them aside changed nothing."""
        return bool(self.aside) and self.aside_lead != row_id

    def demote(self, ranked: list[Candidate], demoted: list[Demoted], catalog) -> None:
        """Rows only handled tracebacks supported, listed with why they were handled."""
        chosen = {cand.row.id for cand in ranked}
        for row_id in sorted(self.aside):
            if row_id not in chosen and catalog.has(row_id):
                reason = self.reasons.get(row_id, handled.REASON)
                demoted.append(Demoted(catalog.row(row_id), reason, tuple(self.aside[row_id])))

    def clauses(self, flagged: set[int]) -> list[str]:
        """likely_cause clauses for facts no row names: a program that could not be started, the scheduler's
        reason for not starting a job."""
        said = [launches.said(self.launches)] if self.launches else []
        scheduler = waits.scheduler_said(self.scheduler, flagged)
        return said + ([scheduler] if scheduler else [])


def read_carefully(
    hits: dict[str, list[Hit]], evidence, blocks: list[Traceback], catalog, index, flagged
) -> tuple[dict[str, list[Hit]], CarefulReading]:
    """The hits a careful reader keeps, and what it set aside (flagged: lines suspicious content holds, never
    NVFLARE's records of completed work for handled.went_on_blocks)."""
    lines = evidence.lines
    hits = waits.drop_wait_hits(hits, evidence)
    found = launches.failed_launches(blocks, lines)
    hits = launches.reread_hits(hits, lines, found, catalog.has, index)
    later = handled.handled_blocks(blocks, lines)
    hits, aside = handled.set_aside_hits(hits, lines, later)
    hits, went_on = handled.set_aside_hits(
        hits, lines, handled.went_on_blocks(blocks, lines, index, flagged, catalog.progress, later)
    )
    reasons = {row_id: handled.WENT_ON_REASON for row_id in went_on if row_id not in aside}
    for row_id, row_hits in went_on.items():
        aside.setdefault(row_id, []).extend(row_hits)
    reading = CarefulReading(aside, found, waits.scheduler_reasons(lines, index), _lead(aside, catalog), reasons)
    return hits, reading


def _lead(aside: dict[str, list[Hit]], catalog) -> str | None:
    """The row the set-aside hits support first: a strong hit before a weak one, then the catalog's priority."""
    rows = [row_id for row_id in aside if catalog.has(row_id)]
    if not rows:
        return None

    def rank(row_id: str) -> tuple[bool, int, str]:
        strong = any(hit.strength == "strong" for hit in aside[row_id])
        return (strong, catalog.row(row_id).priority, row_id)

    return max(rows, key=rank)
