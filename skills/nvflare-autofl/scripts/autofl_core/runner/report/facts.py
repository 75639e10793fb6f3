"""What a reviewer of a campaign needs, computed from the ledger rows and the manifests (pure, one pass each).

`best` is only a scored baseline or keep row; a discard that scored better is `best_observed`, never the best.
Keep rows that strictly improved their incumbent are the improvements; discards are judged against the
incumbent of their time; literature outcomes use only candidates that carry the event's id. Usage::

    walk = walk_rows(rows, mode)                     # incumbents, improvements, discards, crashes
    helped = what_helped(walk, band)                 # first / final / largest improvement, noise verdicts
    events = literature_outcomes(rows, walk, batch_size=3)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...campaign import gains
from ...campaign import vocabulary as v
from ...campaign.compare import better, improvement
from ...campaign.ledger import LedgerRow

GROUP_LITERATURE, GROUP_FAMILY, GROUP_UNCLASSIFIED = v.LITERATURE, "family", "unclassified"  # discard groups
MAX_NAMES = 10  # names listed per crash group; the count says how many there were


@dataclass
class Walk:
    """Rows in ledger order, each judged against the incumbent (best retained score) of its time."""

    mode: str
    improvements: list = field(default_factory=list)  # {row, name, score, previous, previous_name, gain}
    judged: dict = field(default_factory=dict)  # row index -> gain over the incumbent of its time (scored attempts)
    crashes: list = field(default_factory=list)  # row indices
    best: int | None = None  # row index of the best retained row
    baseline: int | None = None  # row index of the first scored baseline


def walk_rows(rows: list[LedgerRow], mode: str) -> Walk:
    walk = Walk(mode=mode)
    running = v.RunningBest(mode)
    for index, row in enumerate(rows):
        status, score = row.status, row.score
        incumbent, previous = running.score, running.index
        if status in v.ATTEMPTS and score is not None and incumbent is not None:
            walk.judged[index] = improvement(score, incumbent, mode)
        if status == v.CRASH or (status in v.ATTEMPTS and score is None):
            walk.crashes.append(index)
        if not running.offer(index, row):
            continue
        if status == v.BASELINE and walk.baseline is None:
            walk.baseline = index
        if status == v.KEEP and incumbent is not None:
            walk.improvements.append(
                {
                    "row": index,
                    "name": row.name,
                    "score": score,
                    "previous": incumbent,
                    "previous_name": rows[previous].name,
                    "gain": walk.judged[index],
                }
            )
        walk.best = index
    if walk.baseline is None:
        walk.baseline = next((i for i, r in enumerate(rows) if r.status == v.BASELINE and r.score is not None), None)
    return walk


def best_observed(rows: list[LedgerRow], walk: Walk) -> dict | None:
    """The best-scoring discard when it beats the best retained score (shown, never selected)."""
    if walk.best is None:
        return None
    top = None
    for index, row in enumerate(rows):
        if row.status == v.DISCARD and row.score is not None:
            if better(row.score, rows[top].score if top is not None else rows[walk.best].score, walk.mode):
                top = index
    if top is None:
        return None
    row = rows[top]
    return {
        "name": row.name,
        "row": top,
        "score": row.score,
        "status": v.DISCARD,
        "gain_over_best": improvement(row.score, rows[walk.best].score, walk.mode),
        "reason": row.failure_reason or None,
    }


def lineage(rows: list[LedgerRow], best: int | None) -> dict:
    """Follow `base_candidate` from the best back to a baseline; partial when an ancestor's row is missing."""
    if best is None:
        return {"chain": [], "partial": False, "missing": [], "changed_files": []}
    by_name = {row.name: row for row in rows if row.status in v.RETAINED}
    chain, missing, files, seen = [], [], set(), set()
    row = rows[best]
    while row is not None and row.name not in seen:
        seen.add(row.name)
        chain.append(row.name)
        files.update(name for name in row.changed_files.split(",") if name)
        if row.status == v.BASELINE:
            break
        parent = row.base_candidate
        if not parent or parent not in by_name:
            missing.append(parent or f"(base of {row.name} not recorded)")
            break
        row = by_name[parent]
    return {"chain": chain, "partial": bool(missing), "missing": missing, "changed_files": sorted(files)}


