"""The one exception type raised for rejected trial requests (bad argv, bad passthrough names).

Usage: `raise TrialError("AUTOFL_BUDGET_ARGUMENT_CONFLICT", "why, and how to fix it")`;
callers print `str(error)` as the one-line reason and exit 2.
"""

from __future__ import annotations


class TrialError(ValueError):
    """A trial request that must be rejected before anything runs; `code` is a stable identifier."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
