"""The environment variables job.py reads, and the strings its code compares their values with.

`record_env_reads` makes `os.environ[...]` (and so `.get` and `getenv`) note each variable job.py or a module beside
it reads, and hand it a `_Noted` string: comparisons, lookups by hash and the str methods that keep the variable's
value note the strings job.py compares it with (`env_compared`), for `moves.moving_env` to try.
"""

from __future__ import annotations

import dis
import functools
import inspect
import os
import sys

from .frames import from_job
from .state import STATE

OS_FILES = (os.__file__, os.getenv.__code__.co_filename)  # the second is "<frozen os>" where os is frozen
UNPACKS = ("DICT_UPDATE", "DICT_MERGE", "SET_UPDATE", "LIST_EXTEND")  # `{**x}`, `{*x}`, `[*x]` inside a literal
CONTAINERS = (dict, set, frozenset, tuple, list)  # whose string members a lookup by hash may match
UNSEEN = "\0"  # noted for a variable hashed where the lookup shows no string: `moves.moving_env` refuses it
LOADS = {"LOAD_CONST": "const", "LOAD_ATTR": "attr", "LOAD_METHOD": "attr"}  # other LOAD_s of a name: "name"
MAX_COMPARED = 8  # strings noted per variable (`_Noted`): more than moves.MAX_ENV_RUNS tries, so one past it refuses


def record_env_reads() -> None:
    """Note every environment variable job.py (or a module beside it) reads: `os.environ[...]`, `.get`, `getenv`;
    the value it gets is a `_Noted` string."""
    original = os._Environ.__getitem__

    def getitem(self, key):
        job = STATE.in_job and from_job(lambda name: name in OS_FILES or "_collections_abc" in name)
        name = key.decode(errors="replace") if isinstance(key, bytes) else str(key)
        if job:
            STATE.env_read.add(name)
        value = original(self, key)
        return _Noted(value, name) if job and type(value) is str else value

    os._Environ.__getitem__ = getitem


class _Noted(str):
    """An environment variable's value as job.py gets it: the strings job.py's code compares it with are noted in
    `env_compared`, so a further run can set the variable to one of them (`moves.moving_env`)."""

    def __new__(cls, value: str, variable: str = ""):
        noted = super().__new__(cls, value)
        noted.variable = variable
        return noted

    def _note(self, *others) -> None:
        if not STATE.in_job or not from_job(lambda name: False):
            return
        kept = STATE.env_compared.setdefault(self.variable, [])
        for other in others:
            if isinstance(other, str) and str(other) not in kept and len(kept) < MAX_COMPARED:
                kept.append(str(other))

    def __hash__(self):  # a dict or set lookup compares the members only on a hash match: note them all
        if STATE.in_job and from_job(lambda name: False):
            self._note(*(_keys_at(sys._getframe(1), self.variable) or [UNSEEN]))
        return str.__hash__(self)


def _comparing(method):
    """`method` of str noting the string job.py compares the value with (each of `startswith`'s tuple)."""

    def compare(self, other, *bounds):
        self._note(*(other if isinstance(other, tuple) and method in (str.startswith, str.endswith) else (other,)))
        return method(self, other, *bounds)

    return compare


def _keeps_noting(method):
    """`method` of str giving `_Noted` strings of the same variable (`lower()`, `strip()`, `split()`, ...)."""

    def kept(self, *args, **kwargs):
        value = method(self, *args, **kwargs)
        return [_Noted(v, self.variable) for v in value] if type(value) is list else _Noted(value, self.variable)

    return kept


for _name in ("__eq__", "__ne__", "__contains__", "startswith", "endswith"):
    setattr(_Noted, _name, _comparing(getattr(str, _name)))


for _name in "lower upper casefold strip lstrip rstrip title capitalize removeprefix split".split():
    setattr(_Noted, _name, _keeps_noting(getattr(str, _name)))


def _keys_at(frame, variable: str) -> list[str]:
    """The strings a lookup by hash at `frame`'s instruction may match: the string constants of the expression it
    runs (`x in {"fast"}`, `{"fast": 2}[x]`) and the string keys of the dicts, sets and sequences its names and their
    attributes hold (`ROUNDS.get(x)`, `x in Modes.quick`) and the attribute names of the classes they are
    (`getattr(Plans, x)`), but the variable's own name; [] when it shows none, UNSEEN among them when the
    expression unpacks a container into another (`{**table}`: keys it does not show)."""
    found, held = [], None
    for kind, value in _loads(frame.f_code, frame.f_lasti):
        if kind == "unseen":
            found.append(UNSEEN)
            continue
        if kind == "const":
            held = value
        elif kind == "name":
            held = frame.f_locals.get(value, frame.f_globals.get(value))
        else:  # an attribute of what was loaded before it, as stored (no property or __getattr__ runs)
            held = inspect.getattr_static(held, value, None) if held is not None else None
        # a class's own attributes, as stored (no __getattr__ runs)
        members = [name for name in vars(held) if not name.startswith("__")] if isinstance(held, type) else held
        items = [members] if isinstance(members, str) else members if isinstance(members, CONTAINERS) else ()
        found += [item for item in list(items)[:64] if isinstance(item, str) and item != variable]
    return found


@functools.cache
def _loads(code, offset: int) -> list[tuple[str, object]]:
    """What the instructions inside the expression of the instruction at `offset` load: constants, names, attributes,
    and "unseen" for a container a call made unpacked into another (`{**dict(fast=2)}`)."""
    instructions = list(dis.get_instructions(code))
    at = next((i.positions for i in instructions if i.offset == offset), None)
    if at is None or None in (at.lineno, at.end_lineno):
        return []
    start, end = (at.lineno, at.col_offset or 0), (at.end_lineno, at.end_col_offset or 1 << 30)
    out, after_call = [], False
    for i in instructions:
        unseen, after_call = i.opname in UNPACKS and after_call, i.opname.startswith("CALL")
        where = i.positions
        if where is None or None in (where.lineno, where.end_lineno):
            continue
        if start <= (where.lineno, where.col_offset or 0) and (where.end_lineno, where.end_col_offset or 0) <= end:
            kind = "unseen" if unseen else LOADS.get(i.opname)
            kind = kind or ("name" if i.opname.startswith("LOAD_") and isinstance(i.argval, str) else None)
            if kind is not None:
                out.append((kind, i.argval))
    return out
