"""Campaign state machine: ledger rows + settings -> campaign state (pure, no I/O, one pass over the rows).

Usage::

    state = compute_state(rows, GuardSettings(mode="max", max_candidates=5), stop_files_present=[])
    full = with_runner_fields(state, results="/abs/results.tsv", mode="max", updated_at=now, abandoned_candidates=0,
                              best_candidate="baseline", best_source_sha256=sha, pending_candidate_manifest=None)

Row indices in the state (``event_index``, ``completion_index``, ``reset_row_index`` ...) are 0-based
positions in the list of ledger data rows (the header is not a row); the plateau's ``best_scored_index`` is,
as in the reference, the position of its best among the retained scored rows (baseline and keep rows with a
score), and its ``last_literature_event_index`` / ``last_batch_completion_index`` are -1 when there is none.
The decision table, the definitions of attempts, batches, plateau, family stall and crash blocker follow the
autofl spec; the sentences an agent reads live in `instructions`.

Replicate rows (reruns of the best configuration) are never attempts and never retained: they only feed the
noise estimate `noise{...}` of the current best. With `noise_sigmas` > 0 and at least `MIN_NOISE_SCORES` scores
of the best, its `margin` is the smallest gain a keep needs and the plateau's min delta.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from dataclasses import asdict, dataclass, field

from ..common.bounded import is_finite, is_integer
from . import gains, instructions
from . import vocabulary as v
from .compare import better, check_mode, improvement
from .ledger import LedgerRow

SCHEMA_VERSION = "nvflare.autofl.campaign_state.v1"
LITERATURE_ACTIONS = frozenset((v.NextAction.RUN_LITERATURE_LOOP, v.NextAction.DEVELOP_LITERATURE_BATCH))
RUNNER_ONLY_FIELDS = ("abandoned_candidates", "best_candidate", "best_source_sha256", "pending_candidate_manifest")
MIN_NOISE_SCORES = 3  # scores of the best (its own row plus replicates) before the noise margin applies
PLATEAU_CONTINUE, PLATEAU_LITERATURE = "continue", "literature"  # the plateau's `recommendation` values
NO_INDEX = -1  # the reference's "none" for the plateau's last literature event / last batch completion


@dataclass(frozen=True)
class GuardSettings:
    """Thresholds and objective of a campaign; defaults are the spec's (a cap of None means uncapped)."""

    mode: str = "max"
    max_candidates: int | None = None
    plateau_threshold: int = 8
    plateau_min_delta: float = 0.0005
    hard_crash_threshold: int = 6
    exploration_batch_size: int = 3
    family_repeat_limit: int = 6
    noise_sigmas: float = 0.0

    def __post_init__(self) -> None:
        check_mode(self.mode)
        if self.max_candidates is not None:
            _check_int("max_candidates", self.max_candidates, minimum=1)
        _check_int("plateau_threshold", self.plateau_threshold, minimum=1)
        _check_int("hard_crash_threshold", self.hard_crash_threshold, minimum=0)
        _check_int("exploration_batch_size", self.exploration_batch_size, minimum=0)
        _check_int("family_repeat_limit", self.family_repeat_limit, minimum=0)
        for name in ("plateau_min_delta", "noise_sigmas"):
            value = getattr(self, name)
            if not is_finite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    @classmethod
    def from_mapping(cls, values: dict) -> GuardSettings:
        """Build settings from a dict holding any subset of the field names; unknown keys are an error."""
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown guard setting(s): {', '.join(unknown)}")
        return cls(**values)

    def as_dict(self) -> dict:
        return asdict(self)


