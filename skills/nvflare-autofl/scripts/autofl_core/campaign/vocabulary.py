"""The campaign's one vocabulary: every closed value set as an enum (ledger and manifest statuses, candidate kinds,
trial outcomes, budget checks, the state's decision, reason and next_action), the sets derived from them, the
running best, and the builders of every kind of ledger row.

Every reader and writer of results.tsv, candidate manifests and the campaign state spells these words through this
module (`tests/test_autofl_structure.py` fails on a raw status or state word anywhere else). A member is a `str`
that prints, formats and serializes as its value (`Word`). Usage::

    from ..campaign import vocabulary as v
    row.status in v.ATTEMPTS                           # keep / discard / crash: what counts toward the cap
    v.LedgerStatus("keep") is v.KEEP                   # ValueError for a word outside the set
    best = v.best_row(rows, "max")                   # the best scored baseline/keep row (first of ties)
    ledger.append_row(path, v.literature_row(name="lit-0001", diff_summary=h, literature_event_id="lit-0001"))
"""

from __future__ import annotations

from enum import Enum

from .compare import better


class Word(str, Enum):
    """A member of a closed set of words: it compares, hashes, prints and is written as its value.

    `str()`, `format()` (so f-strings) and `%s` give the value on every supported Python: a plain `(str, Enum)`
    member formats as `Class.NAME` from Python 3.11 on, and as its value on 3.10. `json.dumps` writes a str
    subclass as its text; PyYAML's safe dumper gets the representer registered below.
    """

    def __str__(self) -> str:
        return self._value_

    def __format__(self, spec: str) -> str:
        return format(self._value_, spec)


try:  # PyYAML's safe dumper refuses str subclasses: it writes a word as its value
    from yaml.representer import SafeRepresenter
except ImportError:  # the runner needs PyYAML; the guard and plot CLIs do not
    pass
else:
    SafeRepresenter.add_multi_representer(Word, lambda dumper, word: dumper.represent_str(word._value_))


# --- ledger row statuses (results.tsv `status`) ------------------------------------------------------------
class LedgerStatus(Word):
    BASELINE = "baseline"
    KEEP = "keep"
    DISCARD = "discard"
    CRASH = "crash"
    LITERATURE = "literature"
    INFRASTRUCTURE_RETRY = "infrastructure_retry"
    REPLICATE = "replicate"


LEDGER_STATUSES = tuple(LedgerStatus)
BASELINE, KEEP, DISCARD, CRASH, LITERATURE, INFRASTRUCTURE_RETRY, REPLICATE = LEDGER_STATUSES

ATTEMPTS = frozenset((KEEP, DISCARD, CRASH))  # candidate attempts: what counts toward the cap
SCORED_ATTEMPTS = frozenset((KEEP, DISCARD))  # attempts whose row carries the score
RETAINED = frozenset((BASELINE, KEEP))  # rows whose configuration became (or could become) the best
EXPERIMENTS = frozenset((BASELINE, KEEP, DISCARD, CRASH, REPLICATE))  # rows of a run: the plot's x axis
FAILURES = frozenset((CRASH, INFRASTRUCTURE_RETRY))  # rows the report lists under failures


# --- candidate kinds (results.tsv `candidate_kind`, "" on rows of no candidate) -------------------------------
class CandidateKind(Word):
    SOURCE_EDIT = "source_edit"
    ARGUMENT_ONLY = "argument_only"


CANDIDATE_KINDS = tuple(CandidateKind)
SOURCE_EDIT, ARGUMENT_ONLY = CANDIDATE_KINDS


# --- candidate manifest statuses (candidate_manifest.json `status`) ----------------------------------------
class ManifestStatus(Word):
    PREPARED = "prepared"
    RUNNING = "running"
    READY = "ready_for_external_execution"
    KEEP = LedgerStatus.KEEP.value
    DISCARD = LedgerStatus.DISCARD.value
    CRASH = LedgerStatus.CRASH.value
    ABANDONED = "abandoned"


MANIFEST_STATUSES = tuple(ManifestStatus)
MANIFEST_PENDING = MANIFEST_STATUSES[:3]  # not finished: blocks prepare, the final report
PREPARED, RUNNING, READY = MANIFEST_PENDING
ABANDONED = ManifestStatus.ABANDONED
MANIFEST_IN_WORK = (PREPARED, RUNNING)  # pending in the runner (the state's pending_manifests)
MANIFEST_TERMINAL = MANIFEST_STATUSES[3:]  # keep, discard, crash, abandoned


# --- how a trial ended (`TrialResult.outcome`) -------------------------------------------------------------
class TrialOutcome(Word):
    """The trial package spells these itself (it imports nothing of the campaign); a test checks both agree."""

    SUCCESS = "success"
    CRASH = LedgerStatus.CRASH.value
    INFRASTRUCTURE_RETRY = LedgerStatus.INFRASTRUCTURE_RETRY.value
    PRUNED = "pruned"  # stopped by the pruning rule (campaign/prune): finalized as a discard without a score


OUTCOME_SUCCESS, OUTCOME_CRASH, OUTCOME_INFRASTRUCTURE_RETRY, OUTCOME_PRUNED = TrialOutcome


# The fixed budget as verified from what a trial ran (trial/what_ran.py spells the same words).
class BudgetCheck(Word):
    VERIFIED = "verified"
    VIOLATED = "violated"
    UNVERIFIED = "unverified"


BUDGET_VERIFIED, BUDGET_VIOLATED, BUDGET_UNVERIFIED = BudgetCheck


# --- the campaign state (state.json `decision`, `baseline_status`, `reason`, `next_action`) ----------------------
class Decision(Word):
    CONTINUE = "continue"
    STOP = "stop"


