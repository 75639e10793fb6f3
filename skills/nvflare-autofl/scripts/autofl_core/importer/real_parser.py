"""job.py's options rebuilt as a real `argparse.ArgumentParser`, and command lines parsed with it.

The option table (`argparse_flow.Flag`s, read from job.py or from a config's `argparse.flags`) becomes a parser
declared the same way (actions, nargs, const, choices, defaults, builtin types; a custom type keeps the text),
with job.py's `allow_abbrev` and `fromfile_prefix_chars`. Every argparse rule (aliases, `-r5`, `--x=1`,
abbreviations, negative numbers, nargs, choices, types) is argparse's own. The parser never prints, never exits
and never reads a file: an error, `--help`/`--version` or a token it would read as a file of arguments is a
refusal naming the argument. A required option or positional left out is not refused (the runner parses a
part of the command line); job.py's own parser would refuse it at run time.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .argparse_flow import Flag, Parser, fromfile_tokens

_TYPES = {"int": int, "float": float, "str": str, "bool": bool}
_KNOWN_ONLY = {"parse_known_args", "parse_known_intermixed_args"}


class Refused(Exception):
    """argparse refused the command line (its message names the argument)."""


class _Token(str):
    """One command-line token as its own object, so parse_known_args' extras map back to their positions."""


def _action_class(name: str) -> type:
    return type(argparse.ArgumentParser(add_help=False).add_argument("--x", action=name))


_REAL_ACTIONS = {
    name: _action_class(name)
    for name in ("store", "store_const", "store_true", "store_false", "append", "append_const", "count", "extend")
}
_REAL_ACTIONS["boolean_optional"] = argparse.BooleanOptionalAction


