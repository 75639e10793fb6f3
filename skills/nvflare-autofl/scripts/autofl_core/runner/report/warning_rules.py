"""Warnings of the campaign report: what should make a reviewer doubt the selected result (pure).

Each warning is `{"code", "message"}`. Codes: `compute_changed`, `population_changed`, `metric_source_changed`,
`state_disagrees`, `test_like_metric`, `missing_provenance`, `better_discard`, `within_noise`. Usage::

    warnings = collect(Evidence(rows=..., best=..., baseline=..., ...))
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ...campaign import vocabulary as v
from ...campaign.compare import format_score
from ...campaign.ledger import LedgerRow

COMPUTE_RE = re.compile(r"(step|epoch|iter|batch|local|round|train_size|max_samples|num_samples)", re.IGNORECASE)
POPULATION_RE = re.compile(
    r"(client|site|sample_rate|fraction|participa|worker|val_|eval_|split|subset)", re.IGNORECASE
)
TEST_LIKE_RE = re.compile(r"(^|[^a-z])(test|holdout|held_out)([^a-z]|$)", re.IGNORECASE)
RUNTIME_RATIO = 1.5  # a best that runs this much longer than the baseline spent more compute
STATE_FIELDS = (
    "candidate_attempts",
    "scored_attempts",
    "best_score",
    "baseline_score",
    "best_candidate",
)  # from the ledger


@dataclass
class Evidence:
    rows: list
    best: LedgerRow | None  # the best ledger row
    baseline: LedgerRow | None  # the first scored baseline row
    best_run_args: list  # the best's effective run args
    missing_columns: tuple  # ledger columns an older ledger did not have
    metric: str
    fresh_state: dict  # the state computed now from the ledger
    stored_state: dict | None  # campaign_state.json as found (None when missing or unreadable)
    meta: dict  # campaign.json
    manifest_status: dict  # candidate id -> manifest status
    best_observed: dict | None
    gain_verdict: str | None  # noise verdict of the best's gain over the baseline
    band: float | None


def collect(ev: Evidence) -> list[dict]:
    checks = (_compute, _population, _metric_source, _state, _test_like, _provenance, _better_discard, _noise)
    return [{"code": code, "message": message} for check in checks for code, message in check(ev)]


def _set_options(ev: Evidence, pattern: re.Pattern) -> list[str]:
    options, index, args = [], 0, ev.best_run_args
    while index < len(args):
        token = args[index]
        if token.startswith("--"):
            flag, _, inline = token.partition("=")
            value = inline or (
                args[index + 1] if index + 1 < len(args) and not args[index + 1].startswith("--") else ""
            )
            if pattern.search(flag[2:]):
                options.append(f"{flag} {value}".strip())
        index += 1
    return options


# Each check yields (code, message) for every warning it finds.


def _compute(ev: Evidence) -> Iterator[tuple[str, str]]:
    options = _set_options(ev, COMPUTE_RE)
    if options:
        yield (
            "compute_changed",
            f"the best configuration sets {', '.join(options)}: it may spend more "
            "(or less) training compute per round than the baseline",
        )
    if ev.best and ev.baseline and ev.best is not ev.baseline:
        best_time, base_time = ev.best.runtime_seconds, ev.baseline.runtime_seconds
        if best_time and base_time and best_time > RUNTIME_RATIO * base_time:
            yield (
                "compute_changed",
                f"the best run took {best_time / base_time:.1f}x the baseline's "
                f"runtime ({best_time:.1f} s vs {base_time:.1f} s)",
            )


def _population(ev: Evidence) -> Iterator[tuple[str, str]]:
    options = _set_options(ev, POPULATION_RE)
    if options:
        yield (
            "population_changed",
            f"the best configuration sets {', '.join(options)}: check that every run "
            "was compared on the same clients and evaluation data",
        )


def _metric_source(ev: Evidence) -> Iterator[tuple[str, str]]:
    if not (ev.best and ev.baseline) or ev.best is ev.baseline:
        return
    a, b = ev.baseline.metric_source, ev.best.metric_source
    kind = lambda source: source.split(":", 2)[:2] if source.startswith("structured:") else source.split(":", 1)[:1]  # noqa: E731
    if a and b and kind(a) != kind(b):
        yield (
            "metric_source_changed",
            f"the baseline's score came from {a} but the best's from {b}; check they measure the same thing",
        )


def _state(ev: Evidence) -> Iterator[tuple[str, str]]:
    stored = ev.stored_state
    if stored is None:
        yield (
            "state_disagrees",
            "campaign_state.json is missing or unreadable; the report uses the state computed from the ledger",
        )
    else:
        differing = [
            f"{key} {stored.get(key)!r} (ledger: {ev.fresh_state.get(key)!r})"
            for key in STATE_FIELDS
            if key in stored and stored.get(key) != ev.fresh_state.get(key)
        ]
        if differing:
            yield "state_disagrees", "campaign_state.json disagrees with the ledger: " + "; ".join(differing)
    meta_best = ev.meta.get("best_candidate")
    if ev.best and meta_best not in (None, ev.best.name):
        yield "state_disagrees", f"campaign.json names {meta_best} as the best, the ledger {ev.best.name}"
    mismatched = [
        f"{row.name} ({row.status} in the ledger, {ev.manifest_status[row.name]} in its manifest)"
        for row in ev.rows
        if row.status in v.ATTEMPTS and row.name in ev.manifest_status and ev.manifest_status[row.name] != row.status
    ]
    if mismatched:
        yield (
            "state_disagrees",
            "ledger rows and manifests disagree: "
            + "; ".join(mismatched[:5])
            + (f" (and {len(mismatched) - 5} more)" if len(mismatched) > 5 else ""),
        )


def _test_like(ev: Evidence) -> Iterator[tuple[str, str]]:
    scored = sum(1 for row in ev.rows if row.status in v.SCORED_ATTEMPTS and row.score is not None)
    sources = {ev.metric} | {row.metric_name for row in ev.rows if row.metric_name}
    if scored >= 2 and any(TEST_LIKE_RE.search(name) for name in sources):
        yield (
            "test_like_metric",
            f"the selection metric {ev.metric!r} looks like a test-set metric and chose "
            f"among {scored} scored candidates: the best's score is optimistic; confirm it "
            "on data no candidate was selected on",
        )


def _provenance(ev: Evidence) -> Iterator[tuple[str, str]]:
    if ev.missing_columns:
        yield (
            "missing_provenance",
            f"the ledger predates the columns {', '.join(ev.missing_columns)}; rows lack that provenance",
        )
    attempts = [row for row in ev.rows if row.status in v.ATTEMPTS]
    scored = [row for row in ev.rows if row.score is not None and row.status != v.LITERATURE]
    for column, what, rows in (
        ("candidate_manifest", "no candidate manifest", attempts),
        ("candidate_kind", "no candidate_kind", attempts),
        ("metric_source", "no metric source", scored),
    ):
        lacking = [row for row in rows if not getattr(row, column)]
        if lacking and column not in ev.missing_columns:
            names = ", ".join(row.name for row in lacking[:5]) + (" ..." if len(lacking) > 5 else "")
            yield "missing_provenance", f"{len(lacking)} row(s) have {what}: {names}"


def _better_discard(ev: Evidence) -> Iterator[tuple[str, str]]:
    seen = ev.best_observed
    if seen:
        why = f" ({seen['reason']})" if seen["reason"] else ""
        yield (
            "better_discard",
            f"discard {seen['name']} scored {format_score(seen['score'])}, better than the "
            f"best, but was not kept{why}; it is reported as best_observed only",
        )


def _noise(ev: Evidence) -> Iterator[tuple[str, str]]:
    if ev.gain_verdict == "within noise":
        yield (
            "within_noise",
            f"the best's gain over the baseline is inside the measured noise band "
            f"(+-{format_score(ev.band)}): treat it as unproven",
        )
