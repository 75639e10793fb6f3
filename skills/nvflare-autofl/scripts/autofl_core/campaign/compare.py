"""Score comparison at ledger precision: the one place that decides "better".

The ledger stores scores as ``%.6f``; every comparison rounds both sides the same way, so a score that
prints identically to the stored best (``0.9060000000000001`` vs ``0.906``) is a tie, and a tie is never
better. Usage::

    from autofl_core.campaign.compare import better, ledger_round
    better(0.91, 0.906, "max")            # True
    better(0.9060000000000001, 0.906, "max")  # False (tie at 6 decimals)
    better(0.5, None, "min")              # True  (anything beats no score)
"""

from __future__ import annotations

import math

from ..common.bounded import is_finite

LEDGER_DECIMALS = 6
MODES = ("max", "min")
_UNITS = 10**LEDGER_DECIMALS


def format_score(value: float) -> str:
    """Render a finite score exactly as the ledger stores it (``%.6f``)."""
    _require_finite(value)
    return f"{value:.{LEDGER_DECIMALS}f}"


def ledger_round(value: float) -> float:
    """Round `value` to ledger precision, identically to what ``%.6f`` writes."""
    return float(format_score(value))


def better(new: float | None, old: float | None, mode: str, min_delta: float = 0.0) -> bool:
    """True when `new` beats `old` by more than `min_delta` in direction `mode`, both at ledger precision.

    ``None`` means "no score": it never wins, and any score beats it.
    """
    check_mode(mode)
    if new is None:
        return False
    if old is None:
        _require_finite(new)
        return True
    gain_units = _units(new) - _units(old) if mode == "max" else _units(old) - _units(new)
    return gain_units > _delta_units(min_delta)


def improvement(best: float | None, baseline: float | None, mode: str) -> float | None:
    """Direction-adjusted gain of `best` over `baseline` (positive = better), or None when either is missing."""
    check_mode(mode)
    if best is None or baseline is None:
        return None
    gain_units = _units(best) - _units(baseline) if mode == "max" else _units(baseline) - _units(best)
    return gain_units / _UNITS


def check_mode(mode: str) -> str:
    """Return `mode` when it is ``max`` or ``min``; raise ValueError naming the fix otherwise."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    return mode


def _units(value: float) -> int:
    """Integer count of 1e-6 steps, so differences carry no binary rounding noise."""
    return round(ledger_round(value) * _UNITS)


def _delta_units(min_delta: float) -> float:
    if not isinstance(min_delta, (int, float)) or not math.isfinite(min_delta) or min_delta < 0:
        raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}")
    # Round away float noise such as 0.0005 * 1e6 == 500.00000000000006.
    return round(min_delta * _UNITS, 6)


def _require_finite(value: float) -> None:
    if not is_finite(value):
        raise ValueError(f"score must be a finite number, got {value!r}")
