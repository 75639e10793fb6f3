"""The one-pass guard against a naive, definition-by-definition oracle on many random ledgers."""

import copy
import random

import pytest
from autofl_core.campaign import guard, ledger

STATUS_WEIGHTS = {"baseline": 1, "keep": 3, "discard": 8, "crash": 4, "literature": 2, "infrastructure_retry": 1}
SCORES = (0.5, 0.5000004, 0.5004, 0.5006, 0.51, 0.52, 0.49)


def random_rows(rng: random.Random, length: int) -> list[dict]:
    rows, next_event = [], 1
    statuses, weights = zip(*STATUS_WEIGHTS.items(), strict=True)
    for index in range(length):
        status = "baseline" if index == 0 else rng.choices(statuses, weights)[0]
        values = dict.fromkeys(ledger.COLUMNS, "")
        values.update(status=status, name=f"r{index}", score=None, runtime_seconds=None)
        if status == "literature":
            labelled = rng.random() < 0.8
            values["literature_event_id"] = f"lit-{next_event:04d}" if labelled else ""
            next_event += labelled
        elif status != "infrastructure_retry":
            if status != "crash" and rng.random() < 0.9:
                values["score"] = rng.choice(SCORES)
            values["candidate_kind"] = rng.choice(("source_edit", "argument_only", ""))
            values["algorithm_family"] = rng.choice(("lr", "lr", "fedprox", ""))
            if rng.random() < 0.4:
                values["literature_event_id"] = f"lit-{rng.randint(1, next_event + 1):04d}"
        rows.append(values)
    return rows


def random_settings(rng: random.Random) -> dict:
    return {
        "mode": rng.choice(("max", "min")),
        "max_candidates": rng.choice((None, None, rng.randint(1, 12))),
        "plateau_threshold": rng.randint(1, 5),
        "plateau_min_delta": rng.choice((0.0, 0.0005, 0.01)),
        "hard_crash_threshold": rng.randint(0, 3),
        "exploration_batch_size": rng.randint(0, 3),
        "family_repeat_limit": rng.randint(0, 4),
    }


def _r(value):
    return round(value * 10**6)


def _better(new, old, mode, delta):
    if new is None:
        return False
    if old is None:
        return True
    gain = _r(new) - _r(old) if mode == "max" else _r(old) - _r(new)
    return gain > round(delta * 10**6, 6)


