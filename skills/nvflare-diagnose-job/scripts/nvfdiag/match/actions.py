"""Next-action texts: a catalog row's `next_action`, its `next_action_cases`, and the placeholders they hold. Pure.

Usage: `cases = parse_cases(item, where, error)` while the catalog loads; `text = choose(row.next_action,
row.next_action_cases, mode, facts)` picks the text for the runtime mode and the facts the matcher established
(the first case whose mode and fact both hold, else the default); `fill(text, values)` puts in the placeholder
values (validated by their producers) and drops the placeholders that have none. A case only changes the words for
the person at hand (no operator and nothing resubmitted in a simulation) or for a fact that moves the fix
(earlier rounds completed, other sites resolved the same root, the job.py call NVFLARE rejected is known): the
matched row and its recovery_category stay the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MODES = ("simulation", "production")
# Facts the matcher establishes (matcher.Analysis.facts), each named by a row's cases.
FACTS = (
    "rounds_completed",  # match/rounds.py: earlier rounds completed before the failure
    "same_root",  # match/datapaths.py: other sites opened paths under the root the failing path uses
    "user_call",  # match/usercalls.py: NVFLARE's words translate to the job.py call the user wrote
    "nothing_missing",  # the fallback's only: the evidence was read whole and the report finds no gap in it
)
# What a next_action may hold, and what fills it (nothing else ever enters a next_action):
#   {where}   ` (argument `x`, at job.py:27 in main())` or ` (call `SimEnv(num_clients=...)`, used at job.py:24 in
#             main())` (match/raiser.where_clause)
#   {at}      ` (at client.py:14 in train())`: the place only, for an exception user code raised (raiser.at_clause)
#   {rounds}  ` (round 0 completed; the failure came in round 1)` (match/rounds.describe)
#   {sites}   ` (site-3)`: the validated sites whose evidence shows the failure
#   {change}  ` ` + the `change` text of the matched user_calls row of this catalog
#   {missing} the dotted name under `nvflare.` the evidence says is missing (match/releases.py; release_mismatch)
PLACEHOLDERS = ("{where}", "{at}", "{rounds}", "{sites}", "{change}", "{missing}")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class ActionCase:
    """One alternative wording of a row's next_action, for a runtime mode and/or a fact."""

    text: str
    mode: str | None = None
    fact: str | None = None

    def applies(self, mode: str, facts: frozenset[str] | set[str]) -> bool:
        return (self.mode is None or self.mode == mode) and (self.fact is None or self.fact in facts)


def check_placeholders(text: str, where: str, error: type[Exception]) -> str:
    """`text` when every `{...}` in it is one of PLACEHOLDERS; else `error` naming the row."""
    unknown = sorted(set(_PLACEHOLDER.findall(text)) - set(PLACEHOLDERS))
    if unknown or text.count("{") != text.count("}"):
        raise error(f"catalog: {where} next action holds unknown placeholders {unknown}; use only {list(PLACEHOLDERS)}")
    return text


def parse_cases(item: dict, where: str, error: type[Exception]) -> tuple[ActionCase, ...]:
    """The row's `next_action_cases`: [{text, mode?, fact?}, ...], each with a mode or a fact (or both)."""
    raw = item.get("next_action_cases", [])
    if not isinstance(raw, list):
        raise error(f"catalog: {where} next_action_cases must be a list")
    cases = []
    for number, case in enumerate(raw):
        here = f"{where} next_action_cases[{number}]"
        if not isinstance(case, dict) or not isinstance(case.get("text"), str) or not case["text"].strip():
            raise error(f"catalog: {here} needs a non-empty `text`")
        mode, fact = case.get("mode"), case.get("fact")
        if mode is None and fact is None:
            raise error(f"catalog: {here} needs a `mode` or a `fact`")
        if mode is not None and mode not in MODES:
            raise error(f"catalog: {here} mode {mode!r} is not one of {list(MODES)}")
        if fact is not None and fact not in FACTS:
            raise error(f"catalog: {here} fact {fact!r} is not one of {list(FACTS)}")
        cases.append(ActionCase(check_placeholders(case["text"].strip(), here, error), mode, fact))
    return tuple(cases)


def choose(default: str, cases: tuple[ActionCase, ...], mode: str, facts: frozenset[str] | set[str]) -> str:
    """The first case that applies to `mode` and `facts`, else `default` (ambiguous mode: mode cases never apply)."""
    return next((case.text for case in cases if case.applies(mode, facts)), default)


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with each placeholder replaced by its value in `values` ('' when it has none)."""
    for placeholder in PLACEHOLDERS:
        text = text.replace(placeholder, values.get(placeholder, ""))
    return text
