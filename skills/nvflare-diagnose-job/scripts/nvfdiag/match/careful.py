"""What a careful reader sets aside before ranking: handled tracebacks, failed program launches, CLI waits that
ran out (handled.py, launches.py, waits.py). Pure.

Usage: `hits, reading = read_carefully(hits, evidence, blocks, catalog, index)` before ranking; after ranking
`reading.demote(ranked, demoted, catalog)`; `reading.caps_confidence` and `reading.clauses(flagged)` for the
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

    @property
    def caps_confidence(self) -> bool:
        """A handled traceback supported some row: the row the run's own failure supports is at most medium."""
        return bool(self.aside)

    def demote(self, ranked: list[Candidate], demoted: list[Demoted], catalog) -> None:
        """Rows only handled tracebacks supported, listed with handled.REASON."""
        chosen = {cand.row.id for cand in ranked}
        for row_id in sorted(self.aside):
            if row_id not in chosen and catalog.has(row_id):
                demoted.append(Demoted(catalog.row(row_id), handled.REASON, tuple(self.aside[row_id])))

    def clauses(self, flagged: set[int]) -> list[str]:
        """likely_cause clauses for facts no row names: a program that could not be started, the scheduler's
        reason for not starting a job."""
        said = [launches.said(self.launches)] if self.launches else []
        scheduler = waits.scheduler_said(self.scheduler, flagged)
        return said + ([scheduler] if scheduler else [])


def read_carefully(
    hits: dict[str, list[Hit]], evidence, blocks: list[Traceback], catalog, index
) -> tuple[dict[str, list[Hit]], CarefulReading]:
    """The hits a careful reader keeps, and what it set aside."""
    lines = evidence.lines
    hits = waits.drop_wait_hits(hits, evidence)
    found = launches.failed_launches(blocks, lines)
    hits = launches.reread_hits(hits, lines, found, catalog.has, index)
    hits, aside = handled.set_aside_hits(hits, lines, handled.handled_blocks(blocks, lines))
    return hits, CarefulReading(aside, found, waits.scheduler_reasons(lines, index))