def what_helped(walk: Walk, band: float | None, *, metric: str | None = None, resolution: float | None = None) -> dict:
    """Improvements with a noise verdict (`gains.verdict`), led by the first, final and largest."""
    items = [
        dict(
            item,
            noise=gains.verdict(item["gain"], band, metric=metric, reference=item["previous"], resolution=resolution),
        )
        for item in walk.improvements
    ]
    if not items:
        return {"improvements": [], "first": None, "final": None, "largest": None}
    largest = max(items, key=lambda item: item["gain"])
    return {"improvements": items, "first": items[0]["name"], "final": items[-1]["name"], "largest": largest["name"]}


def group_key(row: LedgerRow) -> tuple[str, str]:
    if row.literature_event_id:
        return GROUP_LITERATURE, row.literature_event_id
    if row.algorithm_family:
        return GROUP_FAMILY, row.algorithm_family
    return GROUP_UNCLASSIFIED, ""


def what_did_not_help(rows: list[LedgerRow], walk: Walk) -> dict:
    """One representative scored discard per literature event / family (the closest to helping) and crashes
    grouped by failure reason."""
    groups: dict[tuple[str, str], dict] = {}
    for index, gain in walk.judged.items():
        row = rows[index]
        if row.status != v.DISCARD:
            continue
        key = group_key(row)
        entry = groups.setdefault(key, {"group": key[0], "key": key[1], "count": 0, "representative": None})
        entry["count"] += 1
        if entry["representative"] is None or gain > entry["representative"]["gain"]:
            entry["representative"] = {
                "name": row.name,
                "row": index,
                "score": row.score,
                "gain": gain,
                "reason": row.failure_reason or None,
                "hypothesis": row.diff_summary,
            }
    crashes: dict[str, dict] = {}
    for index in walk.crashes:
        reason = rows[index].failure_reason or "(no failure reason recorded)"
        entry = crashes.setdefault(reason, {"reason": reason, "count": 0, "names": []})
        entry["count"] += 1
        if len(entry["names"]) < MAX_NAMES:
            entry["names"].append(rows[index].name)
    ordered = sorted(
        groups.values(), key=lambda e: ({GROUP_LITERATURE: 0, GROUP_FAMILY: 1}.get(e["group"], 2), e["key"])
    )
    return {"discards": ordered, "crashes": sorted(crashes.values(), key=lambda e: (-e["count"], e["reason"]))}


def literature_outcomes(rows: list[LedgerRow], walk: Walk, *, batch_size: int) -> list[dict]:
    """One outcome per literature event, from the attempts that carry its id (never guessed from row order).

    not_evaluated (no attempt) > helped (an improvement) > failed (attempts, no score) > incomplete (fewer
    scored source edits than the batch size) > matched (a score equal to its incumbent) > not_confirmed.
    """
    members: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        if row.status in v.ATTEMPTS and row.literature_event_id:
            members.setdefault(row.literature_event_id, []).append(index)
    improved = {item["row"] for item in walk.improvements}
    out = []
    for index, row in enumerate(rows):
        if row.status != v.LITERATURE:
            continue
        event = row.literature_event_id
        linked = members.get(event, []) if event else []
        scored = [i for i in linked if rows[i].score is not None]
        source_backed = [i for i in scored if rows[i].candidate_kind == v.SOURCE_EDIT]
        if not linked:
            outcome = "not_evaluated"
        elif any(i in improved for i in linked):
            outcome = "helped"
        elif not scored:
            outcome = "failed"
        elif batch_size and len(source_backed) < batch_size:
            outcome = "incomplete"
        elif any(walk.judged.get(i) == 0 for i in scored):
            outcome = "matched"
        else:
            outcome = "not_confirmed"
        out.append(
            {
                "event_id": event or None,
                "name": row.name,
                "row": index,
                "family": row.algorithm_family,
                "hypothesis": row.diff_summary,
                "outcome": outcome,
                "candidates": [rows[i].name for i in linked],
                "scored": len(scored),
                "required": batch_size,
            }
        )
    return out