class _Exits(argparse.Action):
    """job.py's `--help` / `--version`: argparse would print and exit instead of running the job."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        raise argparse.ArgumentError(self, "would exit instead of running the job")


_CLASSES: dict[type, type] = {}


def _recording(cls: type) -> type:
    """`cls` that also notes, on the parser, each time it sets a value (argparse's "given, not the default")."""
    if cls not in _CLASSES:

        def __call__(self, parser, namespace, values, option_string=None):
            if values is not self.default:
                parser.given.append((self.flag, option_string))
            cls.__call__(self, parser, namespace, values, option_string)

        _CLASSES[cls] = type(f"Recorded{cls.__name__}", (cls,), {"__call__": __call__})
    return _CLASSES[cls]


class _JobParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors and exits raise `Refused` instead of printing and exiting."""

    given: list

    def error(self, message: str):
        raise Refused(message)

    def exit(self, status: int = 0, message: str | None = None):
        raise Refused(message or f"job.py's parser would exit with status {status}")


@dataclass
class Parsed:
    """What argparse made of a command line: {dest: value} for the options given, in order of `flags`."""

    values: dict[str, Any]
    errors: list[str]
    accepted: list[bool] | None  # per token, whether the parser used it (None: it refused the line)
    flags: list[tuple[Flag, str | None]]  # (flag, option string as matched or None for a positional) per action


def build(parser: Parser, lookup: bool = False) -> tuple[_JobParser, list[str]]:
    """A real parser declared like `parser`, and the declarations argparse refuses (left out of it).

    `lookup` declares every option as taking one optional value, with no type or choices: parsing one token
    then says which option it selects and the value written into it (`-r5`, `--rounds=4`), nothing more.
    """
    real = _JobParser(
        add_help=False,
        allow_abbrev=parser.allow_abbrev,
        fromfile_prefix_chars=parser.fromfile_prefix_chars,
        exit_on_error=False,
    )
    real.given = []
    refused = []
    for flag in parser.flags:
        if lookup and flag.positional:
            continue
        try:
            action = real.add_argument(*_names(flag, lookup), **_declaration(flag, lookup))
        except (ValueError, TypeError, argparse.ArgumentError) as exc:
            refused.append(f"{flag.canonical}: {exc}")
            continue
        action.required = False
        action.flag = flag
    return real, refused


def _names(flag: Flag, lookup: bool) -> list[str]:
    if flag.positional:
        return [flag.dest]
    if flag.action == "boolean_optional" and not lookup:  # argparse adds the --no- forms itself
        return [o for o in flag.option_strings if not (o.startswith("--no-") and "--" + o[5:] in flag.option_strings)]
    return list(flag.option_strings)


def _declaration(flag: Flag, lookup: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = {} if flag.positional else {"dest": flag.dest}
    if flag.action in ("help", "version"):
        kwargs["action"] = _Exits
        return kwargs
    if lookup:
        return {**kwargs, "action": _recording(_REAL_ACTIONS["store"]), "nargs": "?", "const": _NO_VALUE}
    action = flag.action if flag.action in _REAL_ACTIONS else ("store_const" if flag.nargs == 0 else "store")
    kwargs["action"] = _recording(_REAL_ACTIONS[action])
    kwargs["default"] = flag.default.value if flag.default.resolved else None
    if action in ("store", "append", "extend"):
        kwargs["type"] = _TYPES.get(flag.type or "str")
        if flag.nargs is not None:
            kwargs["nargs"] = flag.nargs
        if flag.nargs == "?" or flag.const is not None:
            kwargs["const"] = flag.const
        if flag.choices is not None:
            kwargs["choices"] = flag.choices
    elif action in ("store_const", "append_const"):
        kwargs["const"] = flag.const
    return kwargs


_NO_VALUE = object()


def parse(parser: Parser, argv: Sequence[str], method: str = "parse_args") -> Parsed:
    """Parse `argv` with `parser` rebuilt for argparse, by argparse's `method` (parse_args, parse_known_args...).

    Like argparse, the first error stops parsing; unrecognized arguments are an error unless the method is a
    `known` one. The values given before an error are kept (argparse set them before it stopped).
    """
    real, _ = build(parser)
    return _run(real, argv, method)


def _run(real: _JobParser, argv: Sequence[str], method: str) -> Parsed:
    tokens = [_Token(a) for a in argv]
    namespace = argparse.Namespace()
    smuggled = fromfile_tokens(real.fromfile_prefix_chars, tokens)
    if smuggled:  # never let argparse open a file: refuse the token the way job.py's parser would read it
        message = f"{smuggled[0]!r} would be read as a file of more arguments (fromfile_prefix_chars)"
        return _parsed(real, namespace, [message], None)
    known = getattr(real, method if method in _KNOWN_ONLY else method.replace("parse_", "parse_known_"))
    try:
        _, extras = known(tokens, namespace)
    except Refused as exc:
        return _parsed(real, namespace, [str(exc)], None)
    except argparse.ArgumentError as exc:
        return _parsed(real, namespace, [str(exc)], None)
    except (TypeError, ValueError, AttributeError) as exc:  # e.g. a default an `append` cannot extend
        return _parsed(real, namespace, [f"job.py's parser fails on these arguments: {exc}"], None)
    left = {id(t) for t in extras}
    accepted = [id(t) not in left for t in tokens]
    errors = [] if method in _KNOWN_ONLY or not extras else [f"unrecognized arguments: {' '.join(extras)}"]
    return _parsed(real, namespace, errors, accepted)


def _parsed(real: _JobParser, namespace: argparse.Namespace, errors: list[str], accepted) -> Parsed:
    flags = [(flag, option) for flag, option in real.given]
    values = {flag.dest: _plain(getattr(namespace, flag.dest, None)) for flag, _ in flags}
    return Parsed(values, errors, accepted, flags)


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def select(parser: Parser, token: str) -> tuple[Flag | None, str | None, str | None]:
    """The option one token selects, as argparse matches it: (flag, value written into the token, None),
    or (None, None, argparse's reason) when it selects no option, several, or is ambiguous."""
    real, _ = build(parser, lookup=True)
    parsed = _run(real, [token], "parse_known_args")
    if parsed.errors:
        return None, None, parsed.errors[0]
    if not parsed.flags:
        return None, None, f"unrecognized argument {token}"
    if len(parsed.flags) > 1:
        return None, None, f"{token} sets several options ({', '.join(f.canonical for f, _ in parsed.flags)})"
    flag = parsed.flags[0][0]
    inline = parsed.values[flag.dest]
    return flag, (None if inline is _NO_VALUE else inline), None
