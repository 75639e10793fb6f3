"""What the boot's modules share while job.py runs: the run's state (`STATE`) and how a run is stopped (`Stop`)."""

from __future__ import annotations

STATE: dict = {"recipe": None, "recipe_call": None, "parsers": [], "stubbed": set(), "absent": set(), "built": []}
STATE.update(stood_in_at={}, env_read=set(), env_compared={}, unreadable=[])  # stood_in_at: (file, line) -> site
AFTER_RUN_SECONDS = 10  # job.py's code after its run ends within this, else `after` is "unfinished"


class Stop(BaseException):
    """Raised at a second run, or when the time after the run is out (`STATE["after"]` says which): nothing after it
    runs (a BaseException passes `except Exception`)."""
