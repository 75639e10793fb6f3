"""Candidate run arguments: validation against job.py's options and the schema, and merging with the best's.

A candidate's run args are canonical long options of job.py (`--lr 0.1`, `--lr=0.1`, `--use_amp`), never an
alias, an abbreviation, a positional, a fixed-budget option or the runner-owned `--name`; values must parse
with the job's own option types and choices, and stay inside `mutable_args` bounds of mutation_schema.yaml
(when the schema declares `mutable_args`, only those options may change; a switch is held to them by the value
job.py's parser writes for it); a token the job's parser would read as a file of more arguments
(`fromfile_prefix_chars`, e.g. `@extra.py`) is refused first. Passed on as separate
tokens (`--opt -r5`), the pairs must make job.py's parser set exactly the options they name (a value it reads as
an option is refused), and a value for a custom-action option is refused when the budget depends on a positional.
Pure. Usage::

    own = parse_run_args(config, ["--lr=0.1"], reserved={"--name"}, budget={"--num_rounds", ...})
    own = candidate_args(config, "--lr 0.1")                # the same, reserved/budget options from the contract
    own = settle(config, recorded=manifest.run_args, given="--lr 0.1")   # prepare's and evaluate's, reconciled
    effective = merge(best=[("--lr", "0.05"), ("--local_steps", "10")], own=own)   # own wins per flag
    flatten(effective)   # ["--lr", "0.1", "--local_steps", "10"]
"""

from __future__ import annotations

import math
import shlex

from ..importer import runner_view as importer
from . import data_fixed
from .outcome import CampaignError
from .settings import split_args
from .store import contract

Arg = tuple[str, "str | None"]  # (canonical flag, value or None for a switch)


def parse_run_args(config: dict, tokens: list[str], *, reserved: set[str], budget: set[str]) -> list[Arg]:
    """Validate candidate run args; returns them as (flag, value) pairs in order (a repeated flag: last wins)."""
    refuse_fromfile(config, tokens, "run arg")
    flags = importer.cli_flags(config)
    takes_value = flags["takes_value"]
    bounds = _bounds(config)
    unseen = _arity_unseen(config, budget)
    parsed: dict[str, str | None] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        canonical, inline = _canonical(config, token)
        if canonical in budget or canonical in reserved:
            what = "the fixed-budget option" if canonical in budget else "the runner-owned option"
            raise CampaignError(f"run args set {what} {canonical} ({token!r}); it cannot change within a campaign")
        data_fixed.refuse_in_run_args(config, canonical, token)
        if token.split("=", 1)[0] != canonical:
            raise CampaignError(f"run arg {token!r} is not a canonical option; write {canonical} instead")
        if takes_value.get(canonical):
            if inline is None:
                if index + 1 >= len(tokens):
                    raise CampaignError(f"run arg {canonical} needs a value; write {canonical} VALUE")
                inline, index = tokens[index + 1], index + 1
            value: str | None = inline
        elif inline is not None:
            raise CampaignError(f"run arg {canonical} is a switch and takes no value; write {canonical} alone")
        else:
            value = None
        if value is not None and canonical in unseen:
            raise CampaignError(
                f"run arg {canonical} uses a custom argparse action whose arity the import cannot read, and the fixed "
                f"budget depends on the positional {unseen[canonical]}: its value could become that positional; "
                f"leave {canonical} out of the run args"
            )
        _check_bounds(canonical, value, bounds)
        parsed.pop(canonical, None)
        parsed[canonical] = value
        index += 1
    pairs = list(parsed.items())
    refuse_fromfile(config, flatten(pairs), "run arg")  # `--tag=@x` is passed on as `--tag @x`: expanded too
    parsed, errors = importer.parse_job_args(config, flatten(pairs))
    if errors:
        raise CampaignError(f"run args rejected by job.py's parser: {errors[0]}; fix --run-args")
    stray = _set_beyond(config, parsed, pairs)
    if stray:
        raise CampaignError(
            f"run args {shlex.join(flatten(pairs))!r}: job.py's parser sets {stray[0]} from them, which they do not "
            "name (it reads a value that starts with '-' as an option); give each option a value that is not one"
        )
    keys = importer.option_keys(config)
    for flag, value in pairs:
        if value is None and bounds.get(flag):  # a switch: its bounds hold for the value the parser writes
            _check_bounds(flag, str(parsed.get(keys.get(flag, flag))), bounds)
    return pairs


def _arity_unseen(config: dict, budget: set[str]) -> dict[str, str]:
    """{option: positional} when the budget depends on a positional (never pinned by name): the options with a
    custom argparse action, whose number of values the static reading cannot know, so a value given to one could
    reach job.py as that positional."""
    positional = sorted(option for option in budget if not option.startswith("-"))
    if not positional:
        return {}
    records = (config.get("argparse") or {}).get("flags") or []
    return {o: positional[0] for r in records if r.get("action") == "custom" for o in r["option_strings"]}


def _set_beyond(config: dict, parsed: dict, pairs: list[Arg]) -> list[str]:
    """Options job.py's parser sets from `pairs` that the pairs do not name: a value passed on as its own token
    that the parser reads as an option (`--opt=-r5` for an optional-valued --opt is `--opt -r5`: -r5 is -r 5)."""
    keys = importer.option_keys(config)
    named = {keys.get(flag, flag) for flag, _ in pairs}
    untouched, _ = importer.parse_job_args(config, [])  # positionals argparse sets on every command line
    return [key for key, value in parsed.items() if key not in named and untouched.get(key, parsed) != value]


