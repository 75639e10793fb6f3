"""job.py's options: the one option record (`Flag`, and its config form `argparse.flags[]`), argparse's own action
table, and argparse seen statically: parsers, their add_argument calls, and the namespace parse_args() returns.

A dry run's recorded parser actions are Flags too (`recorded`). The walker makes a `Parser` of every `ArgumentParser(...)`, a `Flag` of each `add_argument`, and a `Namespace`
of `parse_args()`: the defaults with the `--base-args` overrides (parsed by the real argparse, `real_parser`).
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .targets import last_name
from .values import HIGH, MEDIUM, UNRESOLVED, Builtin, ClassRef, Val, drawn, known, to_jsonable, weakest

# A parser's fromfile_prefix_chars the importer cannot read (not a literal): every punctuation mark a prefix could
# plausibly be, except those that start ordinary values ("-0.1", "./data", "~/data", "_x").
UNKNOWN_FROMFILE = "!\"#$%&'()*+,:;<=>?@[\\]^`{|}"
DEFAULT_FROMFILE = "@"  # a config imported before the importer recorded the setting: the conventional prefix
TYPES = {"bool": bool, "int": int, "float": float, "str": str}  # the builtin `type=`s (bool first: True is an int)
MAX_NARGS = 4096  # argparse builds strings and patterns nargs long: a larger count is a declaration refused


def _argparse_actions() -> dict[str, argparse.Action]:
    """argparse's own action of each `action=` name (`boolean_optional`: BooleanOptionalAction)."""
    probe = argparse.ArgumentParser(add_help=False)
    probe.register("action", "boolean_optional", argparse.BooleanOptionalAction)
    names = "store store_const store_true store_false append append_const count extend boolean_optional help version"
    return {name: probe.add_argument(f"--{name}", action=name) for name in names.split()}


ACTIONS = _argparse_actions()  # any other action is `custom`
ACTION_NAMES = {type(action).__name__: name for name, action in ACTIONS.items()}  # by argparse's class name
NO_VALUE_ACTIONS = {name for name, action in ACTIONS.items() if action.nargs == 0}
IMPLIED = ("store_true", "store_false")  # the actions whose const and default argparse sets itself


@dataclass
class Flag:
    """One option of job.py's parser, read statically or recorded by a dry run; a positional has no option
    strings (as in argparse). `value`: what job.py's parse gave it, when known."""

    option_strings: list[str]
    dest: str
    action: str = "store"
    type: str | None = None
    default: Val = field(default_factory=lambda: Val(None, HIGH))
    choices: list | None = None
    required: bool = False
    nargs: Any = None
    const: Any = None
    line: int | None = None
    value: Any = None

    @property
    def positional(self) -> bool:
        return not self.option_strings

    @property
    def takes_value(self) -> bool:
        return self.action not in NO_VALUE_ACTIONS and self.nargs != 0

    @property
    def name(self) -> str:
        """The option's first long spelling, else its first spelling (a positional's: its dest)."""
        return next((o for o in self.option_strings if o.startswith("--")), (self.option_strings or [self.dest])[0])

    def to_dict(self) -> dict:
        """The config's flag record (`argparse.flags[]`): nargs only where the action does not imply it."""
        optional = {"choices": self.choices, "const": self.const}
        optional["nargs"] = None if self.nargs == 0 and self.action in NO_VALUE_ACTIONS else self.nargs
        return {
            "option_strings": list(self.option_strings),
            "dest": self.dest,
            "action": self.action,
            "type": self.type,
            "default": to_jsonable(self.default.value) if self.default.resolved else None,
            "default_confidence": self.default.confidence,
            "required": self.required,
            "takes_value": self.takes_value,
            "positional": self.positional,
            "line": self.line,
            "value": self.value,
        } | {key: to_jsonable(value) for key, value in optional.items() if value is not None}

    @classmethod
    def from_dict(cls, record: dict) -> Flag:
        """A Flag from its config record (`argparse.flags[]`, checked by `record_problem`)."""
        known = record.get("default_confidence") != UNRESOLVED
        default = Val(record.get("default") if known else None, HIGH if known else UNRESOLVED)
        keys = ("action", "type", "choices", "required", "nargs", "const", "line", "value")
        options = [] if record.get("positional") else list(record["option_strings"])  # a positional by its dest
        return cls(
            options, record["dest"], default=default, **{k: record[k] for k in keys if record.get(k) is not None}
        )


def record_problem(record: Any, parsing: bool = False) -> str | None:
    """What makes a config's flag record (`argparse.flags[]`) unusable, or None: the fields every reader relies on
    (`parsing`: only those the rebuilt parser needs)."""
    if not isinstance(record, dict):
        return "is not a mapping"
    options = record.get("option_strings")
    if not isinstance(options, list) or not all(isinstance(option, str) for option in options):
        return "option_strings must be a list of option names"
    if not isinstance(record.get("dest"), str):
        return "dest must be a name"
    if not parsing and not isinstance(record.get("takes_value"), bool):
        return "takes_value must be true or false"
    return None


