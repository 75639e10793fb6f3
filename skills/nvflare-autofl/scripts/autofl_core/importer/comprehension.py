"""List, set, dict comprehensions and generator expressions over statically known sequences.

`[f"site-{i + 1}" for i in range(args.n_clients)]` evaluates to the list with the flags of everything that
decides it (the iterable, the `if` filters and the element), so a client list built from an argument is pinned
by that argument. An iterable or filter the importer cannot determine makes the result unresolved with that
input's reason. Item count and steps are bounded.
"""

from __future__ import annotations

import ast
from typing import Any

from .values import (
    MAX_ITEMS,
    MAX_STR,
    MEDIUM,
    Bag,
    Val,
    cause,
    deep_size,
    merge_flags,
    source_text,
    unresolved,
    weakest,
)


class _Unresolved(Exception):
    def __init__(self, reason: str, flags: tuple = ()):
        super().__init__(reason)
        self.reason, self.flags = reason, flags


def evaluate(walker: Any, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Any:
    """The value of a comprehension, evaluated in its own scope on top of the walker's scopes."""
    produced: list[tuple[Any, Any]] = []
    deciding: list[Any] = []
    saved = walker.scopes
    walker.scopes = [{}, *saved]
    try:
        _generate(walker, node, 0, produced, deciding)
    except _Unresolved as exc:
        return unresolved(node, exc.reason, exc.flags)
    finally:
        walker.scopes = saved
    return _result(node, produced, deciding)


def _generate(walker: Any, node: Any, level: int, produced: list, deciding: list) -> None:
    if level == len(node.generators):
        if isinstance(node, ast.DictComp):
            produced.append((walker.ev(node.key), walker.ev(node.value)))
        else:
            produced.append((None, walker.ev(node.elt)))
        if len(produced) > MAX_ITEMS:
            raise _Unresolved("comprehension too large")
        return
    gen = node.generators[level]
    if gen.is_async:
        raise _Unresolved("async comprehensions are not evaluated statically")
    iterable = walker.ev(gen.iter)
    deciding.append(iterable)
    for item in _items(iterable, gen.iter):
        walker.tick()
        walker.bind(gen.target, item)
        if _passes(walker, gen.ifs, deciding):
            _generate(walker, node, level + 1, produced, deciding)


def _items(iterable: Any, node: ast.AST) -> list:
    if isinstance(iterable, Bag):
        return list(iterable.items)
    if not (isinstance(iterable, Val) and iterable.resolved):
        raise _Unresolved(
            f"it iterates over {source_text(node)}: {cause(iterable) or 'not a data value'}", merge_flags(iterable)
        )
    value = iterable.value
    if isinstance(value, dict):
        value = list(value)
    if not isinstance(value, (list, tuple, str)):
        raise _Unresolved(f"the iteration order of {source_text(node)} is not known statically", iterable.flags)
    return [Val(v, iterable.confidence, "", iterable.flags) for v in value]


def _passes(walker: Any, conditions: list[ast.expr], deciding: list) -> bool:
    for condition in conditions:
        test = walker.ev(condition)
        deciding.append(test)
        if not (isinstance(test, Val) and test.resolved):
            raise _Unresolved(f"its filter {source_text(condition)} is not resolved: {cause(test)}", merge_flags(test))
        if not test.value:
            return False
    return True


def _result(node: Any, produced: list, deciding: list) -> Any:
    values = [v for _, v in produced] + [k for k, _ in produced if k is not None]
    flags = merge_flags(*deciding, *values)
    if not all(isinstance(v, Val) for v in values):
        if isinstance(node, ast.DictComp):
            keys = [k for k, _ in produced]
            if all(isinstance(k, Val) and k.resolved for k in keys):
                key_flags = merge_flags(*deciding, *keys)
                confidence = weakest(
                    MEDIUM, *(k.confidence for k in keys), *(d.confidence for d in deciding if isinstance(d, Val))
                )
                return Bag(
                    [v for _, v in produced], [k.value for k in keys], key_flags=key_flags, key_confidence=confidence
                )
            return unresolved(node, "a key of the dict comprehension is not resolved", flags)
        return Bag([v for _, v in produced])
    missing = cause(*values)
    if missing:
        return unresolved(node, missing, flags)
    try:
        if isinstance(node, ast.DictComp):
            value: Any = {k.value: v.value for k, v in produced}
        elif isinstance(node, ast.SetComp):
            value = {v.value for _, v in produced}
        else:
            value = [v.value for _, v in produced]
    except TypeError:
        return unresolved(node, "unhashable item")
    if deep_size(value) > MAX_STR:
        return unresolved(node, "comprehension too large")
    confidence = weakest(
        MEDIUM, *(v.confidence for v in values), *(d.confidence for d in deciding if isinstance(d, Val))
    )
    return Val(value, confidence, source_text(node), flags)
