"""Which job options (and environment variables) move the budget or the objective, found by running: perturb them
and watch the record. One run perturbs every candidate option at once; a field that takes one option's value
depends on it; anything else is settled by one run per option (at most MAX_SINGLE_RUNS; an option past them is kept
fixed). Option classification by dry run lives here and only here.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from . import recorded, run_reasons
from .argparse_flow import Flag
from .budget import FIELDS
from .recorded import DryRunRecord

INT_PROBES = (7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83)
MAX_SINGLE_RUNS = 32  # past it (when the all-perturbed run did not settle), an option is kept fixed
MAX_ENV_RUNS = 5  # runs with the environment changed (each sets what the one before newly read or compared)
Runner = Callable[[list[list[str]]], list[DryRunRecord | None]]
EnvRunner = Callable[[dict[str, str]], DryRunRecord | None]
RUN_KEYS = ("entry", "class", "metric", "mode", "workspace", "runs")  # what runs besides the budget: pinned when moved
AGAIN_VAR = "AUTOFL_DRY_RUN_AGAIN"  # set for the run made again with the baseline's arguments (a key of its own)


@dataclass(frozen=True)
class Moved:
    """What the runs showed: the options that move each budget field or the objective (`by`: field or "objective"
    -> options; the objective's pin every field), and the budget fields two runs with the same arguments asked for
    differently (`drawn`: at random, moved by no option)."""

    by: dict[str, list[str]] = field(default_factory=dict)
    drawn: tuple[str, ...] = ()

    def movers(self, name: str) -> list[str]:
        """The options that move the budget field `name` or the objective, each once."""
        return list(dict.fromkeys([*self.by.get(name, []), *self.by.get("objective", [])]))


def signature(record: DryRunRecord) -> dict:
    """What a candidate may not change: the budget values (`FIELDS`), then what runs (`RUN_KEYS`): the entry point,
    the class that runs, the key metric and its mode, a FedJob's simulator folder, and how many times job.py runs
    (`run_reasons.runs`)."""
    ran = recorded.ran(record)
    runs = (record.entry, record.recipe[0] if record.recipe else None, ran.metric, ran.mode, _under_root(record))
    return {
        **{field: ran.values[field] for field in FIELDS},
        **dict(zip(RUN_KEYS, (*runs, run_reasons.runs(record)), strict=True)),
    }


def differs(before: dict, now: dict) -> list[str]:
    """The budget fields whose value differs between two signatures, and "objective" when what runs does."""
    return [f for f in FIELDS if now[f] != before[f]] + ["objective"] * any(now[k] != before[k] for k in RUN_KEYS)


def _under_root(record: DryRunRecord) -> str | None:
    """A FedJob's simulator folder, with the sandbox's root folder written as the variable that names it."""
    workspace, root = recorded.fedjob_workspace(record), record.root_variable
    if workspace is not None and root and (workspace == root or workspace.startswith(root + "/")):
        return "$NVFLARE_SIMULATOR_WORKSPACE_ROOT" + workspace[len(root) :]
    return workspace


def _perturbation(action: Flag, taken: set) -> list[str]:
    """The tokens that set one option of the main parser to another value (an int or float to one not in `taken`, a
    switch flipped, a choice changed, a string replaced), or none when a perturbation cannot change it (a
    positional, a list, a custom type, a switch the base arguments already set)."""
    name, kind, value = action.name, action.action, action.value
    if not action.option_strings or action.nargs not in (None, "?", 0):  # 0: a flag; lists are left out
        return []
    if kind in ("store_true", "store_false", "boolean_optional") and not isinstance(value, bool):
        return []
    if kind == "boolean_optional":
        return [name if not value else "--no-" + name[2:]]
    if kind in ("store_true", "store_false"):
        return [name] if value == action.default.value else []
    if kind != "store":
        return []
    if action.choices:
        other = [c for c in action.choices if c != value]
        return [name, str(other[0])] if other else []
    if action.type in ("str", None):
        return [name, "autofl-probe"] if isinstance(value, str) or value is None else []
    if action.type == "int":
        probe = next(p for p in INT_PROBES if p not in taken and p != value)
        taken.add(probe)
        return [name, str(probe)]
    if action.type != "float":
        return []
    probe = round(0.0137 + 0.001 * len(taken), 6)
    taken.add(probe)
    return [name, repr(probe)]


def _perturbations(record: DryRunRecord, taken: set) -> dict[str, list[str]]:
    """{option name: its perturbation} for every option of the main parser a perturbation can change."""
    found = {action.name: _perturbation(action, taken) for action in recorded.options(record)}
    return {name: tokens for name, tokens in found.items() if tokens}


def _built(record: DryRunRecord) -> str:
    """What NVFLARE was asked to build, as text: the recipe's attributes and the exported configs."""
    return json.dumps([record.recipe_attrs, record.configs], sort_keys=True, default=str)


def reaching(baseline: DryRunRecord, after: DryRunRecord | None, extra: dict[str, list[str]]) -> list[str]:
    """Options whose perturbed value shows up in what the perturbed run built and not in the baseline's."""
    if not _recorded(after):
        return []
    before, now = _built(baseline), _built(after)
    found = []
    for name, tokens in extra.items():
        if len(tokens) != 2:
            continue
        pattern = re.compile(r"(?<![\w.-])" + re.escape(tokens[1]) + r"(?![\w.])")
        if pattern.search(now) and not pattern.search(before):
            found.append(name)
    return found


def moving_options(
    baseline: DryRunRecord,
    base_args: list[str],
    run_many: Runner,
    reached: list[str] | None = None,
    again: Callable[[], DryRunRecord | None] | None = None,
) -> Moved:
    """The options that move each field or the objective (`Moved`); `run_many` runs a batch of argument lists. `reached`, when
    given, gets the options the all-perturbed run shows reaching what NVFLARE builds (`reaching`). `again` runs the
    baseline's arguments once more: a budget field that run moves is drawn at random (`Moved.drawn`) and
    attributed to no option (a perturbed run takes other paths: it cannot show a draw the baseline's make)."""
    before = signature(baseline)
    drawn = _drawn(before, again)
    moved: dict[str, list[str]] = {}
    extra = _perturbations(baseline, {before[field] for field in FIELDS if before[field] is not None})
    if not extra:
        return Moved({}, drawn)
    after_record = run_many([base_args + [t for tokens in extra.values() for t in tokens]])[0]
    if reached is not None:
        reached.extend(reaching(baseline, after_record, extra))
    unknown: set[str] = set()
    if not _recorded(after_record):
        unknown = {"*"}
    else:
        after = signature(after_record)
        for field in [f for f in differs(before, after) if f not in drawn]:
            value = after.get(field)
            given = [name for name, tokens in extra.items() if len(tokens) == 2 and tokens[1] == str(value)]
            if given and field != "objective":
                moved[field] = given
            else:
                unknown.add(field)
    if unknown:
        singles = list(extra.items())[:MAX_SINGLE_RUNS]
        for name in list(extra)[MAX_SINGLE_RUNS:]:  # never run alone: not shown harmless, so kept fixed
            moved.setdefault("objective", []).append(name)
        for (name, _tokens), single in zip(singles, run_many([base_args + t for _, t in singles]), strict=True):
            if not _recorded(single):
                moved.setdefault("objective", []).append(name)  # it stops the job: keep it fixed
                continue
            for field in differs(before, signature(single)):
                if name not in moved.get(field, []) and field not in drawn:
                    moved.setdefault(field, []).append(name)
    return Moved(moved, drawn)


def _drawn(before: dict, again: Callable[[], DryRunRecord | None] | None) -> tuple[str, ...]:
    """The budget fields the run `again` makes with the baseline's arguments asks for differently from the
    baseline's signature `before` (none when no such run is made)."""
    rerun = again() if again is not None else None
    return tuple(f for f in differs(before, signature(rerun)) if f in FIELDS) if _recorded(rerun) else ()


def moving_env(baseline: DryRunRecord, run_env: EnvRunner, fixed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """`{field or "objective": [environment variables that move it]}`: every variable job.py read (but `fixed`) set
    to a distinct number, then, while a run reads new variables or compares one with a string not yet tried, one
    more run with those set too (at most MAX_ENV_RUNS); a run that no longer records, or a last one still finding
    more, or one that looked a value up by hash where it showed no string (`_unseen`), moves everything."""
    names = [name for name in baseline.env_read if _settable(name, fixed)]
    if not names:
        return {}
    before = signature(baseline)
    taken = {before[field] for field in FIELDS if before[field] is not None}
    probes = (p for p in itertools.chain(INT_PROBES, itertools.count(INT_PROBES[-1] + 1)) if p not in taken)
    env: dict[str, str] = {}
    tried: set[tuple[str, str]] = set()
    strings = _compared(baseline, fixed, tried)
    for _ in range(MAX_ENV_RUNS):
        env.update({name: str(next(probes)) for name in names if name not in env})
        env.update(strings)
        tried.update(strings.items())
        after = run_env(dict(env))
        if after is None:
            return {}
        if after.status != "recorded":
            break
        moved = {field: list(env) for field in differs(before, signature(after))}
        names = [name for name in after.env_read if _settable(name, fixed) and name not in env]
        strings = _compared(after, fixed, tried)
        if moved:
            return moved
        if _unseen(after, fixed):  # a lookup by hash whose strings the run could not see: no run can try them
            break
        if not (names or strings):
            return {}
    return {field: list(env) for field in (*FIELDS, "objective")}  # no longer records, or still finding more


def _recorded(record: DryRunRecord | None) -> bool:
    """True for a run that reached NVFLARE's entry point."""
    return record is not None and record.status == "recorded"


def _compared(record: DryRunRecord, fixed: tuple[str, ...], tried: set[tuple[str, str]]) -> dict[str, str]:
    """For each variable whose value the run compared with strings no run set it to, the first such string."""
    out: dict[str, str] = {}
    for item in record.env_compared:
        name, _, text = item.partition("=")
        if _settable(name, fixed) and name not in out and (name, text) not in tried and "\0" not in text:
            out[name] = text
    return out


def _unseen(record: DryRunRecord, fixed: tuple[str, ...]) -> bool:
    """True when the run looked a variable's value up by hash where it could see no string to try (`"NAME=\\0"`)."""
    return any(
        _settable(name, fixed) and text == "\0" for name, _, text in (i.partition("=") for i in record.env_compared)
    )


def _settable(name: str, fixed: tuple[str, ...]) -> bool:
    """A variable a trial's environment could hold (not one it sets itself; no `=` or NUL in its name)."""
    return bool(name) and name not in fixed and "=" not in name and "\0" not in name


def tried_options(record: DryRunRecord) -> list[str]:
    """Every option string of the options the perturbed runs tried (`_perturbations`), sorted."""
    tried = _perturbations(record, set())
    return sorted({s for action in recorded.options(record) if action.name in tried for s in action.option_strings})


def covered_by(tried: list[str], run_args: list[str]) -> bool:
    """True when every option `run_args` sets is one the perturbed runs tried (`tried_options`): no further run is
    needed."""
    options = {token.split("=", 1)[0] for token in run_args if token.startswith("-") and len(token) > 1}
    return options <= set(tried) and (not run_args or run_args[0].startswith("-"))