def compute_state(
    rows: list[LedgerRow],
    settings: GuardSettings | dict,
    *,
    stop_files_present: list[str],
    pending_manifests: int = 0,
    ready_manifests: int = 0,
    noise_facts: dict | None = None,
) -> dict:
    """The campaign state for `rows` (ledger order) under `settings`.

    `stop_files_present` lists the stop files that exist (as the caller wants them shown);
    `pending_manifests` counts prepared candidates, `ready_manifests` those ready for external execution;
    `noise_facts` what the runner knows beyond the ledger (`metric_resolution`, `resolution_source`,
    `replicates`: "seeded" | "identical" | None), echoed in `noise_context`.
    Returns every state field except the runner-only ones (`with_runner_fields` adds those).
    """
    if isinstance(settings, dict):
        settings = GuardSettings.from_mapping(settings)
    _check_int("pending_manifests", pending_manifests, minimum=0)
    _check_int("ready_manifests", ready_manifests, minimum=0)
    scan = _scan(rows, settings)
    stop_files = list(dict.fromkeys(str(path) for path in stop_files_present))
    facts = _facts(scan, settings, stop_files, pending_manifests, ready_manifests, noise_facts or {})
    decision, reason, next_action, final_allowed = _decide(facts, settings)
    state = {
        "schema_version": SCHEMA_VERSION,
        "decision": decision,
        "reason": reason,
        "next_action": next_action,
        "final_response_allowed": final_allowed,
        "required_exploration": required_exploration(next_action),
        **facts["public"],
    }
    state["agent_instruction"] = instructions.agent_instruction(state, settings, facts["family"])
    if instructions.asks_to_replicate(state):  # the instruction asks for replicates: so does next_action
        state.update(next_action=v.NextAction.REPLICATE, required_exploration=None)
    state["accounting_instruction"] = instructions.accounting_instruction(state, abandoned=None)
    pruned = instructions.pruned_note(rows)  # the latest attempt was pruned: what that means for the next one
    if pruned and not final_allowed:
        state["agent_instruction"] += f" {pruned}"
    return state


def with_runner_fields(state: dict, *, results: str, mode: str, updated_at: str, **runner_fields) -> dict:
    """Add the context fields (`results`, `mode`, `updated_at`) and, when given, the runner-only fields.

    `campaign_guard.py` passes only the context; the runner also passes all of `RUNNER_ONLY_FIELDS`
    (`abandoned_candidates`, `best_candidate`, `best_source_sha256`, `pending_candidate_manifest`), which
    also folds the abandoned count into `accounting_instruction`.
    """
    unknown = sorted(set(runner_fields) - set(RUNNER_ONLY_FIELDS))
    if unknown:
        raise ValueError(f"unknown runner field(s): {', '.join(unknown)}")
    if runner_fields and len(runner_fields) != len(RUNNER_ONLY_FIELDS):
        missing = sorted(set(RUNNER_ONLY_FIELDS) - set(runner_fields))
        raise ValueError(f"runner fields come together; missing: {', '.join(missing)}")
    merged = dict(state)
    merged.update(results=results, updated_at=updated_at, mode=check_mode(mode))
    if runner_fields:
        merged.update(runner_fields)
        merged["accounting_instruction"] = instructions.accounting_instruction(
            merged, abandoned=runner_fields["abandoned_candidates"]
        )
    return merged


def with_next_action_override(state: dict, next_action: str) -> dict:
    """Apply a runner lifecycle override (`instructions.override_instruction` names them): final answers are not
    allowed and the instruction says why."""
    sentence = instructions.override_instruction(next_action)
    return {
        **state,
        "next_action": next_action,
        "final_response_allowed": False,
        "agent_instruction": sentence,
        "required_exploration": required_exploration(next_action),
    }


def required_exploration(next_action: str) -> str | None:
    """`source_backed_exploration` exactly when the next action is a literature step, else None."""
    return "source_backed_exploration" if next_action in LITERATURE_ACTIONS else None


def differs_beyond_timestamp(previous: dict | None, current: dict) -> bool:
    """True when `current` changes anything but `updated_at` (when `status` must rewrite the state file)."""
    return not isinstance(previous, dict) or {**previous, "updated_at": None} != {**current, "updated_at": None}


# --- one pass over the ledger -----------------------------------------------------------------------


@dataclass
class _Event:
    event_id: str | None
    index: int
    completed: int = 0
    completion_index: int | None = None


