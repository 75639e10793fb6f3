"""Writes the walk cannot see as assignments: `setattr`/`delattr` in every spelling (`object.__setattr__(args, ...)`,
`type(args).__setattr__`, `super(...).__setattr__`, a bound `args.__setattr__`, aliases of each), other dunder code
run on the namespace, and calls that reach bindings (`exec`, `eval`, `globals()`). `NamespaceWrites` is a part of
`walker.Walker`, which provides `with_control`, `_changed` and the walk's record.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from . import argparse_flow as ap
from .events import Obj
from .values import HIGH, Builtin, Val, unresolved


class NamespaceWrites:
    def _not_followed(self, name: str, node: ast.Call) -> Val:
        """Code built or bindings reached at run time (`exec`, `eval`, `globals()`, `locals()`, a `setattr` given
        fewer than two arguments, keywords or `*` arguments) are not followed: the walk reports a problem."""
        self.out.problems.append(
            f"job.py calls {name}() at line {node.lineno}, which reaches bindings or runs code the importer does not "
            "follow statically"
        )
        return unresolved(node, f"{name}() at line {node.lineno} is not followed statically")

    def _setter(self, base: Any, attr: str, owner: ast.expr) -> Any:
        """What `<owner>.__setattr__` / `.__delattr__` is: bound to a namespace, another object's own method (None),
        or unbound, taking the object first like `setattr` (`object.__setattr__`)."""
        if isinstance(base, ap.Namespace):
            return BoundSetter(SETTERS[attr], base)
        if isinstance(base, Obj):
            held = [a for a in base.args if isinstance(a, ap.Namespace)]
            is_super = isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
            return BoundSetter(SETTERS[attr], held[-1]) if is_super and held else None
        return Builtin(SETTERS[attr])

    def _namespace_reached(self, reached: Any, attr: str, node: ast.Call) -> None:
        """Any other dunder method run on a namespace (`args.__init__(...)`, `argparse.Namespace.__init__(args, ...)`)
        may rebind any option: every option is unresolved."""
        for namespace in reached if isinstance(reached, list) else [reached]:
            if isinstance(namespace, ap.Namespace):
                why = f"{attr}() at line {node.lineno} reaches the namespace, which is not followed statically"
                namespace.values.update(dict.fromkeys(namespace.values, self.with_control(unresolved(node, why))))

    def _set_attribute(self, name: str, args: list, node: ast.Call) -> Val:
        """`setattr(target, attr, value)` / `delattr(target, attr)`: on a namespace its option (every option when
        `attr` is not known) is rebound; on anything else every binding of `target` is unresolved."""
        target, attr = args[0], args[1]
        deleted = unresolved(node, f"{name}() at line {node.lineno}")
        value = args[2] if name == "setattr" and len(args) > 2 else deleted
        if isinstance(target, ap.Namespace):
            known = isinstance(attr, Val) and attr.resolved and isinstance(attr.value, str)
            for key in [attr.value] if known else list(target.values):
                target.values[key] = self.with_control(value if known and isinstance(value, Val) else deleted)
        else:
            self._changed(target, f"{name}() at line {node.lineno}", node, [attr, value])
        return Val(None, HIGH)


SETTERS = {"__setattr__": "setattr", "__delattr__": "delattr"}  # the dunder spelling of each attribute setter
READERS = set(  # the dunder methods that change nothing
    "__getattribute__ __getattr__ __getitem__ __contains__ __len__ __iter__ __reversed__ __eq__ __ne__ __lt__ __le__ "
    "__gt__ __ge__ __hash__ __bool__ __repr__ __str__ __format__ __sizeof__ __dir__ __copy__ __getstate__".split()
)


@dataclass(frozen=True)
class BoundSetter:
    """`args.__setattr__` (or `__delattr__`, `name`): `setattr` with the namespace `target` given first."""

    name: str
    target: Any
