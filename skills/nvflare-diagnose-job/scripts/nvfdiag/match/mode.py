"""Decide the runtime mode of the diagnosis: simulation, production (POC included) or ambiguous.

Usage: `decide_mode(requested, structural_hints, text_hints, job_id_given, weak=...)` -> (mode, reason). Pure.
Weak hints say little on their own (a traceback frame in or a command line running a file named job.py: job.py
also submits to POC and production; an exported job folder: it is what gets submitted; Docker commands and Docker,
Kubernetes or journal line prefixes: a simulation can run in a container too): when the two sides conflict and only
one of them has hints that are not weak, that side wins. Ambiguous only when the evidence holds nothing either way, or strong
hints of both modes.
"""

from __future__ import annotations

from collections.abc import Callable

MODE_ALIASES = {"poc": "production"}
AMBIGUOUS = "ambiguous"
# Reason prefixes of layout hints that are weak: an exported job folder is what gets submitted anywhere, and Docker,
# Kubernetes or the journal also run simulations. They are weighed with the text hints, not before them.
WEAK_STRUCTURAL = ("exported job folder layout", "deployment line prefixes")


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
    weak: frozenset[str] | set[str] = frozenset(),
) -> tuple[str, str]:
    """--mode wins; then one-sided structural evidence; then one-sided text hints (with the weak structural ones,
    see WEAK_STRUCTURAL); otherwise ambiguous. `weak`: the text-hint reasons that are weak (the catalog's
    `weak: true` mode hints).

    `text_hints` may be a function: it is then called only when the text hints are needed.
    """
    requested = MODE_ALIASES.get(requested, requested)
    if requested in ("simulation", "production"):
        return requested, f"--mode {requested} was given"
    structural = [(m, r) for m, r in structural_hints if not r.startswith(WEAK_STRUCTURAL)]
    weak_structural = [(m, r) for m, r in structural_hints if r.startswith(WEAK_STRUCTURAL)]
    if job_id_given:
        structural.append(("production", "a job id was given"))
    tiers = (
        (lambda: _sides(structural), "evidence layout"),
        (lambda: _sides(weak_structural + _text_pairs(text_hints)), "log text"),
    )
    for hints, kind in tiers:
        hints = _outweighed(hints(), weak)
        if len(hints) == 1:
            mode, reasons = next(iter(hints.items()))
            if any(r.startswith(WEAK_STRUCTURAL) for r in reasons):
                kind = "evidence layout and log text"
            return mode, f"inferred from {kind}: " + "; ".join(sorted(reasons)[:3])
        if len(hints) == 2:
            detail = "; ".join(f"{m}: {', '.join(sorted(r)[:2])}" for m, r in sorted(hints.items()))
            return AMBIGUOUS, f"conflicting {kind} hints ({detail})"
    return AMBIGUOUS, "no evidence of simulation or production/POC mode"


def _text_pairs(text_hints) -> list[tuple[str, str]]:
    text_hints = text_hints() if callable(text_hints) else text_hints
    return [(m, r) for m, rs in text_hints.items() for r in rs]


def _outweighed(hints: dict[str, list[str]], weak) -> dict[str, list[str]]:
    """Both modes hinted but only one by hints that are not weak: that one (its weak reasons dropped too)."""
    if len(hints) != 2:
        return hints
    strong = {
        mode: [r for r in reasons if r not in weak and not r.startswith(WEAK_STRUCTURAL)]
        for mode, reasons in hints.items()
    }
    strong = {mode: reasons for mode, reasons in strong.items() if reasons}
    return strong if len(strong) == 1 else hints