@dataclass
class _Scan:
    family_window: int
    attempts: int = 0
    scored_attempt_rows: list = field(default_factory=list)  # row indices, ascending
    crash_streak: int = 0
    best: tuple | None = None  # (score, index, name) of the running best (vocabulary.RunningBest)
    previous_best: tuple | None = None  # the running best the current best replaced (None: it is the first)
    metric: str = ""  # metric_name of the first scored retained row
    retained: list = field(default_factory=list)  # (score, index, name) of every scored baseline/keep row
    replicates: dict = field(default_factory=dict)  # base_candidate -> scores of its replicate rows
    replicate_rows: int = 0  # replicate rows of the whole campaign (any base, scored or not)
    baseline_score: float | None = None
    events: list = field(default_factory=list)
    last_scored: deque = field(init=False)  # (candidate_kind, algorithm_family) of the latest scored attempts

    def __post_init__(self) -> None:
        self.last_scored = deque(maxlen=max(self.family_window, 1))


def _scan(rows: list[LedgerRow], settings: GuardSettings) -> _Scan:
    mode, batch_size = settings.mode, settings.exploration_batch_size
    scan = _Scan(family_window=settings.family_repeat_limit)
    running = v.RunningBest(mode)
    by_id: dict[str, _Event] = {}
    current: _Event | None = None
    for index, row in enumerate(rows):
        status, score = row.status, row.score
        if status == v.LITERATURE:
            current = _Event(row.literature_event_id or None, index)
            scan.events.append(current)
            if current.event_id:
                by_id[current.event_id] = current
        elif status == v.REPLICATE:
            running.offer(index, row)  # the bar later candidates must beat becomes the best's mean
            scan.replicate_rows += 1
            if score is not None:
                scan.replicates.setdefault(row.base_candidate or "", []).append(score)
            continue
        elif status in v.ATTEMPTS:
            scan.attempts += 1
            scan.crash_streak = scan.crash_streak + 1 if status == v.CRASH else 0
            if score is None:
                continue
            scan.scored_attempt_rows.append(index)
            scan.last_scored.append((row.candidate_kind or "", row.algorithm_family or ""))
            if batch_size and row.candidate_kind == v.SOURCE_EDIT:
                label = row.literature_event_id or ""
                _count_batch_member(by_id.get(label) if label else current, index, batch_size)
        if status in v.RETAINED and score is not None:
            if status == v.BASELINE and scan.baseline_score is None:
                scan.baseline_score = score
            scan.retained.append((score, index, row.name or ""))
            scan.metric = scan.metric or row.metric_name or ""
            if running.offer(index, row):
                scan.previous_best, scan.best = scan.best, scan.retained[-1]
    return scan


def _count_batch_member(event: _Event | None, index: int, batch_size: int) -> None:
    if event is None or event.completed >= batch_size:
        return
    event.completed += 1
    if event.completed == batch_size:
        event.completion_index = index


# --- derived facts and the decision table -----------------------------------------------------------


def _facts(scan: _Scan, settings: GuardSettings, stop_files: list, pending: int, ready: int, known: dict) -> dict:
    cap = settings.max_candidates
    best_score = scan.best[0] if scan.best else None
    batch = _reported_batch(scan.events, settings.exploration_batch_size)
    family = _stalled_family(scan, settings)
    noise = noise_estimate(scan.best, scan.replicates.get(scan.best[2], []) if scan.best else [], settings)
    public = {
        "candidate_cap": cap,
        "candidate_cap_source": "explicit" if cap is not None else "uncapped",
        "candidate_attempts": scan.attempts,
        # a candidate ready for external execution is as good as spent: it is (or will be) running on real sites
        "remaining_candidates": max(cap - scan.attempts - ready, 0) if cap is not None else None,
        "pending_candidates": pending + ready,
        "scored_attempts": len(scan.scored_attempt_rows),
        "best_score": best_score,
        "baseline_status": v.BaselineStatus.PENDING if scan.baseline_score is None else v.BaselineStatus.COMPLETE,
        "baseline_score": scan.baseline_score,
        "improvement": improvement(best_score, scan.baseline_score, settings.mode),
        "stop_files": stop_files,
        "plateau": _plateau(scan, settings, keep_margin(noise)),
        "exploration_batch": batch,
        "noise": noise,
        "noise_context": {
            **noise_context(
                scan.best,
                scan.previous_best,
                latest_measured(noise, scan.retained, scan.replicates, settings),
                mode=settings.mode,
                metric=scan.metric,
                known=known,
            ),
            "campaign_replicates": scan.replicate_rows,
        },
    }
    return {
        "public": public,
        "ready": ready,
        "family": family,
        "crash_blocked": 0 < settings.hard_crash_threshold <= scan.crash_streak,
        "batch_incomplete": batch is not None and batch["completion_index"] is None,
    }


