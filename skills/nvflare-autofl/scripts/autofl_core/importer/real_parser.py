"""job.py's options rebuilt as a real `argparse.ArgumentParser`, and command lines parsed with it.

The option table (`argparse_flow.Flag`s, from job.py or a config's `argparse.flags`) becomes a parser declared the
same way (a custom type keeps the text), with job.py's `allow_abbrev` and `fromfile_prefix_chars`, so every
argparse rule (aliases, `-r5`, `--x=1`, abbreviations, nargs, choices, types) is argparse's own. The parser never
prints, exits or reads a file: an error, `--help`/`--version` or a token it would read as a file of arguments is a
refusal naming the argument. A required option left out is not refused (the runner parses part of a command
line). `parser_method` is the walker's view of a parser's methods: declarations recorded, `parse_args()` run.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .argparse_flow import (
    ACTIONS,
    MAX_NARGS,
    PARSE_METHODS,
    TYPES,
    Flag,
    Parser,
    add_argument,
    build_namespace,
    fromfile_tokens,
)
from .values import HIGH, Bag, Val, known, merge_flags, unresolved

_KNOWN_ONLY = {"parse_known_args", "parse_known_intermixed_args"}
_NO_VALUE = object()  # the const of every option in a lookup parser: the token carried no value


class Refused(Exception):
    """argparse refused the command line (its message names the argument)."""


class _Token(str):
    """One command-line token as its own object, so parse_known_args' extras map back to their positions."""


class _Exits(argparse.Action):
    """job.py's `--help` / `--version`: argparse would print and exit instead of running the job."""

    def __call__(self, parser, namespace, values, option_string=None):
        raise argparse.ArgumentError(self, "would exit instead of running the job")


def _recording(name: str) -> type:
    """argparse's action class for `name`, noting on the parser each flag it sets to a value not its default."""
    base = type(ACTIONS[name])

    def __call__(self, parser, namespace, values, option_string=None):
        if values is not self.default:
            parser.given.append(self.flag)
        base.__call__(self, parser, namespace, values, option_string)

    return type(f"Recorded{base.__name__}", (base,), {"__call__": __call__})


_ACTIONS = {name: _recording(name) for name in ACTIONS if name not in ("help", "version")}


