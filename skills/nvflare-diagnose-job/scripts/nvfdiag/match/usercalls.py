"""NVFLARE's internal names -> the job.py call the user wrote: the catalog's `user_calls` table. Pure.

Usage: `calls = parse_user_calls(document, error)` while the catalog loads; `call = find(calls, message, frames)`
for a traceback NVFLARE raised from job.py. A row applies when NVFLARE's exception message holds its `message` and
the stack passes through its `via` frame (`<module inside nvflare>:<function>`); the first such row wins, so a row
for a deeper entry point (SimEnv.deploy) comes before the row for the call it makes (FedJob.simulator_run).
Example: `You already specified clients using `to()`. Don't use `n_clients` in simulator_run.` raised through
SimEnv.deploy means the user's `SimEnv(num_clients=...)` after `recipe.set_per_site_config(...)` (what `to()`
stands for here); the row's `change` says what to write instead. The table is data: a new translation is a new
row in shared/catalog/failure_patterns.yaml, not code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(r"^[A-Za-z_][\w.]{0,60}\((?:[\w.=, ]|\.\.\.){0,60}\)$")  # `SimEnv(num_clients=...)`
_VIA = re.compile(r"^([\w/]{1,120}\.py):([A-Za-z_]\w{0,80})$")
MAX_TEXT = 400


@dataclass(frozen=True)
class UserCall:
    message: str  # literal text of NVFLARE's exception message
    module: str  # nvflare/<module> the stack passes through, e.g. recipe/sim_env.py
    function: str  # ... in this function
    call: str  # the user's call, e.g. SimEnv(num_clients=...)
    meaning: str  # NVFLARE's words in the user's (likely_cause)
    change: str  # what to write instead (next_action's {change})

    def fits(self, message: str, frames: list[tuple[str, int, str]]) -> bool:
        if self.message not in message:
            return False
        suffix = "/nvflare/" + self.module
        return any(func == self.function and path.replace("\\", "/").endswith(suffix) for path, _, func in frames)


def _text(entry: dict, key: str, where: str, error: type[Exception]) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT or "{" in value or "}" in value:
        raise error(f"catalog: {where} needs `{key}`: a non-empty string without braces, at most {MAX_TEXT} characters")
    return " ".join(value.split())


def parse_user_calls(document: dict, error: type[Exception]) -> tuple[UserCall, ...]:
    """The validated `user_calls` rows of the catalog document (none when the section is absent)."""
    raw = document.get("user_calls", [])
    if not isinstance(raw, list):
        raise error("catalog: user_calls must be a list; fix shared/catalog/failure_patterns.yaml")
    calls = []
    for number, entry in enumerate(raw):
        where = f"user_calls[{number}]"
        if not isinstance(entry, dict):
            raise error(f"catalog: {where} must be a mapping")
        via = _VIA.match(str(entry.get("via", "")))
        call = _text(entry, "call", where, error)
        if via is None or not _CALL.match(call):
            raise error(
                f"catalog: {where} needs `via` as <module>.py:<function> and `call` like SimEnv(num_clients=...)"
            )
        texts = {key: _text(entry, key, where, error) for key in ("message", "meaning", "change")}
        calls.append(UserCall(texts["message"], via.group(1), via.group(2), call, texts["meaning"], texts["change"]))
    return tuple(calls)


def find(calls: tuple[UserCall, ...], message: str, frames: list[tuple[str, int, str]]) -> UserCall | None:
    """The first row that fits NVFLARE's message and the traceback's frames, or None."""
    return next((call for call in calls if call.fits(message, frames)), None)
