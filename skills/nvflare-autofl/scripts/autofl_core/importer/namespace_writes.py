"""Writes the walk cannot see as assignments: `setattr`/`delattr` in every spelling (`object.__setattr__(args, ...)`,
`type(args).__setattr__`, `super(...).__setattr__`, a bound `args.__setattr__`, aliases of each), other dunder code
run on the namespace, calls that reach bindings (`exec`, `eval`, `globals()`), and the namespace (or a container or
object) given to code the walk does not follow (`tuning.tune(args)`). `NamespaceWrites` is a part of
`walker.Walker`, which provides `with_control`, `_changed`, `methods` and the walk's record.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any

from . import argparse_flow as ap
from .events import FuncRef, Obj
from .values import HIGH, MUTATORS, Bag, Builtin, ClassRef, Val, unresolved


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

    def _given_away(self, code: Any, given: list, node: ast.Call) -> None:
        """The namespace, a container or an object given to `code` the walk does not follow and cannot show harmless
        (`tuning.tune(args)`, a class or method of job.py, another library): it may rebind what they hold, so every
        option, item or argument of each is unresolved, naming the call's line."""
        cls = code.cls if isinstance(code, Obj) else code
        harmless = _harmless(code) and not _writes_arguments(code, node)
        if (harmless or self._reads_only(cls)) and not any(self._may_call_back(g) for g in given):
            return
        why = f"given to {_callee(node)}() at line {node.lineno}, which is not followed statically and may change it"
        self._stale(given, node, why)

    def _written_through(self, obj: Any, node: ast.AST) -> None:
        """An item set or a mutating method called on an object of the standard library (`ChainMap(vars(args))`)
        may write what the object was given: each of its arguments is changed, naming the line."""
        if isinstance(obj, Obj) and isinstance(obj.cls, ClassRef) and _standard(obj.cls):
            why = f"written through {obj.name}(...) at line {node.lineno}, which is not followed statically"
            self._stale([*obj.args, *obj.kwargs.values()], node, why)

    def _reads_only(self, cls: Any) -> bool:
        """A class of job.py none of whose methods, nor its bases' (all classes of job.py), may write."""
        methods = self.methods.get(id(cls))
        if methods is None or id(cls) in self.opaque or _may_write(methods) or any(m.wrappers for m in methods):
            return False
        return all(self._reads_only(base) for base in cls.bases)

    def _may_call_back(self, value: Any) -> bool:
        """A callable given to code that may call it with what it was given: `setattr`/`delattr`, a function of
        job.py that may write its parameters or what it reaches, or code that is neither harmless nor read-only."""
        if isinstance(value, Builtin):
            return value.name in SETTERS.values()
        if isinstance(value, FuncRef):
            return _may_write([value], method=False)
        return isinstance(value, ClassRef) and not (_harmless(value) or self._reads_only(value))

    def _stale(self, given: list, node: ast.AST, why: str) -> None:
        """Every option, item or constructor argument of what `given` holds is unresolved (`why`)."""
        for value in given:
            for held in _held(value):
                if isinstance(held, ap.Namespace):
                    held.values.update(dict.fromkeys(held.values, self.with_control(unresolved(node, why))))
                elif isinstance(held, Obj):
                    if not _standard(held.cls):  # a str, path or logger the standard library made holds no budget
                        stale = self.with_control(unresolved(node, f"{held.name}(...) is {why}"))
                        held.args, held.kwargs = [stale for _ in held.args], dict.fromkeys(held.kwargs, stale)
                else:
                    self._changed(held, why, node, [])

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


CALLING_BACK = set(  # modules of the standard library whose functions write attributes or items, or run code given
    "builtins operator functools copyreg ctypes gc inspect types threading multiprocessing concurrent asyncio sched "
    "atexit runpy importlib code codeop pdb bdb trace heapq unittest".split()
)
WRITERS = {"shuffle", "insort", "insort_left", "insort_right"}  # standard functions and methods writing a list given


def _writes_arguments(code: Any, node: ast.Call) -> bool:
    """The standard library's function or method called writes the list it is given (`random.shuffle(plan)`)."""
    name = code.qualname if isinstance(code, ClassRef) else _callee(node)
    return name.rsplit(".", 1)[-1] in WRITERS


