"""Write the best's run arguments into job.py's argparse defaults, on the user's request (`status
--write-best-defaults`), so a plain `python job.py` reruns the best configuration.

Pure core (`rewrite`): each `--option value` of the run args becomes the `default=` of job.py's own
`add_argument("--option", ...)`, converted by its `type=` (int, float, str; none: str); everything else in the file
stays byte for byte. Refused, with the reason: an option job.py does not define, a switch (`store_true` and other
actions), a value its type cannot take, a file that does not parse. Shell (`write`): only after the campaign
finished (job.py must match the best snapshot while candidates run), job.py copied to
`.nvflare/autofl/backups/job.py.<time>` first, then replaced atomically. Usage::

    text, defaults = rewrite(source, ["--lr", "0.2"])   # JobDefaultsError with the reason when it cannot
    written = write(campaign, now)                       # {"job", "backup", "defaults"}
"""

from __future__ import annotations

import ast
import os
import stat

from ..common import atomic
from ..importer.files import UNPARSABLE
from .outcome import CampaignError

MAX_JOB_BYTES = 4 * 1024 * 1024
TYPES = {"int": int, "float": float, "str": str}


class JobDefaultsError(ValueError):
    """The run args cannot become job.py's defaults (the message says why)."""


def pairs(run_args: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) in order; `--opt=value` split; an option followed by another option (or nothing) is a
    switch (value None)."""
    found, index = [], 0
    while index < len(run_args):
        token = run_args[index]
        if not token.startswith("-"):
            raise JobDefaultsError(f"{token!r} is not an option; the run args must be --option value pairs")
        if "=" in token:
            option, value = token.split("=", 1)
            found.append((option, value))
            index += 1
        elif index + 1 < len(run_args) and not _is_option(run_args[index + 1]):
            found.append((token, run_args[index + 1]))
            index += 2
        else:
            found.append((token, None))
            index += 1
    return found


def rewrite(source: bytes, run_args: list[str]) -> tuple[bytes, dict[str, str]]:
    """job.py's source with each run arg as its option's default, and {option: default literal} written."""
    try:
        tree = ast.parse(source)
    except UNPARSABLE as error:
        raise JobDefaultsError(f"job.py does not parse ({error or 'nested too deeply'})") from None
    calls = _add_argument_calls(tree)
    edits, written = [], {}
    for option, value in pairs(run_args):
        call = calls.get(option)
        if call is None:
            raise JobDefaultsError(f"job.py defines no add_argument({option!r}); keep {option} in the command")
        literal = _literal(call, option, value)
        keyword = next((k for k in call.keywords if k.arg == "default"), None)
        if keyword is not None:
            edits.append((_offset(source, keyword.value, start=True), _offset(source, keyword.value), literal))
        else:
            last = (call.args + call.keywords)[-1]
            end = _offset(source, last.value if isinstance(last, ast.keyword) else last)
            edits.append((end, end, ", default=" + literal))
        written[option] = literal
    text = source
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new.encode() + text[end:]
    ast.parse(text)  # the edit keeps the file valid Python (a failure here is a bug, not the user's)
    return text, written


def _is_option(token: str) -> bool:
    if not token.startswith("-"):
        return False
    try:
        float(token)  # a negative number is a value
    except ValueError:
        return True
    return False


def _add_argument_calls(tree: ast.AST) -> dict[str, ast.Call]:
    """Option string -> its `add_argument` call (the last definition wins, as argparse conflicts aside)."""
    calls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                    calls[arg.value] = node
    return calls


def _literal(call: ast.Call, option: str, value: str | None) -> str:
    """The Python literal of `value` as the option's type converts it."""
    action = next((k.value for k in call.keywords if k.arg == "action"), None)
    if value is None or action is not None:
        what = ast.unparse(action) if action is not None else "a switch"
        raise JobDefaultsError(
            f"{option} is {what}: argparse cannot default it on and still turn it off; keep {option} in the command"
        )
    kind = next((k.value for k in call.keywords if k.arg == "type"), None)
    name = kind.id if isinstance(kind, ast.Name) else None if kind is None else ast.unparse(kind)
    if name is not None and name not in TYPES:
        raise JobDefaultsError(f"{option} has type={name}; only int, float and str defaults are written")
    try:
        converted = TYPES[name or "str"](value)
    except ValueError:
        raise JobDefaultsError(f"{option}: {value!r} is not a valid {name}") from None
    return repr(converted)


def _offset(source: bytes, node: ast.AST, *, start: bool = False) -> int:
    """Byte offset of a node's start or end (ast columns are UTF-8 byte offsets)."""
    line, column = (node.lineno, node.col_offset) if start else (node.end_lineno, node.end_col_offset)
    lines = source.splitlines(keepends=True)
    return sum(len(text) for text in lines[: line - 1]) + column


def write(campaign, state: dict, now: str) -> dict:
    """Back job.py up and write the best's run args as its defaults (refused while the campaign runs)."""
    if not state["final_response_allowed"]:
        raise CampaignError(
            "--write-best-defaults writes job.py only after the campaign has finished (job.py must match the best "
            "snapshot while candidates run); run it after the final report"
        )
    run_args = campaign.best_run_args()
    if not run_args:
        raise CampaignError("the best takes no run arguments of its own: job.py already reruns it; nothing to write")
    job = campaign.paths.job
    info = os.lstat(job)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_JOB_BYTES:
        raise CampaignError(f"{job} is not a regular file of at most 4 MiB; write the defaults by hand")
    source = job.read_bytes()
    try:
        text, written = rewrite(source, run_args)
    except JobDefaultsError as error:
        raise CampaignError(f"cannot write the best's run args into job.py: {error}") from None
    backup = campaign.paths.meta / "backups" / f"{job.name}.{now.replace(':', '')}"
    atomic.write_bytes(backup, source)
    atomic.write_bytes(job, text)
    return {"job": str(job), "backup": str(backup), "defaults": written}
