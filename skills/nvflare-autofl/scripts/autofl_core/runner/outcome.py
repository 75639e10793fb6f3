"""What an action returns to the lifecycle shell: envelope extras, exit code, whether the ledger changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import EXIT_OK


@dataclass
class ActionResult:
    extras: dict = field(default_factory=dict)
    exit_code: int = EXIT_OK
    ledger_changed: bool = False
