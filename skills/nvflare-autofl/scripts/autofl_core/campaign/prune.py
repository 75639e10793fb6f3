"""The pruning rule: stop a running candidate whose per-round global metric trails the best's at the same round.

Pure. Curves map a 0-based round index to the server's aggregated metric of that round (NVFLARE's
`round_metrics.jsonl`); a non-finite value counts as trailing. At each round the candidate is compared with the
reference: the mean of the best's value and its replicates' values at that round (only those that reached it).
A round trails when the candidate is worse than the reference by more than the margin:

- noise measured (the half-width of the best's noise band, `gains.band`): `NOISE_FACTOR` x band, never below
  `MIN_RELATIVE` of the reference (identical reruns measure a band of 0, yet curves still cross);
- nothing measured: the conservative `CONSERVATIVE_RELATIVE` of the reference.

The candidate is pruned at round r (1-based) of N when rounds r-k+1..r all trail (consecutive rounds that all
have a reference), r >= ceil(min_fraction x N) and r < N (a trial at its last round is left to finish).

Usage::

    decision = decide(candidate={0: 0.3, 1: 0.35}, best={0: 0.6, 1: 0.8}, replicates=[], mode="max",
                      band=None, total_rounds=4)
    decision.prune, decision.reason   # True, "pruned at round 2 of 4: 0.35 vs best 0.8, margin 0.08"
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..common.bounded import is_finite

if TYPE_CHECKING:
    from .ledger import LedgerRow

DEFAULT_K = 2
DEFAULT_MIN_FRACTION = 0.5
NOISE_FACTOR = 3.0
MIN_RELATIVE = 0.02
CONSERVATIVE_RELATIVE = 0.10
REASON_PREFIX = "pruned at round "
NO_FINAL_MODEL = "pruned before its last round: there is no final model to evaluate"


@dataclass(frozen=True)
class Rule:
    """The rule's settings: k consecutive trailing rounds, the minimum fraction of the budget, the margin's terms."""

    k: int = DEFAULT_K
    min_fraction: float = DEFAULT_MIN_FRACTION
    noise_factor: float = NOISE_FACTOR
    min_relative: float = MIN_RELATIVE
    conservative_relative: float = CONSERVATIVE_RELATIVE

    def earliest_round(self, total_rounds: int) -> int:
        """The first 1-based round at which a prune may happen."""
        return max(1, self.k, math.ceil(self.min_fraction * total_rounds - 1e-9))

    def margin(self, reference: float, band: float | None) -> float:
        """How far behind the reference a round may be before it counts as trailing."""
        if band is None:
            return self.conservative_relative * abs(reference)
        return max(self.noise_factor * band, self.min_relative * abs(reference))


@dataclass(frozen=True)
class Decision:
    """keep running (`prune` False, empty reason) or a prune with its reason."""

    prune: bool
    reason: str = ""
    round: int | None = None  # 1-based round of the prune


KEEP_RUNNING = Decision(False)


def decide(
    candidate: Mapping[int, float],
    best: Mapping[int, float],
    replicates: Sequence[Mapping[int, float]],
    *,
    mode: str,
    band: float | None,
    total_rounds: int | None,
    rule: Rule = Rule(),
) -> Decision:
    """Whether to prune a candidate whose rounds so far are `candidate` (see the module docstring)."""
    if not candidate or not total_rounds or total_rounds < 2:
        return KEEP_RUNNING
    latest = max(candidate)
    current = latest + 1
    if current >= total_rounds or current < rule.earliest_round(total_rounds):
        return KEEP_RUNNING
    shown = None
    for index in range(latest, latest - rule.k, -1):
        if index not in candidate:
            return KEEP_RUNNING
        reference = reference_at(index, best, replicates)
        if reference is None:
            return KEEP_RUNNING
        margin = rule.margin(reference, band)
        if not trails(candidate[index], reference, margin, mode):
            return KEEP_RUNNING
        if shown is None:
            shown = (candidate[index], reference, margin)
    value, reference, margin = shown
    return Decision(True, reason_text(current, total_rounds, value, reference, margin), current)


def reference_at(index: int, best: Mapping[int, float], replicates: Sequence[Mapping[int, float]]) -> float | None:
    """The mean of the best's and its replicates' finite values at round `index` (None when the best has none)."""
    if index not in best or not is_finite(best[index]):
        return None
    values = [best[index]] + [curve[index] for curve in replicates if index in curve and is_finite(curve[index])]
    return math.fsum(values) / len(values)


def trails(value: float, reference: float, margin: float, mode: str) -> bool:
    """True when `value` is worse than `reference` by more than `margin` (a non-finite value always trails)."""
    if not is_finite(value):
        return True
    gap = reference - value if mode == "max" else value - reference
    return gap > margin


def reason_text(current: int, total: int, value: float, reference: float, margin: float) -> str:
    """`pruned at round r of N: <value> vs best <value>, margin m` (the ledger's failure_reason)."""
    return f"{REASON_PREFIX}{current} of {total}: {value:.6g} vs best {reference:.6g}, margin {margin:.4g}"


def is_pruned(row: LedgerRow) -> bool:
    """True for the ledger row of a pruned candidate."""
    return str(row.failure_reason or "").startswith(REASON_PREFIX)
