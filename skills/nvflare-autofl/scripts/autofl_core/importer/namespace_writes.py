"""Writes the walk cannot see as assignments, read by one coarse rule: the namespace (or a container or object)
given to code the walk does not follow and cannot show harmless (`setattr` in any spelling, a dunder method, a
class or function of job.py, another library's code) may be rebound by it, so everything it holds is unresolved,
naming the call and its line.
`NamespaceWrites` is a part of `walker.Walker`, which provides `with_control`, `_changed` and the walk's record.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

from . import argparse_flow as ap
from .events import UNSEEN_RUN, FuncRef, MethodCall, Obj
from .values import Bag, Builtin, ClassRef, Val, drawn, merge_flags, unresolved

WRITING_BUILTINS = {"setattr", "delattr"}
CALLING_BACK = set(  # modules of the standard library whose functions write what they are given, or run code given
    "builtins operator functools copyreg ctypes gc inspect types threading multiprocessing concurrent asyncio sched "
    "atexit runpy importlib code codeop pdb bdb trace heapq unittest random bisect".split()
)


class NamespaceWrites:
    def _given_away(self, code: Any, given: list, node: ast.Call) -> None:
        """What `code` is given, when the walk does not follow `code` and cannot show it harmless, or a callable
        among `given` may call back: every option, item or argument it holds is unresolved, naming the call."""
        if _harmless(code) and not any(_may_call_back(g) for g in given) and not _opens(code, given):
            return
        self._stale(given, node, given_to(node))

    def _written_through(self, obj: Any, node: ast.AST) -> None:
        """An item set or a mutating method called on an object of the standard library (`ChainMap(vars(args))`)
        may write what the object was given: each of its arguments is changed, naming the line."""
        if isinstance(obj, Obj) and _standard(obj.cls):
            self._stale(
                [*obj.args, *obj.kwargs.values()], node, f"written through {obj.name}(...) at line {node.lineno}"
            )

    def _stale(self, given: list, node: ast.AST, what: str, runs: bool = True) -> None:
        """Every option, item or constructor argument of what `given` holds is unresolved: `what` may change it,
        send it anything, and (`runs`) run it."""
        why = f"{what}, which is not followed statically and may change it"
        for value in given:
            for held in _held(value):
                if isinstance(held, ap.Parser):
                    held.changed = f"its parser is {why}"
                elif isinstance(held, ap.Namespace):
                    held.values.update({k: self._unsettled(v, node, why) for k, v in held.values.items()})
                elif isinstance(held, Obj):
                    if not _standard(held.cls):  # a str, path or logger the standard library made holds no budget
                        said = f"{held.name}(...) is {why}"
                        held.args = [self._unsettled(v, node, said) for v in held.args]
                        held.kwargs = {k: self._unsettled(v, node, said) for k, v in held.kwargs.items()}
                        unseen = [self._unsettled(None, node, said)] * 2  # it may send anything to any site
                        self.out.calls.append(MethodCall(held, "to", unseen, {}, node.lineno, self.control))
                        if runs:
                            self.out.calls.append(MethodCall(held, UNSEEN_RUN, [], {}, node.lineno, self.control))
                else:
                    self._changed(held, what, node, [], why)

    def _unsettled(self, old: Any, node: ast.AST, why: str) -> Val:
        """`old` made unresolved (`why`), still depending on what it was computed from (its options, its draws and
        clock reads)."""
        return self.with_control(unresolved(node, why, merge_flags(old), drawn(old)))


def _harmless(code: Any) -> bool:
    """True for code that never rebinds what it is given: Python's builtins but `setattr`/`delattr`, NVFLARE's and
    the standard library's functions and classes (but `CALLING_BACK`), and the methods of their objects."""
    cls = code.cls if isinstance(code, Obj) else code
    if isinstance(cls, Builtin):
        return cls.name not in WRITING_BUILTINS
    return known_wrapper(cls) and cls.qualname.split(".")[0] not in CALLING_BACK


def _opens(code: Any, given: list) -> bool:
    """`vars(env)`, `getattr(job, "to")`: an object's attributes or methods handed out to code not followed."""
    opened = any(isinstance(g, (Obj, ap.Parser)) for g in given)
    return isinstance(code, Builtin) and code.name in ("vars", "getattr") and opened


def _may_call_back(value: Any) -> bool:
    """A callable that code given it may call with what it was given: `setattr`/`delattr`, a function of job.py,
    or code not shown harmless."""
    if isinstance(value, Builtin):
        return value.name in WRITING_BUILTINS
    return isinstance(value, FuncRef) or (isinstance(value, ClassRef) and not _harmless(value))


def known_wrapper(code: Any) -> bool:
    """Python's builtins, and the standard library's and NVFLARE's functions and classes: a decorator of these gives
    back a function calling the one it wraps (`staticmethod`, `functools.lru_cache(...)`)."""
    cls = code.cls if isinstance(code, Obj) else code
    nvflare = isinstance(cls, ClassRef) and not cls.dynamic and cls.qualname.startswith("nvflare.")
    return isinstance(cls, Builtin) or _standard(cls) or nvflare


def _standard(cls: Any) -> bool:
    """A function or class of the standard library."""
    return isinstance(cls, ClassRef) and not cls.dynamic and cls.qualname.split(".")[0] in sys.stdlib_module_names


def _held(value: Any, depth: int = 0) -> list:
    """`value` when a call could change what it holds (a namespace, an object, a function's defaults, a container),
    and the namespaces, objects and containers inside it (bounded depth)."""
    if depth > 8:
        return []
    inner = value.items if isinstance(value, Bag) else value.value if isinstance(value, Val) else None
    if isinstance(value, (ap.Namespace, ap.Parser, Obj, FuncRef)):
        return [value]
    if isinstance(inner, dict):
        inner = list(inner.values())
    if not isinstance(inner, (list, tuple, set)) or (isinstance(value, Val) and not value.resolved):
        return []
    mutable = isinstance(value, Bag) or isinstance(value.value, (list, dict, set))
    return [value] * mutable + [h for item in inner for h in _held(item, depth + 1)]


def given_to(node: ast.Call) -> str:
    """`given to <callee>() at line N`: what a call not followed is given may change."""
    return f"given to {ast.unparse(node.func)[:60]}() at line {node.lineno}"
