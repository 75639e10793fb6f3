"""Decide the runtime mode of the diagnosis: simulation, production (POC included) or ambiguous.

Usage: `decide_mode(requested, structural_hints, text_hints, job_id_given)` -> (mode, reason). Pure.
"""

from __future__ import annotations

from collections.abc import Callable

MODE_ALIASES = {"poc": "production"}
AMBIGUOUS = "ambiguous"


def _sides(hints: list[tuple[str, str]]) -> dict[str, list[str]]:
    sides: dict[str, list[str]] = {}
    for mode, reason in hints:
        mode = MODE_ALIASES.get(mode, mode)
        if mode in ("simulation", "production") and reason not in sides.setdefault(mode, []):
            sides[mode].append(reason)
    return sides


def decide_mode(
    requested: str,
    structural_hints: list[tuple[str, str]],
    text_hints: dict[str, list[str]] | Callable[[], dict[str, list[str]]],
    job_id_given: bool = False,
) -> tuple[str, str]:
    """--mode wins; then one-sided structural evidence; then one-sided text hints; otherwise ambiguous.

    `text_hints` may be a function: it is then called only when the text hints are needed.
    """
    requested = MODE_ALIASES.get(requested, requested)
    if requested in ("simulation", "production"):
        return requested, f"--mode {requested} was given"
    structural = list(structural_hints)
    if job_id_given:
        structural.append(("production", "a job id was given"))
    for hints, kind in ((lambda: _sides(structural), "evidence layout"), (lambda: _text_sides(text_hints), "log text")):
        hints = hints()
        if len(hints) == 1:
            mode, reasons = next(iter(hints.items()))
            return mode, f"inferred from {kind}: " + "; ".join(sorted(reasons)[:3])
        if len(hints) == 2:
            detail = "; ".join(f"{m}: {', '.join(sorted(r)[:2])}" for m, r in sorted(hints.items()))
            return AMBIGUOUS, f"conflicting {kind} hints ({detail})"
    return AMBIGUOUS, "no evidence of simulation or production/POC mode"


def _text_sides(text_hints) -> dict[str, list[str]]:
    text_hints = text_hints() if callable(text_hints) else text_hints
    return _sides([(m, r) for m, rs in text_hints.items() for r in rs])
