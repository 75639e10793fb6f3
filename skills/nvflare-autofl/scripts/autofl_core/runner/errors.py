"""The one exception a lifecycle action raises to reject a request or report an outcome.

Usage: `raise CampaignError("no pending candidate; run prepare first")` -> the CLI prints
`Auto-FL <action> failed: <message>` on stderr and exits `exit_code` (2 unless told otherwise).
A rejected request must leave nothing changed on disk: raise before writing, or roll back first.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNSCORED = 1
EXIT_INVALID = 2
EXIT_SANDBOX = 75
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class CampaignError(Exception):
    """A rejected request (exit 2 by default); the message is one line naming the problem and the fix."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID):
        super().__init__(" ".join(str(message).split()))
        self.exit_code = exit_code


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived: unwind (ending the trial tree, restoring the workspace) and exit."""

    def __init__(self, signal_name: str, exit_code: int):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_code = exit_code
