"""Static evaluation of the few builtins a job.py uses to build arguments, and the tagging of environment reads.

Only pure, size-bounded operations on already-resolved values are computed (confidence medium);
anything that would read the environment, files or the clock stays unresolved, with a reason naming it.
"""

from __future__ import annotations

import ast
from typing import Any

from .argparse_flow import Namespace, namespace_attribute
from .values import (
    ENV_PREFIX,
    HIGH,
    MAX_ITEMS,
    MAX_STR,
    MEDIUM,
    Bag,
    Builtin,
    ClassRef,
    ModuleRef,
    Val,
    cause,
    deep_size,
    merge_flags,
    unresolved,
    weakest,
)

BUILTIN_NAMES = {
    "abs",
    "bool",
    "dict",
    "float",
    "getattr",
    "int",
    "isinstance",
    "len",
    "list",
    "max",
    "min",
    "print",
    "range",
    "round",
    "sorted",
    "str",
    "sum",
    "tuple",
    "set",
    "vars",
    "open",
    "repr",
    "enumerate",
    "zip",
    "hasattr",
    "type",
    "Exception",
    "ValueError",
    "RuntimeError",
    "SystemExit",
    "KeyError",
    "any",
    "all",
    "reversed",
}
_PURE = {
    "abs": abs,
    "bool": bool,
    "float": float,
    "int": int,
    "len": len,
    "max": max,
    "min": min,
    "round": round,
    "sorted": sorted,
    "str": str,
    "sum": sum,
    "tuple": tuple,
    "list": list,
    "set": set,
    "repr": repr,
    "any": any,
    "all": all,
    "enumerate": lambda *a: list(enumerate(*a)),
    "zip": lambda *a: list(zip(*a, strict=False)),  # Python semantics: stops at the shortest
    "reversed": lambda a: list(reversed(a)),
}
_ENV_READERS = {"os.getenv", "os.environ.get", "os.environ.setdefault"}


def _all_resolved(values: list[Any]) -> bool:
    return all(isinstance(v, Val) and v.resolved for v in values)


def _bounded(value: Any, node: ast.AST, flags: tuple, conf: str) -> Val:
    if deep_size(value) > MAX_STR:
        return unresolved(node, "result too large")
    return Val(value, conf, "", flags)


def call_builtin(func: Builtin, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
    """Evaluate a builtin call; returns a Val (or a class reference for getattr on a module)."""
    name = func.name
    if name == "print":
        return Val(None, HIGH)
    if name == "getattr":
        return _getattr(args, node)
    if name == "range":
        return _range(args, node)
    if name == "vars" and len(args) == 1 and isinstance(args[0], Namespace):  # cfg = vars(parser.parse_args())
        return Bag(list(args[0].values.values()), list(args[0].values))
    if name == "dict" and not args and _all_resolved(list(kwargs.values())):
        value = {k: v.value for k, v in kwargs.items()}
        return Val(value, weakest(MEDIUM, *(v.confidence for v in kwargs.values())), "", merge_flags(*kwargs.values()))
    pure = _PURE.get(name)
    if name == "open":
        return unresolved(node, f"open() at line {node.lineno} reads a file at run time", merge_flags(*args))
    if pure is None or kwargs or not _all_resolved(args):
        missing = cause(*args, *kwargs.values())
        why = (
            f"{name}() of a value that is not determined: {missing}"
            if missing
            else f"{name}() is not evaluated statically"
        )
        return unresolved(node, why, merge_flags(*args))
    try:
        value = pure(*(a.value for a in args))
    except (TypeError, ValueError, OverflowError):
        return unresolved(node, f"{name}() cannot be evaluated", merge_flags(*args))
    return _bounded(value, node, merge_flags(*args), weakest(MEDIUM, *(a.confidence for a in args)))


def _getattr(args: list[Any], node: ast.Call) -> Any:
    if len(args) < 2:
        return unresolved(node, "getattr() needs an object and a name")
    target, attr = args[0], args[1]
    literal = isinstance(attr, Val) and attr.resolved and isinstance(attr.value, str)
    if isinstance(target, Namespace) and literal:
        return namespace_attribute(target, attr.value)
    if isinstance(target, (ModuleRef, ClassRef)):
        name = attr.value if literal else "<dynamic>"
        return ClassRef(name, f"{target.qualname}.{name}", dynamic=True)
    return unresolved(node, "getattr() on a run-time object")


def _range(args: list[Any], node: ast.Call) -> Val:
    if not _all_resolved(args) or not all(isinstance(a.value, int) for a in args):
        return unresolved(node, "range() bounds are not resolved")
    try:
        span = range(*(a.value for a in args))
    except (TypeError, ValueError):
        return unresolved(node, "invalid range()")
    if len(span) > MAX_ITEMS:
        return unresolved(node, "range() too large")
    return Val(list(span), MEDIUM, "", merge_flags(*args))


def call_qualified(ref: ClassRef, args: list[Any], node: ast.Call) -> Val | None:
    """The environment readers (`os.getenv`, `os.environ.get`), and `os.path.*` (not evaluated: unresolved naming
    the line, keeping its inputs' flags, so a path under the workspace root variable stays tagged); None otherwise."""
    if ref.qualname in _ENV_READERS:
        return env_read(args[0] if args else None, node, args)
    if ref.qualname.startswith("os.path."):
        missing = cause(*args)  # an input read at run time is named first
        shown = f"{ref.qualname}() at line {node.lineno} is not evaluated statically"
        return unresolved(node, missing or shown, merge_flags(*args))
    return None


def env_read(name: Any, node: ast.AST, args: list) -> Val:
    """An environment variable read at run time: unresolved, tagged `env:NAME` so consumers can tell which."""
    known = isinstance(name, Val) and name.resolved and isinstance(name.value, str)
    label = name.value if known else "?"
    reason = f"it reads the environment variable {label} at run time (line {node.lineno})"
    return unresolved(node, reason, merge_flags(*args) + (ENV_PREFIX + label,))


def call_data_method(base: Val, method: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Val:
    """A method of a data value (`"-".join(...)`, `cfg.get("rounds", 2)`): not evaluated statically, so the
    result is unresolved naming the line (a dry run reads the real value); flags such as `env:` carry over."""
    flags = merge_flags(base, *args, *kwargs.values())
    missing = cause(base, *args, *kwargs.values())  # an input read at run time is named first
    return unresolved(node, missing or f".{method}() at line {node.lineno} is not evaluated statically", flags)
