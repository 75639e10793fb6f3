"""How a lifecycle action ends: the exit codes, what it returns (`ActionResult`), what it raises.

Usage: `return ActionResult(extras={...}, exit_code=EXIT_UNSCORED, ledger_changed=True)` to the shell, or
`raise CampaignError("no pending candidate; run prepare first")` -> the CLI prints
`Auto-FL <action> failed: <message>` on stderr and exits `exit_code` (2 unless told otherwise).
A rejected request must leave nothing changed on disk: raise before writing, or roll back first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.cli import EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGQUIT, EXIT_SIGTERM, Interrupted  # noqa: F401  (shared)

EXIT_OK = 0
EXIT_UNSCORED = 1
EXIT_INVALID = 2
EXIT_SANDBOX = 75


class CampaignError(Exception):
    """A rejected request (exit 2 by default); the message is one line naming the problem and the fix."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID):
        super().__init__(" ".join(str(message).split()))
        self.exit_code = exit_code


@dataclass
class ActionResult:
    """What an action returns to the lifecycle shell: envelope extras, exit code, whether the ledger changed."""

    extras: dict = field(default_factory=dict)
    exit_code: int = EXIT_OK
    ledger_changed: bool = False
