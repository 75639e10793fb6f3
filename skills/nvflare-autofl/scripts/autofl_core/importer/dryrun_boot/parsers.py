"""The options of job.py's own argparse parsers, as each parse saw them (a parse by NVFLARE's code is not job.py's).

`record_parsers` makes every parse note its parser and the values it gave, and a parser's error its message;
`parser_record` writes one parser's actions as the record's `parsers[]` entry.
"""

from __future__ import annotations

import argparse

from .frames import called_from_nvflare
from .records import plain
from .state import STATE


def record_parsers() -> None:
    """Wrap argparse's `parse_known_args` and `error` to note job.py's parsers and its parser's error."""
    original, original_error = argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.error

    def parse_known_args(self, args=None, namespace=None):
        result = original(self, args, namespace)
        if self not in [p for p, _ in STATE.parsers] and not called_from_nvflare():
            STATE.parsers.append((self, vars(result[0]).copy()))
        return result

    def error(self, message):
        if not called_from_nvflare():  # job.py's parser rejects its arguments: say why in the record
            STATE.parser_error = f"{self.prog}: error: {message}"[:500]
        return original_error(self, message)

    argparse.ArgumentParser.parse_known_args = parse_known_args
    argparse.ArgumentParser.error = error


def parser_record(parser: argparse.ArgumentParser, values: dict) -> dict:
    """One parser's record: its settings and its actions (but help), each with the value the parse gave."""
    actions = [_action_record(a, values) for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    return dict(allow_abbrev=parser.allow_abbrev, fromfile_prefix_chars=parser.fromfile_prefix_chars, actions=actions)


def _action_record(action: argparse.Action, values: dict) -> dict:
    return {
        **{field: plain(getattr(action, field)) for field in ("option_strings", "dest", "default", "nargs", "const")},
        "action": type(action).__name__,
        "type": getattr(action.type, "__name__", None) if action.type else None,
        "choices": plain(list(action.choices)) if action.choices is not None else None,
        "required": bool(action.required),
        "value": plain(values.get(action.dest)),
    }
