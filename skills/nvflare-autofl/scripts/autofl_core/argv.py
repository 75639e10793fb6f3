"""Build the argv of one trial: `[python, job.py, *budget, *base, (--name ...), *run_args]`.

Pure. The fixed budget options appear exactly once; `base_args` may repeat a budget option
only with the identical value (the duplicate is dropped); any other mention of a budget
option in `base_args` or `run_args` (long flag, short alias, `--flag=value`, `-rVALUE`, or an
unambiguous argparse prefix abbreviation) is rejected with AUTOFL_BUDGET_ARGUMENT_CONFLICT.

Usage:
    build_trial_argv(python, job, budget_args=["--num_rounds", "3"], base_args=[],
                     flag_groups=[["--num_rounds", "-r"], ["--lr"]], name_flag="--name",
                     trial_name="baseline", workspace=ws, run_args=["--lr", "0.1"])
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .trial_errors import TrialError

CONFLICT = "AUTOFL_BUDGET_ARGUMENT_CONFLICT"
RESERVED = "AUTOFL_RESERVED_ARGUMENT"
INVALID = "AUTOFL_INVALID_TRIAL_REQUEST"
TRIAL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class OptionRef:
    """One option mention found in an argv list: which flag group, its value, and the tokens it spans."""

    group: int
    value: str | None
    start: int
    stop: int


def injected_job_name(workspace: Path | str, trial_name: str) -> str:
    """The `--name` value injected for a trial: autofl_<sha256(workspace)[:12]>_<trial_name>."""
    digest = hashlib.sha256(str(workspace).encode("utf-8")).hexdigest()[:12]
    return f"autofl_{digest}_{trial_name}"


def build_trial_argv(
    python: str,
    job_path: Path | str,
    *,
    budget_args: list[str],
    base_args: list[str],
    flag_groups: list[list[str]],
    name_flag: str | None,
    trial_name: str | None,
    workspace: Path | str,
    run_args: list[str],
) -> list[str]:
    """Return the trial argv (never a shell string); raise TrialError on a conflict or bad request."""
    groups = _groups_with(flag_groups, budget_args, name_flag)
    budget = _budget_values(budget_args, groups)
    reserved = {_group_of(name_flag, groups)} if name_flag else set()
    kept_base = _filter_base_args(base_args, groups, budget, reserved)
    _reject_budget_mentions(run_args, groups, budget, reserved, where="run args")
    name_part: list[str] = []
    if name_flag:
        if not trial_name or not TRIAL_NAME_RE.fullmatch(trial_name):
            raise TrialError(INVALID, f"trial name {trial_name!r} must match {TRIAL_NAME_RE.pattern}")
        name_part = [name_flag, injected_job_name(workspace, trial_name)]
    return [str(python), str(job_path), *budget_args, *kept_base, *name_part, *run_args]


def _groups_with(flag_groups: list[list[str]], budget_args: list[str], name_flag: str | None) -> list[list[str]]:
    """The job's flag groups, plus singleton groups for budget/name flags the job did not declare."""
    groups = [list(group) for group in flag_groups]
    known = {flag for group in groups for flag in group}
    extra = [tok.split("=", 1)[0] for tok in budget_args if tok.startswith("--")]
    for flag in [*extra, *([name_flag] if name_flag else [])]:
        if flag not in known:
            groups.append([flag])
            known.add(flag)
    return groups


def _group_of(flag: str, groups: list[list[str]]) -> int:
    for index, group in enumerate(groups):
        if flag in group:
            return index
    raise TrialError(INVALID, f"flag {flag!r} is not declared by the job")


def _budget_values(budget_args: list[str], groups: list[list[str]]) -> dict[int, str | None]:
    """Map flag group -> value for the fixed budget; each budget option may be given only once."""
    values: dict[int, str | None] = {}
    index = 0
    while index < len(budget_args):
        ref = find_option(budget_args, index, groups)
        if ref is None:
            raise TrialError(INVALID, f"budget argument {budget_args[index]!r} is not an option of the job")
        if ref.group in values:
            raise TrialError(CONFLICT, f"budget option {groups[ref.group][0]} is given twice in the fixed budget")
        values[ref.group] = ref.value
        index = ref.stop
    return values