class _JobParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors and exits raise `Refused` instead of printing and exiting."""

    given: list

    def error(self, message: str):
        raise Refused(message)

    def exit(self, status: int = 0, message: str | None = None):
        raise Refused(message or f"job.py's parser would exit with status {status}")


@dataclass
class Parsed:
    """What argparse made of a command line."""

    values: dict[str, Any]  # dest -> value, for the options given
    errors: list[str]
    accepted: list[bool] | None  # per token, whether the parser used it (None: it refused the line)
    given: list[Flag]  # the flags set, in order


def build(parser: Parser, lookup: bool = False) -> tuple[_JobParser, list[str]]:
    """A real parser declared like `parser`, and the declarations argparse refuses (left out of it). `lookup`
    declares every option as one taking an optional value: parsing one token then says which option it selects
    and the value written into it (`-r5`, `--rounds=4`)."""
    real = _JobParser(
        add_help=False,
        allow_abbrev=parser.allow_abbrev,
        fromfile_prefix_chars=parser.fromfile_prefix_chars,
        exit_on_error=False,
    )
    real.given, refused = [], []
    for flag in parser.flags:
        if lookup and flag.positional:
            continue
        try:
            action = real.add_argument(*_names(flag, lookup), **_declaration(flag, lookup))
        except (ValueError, TypeError, argparse.ArgumentError) as exc:
            refused.append(f"{flag.name}: {exc}")
            continue
        action.required = False  # the runner parses part of a command line; the budget reports what is missing
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
        return {**kwargs, "action": _Exits, "nargs": 0, "default": argparse.SUPPRESS}
    if lookup:
        return {**kwargs, "action": _ACTIONS["store"], "nargs": "?", "const": _NO_VALUE, "type": str}
    if isinstance(flag.nargs, int) and flag.nargs > MAX_NARGS:  # argparse would build strings nargs long
        raise ValueError(f"nargs {flag.nargs} is more than {MAX_NARGS} values")
    action = flag.action if flag.action in _ACTIONS else ("store_const" if flag.nargs == 0 else "store")
    kwargs["action"] = _ACTIONS[action]
    if action in ("append", "extend", "count") or flag.positional:  # what argparse builds on or may hand back
        default = flag.default.value if flag.default.resolved else None
        kwargs["default"] = argparse.SUPPRESS if default == argparse.SUPPRESS else default  # argparse's own object
    if action in ("store", "append", "extend"):
        kwargs["type"] = TYPES.get(flag.type or "str", str)  # any other type keeps the text
        kwargs.update({k: v for k, v in (("nargs", flag.nargs), ("choices", flag.choices)) if v is not None})
        if flag.nargs == "?" or flag.const is not None:
            kwargs["const"] = flag.const
    elif action in ("store_const", "append_const"):
        kwargs["const"] = flag.const
    return kwargs


def parse(parser: Parser, argv: Sequence[str], method: str = "parse_args") -> Parsed:
    """Parse `argv` with `parser` rebuilt for argparse, by argparse's `method` (parse_args, parse_known_args...):
    the first error stops parsing; unrecognized arguments are an error unless the method is a `known` one."""
    return _run(build(parser)[0], argv, method)


def _run(real: _JobParser, argv: Sequence[str], method: str) -> Parsed:
    tokens = [_Token(a) for a in argv]
    namespace = argparse.Namespace()
    extras, errors = None, []
    smuggled = fromfile_tokens(real.fromfile_prefix_chars, tokens)
    if smuggled:  # never let argparse open a file: refuse the token it would read as one
        errors = [f"{smuggled[0]!r} would be read as a file of more arguments (fromfile_prefix_chars)"]
    else:
        try:
            _, extras = getattr(real, method if method in _KNOWN_ONLY else method.replace("_", "_known_", 1))(
                tokens, namespace
            )
        except (Refused, argparse.ArgumentError) as exc:
            errors = [str(exc)]
        except (TypeError, ValueError, AttributeError) as exc:  # e.g. a default an `append` cannot extend
            errors = [f"job.py's parser fails on these arguments: {exc}"]
    if extras and method not in _KNOWN_ONLY:
        errors = [f"unrecognized arguments: {' '.join(extras)}"]
    errors = [_printable(error) for error in errors]  # a token may hold a newline or an escape: one line
    left = {id(t) for t in extras or ()}
    accepted = None if extras is None else [id(t) not in left for t in tokens]
    values = {flag.dest: getattr(namespace, flag.dest, None) for flag in real.given}
    return Parsed(values, errors, accepted, list(real.given))


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def select(parser: Parser, token: str) -> tuple[Flag | None, str | None, str | None]:
    """The option one token selects, as argparse matches it: (flag, value written into the token, None), or
    (None, None, argparse's reason) when it selects none or is ambiguous. Every option of the lookup parser takes
    an optional value, so `-vq` is `-v` with the value `q` (the runner refuses a value for a switch)."""
    parsed = _run(build(parser, lookup=True)[0], [token], "parse_known_args")
    if parsed.errors or not parsed.given:
        return None, None, parsed.errors[0] if parsed.errors else f"unrecognized argument {token}"
    inline = parsed.values[parsed.given[0].dest]
    return parsed.given[0], (None if inline is _NO_VALUE else inline), None


READING_METHODS = {"print_help", "print_usage", "format_help", "format_usage", "get_default", "error", "exit"}
READ_ONLY = READING_METHODS | {"prog", "usage", "description", "epilog", "add_help", "allow_abbrev", "exit_on_error"}


def parser_method(
    parser: Parser, method: str, args: list, kwargs: dict, node: ast.Call, base_args: list[str], out: Any
) -> Any:
    """Evaluate `parser.<method>(...)`: record arguments, or return the namespace parse_args() yields."""
    if method == "add_argument":  # the action it returns: what writes through it writes the parser
        add_argument(parser, args, kwargs, node.lineno)
        return parser
    if method in ("add_argument_group", "add_mutually_exclusive_group"):
        return parser
    if method == "set_defaults":
        parser.set_defaults.update({k: v for k, v in kwargs.items() if isinstance(v, Val)})
        return Val(None, HIGH)
    if method not in PARSE_METHODS:
        if method not in READING_METHODS:  # `register(...)`, `_add_action(...)`: the parse is not known
            parser.changed = f"ArgumentParser.{method}() at line {node.lineno}, which is not followed statically"
        return unresolved(node, f"ArgumentParser.{method}() is not evaluated")
    known_only = "known" in method
    explicit = args[0] if args else kwargs.get("args")
    if known(explicit, (list, tuple)):
        base_args = [str(a) for a in explicit.value]  # job.py parses a fixed list, not the command line
        if fromfile_tokens(parser.fromfile_prefix_chars, base_args):
            return unresolved(node, f"job.py's {method}() reads arguments from a file (fromfile_prefix_chars)")
    parsed = parse(parser, base_args, method)
    if not fromfile_tokens(parser.fromfile_prefix_chars, base_args):  # admission names those itself
        out.base_args_errors.extend(e for e in parsed.errors if e not in out.base_args_errors)
    namespace = build_namespace(parser, parsed.values)
    if parser.changed:
        namespace.values = {k: unresolved(node, parser.changed, merge_flags(v)) for k, v in namespace.values.items()}
    out.namespaces.append(namespace)
    return Bag([namespace, unresolved(node, "unknown command-line arguments")]) if known_only else namespace