def parser_from_config(config: dict) -> Parser:
    """The parser a config's `argparse` section records (no fromfile setting recorded: the conventional `@`)."""
    section = config.get("argparse") or {}
    records = section["flags"] if isinstance(section.get("flags"), list) else []
    flags = [Flag.from_dict(r) for r in records if record_problem(r, parsing=True) is None]
    return Parser(section.get("allow_abbrev", True), flags, section.get("fromfile_prefix_chars", DEFAULT_FROMFILE))


@dataclass(eq=False)
class Parser:
    allow_abbrev: bool = True
    flags: list[Flag] = field(default_factory=list)
    fromfile_prefix_chars: str | None = None  # argparse reads `@file` arguments from a file when set
    set_defaults: dict[str, Val] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    label: str = "ArgumentParser"
    changed: str = ""  # why code the reading does not follow may have changed its options (the parse is unknown)


@dataclass(eq=False)
class Namespace:
    parser: Parser
    values: dict[str, Val]
    label: str = "argparse.Namespace"


def _action_name(action: Any) -> str:
    if action is None:
        return "store"
    if known(action, str):
        return action.value
    return ACTION_NAMES.get(action.name, "custom") if isinstance(action, ClassRef) else "custom"


def _type_name(kind: Any) -> str | None:
    if kind is None:
        return None
    if isinstance(kind, Builtin) and kind.name in TYPES:
        return kind.name
    name = getattr(kind, "name", None) or getattr(kind, "label", None)
    return f"custom:{name}" if name else "custom"


def _typed_default(flag_type: str | None, default: Val) -> Val:
    """argparse converts string defaults with `type`; mirror that for the builtin types."""
    if default.resolved and isinstance(default.value, str) and flag_type in ("int", "float"):
        try:
            return Val(TYPES[flag_type](default.value), default.confidence, default.expr, default.flags)
        except ValueError:
            return default
    return default


def add_argument(parser: Parser, args: list[Any], kwargs: dict[str, Any], line: int) -> None:
    """Record one `add_argument` call; option strings that are not literal strings are a parser problem."""
    options = [a.value for a in args if known(a, str)]
    if not options or len(options) != len(args):
        parser.problems.append(f"line {line}: add_argument with non-literal option strings")
        return
    action = _action_name(kwargs.get("action"))
    if action == "boolean_optional":
        options = options + [f"--no-{o[2:]}" for o in options if o.startswith("--")]
    flag_type = _type_name(kwargs.get("type"))
    implied = ACTIONS[action] if action in IMPLIED else None  # a switch's implied const and default
    default = _data(kwargs.get("default")) or Val(implied.default if implied else None, HIGH)
    positional = not options[0].startswith("-")  # argparse keeps its one name as the dest, verbatim
    flag = Flag(
        option_strings=[] if positional else options,
        dest=options[0] if positional else "",
        action=action,
        type=flag_type,
        default=_typed_default(flag_type, default),
        choices=_choices(kwargs.get("choices")),
        required=bool(_literal(kwargs.get("required"), False)),
        nargs=_literal(kwargs.get("nargs"), None),
        const=_literal(kwargs.get("const"), implied.const if implied else None),
        line=line,
    )
    dest = _literal(kwargs.get("dest"), None)  # else argparse's: the first long option (or the first), as a name
    flag.dest = dest if isinstance(dest, str) else flag.dest or flag.name.lstrip("-").replace("-", "_")
    parser.flags.append(flag)


def _choices(choices: Any) -> list | None:
    if not known(choices, (list, tuple, set, range)):
        return None
    return sorted(choices.value, key=repr) if isinstance(choices.value, set) else list(choices.value)


def _data(value: Any) -> Val | None:
    if value is None:
        return None
    return value if isinstance(value, Val) else Val(None, UNRESOLVED, reason="not a data value", inputs=drawn(value))


def _literal(value: Any, fallback: Any) -> Any:
    return value.value if isinstance(value, Val) and value.resolved else fallback


def first_by_dest(flags: Iterable[Flag]) -> dict[str, str]:
    """{dest: option name} in declaration order: a dest several options share is named by the first one declared,
    the option whose default argparse gives it."""
    out: dict[str, str] = {}
    for flag in flags:
        out.setdefault(flag.dest, flag.name)
    return out


MAX_COUNT = 1000  # occurrences of a count option that may stand for a value (each is a command-line token)
NEGATIVE = re.compile(r"-\d+|-\d*\.\d+")  # a text argparse reads as a value, not an option (no option looks like it)


