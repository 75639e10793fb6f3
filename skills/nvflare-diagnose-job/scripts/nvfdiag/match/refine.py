"""Turn raw signal hits into ranked candidates, applying the catalog's refinement rules.

Usage: `ranked, demoted = rank_candidates(hits, catalog, lines, mode, job_status=...)`. Pure. Implements:
requires_any / supersedes (transfer progress; after_partner signals count only after a partner's hit),
resolved_by (DOT 6 transient), transient_on_completion (liveness hiccups of a job that completed), the mode filter,
finding-only rows, and the deterministic precedence (strong before weak, specific before loose, then priority, then
id).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..logline import timestamp
from ..model import Line
from ..read.sites import COMPLETED
from .catalog import Catalog, Row
from .scan import Hit

TRANSIENT_ON_COMPLETION = f"transient: the job still finished {COMPLETED}, so the run recovered from it"


@dataclass
class Candidate:
    row: Row
    hits: list[Hit]

    @property
    def strong(self) -> bool:
        return any(h.strength == "strong" for h in self.hits)

    @property
    def specific(self) -> bool:
        """Some strong hit matched a specific message (not only a generic template or a rule that matches words)."""
        return any(h.strength == "strong" and not h.loose for h in self.hits)

    def sort_key(self) -> tuple:
        return (0 if self.strong else 1, 0 if self.specific else 1, -self.row.priority, self.row.id)


@dataclass(frozen=True)
class Demoted:
    """A row that matched but cannot be primary, with a fixed-template reason and its signal hits."""

    row: Row
    reason: str
    hits: tuple[Hit, ...] = ()


def _later_success(row: Row, hits: list[Hit], lines: list[Line], skip: set[int]) -> bool:
    """True when a resolved_by line comes after the row's last hit (same source order, or later timestamp)."""
    last = max(h.index for h in hits if h.index is not None)
    last_source, last_time = lines[last].source, timestamp(lines[last].text)
    for index, line in enumerate(lines):
        if index in skip or index == last:
            continue
        later = (line.source == last_source and index > last) or (
            last_time is not None and (ts := timestamp(line.text)) is not None and ts > last_time
        )
        if later and any(p.search(line.text[:8192]) for p in row.resolved_by):
            return True
    return False


def _after_partners(hits: list[Hit], partners: list[Candidate], lines: list[Line]) -> list[Hit]:
    """The hits that count next to the partners' hits: all but those of after_partner signals, which count only
    when their line comes after a strong partner hit (same source further down, or a later timestamp)."""
    anchors = [h.index for p in partners for h in p.hits if h.strength == "strong" and h.index is not None]
    return [h for h in hits if not h.after_partner or any(_later(h.index, a, lines) for a in anchors)]


def _later(index: int | None, anchor: int, lines: list[Line]) -> bool:
    if index is None:
        return False
    if lines[index].source == lines[anchor].source and index > anchor:
        return True
    mine, theirs = timestamp(lines[index].text), timestamp(lines[anchor].text)
    return mine is not None and theirs is not None and mine > theirs


def rank_candidates(
    hits: dict[str, list[Hit]],
    catalog: Catalog,
    lines: list[Line],
    mode: str,
    skip: set[int] | frozenset = frozenset(),
    job_status: str | None = None,
) -> tuple[list[Candidate], list[Demoted]]:
    """Ranked primary candidates (best first) and rows that matched but were demoted, each with a reason."""
    candidates = {row.id: Candidate(row, hits[row.id]) for row in catalog.rows if hits.get(row.id)}
    demoted: list[Demoted] = []
    for cid in sorted(candidates):
        cand = candidates.get(cid)
        if cand is None:
            continue
        row = cand.row
        if row.requires_any:
            partners = [p for p in row.requires_any if p in candidates and candidates[p].strong]
            if partners:
                cand.hits = _after_partners(cand.hits, [candidates[p] for p in partners], lines)
            if not partners or not cand.hits:
                del candidates[cid]  # e.g. transfer progress alone, or only completed before the timeout: healthy
                continue
            for loser in row.supersedes:
                if loser in candidates:
                    lost = candidates.pop(loser)
                    demoted.append(Demoted(lost.row, f"superseded by {row.id}: {row.title.lower()}", tuple(lost.hits)))
        if row.resolved_by and cid in candidates and _later_success(row, cand.hits, lines, set(skip)):
            del candidates[cid]
            reason = "transient: a later task download, client update or aggregation succeeded"
            demoted.append(Demoted(row, reason, tuple(cand.hits)))
    for cid in sorted(candidates):
        row = candidates[cid].row
        if row.finding_only:
            del candidates[cid]
        elif row.transient_on_completion and job_status == COMPLETED:
            demoted.append(Demoted(row, TRANSIENT_ON_COMPLETION, tuple(candidates.pop(cid).hits)))
        elif mode in ("simulation", "production") and mode not in row.modes:
            reason = f"matched, but the row applies to {'/'.join(row.modes)} only (mode is {mode})"
            demoted.append(Demoted(row, reason, tuple(candidates.pop(cid).hits)))
    ranked = sorted(candidates.values(), key=Candidate.sort_key)
    return ranked, demoted
