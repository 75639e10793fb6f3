"""Value types of the static importer: `Val(value, confidence)` is data (high / medium / unresolved), with
`flags`, the job options and `env:NAME` variables it depends on, and an unresolved value's `inputs`, the run-time
inputs behind it (`inputs.Input`); ModuleRef, ClassRef, Builtin and Bag stand for modules, callables, builtins and
containers of non-data items.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from .inputs import DRAWN, NO_INPUTS, Input

HIGH = "high"
MEDIUM = "medium"
PINNED = "pinned"  # budget only: computed from job options the runner pins in every trial (see budget.py)
UNRESOLVED = "unresolved"
_RANK = {HIGH: 2, MEDIUM: 1, UNRESOLVED: 0}
ENV_PREFIX = "env:"
MAX_ITEMS = 10_000
MAX_STR = 100_000  # cap on the deep size (characters + items) of any evaluated value


@dataclass(frozen=True)
class Val:
    """A data value the importer could (or could not) determine."""

    value: Any = None
    confidence: str = UNRESOLVED
    expr: str = ""
    flags: tuple[str, ...] = ()
    reason: str = ""
    parts: tuple = ()  # f-strings only: ((text, flags), ...) so forwarded train_args can be traced per option
    inputs: frozenset[Input] = NO_INPUTS  # unresolved only: the run-time inputs it rests on

    @property
    def resolved(self) -> bool:
        return self.confidence != UNRESOLVED


@dataclass(eq=False)
class ModuleRef:
    qualname: str


@dataclass(eq=False)
class ClassRef:
    """A callable known by name (class or function from an import, or a local class with its bases)."""

    name: str
    qualname: str
    dynamic: bool = False
    candidates: tuple[str, ...] = ()
    bases: tuple = ()  # local classes: the ClassRefs of their bases
    defines_init: bool = False  # local classes: own constructor, or a base not read (targets.own_constructor)


@dataclass(eq=False)
class Builtin:
    name: str


@dataclass(eq=False)
class Bag:
    """A container holding non-data items (objects, classes, namespaces)."""

    items: list = field(default_factory=list)
    keys: list | None = None
    key_flags: tuple[str, ...] = ()  # job options the keys depend on (a dict comprehension over range(args.n))
    key_confidence: str = HIGH


def known(val: Any, kind: type | tuple[type, ...] = object) -> bool:
    """True when `val` is a data value the importer determined (and its value is a `kind`)."""
    return isinstance(val, Val) and val.resolved and isinstance(val.value, kind)


def deep_size(value: Any) -> int:
    """Characters plus items of `value`, counting shared references each time; stops early above MAX_STR."""
    total, stack = 0, [value]
    while stack and total <= MAX_STR:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (dict, list, tuple, set, frozenset)):
            total += len(item)
            stack.extend([*item, *item.values()] if isinstance(item, dict) else item)
        else:
            total += 1
    return total


def weakest(*confidences: str) -> str:
    return min(confidences, key=lambda c: _RANK[c]) if confidences else HIGH


def unresolved(node: ast.AST, reason: str, flags: tuple[str, ...] = (), inputs: frozenset[Input] = NO_INPUTS) -> Val:
    return Val(None, UNRESOLVED, source_text(node), flags, reason, inputs=inputs)


def unresolved_from(
    node: ast.AST, why: str, *vals: Any, flags: tuple[str, ...] | None = None, kinds: frozenset[Input] = NO_INPUTS
) -> Val:
    """Unresolved because of `vals`: the first undetermined one's reason and run-time inputs (else `why` and
    `kinds`), with the flags of all of them (or `flags`)."""
    flags = merge_flags(*vals) if flags is None else flags
    first = _first_undetermined(vals)
    return unresolved(
        node, cause(first) or why, flags, (inputs_of(first) if first is not None else kinds) | drawn(*vals)
    )


def source_text(node: ast.AST, limit: int = 200) -> str:
    try:
        text = ast.unparse(node)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return "<expression>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def merge_flags(*vals: Any) -> tuple[str, ...]:
    """The flags of all data values among `vals`, each once, in order (a parser's `flags` are its options)."""
    return tuple(dict.fromkeys(flag for val in vals if isinstance(val, Val) for flag in val.flags))


def option_flags(flags: tuple[str, ...] | list[str]) -> list[str]:
    """The job options among a value's inputs (environment tags left out)."""
    return [f for f in flags if not f.startswith(ENV_PREFIX)]


def _first_undetermined(vals: tuple) -> Any:
    """The first value among `vals` that is no data: an unresolved value, or an object standing for a call's result."""
    return next((v for v in vals if (not v.resolved if isinstance(v, Val) else hasattr(v, "origin"))), None)


def cause(*vals: Any) -> str:
    """Why the first undetermined input among `vals` is undetermined, naming that input ("" if all are data)."""
    first = _first_undetermined(vals)
    if isinstance(first, Val):
        return first.reason or "not resolved statically"
    return "" if first is None else first.origin


def inputs_of(*vals: Any) -> frozenset[Input]:
    """The run-time inputs `cause` names: the first undetermined value's (an object's, its call's), and every
    draw or clock read among `vals` (`drawn`)."""
    return getattr(_first_undetermined(vals), "inputs", NO_INPUTS) | drawn(*vals)


def drawn(*vals: Any) -> frozenset[Input]:
    """The random draws and clock reads behind any of `vals`, an object's through its arguments and a container's
    through its items (each value visited once): one run pins none of them, whichever input a refusal names (the
    environment and files are left to the input named, which perturbed runs and the files read judge)."""
    found, seen, todo = set(), set(), list(vals)
    while todo:
        val = todo.pop()
        if id(val) in seen:
            continue
        seen.add(id(val))
        if hasattr(val, "call_inputs"):  # an object standing for a call's result (`events.Obj`)
            found |= val.call_inputs & DRAWN
            todo += [*val.args, *val.kwargs.values()]
        elif isinstance(val, Bag):
            todo += val.items
        else:
            found |= getattr(val, "inputs", NO_INPUTS) & DRAWN
    return frozenset(found)


def to_jsonable(value: Any) -> Any:
    """Convert an evaluated value into plain JSON/YAML data (stable order, finite floats)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return repr(value) if isinstance(value, slice) else value


def describe(val: Any) -> dict:
    """The `{value, confidence}` record of a constructor argument (plus `expr` when not a literal)."""
    if isinstance(val, Val):
        value = to_jsonable(val.value) if val.resolved else None
        extra = {"expr": val.expr, "flags": option_flags(val.flags), "reason": "" if val.resolved else val.reason}
        return {"value": value, "confidence": val.confidence, **{k: v for k, v in extra.items() if v}}
    label = getattr(val, "label", None) or type(val).__name__
    return {"value": None, "confidence": UNRESOLVED, "expr": label, "reason": "an object, not a data value"}


def holds(value: Any, held: Any, depth: int = 0) -> bool:
    """True when `value` is the container `held` or holds it (bounded depth)."""
    if depth > 8:
        return False
    if value is held:
        return True
    if isinstance(value, Val):
        inner = [value.value]
    elif isinstance(value, Bag):
        inner = value.items
    elif isinstance(value, (list, tuple, set, dict)):
        inner = value.values() if isinstance(value, dict) else value
    else:
        return False
    return any(holds(item, held, depth + 1) for item in inner)


MUTATORS = {  # the methods that change a list, dict or set in place
    list: {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"},
    dict: {"update", "pop", "setdefault", "clear", "popitem"},
    set: {"add", "update", "discard", "remove", "pop", "clear"},
}


def elements(value: Any) -> list | None:
    """The items of a known sequence: a Bag's (a keyed Bag's keys, as iterating a dict yields), or a resolved list's
    or tuple's (each with the sequence's confidence, expression and flags); None for anything else."""
    if isinstance(value, Bag) and value.keys is not None:
        return [Val(key, value.key_confidence, flags=value.key_flags) for key in value.keys]
    if isinstance(value, Bag):
        return list(value.items)
    if isinstance(value, Val) and value.resolved and isinstance(value.value, (list, tuple)):
        return [Val(item, value.confidence, value.expr, value.flags) for item in value.value]
    return None


def mutator_of(base: Any, attr: str) -> bool:
    """True when `attr` of `base` is a method that changes it in place (`vars(args).update`, `sites.append`)."""
    held = base.value if isinstance(base, Val) and base.resolved else base
    kinds = (dict, list) if isinstance(held, Bag) else (type(held),)
    return any(attr in MUTATORS.get(kind, ()) for kind in kinds)
