"""Build the argv of one trial: `[python, job.py, *budget, *base, (--name ...), *run_args]`.

Pure. The fixed budget options appear exactly once; `base_args` may repeat a budget option
only with the identical value (the duplicate is dropped); any other mention of a budget
option in `base_args`, and any mention at all in `run_args` (long flag, short alias,
`--flag=value`, `-rVALUE`, or an unambiguous argparse prefix abbreviation) is rejected with
AUTOFL_BUDGET_ARGUMENT_CONFLICT. The injected `--name` is runner-owned: args that set it are
rejected with AUTOFL_RESERVED_ARGUMENT. `TrialError` is the one exception of a rejected trial request (bad argv
here, bad passthrough names in `childenv`): callers print `str(error)` as the one-line reason and exit 2.

Usage:
    build_trial_argv(python, job, budget_args=["--num_rounds", "3"], base_args=[],
                     flag_groups=[["--num_rounds", "-r"], ["--lr"]], name_flag="--name",
                     trial_name="baseline", workspace=ws, run_args=["--lr", "0.1"],
                     switch_flags=["--use_gpu"])   # options that take no value (store_true, ...)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

CONFLICT = "AUTOFL_BUDGET_ARGUMENT_CONFLICT"
RESERVED = "AUTOFL_RESERVED_ARGUMENT"
INVALID = "AUTOFL_INVALID_TRIAL_REQUEST"
TRIAL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NEGATIVE_NUMBER_RE = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class TrialError(ValueError):
    """A trial request that must be rejected before anything runs; `code` is a stable identifier.

    Usage: `raise TrialError("AUTOFL_BUDGET_ARGUMENT_CONFLICT", "why, and how to fix it")`.
    """

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class OptionRef:
    """One option mention in an argv list: flag group, resolved option string, value, token span, and the groups of
    one-letter switches combined before it in its token (`-vx5`: `-v`'s)."""

    group: int
    flag: str
    value: str | None
    start: int
    stop: int
    switches: tuple[int, ...] = ()

    def setting(self) -> tuple[bool, str | None]:
        """What the mention sets: (negated `--no-x` form?, value); equal settings are duplicates."""
        return self.flag.startswith("--no-"), self.value


class OptionTable:
    """The job's options as argparse sees them: groups of aliases, valueless switches, abbreviations."""

    def __init__(self, groups: list[list[str]], switch_flags: Collection[str] = ()):
        self.groups = groups
        self.switch_groups = {i for i, group in enumerate(groups) if any(flag in switch_flags for flag in group)}
        self._longs = [(flag, i) for i, group in enumerate(groups) for flag in group if flag.startswith("--")]
        shorts = [(flag, i) for i, group in enumerate(groups) for flag in group if not flag.startswith("--")]
        self._shorts = sorted(shorts, key=lambda item: -len(item[0]))

    def group_of(self, flag: str) -> int:
        for index, group in enumerate(self.groups):
            if flag in group:
                return index
        raise TrialError(INVALID, f"flag {flag!r} is not declared by the job")

    def name(self, group: int) -> str:
        return self.groups[group][0]

    def find(self, args: list[str], index: int) -> OptionRef | None:
        """Resolve args[index] to a declared option the way argparse would, or None if it is not one."""
        token = args[index]
        if not token.startswith("-") or token == "-" or NEGATIVE_NUMBER_RE.fullmatch(token):
            return None
        if token.startswith("--"):
            flag, eq, attached = token.partition("=")
            match = self._match_long(flag)
            if match is None:
                return None
            resolved, group = match
            if eq:
                return OptionRef(group, resolved, attached, index, index + 1)
            return self._with_next_value(args, index, group, resolved)
        return self._match_short(args, index)

    def _match_long(self, flag: str) -> tuple[str, int] | None:
        """Exact long flag, else a unique prefix (argparse allow_abbrev); an ambiguous prefix is rejected."""
        for candidate, group in self._longs:
            if candidate == flag:
                return candidate, group
        matches = sorted({(c, g) for c, g in self._longs if c.startswith(flag)})
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = ", ".join(c for c, _ in matches)
            raise TrialError(INVALID, f"option {flag!r} is an ambiguous abbreviation of {names}; spell it out")
        return None

    def _match_short(self, args: list[str], index: int) -> OptionRef | None:
        """`-r 3`, `-r3`, `-r=3` or `-lr=3` for a declared single-dash option (longest declared match wins), else a
        unique prefix of a single-dash long option (`-num 3` for `-num_rounds`). A one-letter switch with more letters
        is read as argparse reads it (`_combined`)."""
        token = args[index]
        for flag, group in self._shorts:
            if token == flag:
                return self._with_next_value(args, index, group, flag)
            if token.startswith(flag) and group in self.switch_groups and len(flag) == 2 and token[2] != "=":
                return self._combined(args, index)
            attached = token[len(flag) :] if token.startswith(flag) and group not in self.switch_groups else ""
            if attached and (len(flag) == 2 or attached.startswith("=")):
                value = attached[1:] if attached.startswith("=") else attached
                return OptionRef(group, flag, value, index, index + 1)
        prefix, eq, value = token.partition("=")
        matches = sorted({(flag, group) for flag, group in self._shorts if len(flag) > 2 and flag.startswith(prefix)})
        if len(matches) > 1:
            names = ", ".join(flag for flag, _ in matches)
            raise TrialError(INVALID, f"option {prefix!r} is an ambiguous abbreviation of {names}; spell it out")
        if not matches:
            return None
        flag, group = matches[0]
        return (
            OptionRef(group, flag, value, index, index + 1) if eq else self._with_next_value(args, index, group, flag)
        )

    def _combined(self, args: list[str], index: int) -> OptionRef:
        """`-vx5` as argparse reads it: one-letter switches (`-v`), then the last switch or an option taking the rest
        of the token (else the next one) as its value (`-x 5`). A letter no declared one-letter option has is
        rejected: the token may hide any option."""
        token, switches = args[index], []
        singles = {flag: group for flag, group in self._shorts if len(flag) == 2}
        for at in range(1, len(token)):
            group = singles.get("-" + token[at])
            if group is None:
                raise TrialError(INVALID, f"option {token!r} combines single-letter options; write them apart")
            if group not in self.switch_groups and at + 1 < len(token):
                return OptionRef(group, "-" + token[at], token[at + 1 :], index, index + 1, tuple(switches))
            if group not in self.switch_groups:
                return replace(self._with_next_value(args, index, group, "-" + token[at]), switches=tuple(switches))
            switches.append(group)
        return OptionRef(switches[-1], "-" + token[-1], None, index, index + 1, tuple(switches[:-1]))

    def _with_next_value(self, args: list[str], index: int, group: int, flag: str) -> OptionRef:
        nxt = index + 1
        takes_value = group not in self.switch_groups
        if (
            takes_value
            and nxt < len(args)
            and (not args[nxt].startswith("-") or NEGATIVE_NUMBER_RE.fullmatch(args[nxt]))
        ):
            return OptionRef(group, flag, args[nxt], index, nxt + 1)
        return OptionRef(group, flag, None, index, index + 1)


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
    switch_flags: Collection[str] = (),
) -> list[str]:
    """Return the trial argv (never a shell string); raise TrialError on a conflict or bad request."""
    table = OptionTable(_groups_with(flag_groups, budget_args, name_flag), switch_flags)
    budget = _budget_settings(budget_args, table)
    reserved = {table.group_of(name_flag)} if name_flag else set()
    kept_base = _filter_base_args(base_args, table, budget, reserved)
    _reject_budget_mentions(run_args, table, budget, reserved)
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


