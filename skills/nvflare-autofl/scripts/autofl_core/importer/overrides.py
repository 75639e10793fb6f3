"""Apply `--base-args` to a statically known parser the way argparse would (without running it).

Handles `--flag value`, `--flag=value`, short aliases (`-r 5`, `-r5`), unambiguous prefix
abbreviations (unless `allow_abbrev=False`), store_true/false/const, count, append,
BooleanOptionalAction (`--no-x`), nargs, choices and builtin types.
"""

from __future__ import annotations

import ast
from typing import Any

from . import argparse_flow as ap
from .argparse_flow import Flag, Parser, convert
from .values import HIGH, Bag, Val, unresolved


def resolve_option(parser: Parser, token: str) -> tuple[Flag | None, str, str | None]:
    """Find the flag `token` selects; returns (flag, option, inline value) or (None, reason, None)."""
    name, has_eq, inline = token.partition("=")
    exact = _by_option(parser, name)
    if exact is not None:
        return exact, name, inline if has_eq else None
    if not name.startswith("--"):
        short = _by_option(parser, token[:2])
        if short is not None and len(token) > 2:
            value = token[2:]
            return short, token[:2], value[1:] if value.startswith("=") else value
        return None, f"unrecognized argument {token}", None
    if not parser.allow_abbrev:
        return None, f"unrecognized argument {token} (abbreviations are disabled)", None
    matches = sorted({o for f in parser.flags for o in f.option_strings if o.startswith(name) and o.startswith("--")})
    if len(matches) == 1:
        return _by_option(parser, matches[0]), matches[0], inline if has_eq else None
    if matches:
        return None, f"ambiguous option {name} could match {', '.join(matches)}", None
    return None, f"unrecognized argument {token}", None


def _by_option(parser: Parser, option: str) -> Flag | None:
    for flag in parser.flags:
        if option in flag.option_strings:
            return flag
    return None


def _looks_like_option(token: str) -> bool:
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
        return False
    except ValueError:
        return True


def _take_values(flag: Flag, argv: list[str], start: int, inline: str | None) -> tuple[list[str], int]:
    if inline is not None:
        return [inline], start
    nargs = flag.nargs
    if nargs is None:
        if start < len(argv) and not _looks_like_option(argv[start]):
            return [argv[start]], start + 1
        return [], start
    if nargs == "?":
        if start < len(argv) and not _looks_like_option(argv[start]):
            return [argv[start]], start + 1
        return [], start
    end = start
    while end < len(argv) and not _looks_like_option(argv[end]):
        end += 1
    if isinstance(nargs, int):
        end = min(end, start + nargs)
    return argv[start:end], end


def _convert_all(flag: Flag, texts: list[str]) -> list[Any]:
    values = [convert(flag.type, t) for t in texts]
    if flag.choices is not None:
        for value in values:
            if value not in flag.choices:
                raise ValueError(f"invalid choice {value!r} for {flag.canonical} (choose from {flag.choices})")
    return values


def _store(flag: Flag, option: str, texts: list[str], result: dict) -> None:
    """Set the value of one flag occurrence in `result` (dest -> python value)."""
    action = flag.action
    if action in ("store_true", "store_false"):
        result[flag.dest] = action == "store_true"
    elif action == "store_const":
        result[flag.dest] = flag.const
    elif action == "count":
        result[flag.dest] = int(result.get(flag.dest) or 0) + 1
    elif action == "boolean_optional":
        result[flag.dest] = not option.startswith("--no-")
    else:
        values = _convert_all(flag, texts)
        if flag.nargs is None or (flag.nargs == "?" and values):
            single = values[0]
        elif flag.nargs == "?":
            single = flag.const
        else:
            single = values
        if action == "append":
            previous = result.get(flag.dest)
            result[flag.dest] = (list(previous) if isinstance(previous, list) else []) + [single]
        else:
            result[flag.dest] = single