def arguments(flag: Flag, value: Any, option: str | None = None) -> list[str] | None:
    """The command-line tokens, `option` (the flag's name by default) spelled, that make job.py's parser set `flag`
    to `value`, or None when none do: a switch's value of its kind (True is not 1), a count of at most MAX_COUNT
    occurrences; an `append` option's value after the default list it extends."""
    option, default = option or flag.name, flag.default.value if flag.default.resolved else None
    if flag.takes_value:
        if flag.action == "append" and isinstance(value, list):
            if isinstance(default, list) and value[: len(default)] == default:
                value = value[len(default) :]
            uses = [_use(option, item) for item in value]
            return None if None in uses else [token for use in uses for token in use]
        return _use(option, value)
    if flag.action in ("boolean_optional", "store_true", "store_false") and type(value) is not bool:
        return None
    if flag.action == "boolean_optional":
        return [option if value else "--no-" + option[2:]]
    if flag.action in ("store_true", "store_false"):
        return [option] if (flag.action == "store_true") == value else []
    if flag.action == "count" and type(value) is int and type(default or 0) is int:
        added = value - (default or 0)  # each occurrence adds one to the default
        return [option] * added if 0 <= added <= MAX_COUNT else None
    if flag.action == "store_const":
        return [option] if _same(value, flag.const) else ([] if _same(value, default) else None)
    return None


def _use(option: str, value: Any) -> list[str] | None:
    """One use of a value-taking option giving it `value` (a list: one text per value). A text starting with `-`,
    which argparse would take for an option, is written into the token: `--opt=-x`, `-n-x` (argparse's form of a
    one-letter option). Several values cannot be written so: None unless each such text is a negative number."""
    texts = [_text(item) for item in (value if isinstance(value, list) else [value])]
    if not any(text.startswith("-") for text in texts):
        return [option, *texts]
    if len(texts) == 1:
        return [option + texts[0] if len(option) == 2 else f"{option}={texts[0]}"]
    return [option, *texts] if all(NEGATIVE.fullmatch(t) for t in texts if t.startswith("-")) else None


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _same(left: Any, right: Any) -> bool:
    """Equal and both bools or neither (`True == 1` in Python, not in job.py's arguments)."""
    return left == right and (type(left) is bool) == (type(right) is bool)


def _required(flag: Flag) -> bool:
    return flag.required or (flag.positional and flag.nargs not in ("?", "*"))


def _missing(flag: Flag) -> Val:
    return Val(None, UNRESOLVED, flags=(flag.name,), reason=f"{flag.name} is required on the command line")


def build_namespace(parser: Parser, overrides: dict[str, Any]) -> Namespace:
    """The namespace `parse_args()` returns: defaults, then set_defaults, then `--base-args` overrides. A `dest`
    several options share is the first declared option's (its default and name); a later sharing option that is
    required and not given leaves it unread."""
    values: dict[str, Val] = {}
    for flag in parser.flags:
        if flag.action in ("help", "version"):
            continue
        if flag.dest in values:
            if _required(flag) and flag.dest not in overrides:
                values[flag.dest] = _missing(flag)
            continue
        source = flag.name
        custom = (flag.type or "").startswith("custom")
        if flag.dest in overrides:
            value = overrides[flag.dest]
            values[flag.dest] = Val(value, MEDIUM if custom and isinstance(value, str) else HIGH, flags=(source,))
        elif flag.dest in parser.set_defaults:
            base = parser.set_defaults[flag.dest]
            values[flag.dest] = replace(base, flags=(source, *base.flags), parts=())
        elif _required(flag):
            values[flag.dest] = _missing(flag)
        else:
            d = flag.default
            conf = weakest(d.confidence, MEDIUM) if custom and isinstance(d.value, str) else d.confidence
            values[flag.dest] = replace(d, confidence=conf, flags=(source, *d.flags), parts=())  # keeps env:NAME tags
    for dest, val in parser.set_defaults.items():
        values.setdefault(dest, val)
    return Namespace(parser, values)


def namespace_attribute(namespace: Namespace, attr: str) -> Val:
    if attr in namespace.values:
        return namespace.values[attr]
    return Val(None, UNRESOLVED, f"args.{attr}", reason=f"the parser defines no argument with dest '{attr}'")


def fromfile_prefix(chars: Any) -> str | None:
    """The `fromfile_prefix_chars=` of an ArgumentParser call as the importer records it (None when absent)."""
    if chars is None:
        return None
    return (chars.value or None) if known(chars, (str, type(None))) else UNKNOWN_FROMFILE


def fromfile_tokens(chars: str | None, tokens: list[str]) -> list[str]:
    """The tokens argparse would replace by the lines of a file (`fromfile_prefix_chars`)."""
    return [token for token in tokens if chars and token and token[0] in chars]


PARSE_METHODS = ("parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args")


def uses_argparse(stmt: ast.ClassDef) -> bool:
    """True when the class calls `ArgumentParser` or a parse method (by attribute or by name)."""
    called = (last_name(n.func) for n in ast.walk(stmt) if isinstance(n, ast.Call))
    return any(name in ("ArgumentParser", *PARSE_METHODS) for name in called)
