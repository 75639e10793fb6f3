"""In-place changes of data containers (`clients.append(...)`, `cfg["rounds"] = 5`) seen statically.

Values are never mutated: a change builds a new container and every live reference to the old one (names in
any live frame, namespace attributes, containers of objects) is replaced by it, so aliases and callers see the
change like Python would, and the fork walker can snapshot frames without sharing state between branches.
A change the importer cannot compute replaces the container with an unresolved value naming the line.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from .values import MAX_STR, MEDIUM, Bag, Val, deep_size, merge_flags, unresolved, weakest

MUTATORS = {
    list: {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"},
    dict: {"update", "pop", "setdefault", "clear", "popitem"},
    set: {"add", "update", "discard", "remove", "pop", "clear"},
}
_UNORDERED = {(set, "pop")}  # which item set.pop() returns is not known statically


def is_mutation(base: Any, method: str) -> bool:
    return isinstance(base, Val) and base.resolved and method in MUTATORS.get(type(base.value), ())


def mutate(walker: Any, base: Val, method: str, args: list, kwargs: dict, node: ast.Call) -> Val:
    """Apply `base.<method>(...)`; rebinds every reference to the container; returns the call's result."""
    inputs = [*args, *kwargs.values()]
    flags = merge_flags(base, *inputs) + tuple(walker.control)
    reason = f"changed by .{method}() at line {node.lineno} with a value the importer cannot determine"
    if (type(base.value), method) in _UNORDERED or not all(isinstance(v, Val) and v.resolved for v in inputs):
        replace(walker, base.value, unresolved(node, reason, flags))
        return unresolved(node, reason)
    changed = copy.copy(base.value)
    try:
        result = getattr(changed, method)(*(a.value for a in args), **{k: v.value for k, v in kwargs.items()})
    except (TypeError, ValueError, KeyError, IndexError):
        replace(walker, base.value, unresolved(node, f".{method}() at line {node.lineno} would fail", flags))
        return unresolved(node, f".{method}() would fail")
    if deep_size(changed) > MAX_STR:
        replace(walker, base.value, unresolved(node, "container too large", flags))
        return unresolved(node, "container too large")
    confidence = weakest(MEDIUM, base.confidence, *(v.confidence for v in inputs))
    replace(walker, base.value, Val(changed, confidence, base.expr, _unique(flags)))
    return Val(result, confidence, "", _unique(flags))


def assign_item(walker: Any, target: ast.Subscript, value: Any) -> None:
    """`container[key] = value` (and `del container[key]` when value is None)."""
    base, key = walker.ev(target.value), walker.ev(target.slice)
    line = target.lineno
    if isinstance(base, Bag):
        _assign_bag_item(walker, base, key, value, line)
        return
    if not (isinstance(base, Val) and base.resolved and isinstance(base.value, (list, dict))):
        return  # not a container the importer tracks
    inputs = [key] + ([value] if value is not None else [])
    flags = _unique(merge_flags(base, *inputs) + tuple(walker.control))
    if not all(isinstance(v, Val) and v.resolved for v in inputs):
        replace(walker, base.value, unresolved(target, f"item set at line {line} is not resolved", flags))
        return
    changed = copy.copy(base.value)
    try:
        if value is None:
            del changed[key.value]
        else:
            changed[key.value] = value.value
    except (TypeError, KeyError, IndexError):
        replace(walker, base.value, unresolved(target, f"item assignment at line {line} would fail", flags))
        return
    confidence = weakest(MEDIUM, base.confidence, *(v.confidence for v in inputs))
    replace(walker, base.value, Val(changed, confidence, base.expr, flags))


def _assign_bag_item(walker: Any, bag: Bag, key: Any, value: Any, line: int) -> None:
    items, keys = list(bag.items), (list(bag.keys) if bag.keys is not None else None)
    known = isinstance(key, Val) and key.resolved
    if not known:
        replace(walker, bag, unresolved(None, f"item set at line {line} is not resolved"))
        return
    if keys is None:
        if not (isinstance(key.value, int) and -len(items) <= key.value < len(items)):
            replace(walker, bag, unresolved(None, f"item assignment at line {line} would fail"))
            return
        items[key.value] = value
    elif key.value in keys:
        items[keys.index(key.value)] = value
    else:
        keys.append(key.value)
        items.append(value)
    replace(walker, bag, Bag(items, keys))


def replace(walker: Any, old: Any, new: Any) -> None:
    """Point every live reference to container `old` (a Val's value, or a Bag) at `new`."""
    stale = unresolved(None, "it held a container that was changed later in job.py")
    for frame in walker.live_frames() + [ns.values for ns in walker.out.namespaces]:
        for name, current in list(frame.items()):
            updated = _updated(current, old, new, stale)
            if updated is not current:
                frame[name] = updated
    for obj in walker.out.objects:  # an object keeps a reference to what it was given
        obj.args = [_updated(a, old, stale, stale) for a in obj.args]
        obj.kwargs = {k: _updated(v, old, stale, stale) for k, v in obj.kwargs.items()}


def _updated(current: Any, old: Any, new: Any, stale: Val) -> Any:
    if current is old or (isinstance(current, Val) and current.value is old):
        return new
    if isinstance(current, Val) and _contains(current.value, old):
        return Val(None, stale.confidence, current.expr, current.flags, stale.reason)
    if isinstance(current, Bag) and any(_updated(i, old, new, stale) is not i for i in current.items):
        return Bag([_updated(i, old, new, stale) for i in current.items], current.keys)
    return current


def _contains(value: Any, old: Any, depth: int = 0) -> bool:
    if depth > 8 or not isinstance(value, (list, tuple, dict, set)):
        return False
    children = list(value.values()) if isinstance(value, dict) else list(value)
    return any(child is old or _contains(child, old, depth + 1) for child in children)


def _unique(flags: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(flags))
