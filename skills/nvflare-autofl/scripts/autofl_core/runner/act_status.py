"""status: rescan ledger, manifests and stop files; the shell rewrites the state file only on a real change."""

from __future__ import annotations

from .outcome import ActionResult


def run(campaign, options, now: str) -> ActionResult:
    return ActionResult()