def _harmless(code: Any) -> bool:
    """True for code that never rebinds what it is given: Python's builtins (evaluated by the walk), NVFLARE's and
    the standard library's functions and classes (but `CALLING_BACK`), and the methods of their objects."""
    if isinstance(code, Obj):
        code = code.cls
    if isinstance(code, Builtin):
        return True
    if not isinstance(code, ClassRef) or code.dynamic:
        return False
    return code.qualname.startswith("nvflare.") or (_standard(code) and code.qualname.split(".")[0] not in CALLING_BACK)


def known_wrapper(decorator: Any) -> bool:
    """A decorator that gives back a function calling the one it wraps with what it is given: Python's builtins
    (`staticmethod`, `property`), the standard library's (`functools.lru_cache(...)`, `dataclasses.dataclass`) and
    NVFLARE's."""
    cls = decorator.cls if isinstance(decorator, Obj) else decorator
    if isinstance(cls, Builtin):
        return True
    return isinstance(cls, ClassRef) and (_standard(cls) or cls.qualname.startswith("nvflare."))


def _standard(cls: ClassRef) -> bool:
    """A function or class of the standard library."""
    return not cls.dynamic and cls.qualname.split(".")[0] in sys.stdlib_module_names


def _may_write(methods: list, method: bool = True) -> bool:
    """True when a method of a class of job.py (a function of job.py when not `method`) may change what it was
    given: it sets or deletes an attribute or item (other than a method's own `self.name`), or hands a parameter (or
    `self.name`) to a call or calls a mutating method of one."""
    for func in methods:
        spec = func.node.args
        params = [a.arg for a in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs, spec.vararg, spec.kwarg) if a]
        own = params[0] if params and method else None
        for node in ast.walk(func.node):
            if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if not (
                    own
                    and isinstance(node.value, ast.Name)
                    and node.value.id == own
                    and isinstance(node, ast.Attribute)
                ):
                    return True
            elif isinstance(node, ast.Call):
                given = [a.value if isinstance(a, ast.Starred) else a for a in (*node.args, *node.keywords)]
                given = [g.value if isinstance(g, ast.keyword) else g for g in given]
                changer = isinstance(node.func, ast.Attribute) and node.func.attr in set().union(*MUTATORS.values())
                if any(_holder(g, params, own) for g in given) or (changer and _parameter(node.func.value, params)):
                    return True
    return False


def _parameter(node: ast.expr, params: list) -> bool:
    """`node` is a parameter of the method (`self` too), or an attribute or item of one (`self.args`, `a.__dict__`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, ast.Name) and node.id in params


def _holder(node: ast.expr, params: list, own: str | None) -> bool:
    """`node` is what a parameter holds itself, not a value read off it: the parameter, `self.name`, `a.__dict__`."""
    own_attribute = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == own
    if own_attribute or (isinstance(node, ast.Attribute) and node.attr == "__dict__"):
        return _parameter(node.value, params)
    return isinstance(node, ast.Name) and node.id in params


def _held(value: Any, depth: int = 0) -> list:
    """`value` when a call could change what it holds (a namespace, an object, a container), and the namespaces,
    objects and containers inside it (bounded depth)."""
    if depth > 8:
        return []
    inner = value.items if isinstance(value, Bag) else value.value if isinstance(value, Val) else None
    if isinstance(value, (ap.Namespace, Obj)):
        return [value]
    if isinstance(inner, dict):
        inner = list(inner.values())
    if not isinstance(inner, (list, tuple, set)) or (isinstance(value, Val) and not value.resolved):
        return []
    mutable = isinstance(value, Bag) or isinstance(value.value, (list, dict, set))
    return [value] * mutable + [h for item in inner for h in _held(item, depth + 1)]


def _callee(node: ast.Call) -> str:
    return ast.unparse(node.func)[:60]


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


DESCRIPTORS = {"property", "staticmethod", "classmethod"}  # builtins decorating a method, and a property's parts
PROPERTY_PARTS = {"setter", "getter", "deleter"}


def descriptor(decorator: ast.expr, callee: Any) -> bool:
    """`@property`, `@staticmethod`, `@classmethod` (not rebound by job.py) or `@<name>.setter`: the method itself."""
    if isinstance(decorator, ast.Name):
        return decorator.id in DESCRIPTORS and not isinstance(callee, (FuncRef, ClassRef, Obj))
    return isinstance(decorator, ast.Attribute) and decorator.attr in PROPERTY_PARTS