def oracle(rows, s, stop_files, pending, ready):
    """Each definition of the spec written out directly (quadratic is fine here)."""
    attempts = [i for i, row in enumerate(rows) if row["status"] in ("keep", "discard", "crash")]
    scored = [i for i in attempts if rows[i]["score"] is not None]
    events = [i for i, row in enumerate(rows) if row["status"] == "literature"]
    batches = []
    size = s["exploration_batch_size"]
    for k, event in enumerate(events if size else []):
        event_id = rows[event]["literature_event_id"] or None
        following = events[k + 1] if k + 1 < len(events) else len(rows)
        members = [
            i
            for i in scored
            if i > event
            and rows[i]["candidate_kind"] == "source_edit"
            and (rows[i]["literature_event_id"] == event_id if rows[i]["literature_event_id"] else i < following)
        ]
        done = len(members) >= size
        batches.append(
            {
                "literature_event_id": event_id,
                "event_index": event,
                "required": size,
                "completed": min(len(members), size),
                "completion_index": members[size - 1] if done else None,
            }
        )
    batch = None
    if batches:
        batch = next((b for b in batches if b["completion_index"] is None), batches[-1])
    retained = [i for i, row in enumerate(rows) if row["status"] in ("baseline", "keep") and row["score"] is not None]
    best = anchor = None
    for i in retained:
        if _better(rows[i]["score"], rows[best]["score"] if best is not None else None, s["mode"], 0):
            best = i
        if _better(
            rows[i]["score"], rows[anchor]["score"] if anchor is not None else None, s["mode"], s["plateau_min_delta"]
        ):
            anchor = i
    completions = [b["completion_index"] for b in batches if b["completion_index"] is not None]
    reset_candidates = [x for x in (anchor, max(completions) if completions else None) if x is not None]
    reset = max(reset_candidates) if reset_candidates else None
    since = len([i for i in scored if reset is None or i > reset])
    limit = s["family_repeat_limit"]
    window = scored[-limit:] if limit else []
    family = (
        limit
        and events
        and len(window) == limit
        and all(rows[i]["candidate_kind"] == "argument_only" for i in window)
        and len({rows[i]["algorithm_family"] for i in window}) == 1
        and rows[window[0]]["algorithm_family"] != ""
    )
    threshold = s["hard_crash_threshold"]
    crash_blocked = (
        threshold > 0
        and len(attempts) >= threshold
        and all(rows[i]["status"] == "crash" for i in attempts[-threshold:])
    )
    plateau = anchor is not None and since >= s["plateau_threshold"]
    last_event = events[-1] if events else -1
    last_completion = max(completions) if completions else -1
    cap = s["max_candidates"]
    if stop_files and pending + ready:
        reason = "manual_stop_pending_candidate"
    elif stop_files:
        reason = "manual_stop_file"
    elif pending + ready:
        reason = "pending_candidates"
    elif cap is not None and len(attempts) >= cap:
        reason = "candidate_cap_exhausted"
    elif crash_blocked:
        reason = "hard_repeated_crash_blocker"
    elif batch and batch["completion_index"] is None:
        reason = "literature_exploration_batch"
    elif family:
        reason = "family_repeat_limit"
    elif plateau:
        reason = "plateau_literature"
    else:
        reason = "continue"
    return {
        "reason": reason,
        "candidate_attempts": len(attempts),
        "scored_attempts": len(scored),
        "best_score": rows[best]["score"] if best is not None else None,
        "exploration_batch": batch,
        "reset_row_index": reset,
        "scored_since_reset": since,
        "best_scored_index": retained.index(anchor) if anchor is not None else None,
        "recommendation": "literature" if plateau else "continue",
        "last_literature_event_index": last_event,
        "last_batch_completion_index": last_completion,
    }


@pytest.mark.parametrize("seed", range(40))
def test_guard_matches_oracle_on_random_ledgers(seed):
    rng = random.Random(seed)
    for _case in range(25):
        rows = random_rows(rng, rng.randint(0, 60))
        settings = random_settings(rng)
        stop = ["STOP_AUTOFL"] if rng.random() < 0.1 else []
        pending, ready = (rng.random() < 0.1) * 1, (rng.random() < 0.05) * 1
        records = [ledger.LedgerRow(**values) for values in rows]  # the oracle reads the same rows as dicts
        snapshot = copy.deepcopy(records)
        state = guard.compute_state(
            records, settings, stop_files_present=stop, pending_manifests=pending, ready_manifests=ready
        )
        assert records == snapshot, "compute_state must not mutate its input"
        expected = oracle(rows, settings, stop, pending, ready)
        got = {
            "reason": state["reason"],
            "candidate_attempts": state["candidate_attempts"],
            "scored_attempts": state["scored_attempts"],
            "best_score": state["best_score"],
            "exploration_batch": state["exploration_batch"],
            "reset_row_index": state["plateau"]["reset_row_index"],
            "scored_since_reset": state["plateau"]["scored_since_reset"],
            "best_scored_index": state["plateau"]["best_scored_index"],
            "recommendation": state["plateau"]["recommendation"],
            "last_literature_event_index": state["plateau"]["last_literature_event_index"],
            "last_batch_completion_index": state["plateau"]["last_batch_completion_index"],
        }
        assert got == expected, (
            seed,
            settings,
            [(r["status"], r["score"], r["candidate_kind"], r["literature_event_id"]) for r in rows],
        )