class BaselineStatus(Word):
    PENDING = "pending"
    COMPLETE = "complete"


class Reason(Word):
    """Why the guard decided as it did (the first rule of its decision table that holds)."""

    MANUAL_STOP_PENDING_CANDIDATE = "manual_stop_pending_candidate"
    MANUAL_STOP_FILE = "manual_stop_file"
    PENDING_CANDIDATES = "pending_candidates"
    CANDIDATE_CAP_EXHAUSTED = "candidate_cap_exhausted"
    HARD_REPEATED_CRASH_BLOCKER = "hard_repeated_crash_blocker"
    LITERATURE_EXPLORATION_BATCH = "literature_exploration_batch"
    FAMILY_REPEAT_LIMIT = "family_repeat_limit"
    PLATEAU_LITERATURE = "plateau_literature"
    CONTINUE = "continue"


class NextAction(Word):
    """What the agent does next: the guard's actions, then the runner's lifecycle overrides (from REPAIR_BASELINE)."""

    PROPOSE_CANDIDATE = "propose_candidate"
    EDIT_CANDIDATE = "edit_candidate"
    SUBMIT_CANDIDATE = "submit_candidate"
    ABANDON_CANDIDATE = "abandon_candidate"
    FINAL_REPORT = "final_report"
    DEVELOP_LITERATURE_BATCH = "develop_literature_batch"
    DIVERSIFY_CANDIDATES = "diversify_candidates"
    RUN_LITERATURE_LOOP = "run_literature_loop"
    REPLICATE = LedgerStatus.REPLICATE.value  # rerun the best (its rows have this status)
    REPAIR_BASELINE = "repair_baseline"
    SUBMIT_BASELINE = "submit_baseline"
    AWAIT_SIMULATION_RUNNER_APPROVAL = "await_simulation_runner_approval"
    EVALUATE_CANDIDATE = "evaluate_candidate"
    SUBMIT_EVALUATION = "submit_evaluation"


BASELINE_NAME = BASELINE  # the first baseline row, and the candidate of the first best snapshot
BASELINE_SUMMARY = "baseline: job.py as imported"


# --- the running best ---------------------------------------------------------------------------------------
class RunningBest:
    """The best scored retained (baseline/keep) row seen so far; a tie never replaces the earlier row.

    Feed rows (`ledger.LedgerRow`; this module sits below the ledger, so it names no type) in ledger order with
    `offer(index, row)`: True when that row became the best. `index` is the
    current best's row and `score` the value later rows must beat (None before any): its own score, or once
    replicates of it exist, the mean of its run and theirs (at ledger precision), so a lucky draw does not set the
    bar. The one rule every reader follows: campaign, guard, plot, report, keep or discard.
    """

    def __init__(self, mode: str):
        self.mode = mode
        self.index: int | None = None
        self.score: float | None = None
        self.name: str | None = None
        self.samples: list[float] = []

    def offer(self, index: int, row) -> bool:
        score = row.score
        if row.status == REPLICATE and score is not None and self.name and row.base_candidate == self.name:
            self.samples.append(score)
            self.score = round(sum(self.samples) / len(self.samples), 6)
            return False
        if row.status not in RETAINED or score is None or not better(score, self.score, self.mode):
            return False
        self.index, self.score, self.name, self.samples = index, score, row.name, [score]
        return True


def running_best(rows: list, mode: str) -> list[int]:
    """Indices of the rows that became the best, in ledger order (the last one is the best; [] when none)."""
    tracker = RunningBest(mode)
    return [index for index, row in enumerate(rows) if tracker.offer(index, row)]


def bar_to_beat(rows: list, mode: str) -> float | None:
    """The score a new candidate must beat: the best's own, or its mean with its replicates (`RunningBest.score`)."""
    tracker = RunningBest(mode)
    for index, row in enumerate(rows):
        tracker.offer(index, row)
    return tracker.score


def best_row(rows: list, mode: str):
    """The best scored baseline/keep row (the earlier of two tied rows), or None."""
    steps = running_best(rows, mode)
    return rows[steps[-1]] if steps else None


# --- ledger row builders: the dict a writer appends (`ledger.append_row`; a column it leaves out is empty) -----
def baseline_row(**columns) -> dict:
    """A baseline run (the runner's simulation, or an external one recorded with `record --baseline`); `columns`:
    its name, score, runtime, run command, artifacts, failure reason and metric evidence."""
    return {"status": BASELINE, "diff_summary": BASELINE_SUMMARY, **columns}


def candidate_row(status: str, **columns) -> dict:
    """A finalized candidate: a keep / discard / crash attempt, or an infrastructure retry of it (`columns`: every
    other ledger column). Only keep and discard rows carry the score and its metric evidence.
    """
    if status not in ATTEMPTS and status != INFRASTRUCTURE_RETRY:
        raise ValueError(f"a candidate row is keep, discard, crash or infrastructure_retry, not {status!r}")
    row = {"status": status, **columns}
    if status not in SCORED_ATTEMPTS:
        row.update(score=None, metric_name="", metric_source="", metric_artifact="")
    return row


def literature_row(**columns) -> dict:
    """A literature event (`record --literature`): its sources and decision in diff_summary."""
    return {"status": LITERATURE, **columns}


def replicate_row(**columns) -> dict:
    """A rerun of the best configuration (`base_candidate`; never an attempt, never the best; feeds the noise
    estimate)."""
    return {"status": REPLICATE, **columns}


def infrastructure_retry_row(row) -> dict:
    """The row of a trial the host sandbox denied (exit 75): the baseline or replicate row it would have been,
    with the status that never counts and no score."""
    return dict(row, status=INFRASTRUCTURE_RETRY, score=None)