def families(rows: list[LedgerRow], walk: Walk) -> dict:
    """helped / mixed / matched / not_confirmed / failed per explicit algorithm_family (the rest are unclassified):
    `matched` as for a literature event, when no attempt improved and one scored exactly its incumbent."""
    improved = {item["row"] for item in walk.improvements}
    table: dict[str, dict] = {}
    unclassified = 0
    for index, row in enumerate(rows):
        if row.status not in v.ATTEMPTS:
            continue
        family = row.algorithm_family
        if not family:
            unclassified += 1
            continue
        entry = table.setdefault(
            family, {"family": family, "attempts": 0, "improved": 0, "scored": 0, "crashed": 0, "tied": False}
        )
        entry["tied"] = entry["tied"] or walk.judged.get(index) == 0
        entry["attempts"] += 1
        entry["improved"] += index in improved
        entry["scored"] += row.score is not None
        entry["crashed"] += row.score is None
    for entry in table.values():
        tied = entry.pop("tied")
        if entry["improved"] and entry["improved"] < entry["attempts"]:
            entry["outcome"] = "mixed"
        elif entry["improved"]:
            entry["outcome"] = "helped"
        elif tied:
            entry["outcome"] = "matched"
        elif entry["scored"]:
            entry["outcome"] = "not_confirmed"
        else:
            entry["outcome"] = "failed"
    return {"families": sorted(table.values(), key=lambda e: e["family"]), "unclassified_attempts": unclassified}


def trajectory(rows: list[LedgerRow], walk: Walk) -> dict:
    """Running-best steps compressed to the start, the first, the largest and the final improvement."""
    if walk.baseline is None and not walk.improvements:
        return {"steps_total": 0, "points": []}
    marks: dict[int, list[str]] = {}
    start = walk.improvements[0]["row"] if walk.baseline is None else walk.baseline
    marks.setdefault(start, []).append("start")
    if walk.improvements:
        largest = max(walk.improvements, key=lambda item: item["gain"])
        for label, item in (("first", walk.improvements[0]), ("largest", largest), ("final", walk.improvements[-1])):
            marks.setdefault(item["row"], []).append(label)
    gains = {item["row"]: item["gain"] for item in walk.improvements}
    points = [
        {"row": index, "name": rows[index].name, "score": rows[index].score, "gain": gains.get(index), "marks": labels}
        for index, labels in sorted(marks.items())
    ]
    return {"steps_total": len(walk.improvements) + (walk.baseline is not None), "points": points}


def compute_spent(rows: list[LedgerRow]) -> dict:
    """Sum of recorded runtimes by status; rows without a runtime (external runs) are counted apart."""
    by_status: dict[str, float] = {}
    missing = 0
    for row in rows:
        if row.status == v.LITERATURE:
            continue
        if row.runtime_seconds is None:
            missing += 1
            continue
        by_status[row.status] = by_status.get(row.status, 0.0) + row.runtime_seconds
    return {
        "total_seconds": round(sum(by_status.values()), 3),
        "by_status": {k: round(v, 3) for k, v in sorted(by_status.items())},
        "rows_without_runtime": missing,
    }


def batches(manifests: list[dict]) -> list[dict]:
    """The batches that ran: each candidate list as given and how many trials ran at a time, in the
    order the batches ran (a manifest records its `batch` when it is finalized)."""
    seen, found = set(), []
    for manifest in sorted(manifests, key=lambda m: (m.prepared_index or 0, m.created_at)):
        batch = manifest.batch
        if not isinstance(batch, dict) or not isinstance(batch.get("members"), list):
            continue
        key = tuple(str(member) for member in batch["members"])
        if key in seen or len(key) < 2:
            continue
        seen.add(key)
        parallel = batch.get("parallel") if type(batch.get("parallel")) is int else 1
        found.append({"members": list(key), "parallel": parallel})
    return found