def _budget_settings(budget_args: list[str], table: OptionTable) -> dict[int, OptionRef]:
    """Map flag group -> its mention in the fixed budget; each budget option may be given only once."""
    settings: dict[int, OptionRef] = {}
    index = 0
    while index < len(budget_args):
        ref = table.find(budget_args, index)
        if ref is None:
            raise TrialError(INVALID, f"budget argument {budget_args[index]!r} is not an option of the job")
        if ref.group in settings:
            raise TrialError(CONFLICT, f"budget option {table.name(ref.group)} is given twice in the fixed budget")
        settings[ref.group] = ref
        index = ref.stop
    return settings


def _filter_base_args(
    base_args: list[str], table: OptionTable, budget: dict[int, OptionRef], reserved: set[int]
) -> list[str]:
    """Drop identical budget duplicates from base args; reject conflicting ones."""
    kept: list[str] = []
    index = 0
    while index < len(base_args):
        if base_args[index] == "--":
            return kept + base_args[index:]
        ref = table.find(base_args, index)
        if ref is None:
            kept.append(base_args[index])
            index += 1
            continue
        _check_switches(ref, table, budget, reserved)
        _check_reserved(ref, table, reserved, where="base args")
        fixed = budget.get(ref.group)
        if fixed is not None and fixed.setting() != ref.setting():
            budget_text = " ".join(x for x in (fixed.flag, fixed.value) if x is not None)
            raise TrialError(
                CONFLICT,
                f"base args set {' '.join(base_args[ref.start : ref.stop])!r} but the fixed budget sets "
                f"{budget_text!r}; remove it from --base-args",
            )
        if fixed is None:
            kept.extend(base_args[ref.start : ref.stop])
        index = ref.stop
    return kept


def _reject_budget_mentions(
    args: list[str], table: OptionTable, budget: dict[int, OptionRef], reserved: set[int]
) -> None:
    """Candidate run args may never mention a fixed-budget option, even with the same value."""
    index = 0
    while index < len(args):
        if args[index] == "--":
            return
        ref = table.find(args, index)
        if ref is None:
            index += 1
            continue
        _check_switches(ref, table, budget, reserved)
        _check_reserved(ref, table, reserved, where="run args")
        if ref.group in budget:
            raise TrialError(
                CONFLICT,
                f"run args set the fixed-budget option {table.name(ref.group)} "
                f"({' '.join(args[ref.start : ref.stop])!r}); the comparison budget cannot change within a campaign",
            )
        index = ref.stop


def _check_switches(ref: OptionRef, table: OptionTable, budget: dict[int, OptionRef], reserved: set[int]) -> None:
    """A budget or runner-owned switch combined with other letters in one token (`-gv`) is rejected."""
    for group in set(ref.switches) & (set(budget) | reserved):
        raise TrialError(CONFLICT, f"args combine the fixed option {table.name(group)} with others; remove it")


def _check_reserved(ref: OptionRef, table: OptionTable, reserved: set[int], *, where: str) -> None:
    if ref.group in reserved:
        raise TrialError(
            RESERVED, f"{where} set {table.name(ref.group)}, which the runner injects per trial; remove it"
        )