def apply_overrides(
    parser: Parser, argv: list[str], known_only: bool, owners: list | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Return ({dest: value}, errors) for `argv`; like argparse, the first hard error stops parsing and
    unrecognized arguments are collected into one error (ignored when `known_only`).

    `owners`, when given, is filled with one entry per token: the Flag that token sets (an option or its
    value), or None for a token the parser would not accept (unknown, or after the first error).
    """
    result: dict[str, Any] = {}
    unknown: list[str] = []
    accepted: list = [None] * len(argv)
    positionals = [f for f in parser.flags if f.positional]
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--" or not _looks_like_option(token):
            if positionals:
                flag = positionals.pop(0)
                accepted[index - 1] = flag
                error = _safe_store(flag, flag.dest, [token], result)
                if error:
                    return _done(result, [error], accepted, owners, index - 1)
            else:
                unknown.append(token)
            continue
        flag, option, inline = resolve_option(parser, token)
        if flag is None:
            if option.startswith("ambiguous"):
                return _done(result, [option], accepted, owners, index - 1)
            unknown.append(token)
            continue
        start = index - 1
        error, index = _consume(flag, option, inline, argv, index, result)
        if error:
            return _done(result, [error], accepted, owners, start)
        accepted[start:index] = [flag] * (index - start)
    if unknown and not known_only:
        return _done(result, [f"unrecognized arguments: {' '.join(unknown)}"], accepted, owners, len(argv))
    return _done(result, [], accepted, owners, len(argv))


def _done(result: dict, errors: list[str], accepted: list, owners: list | None, stop: int):
    if owners is not None:
        owners[:] = accepted[:stop] + [None] * (len(accepted) - stop)
    return result, errors


def _consume(flag: Flag, option: str, inline: str | None, argv: list[str], index: int, result: dict):
    """Store one option occurrence; returns (error or "", next index)."""
    if flag.action in ("help", "version"):
        return f"{option} would exit instead of running the job", index
    texts: list[str] = []
    if flag.takes_value:
        texts, index = _take_values(flag, argv, index, inline)
        if not texts and flag.nargs not in ("?", "*"):
            return f"{option} expects a value", index
    elif inline is not None:
        return f"{option} does not take a value", index
    return _safe_store(flag, option, texts, result), index


def _safe_store(flag: Flag, option: str, texts: list[str], result: dict) -> str:
    try:
        _store(flag, option, texts, result)
    except ValueError as exc:
        message = str(exc)
        if "invalid choice" not in message:
            message = f"invalid {flag.type or 'str'} value for {option}: {' '.join(texts)!r}"
        return message
    return ""


PARSE_METHODS = ("parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args")


def parser_method(
    parser: Parser, method: str, args: list, kwargs: dict, node: ast.Call, base_args: list[str], out: Any
) -> Any:
    """Evaluate `parser.<method>(...)`: record arguments, or return the namespace parse_args() yields."""
    if method == "add_argument":
        ap.add_argument(parser, args, kwargs, node.lineno)
        return Val(None, HIGH)
    if method in ("add_argument_group", "add_mutually_exclusive_group"):
        return parser
    if method == "set_defaults":
        parser.set_defaults.update({k: v for k, v in kwargs.items() if isinstance(v, Val)})
        return Val(None, HIGH)
    if method not in PARSE_METHODS:
        return unresolved(node, f"ArgumentParser.{method}() is not evaluated")
    known_only = "known" in method
    explicit = args[0] if args else kwargs.get("args")
    if isinstance(explicit, Val) and explicit.resolved and isinstance(explicit.value, (list, tuple)):
        base_args = [str(a) for a in explicit.value]  # job.py parses a fixed list, not the command line
    overrides, errors = apply_overrides(parser, base_args, known_only)
    out.base_args_errors.extend(e for e in errors if e not in out.base_args_errors)
    namespace = ap.build_namespace(parser, overrides, known_only)
    out.namespaces.append(namespace)
    if known_only:
        return Bag([namespace, unresolved(node, "unknown command-line arguments")])
    return namespace