def _filter_base_args(
    base_args: list[str], groups: list[list[str]], budget: dict[int, str | None], reserved: set[int]
) -> list[str]:
    """Drop identical budget duplicates from base args; reject conflicting ones."""
    kept: list[str] = []
    index = 0
    while index < len(base_args):
        if base_args[index] == "--":
            return kept + base_args[index:]
        ref = find_option(base_args, index, groups)
        if ref is None:
            kept.append(base_args[index])
            index += 1
            continue
        _check_reserved(ref, groups, reserved, where="base args")
        if ref.group in budget and budget[ref.group] != ref.value:
            raise TrialError(
                CONFLICT,
                f"base args set {' '.join(base_args[ref.start:ref.stop])!r} but the fixed budget sets "
                f"{groups[ref.group][0]} {budget[ref.group]}; remove it from --base-args",
            )
        if ref.group not in budget:
            kept.extend(base_args[ref.start : ref.stop])
        index = ref.stop
    return kept


def _reject_budget_mentions(
    args: list[str], groups: list[list[str]], budget: dict[int, str | None], reserved: set[int], *, where: str
) -> None:
    """Candidate run args may never mention a fixed-budget option, even with the same value."""
    index = 0
    while index < len(args):
        if args[index] == "--":
            return
        ref = find_option(args, index, groups)
        if ref is None:
            index += 1
            continue
        _check_reserved(ref, groups, reserved, where=where)
        if ref.group in budget:
            raise TrialError(
                CONFLICT,
                f"{where} set the fixed-budget option {groups[ref.group][0]} "
                f"({' '.join(args[ref.start:ref.stop])!r}); the comparison budget cannot change within a campaign",
            )
        index = ref.stop


def _check_reserved(ref: OptionRef, groups: list[list[str]], reserved: set[int], *, where: str) -> None:
    if ref.group in reserved:
        raise TrialError(
            RESERVED, f"{where} set {groups[ref.group][0]}, which the runner injects per trial; remove it"
        )


def find_option(args: list[str], index: int, groups: list[list[str]]) -> OptionRef | None:
    """Resolve args[index] to a declared option the way argparse would, or None if it is not one."""
    token = args[index]
    if not token.startswith("-") or token == "-" or _looks_negative_number(token):
        return None
    if token.startswith("--"):
        flag, eq, attached = token.partition("=")
        group = _match_long(flag, groups)
        if group is None:
            return None
        if eq:
            return OptionRef(group, attached, index, index + 1)
        return _with_next_value(args, index, group)
    return _match_short(args, index, groups)


def _match_long(flag: str, groups: list[list[str]]) -> int | None:
    """Exact long flag, else an argparse-style unique prefix; an ambiguous prefix is rejected."""
    longs = [(flag_, index) for index, group in enumerate(groups) for flag_ in group if flag_.startswith("--")]
    for candidate, index in longs:
        if candidate == flag:
            return index
    matches = sorted({index for candidate, index in longs if candidate.startswith(flag)})
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(groups[i][0] for i in matches)
        raise TrialError(INVALID, f"option {flag!r} is an ambiguous abbreviation of {names}; spell it out")
    return None


def _match_short(args: list[str], index: int, groups: list[list[str]]) -> OptionRef | None:
    """`-r 3`, `-r3` or `-r=3` for a declared single-dash option (longest declared match wins)."""
    token = args[index]
    shorts = sorted(
        ((flag, i) for i, group in enumerate(groups) for flag in group if not flag.startswith("--")),
        key=lambda item: -len(item[0]),
    )
    for flag, group in shorts:
        if token == flag:
            return _with_next_value(args, index, group)
        if token.startswith(flag) and len(flag) == 2:
            attached = token[2:]
            return OptionRef(group, attached[1:] if attached.startswith("=") else attached, index, index + 1)
        if token.startswith(flag + "="):
            return OptionRef(group, token[len(flag) + 1 :], index, index + 1)
    return None


def _with_next_value(args: list[str], index: int, group: int) -> OptionRef:
    nxt = index + 1
    if nxt < len(args) and (not args[nxt].startswith("-") or _looks_negative_number(args[nxt])):
        return OptionRef(group, args[nxt], index, nxt + 1)
    return OptionRef(group, None, index, index + 1)


def _looks_negative_number(token: str) -> bool:
    return re.fullmatch(r"-\d+(\.\d*)?([eE][-+]?\d+)?|-\.\d+([eE][-+]?\d+)?", token) is not None
