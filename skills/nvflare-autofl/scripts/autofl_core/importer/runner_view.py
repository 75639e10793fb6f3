"""The runner's view of an imported config: job.py's options and the arguments that pin the budget.

Every argparse rule is argparse's own: job.py's parser is rebuilt from `config["argparse"]` as a real
`argparse.ArgumentParser` (`real_parser`), so the runner never needs job.py again.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import argparse_flow as ap
from . import real_parser
from .budget import FIELDS


def cli_flags(config: dict) -> dict:
    """The runner's view of job.py's options: long flags, alias groups, the --name flag, which take a value."""
    parser, groups, takes_value = ap.parser_from_config(config), [], {}
    for flag in parser.flags:
        group = sorted((o for o in flag.option_strings if o.startswith("-")), key=lambda o: not o.startswith("--"))
        if group:  # long options first
            groups.append(group)
            takes_value.update(dict.fromkeys(group, flag.takes_value))
    long_flags = [option for group in groups for option in group if option.startswith("--")]
    return {
        "allow_abbrev": parser.allow_abbrev,
        "groups": groups,
        "long_flags": long_flags,
        "name_flag": "--name" if "--name" in long_flags else None,
        "takes_value": takes_value,
    }


def fromfile_arguments(config: dict, tokens: list[str]) -> list[str]:
    """The tokens job.py's parser would replace by the lines of a file (argparse `fromfile_prefix_chars`): such a
    file could carry any option, a fixed-budget one included, past every check of the command line."""
    section = config.get("argparse") or {}
    chars = section.get("fromfile_prefix_chars", ap.DEFAULT_FROMFILE) if isinstance(section, dict) else None
    return ap.fromfile_tokens(chars, list(tokens))


def fixed_budget_options(config: dict) -> list[str]:
    """Every job option the fixed budget depends on (canonical spelling, in budget order), then every other option
    writing the same `dest` as one of them. A candidate's run arguments may set none of them: `fixed_budget_args`
    pins most, but a switch pinned off has no argument to pin it, so the runner rejects any mention of these."""
    options, flags = _depended_options(config), ap.parser_from_config(config).flags
    dests = {flag.dest for flag in flags if set(flag.option_strings) & set(options)}
    sharing = [
        f.name for f in flags if f.dest in dests and f.option_strings and not set(f.option_strings) & set(options)
    ]
    return list(dict.fromkeys(options + sharing))


def _depended_options(config: dict) -> list[str]:
    """The options the fixed budget's entries name (their `flag` and `depends_on`), in budget order."""
    budget = config.get("fixed_budget") or {}
    entries = [budget.get(f) or {} for f in FIELDS] + list((budget.get("comparison_args") or {}).values())
    flags = (flag for entry in entries for flag in [entry.get("flag"), *(entry.get("depends_on") or [])])
    return list(dict.fromkeys(flag for flag in flags if flag))


def fixed_budget_args(config: dict) -> list[str]:
    """Command-line arguments that pin the fixed budget and every option it depends on, each flag exactly once (a
    positional cannot be pinned by name: --base-args carries it)."""
    flags = {option: flag for flag in ap.parser_from_config(config).flags for option in flag.option_strings}
    pinned = [(option, flags.get(option)) for option in _depended_options(config)]
    return [
        token
        for option, flag in pinned
        if flag is not None and flag.value is not None
        for token in ap.arguments(flag, flag.value, option) or []
    ]


def canonical_option(config: dict, token: str) -> tuple[str | None, str | None, str | None]:
    """(canonical option, inline value, None) for one command-line token as argparse matches it (aliases, `=`,
    prefixes: `-r`, `--num_r`, `--num_rounds=5`), or (None, None, reason) when it selects none or is ambiguous."""
    flag, inline, reason = real_parser.select(ap.parser_from_config(config), token)
    return (None, None, reason) if flag is None else (flag.name, inline, None)


def parse_job_args(config: dict, argv: Sequence[str], known_only: bool = False) -> tuple[dict, list[str]]:
    """Parse `argv` with job.py's parser rebuilt for argparse: ({canonical flag: value}, errors). Options sharing
    a dest report under one name: the first declared one's, as the budget names it (see `option_keys`)."""
    parser = ap.parser_from_config(config)
    parsed = real_parser.parse(parser, [str(a) for a in argv], "parse_known_args" if known_only else "parse_args")
    by_dest = ap.first_by_dest(parser.flags)
    return {by_dest.get(dest, dest): value for dest, value in parsed.values.items()}, parsed.errors


def option_keys(config: dict) -> dict[str, str]:
    """{option string: the name `parse_job_args` reports its value under}."""
    flags = ap.parser_from_config(config).flags
    by_dest = ap.first_by_dest(flags)
    return {option: by_dest[flag.dest] for flag in flags for option in flag.option_strings}