def refuse_fromfile(config: dict, tokens: list[str], what: str) -> None:
    """Refuse a token job.py's parser would replace by a file's lines (`fromfile_prefix_chars`, e.g. `@extra.py`):
    the file could set a fixed-budget option no check of the command line ever sees."""
    smuggled = importer.fromfile_arguments(config, tokens)
    if smuggled:
        token = smuggled[0]
        raise CampaignError(
            f"{what} {token!r} starts with {token[0]!r}, which job.py's parser reads as a file of more arguments "
            "(fromfile_prefix_chars); write the arguments out instead"
        )


def candidate_args(config: dict, text: str, flag: str = "--run-args") -> list[Arg]:
    """A candidate's own `--run-args` string, validated exactly as evaluate validates it (the fixed-budget options
    and the runner-owned --name are refused)."""
    tokens = split_args(text, flag)
    name_flag = importer.cli_flags(config)["name_flag"]
    return parse_run_args(
        config,
        tokens,
        reserved={name_flag} if name_flag else set(),
        budget=set(importer.fixed_budget_options(config)),
    )


def settle(config: dict, *, recorded: list[str], given: str | None) -> list[Arg]:
    """The candidate's own run args at evaluate: the ones prepare recorded, or evaluate's `--run-args`, or both when
    they agree (as option values; order and `=` spelling do not matter). Both given and different is rejected."""
    kept = candidate_args(config, shlex.join(recorded), "the prepared candidate's run args") if recorded else []
    if given is None:
        return kept
    own = candidate_args(config, given)
    if recorded and dict(own) != dict(kept):
        raise CampaignError(
            f"the candidate was prepared with --run-args {shlex.join(recorded)!r} but evaluate got --run-args "
            f"{given!r}; omit --run-args at evaluate to use the prepared ones, pass the same ones, or abandon the "
            "candidate and prepare it again with the new ones"
        )
    return own


def merge(best: list[Arg], own: list[Arg]) -> list[Arg]:
    """The best configuration's args with the candidate's own on top (its own win per flag, order kept)."""
    merged = dict(best)
    merged.update(own)
    return list(merged.items())


def same_configuration(config: dict, left: list[str], right: list[str]) -> bool:
    """True when two run-arg lists give job.py the same option values (a value equal to its default is no change)."""
    defaults = {flag: record.get("value") for flag, record in contract.long_options(config)}
    values = []
    for tokens in (left, right):
        parsed, errors = importer.parse_job_args(config, tokens)
        if errors:
            return False
        values.append({**defaults, **parsed})
    return values[0] == values[1]


def flatten(pairs: list[Arg]) -> list[str]:
    out: list[str] = []
    for flag, value in pairs:
        out.append(flag)
        if value is not None:
            out.append(value)
    return out


def pairs_from_tokens(config: dict, tokens: list[str]) -> list[Arg]:
    """Stored (already validated) run args back into pairs; tolerant: used for best_run_args and manifests."""
    takes_value = importer.cli_flags(config)["takes_value"]
    pairs: dict[str, str | None] = {}
    index = 0
    while index < len(tokens):
        flag, _, inline = tokens[index].partition("=")
        if takes_value.get(flag) and not inline and index + 1 < len(tokens):
            inline, index = tokens[index + 1], index + 1
        pairs.pop(flag, None)
        pairs[flag] = inline or None
        index += 1
    return list(pairs.items())


def _canonical(config: dict, token: str) -> tuple[str, str | None]:
    if not token.startswith("-") or token in ("-", "--"):
        raise CampaignError(f"run arg {token!r} is not an option; candidates set options such as --lr 0.1")
    canonical, inline, error = importer.canonical_option(config, token)
    if canonical is None:
        raise CampaignError(f"run arg {token!r}: {error}; use one of job.py's options")
    return canonical, inline


def _bounds(config: dict) -> dict:
    """mutation_schema.yaml `mutable_args` keyed by job.py's canonical options (schema keys are dests: every option
    writing a dest gets its rule)."""
    mutable = (config.get("schema") or {}).get("mutable_args") or {}
    return {
        flag: mutable[record["dest"]] for flag, record in contract.long_options(config) if record["dest"] in mutable
    }


def _check_bounds(flag: str, value: str | None, bounds: dict) -> None:
    """Refuse `flag` outside mutable_args, or its value outside the rule's choices and min/max (a switch, value
    None, is checked once job.py's parser has said what it writes)."""
    if not bounds:
        return
    if flag not in bounds:
        allowed = ", ".join(sorted(bounds)) or "none"
        raise CampaignError(f"run arg {flag} is not in mutation_schema.yaml mutable_args (allowed: {allowed})")
    rule = bounds[flag] or {}
    if value is None:
        return
    if "choices" in rule and value not in [str(choice) for choice in rule["choices"]]:
        raise CampaignError(f"run arg {flag} {value} is not one of mutation_schema.yaml choices {rule['choices']}")
    if not ({"min", "max"} & set(rule)):
        return
    try:
        number = float(value)
    except ValueError:
        raise CampaignError(f"run arg {flag} {value!r} is not a number; mutation_schema.yaml bounds it") from None
    if not math.isfinite(number):
        raise CampaignError(f"run arg {flag} {value!r} must be finite")
    if "min" in rule and number < float(rule["min"]):
        raise CampaignError(f"run arg {flag} {value} is below mutation_schema.yaml min {rule['min']}")
    if "max" in rule and number > float(rule["max"]):
        raise CampaignError(f"run arg {flag} {value} is above mutation_schema.yaml max {rule['max']}")