def _decide(facts: dict, settings: GuardSettings) -> tuple[v.Decision, v.Reason, v.NextAction, bool]:
    go, stop, why, do = v.Decision.CONTINUE, v.Decision.STOP, v.Reason, v.NextAction
    public = facts["public"]
    pending = public["pending_candidates"] > 0
    if public["stop_files"] and pending:
        return stop, why.MANUAL_STOP_PENDING_CANDIDATE, do.ABANDON_CANDIDATE, False
    if public["stop_files"]:
        return stop, why.MANUAL_STOP_FILE, do.FINAL_REPORT, True
    if pending:
        return go, why.PENDING_CANDIDATES, do.SUBMIT_CANDIDATE if facts["ready"] else do.EDIT_CANDIDATE, False
    cap = settings.max_candidates
    if cap is not None and public["candidate_attempts"] >= cap:
        return stop, why.CANDIDATE_CAP_EXHAUSTED, do.FINAL_REPORT, True
    if facts["crash_blocked"]:
        return stop, why.HARD_REPEATED_CRASH_BLOCKER, do.FINAL_REPORT, True
    if facts["batch_incomplete"]:
        return go, why.LITERATURE_EXPLORATION_BATCH, do.DEVELOP_LITERATURE_BATCH, False
    if facts["family"]:
        return go, why.FAMILY_REPEAT_LIMIT, do.DIVERSIFY_CANDIDATES, False
    if public["plateau"]["recommendation"] == PLATEAU_LITERATURE:
        return go, why.PLATEAU_LITERATURE, do.RUN_LITERATURE_LOOP, False
    return go, why.CONTINUE, do.PROPOSE_CANDIDATE, False


def _reported_batch(events: list, batch_size: int) -> dict | None:
    """The earliest incomplete batch (the one to work on), else the latest event's batch, else None."""
    if not batch_size or not events:
        return None
    chosen = next((event for event in events if event.completion_index is None), events[-1])
    return {
        "literature_event_id": chosen.event_id,
        "event_index": chosen.index,
        "required": batch_size,
        "completed": chosen.completed,
        "completion_index": chosen.completion_index,
    }


def noise_estimate(best: tuple | None, replicate_scores: list[float], settings: GuardSettings) -> dict | None:
    """Spread of the best configuration: its own score plus its replicates' (None without a scored best).

    `stdev` is the sample standard deviation (None below two scores); `margin` = max(plateau_min_delta,
    noise_sigmas x stdev); `applied` says whether keep and plateau use it (noise_sigmas > 0 and at least
    MIN_NOISE_SCORES scores).
    """
    if best is None:
        return None
    scores = [best[0], *replicate_scores]
    count = len(scores)
    mean = math.fsum(scores) / count
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in scores) / (count - 1)) if count > 1 else None
    margin = max(settings.plateau_min_delta, settings.noise_sigmas * stdev) if stdev is not None else None
    return {
        "replicates": count - 1,
        "of": best[2],
        "mean": round(mean, 6),
        "stdev": None if stdev is None else round(stdev, 6),
        "min": min(scores),
        "max": max(scores),
        "margin": None if margin is None else round(margin, 6),
        "sigmas": settings.noise_sigmas,
        "applied": bool(settings.noise_sigmas) and count >= MIN_NOISE_SCORES,
    }


def latest_measured(best_noise: dict | None, retained: list, replicates: dict, settings: GuardSettings) -> dict | None:
    """The noise gains are judged by: the best's own when measured, else that of the latest retained row
    (`(score, index, name)`, ledger order) with scored replicates (the spread of a configuration the campaign
    kept), else `best_noise` (nothing measured)."""
    if best_noise is not None and best_noise["stdev"] is not None:
        return best_noise
    for entry in reversed(retained):
        if replicates.get(entry[2]):
            return noise_estimate(entry, replicates[entry[2]], settings)
    return best_noise


def noise_context(
    best: tuple | None, previous: tuple | None, noise: dict | None, *, mode: str, metric: str, known: dict
) -> dict:
    """Whether the current best's own gain (over the best it replaced) is real: its verdict (`gains.verdict`,
    against `noise`, the `latest_measured` one) plus the runner's facts (`known`: metric resolution and its source, how replicates vary)."""
    gain = improvement(best[0], previous[0], mode) if best and previous else None
    resolution = known.get("metric_resolution")
    reference = previous[0] if previous else None
    verdict = gains.verdict(gain, gains.band(noise), metric=metric, reference=reference, resolution=resolution)
    why = (
        gains.unverified_because(gain, metric=metric, reference=reference, resolution=resolution)
        if verdict == gains.UNVERIFIED
        else None
    )
    return {
        "metric": metric or None,
        "metric_resolution": resolution,
        "resolution_source": known.get("resolution_source"),
        "replicates": known.get("replicates"),
        "best_gain": None if gain is None else round(gain, 6),
        "best_gain_over": previous[2] if previous else None,
        "best_gain_verdict": verdict,
        "unverified_because": why,
    }


def keep_margin(noise: dict | None) -> float | None:
    """The gain a keep must exceed when the noise rule applies, else None (then any strict gain keeps)."""
    return noise["margin"] if noise and noise["applied"] else None


def _anchor(retained: list, mode: str, min_delta: float) -> int | None:
    """Position in `retained` of the row that last improved by more than `min_delta`: the plateau clock's anchor."""
    anchor = None
    for position, entry in enumerate(retained):
        if better(entry[0], retained[anchor][0] if anchor is not None else None, mode, min_delta):
            anchor = position
    return anchor


def _plateau(scan: _Scan, settings: GuardSettings, margin: float | None) -> dict:
    """The reference's plateau object: `best_scored_index` is the anchor's position among the retained scored
    rows, the literature/batch indices are ledger rows (-1 when none), `reset_row_index` is a ledger row."""
    completions = [event.completion_index for event in scan.events if event.completion_index is not None]
    last_completion = max(completions) if completions else None
    min_delta = settings.plateau_min_delta if margin is None else margin
    position = _anchor(scan.retained, settings.mode, min_delta)
    anchor = scan.retained[position] if position is not None else None
    candidates = [index for index in (anchor[1] if anchor else None, last_completion) if index is not None]
    reset = max(candidates) if candidates else None
    scored = scan.scored_attempt_rows
    since = len(scored) - bisect_right(scored, reset) if reset is not None else len(scored)
    available = anchor is not None
    literature = available and since >= settings.plateau_threshold
    return {
        "available": available,
        "recommendation": PLATEAU_LITERATURE if literature else PLATEAU_CONTINUE,
        "best_name": anchor[2] if anchor else None,
        "best_score": anchor[0] if anchor else None,
        "best_scored_index": position,
        "last_literature_event_index": scan.events[-1].index if scan.events else NO_INDEX,
        "last_batch_completion_index": NO_INDEX if last_completion is None else last_completion,
        "min_delta": min_delta,
        "reset_row_index": reset,
        "scored_since_reset": since,
        "threshold": settings.plateau_threshold,
    }


def plateau_progress(state: dict) -> dict:
    """The plateau counter an envelope shows: `scored_since_reset` of `threshold` scored candidates without a real
    gain, and `literature_due_in`, how many more such candidates until the literature loop is due (0: due now;
    None without a scored best, when the plateau clock does not run)."""
    plateau = state["plateau"]
    since, threshold = plateau["scored_since_reset"], plateau["threshold"]
    due_in = max(threshold - since, 0) if plateau["available"] else None
    return {"scored_since_reset": since, "threshold": threshold, "literature_due_in": due_in}


def _stalled_family(scan: _Scan, settings: GuardSettings) -> str | None:
    """The one algorithm family of the last `family_repeat_limit` argument-only scored attempts, if stalled."""
    limit = settings.family_repeat_limit
    if not limit or not scan.events or len(scan.last_scored) < limit:
        return None
    families = {family for kind, family in scan.last_scored if kind == v.ARGUMENT_ONLY}
    kinds_ok = all(kind == v.ARGUMENT_ONLY for kind, _family in scan.last_scored)
    if kinds_ok and len(families) == 1 and "" not in families:
        return families.pop()
    return None


def _check_int(name: str, value: object, *, minimum: int) -> None:
    if not is_integer(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
