"""Calls the static reading recognises without evaluating them: builtins, and what the walker gives the environment
readers (`env_read`) and `os.path.*` (`not_evaluated`).

No builtin is computed but `range()` of known ints and `dict(key=value)`; the namespace readers (`vars(args)`,
`getattr(args, "name")`) are followed; anything else is unresolved naming the line; environment reads are tagged
`env:NAME`.
"""

from __future__ import annotations

import ast
from contextlib import suppress
from typing import Any

from .argparse_flow import Namespace, namespace_attribute
from .inputs import NO_INPUTS, Input, call_kind, kinds
from .values import (
    ENV_PREFIX,
    HIGH,
    MAX_ITEMS,
    MEDIUM,
    Bag,
    Builtin,
    ClassRef,
    ModuleRef,
    Val,
    cause,
    inputs_of,
    known,
    merge_flags,
    unresolved,
    weakest,
)

BUILTIN_NAMES = set(
    "abs all any bool classmethod dict enumerate float getattr hash hasattr id int isinstance len list max min open print "
    "property range repr staticmethod "
    "reversed round set setattr delattr sorted str sum tuple type vars zip Exception KeyError RuntimeError SystemExit ValueError".split()
)


def call_builtin(func: Builtin, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
    """A builtin call: the namespace readers are followed; anything else is unresolved naming the line."""
    name = func.name
    if name == "print":
        return Val(None, HIGH)
    if name == "getattr":  # `getattr(args, "name")` reads the namespace; of a module or class, it is a callable
        if len(args) < 2:
            return unresolved(node, "getattr() needs an object and a name")
        literal = known(args[1], str)
        if isinstance(args[0], Namespace) and literal:
            return namespace_attribute(args[0], args[1].value)
        if isinstance(args[0], (ModuleRef, ClassRef)):
            attr = args[1].value if literal else "<dynamic>"
            return ClassRef(attr, f"{args[0].qualname}.{attr}", dynamic=True)
        return unresolved(node, "getattr() on a run-time object")
    if name == "vars" and len(args) == 1 and isinstance(args[0], Namespace):  # cfg = vars(parser.parse_args())
        return Bag(list(args[0].values.values()), list(args[0].values))
    values = list(kwargs.values())
    if name == "dict" and not args and all(map(known, values)):  # a dict literal
        confidence = weakest(MEDIUM, *(v.confidence for v in values))
        return Val({k: v.value for k, v in kwargs.items()}, confidence, "", merge_flags(*values))
    if name == "open":
        reads = Input.FILES.value.removeprefix("which ")
        return unresolved(node, f"open() at line {node.lineno} {reads}", merge_flags(*args), kinds(Input.FILES))
    if name == "range" and not kwargs and all(known(a) and type(a.value) is int for a in args):
        with suppress(TypeError, ValueError, OverflowError):  # no bounds, too many, a zero step, or past a C size
            span = range(*(a.value for a in args))
            if len(span) <= MAX_ITEMS:  # `for i in range(n_clients): job.to(..., f"site-{i}")`
                return Val(list(span), MEDIUM, "", merge_flags(*args))
    return not_evaluated(node, f"{name}()", [*args, *kwargs.values()])


def not_evaluated(node: ast.AST, call: str, inputs: list) -> Val:
    """Unresolved: names the first of `inputs` read at run time, else `call` and its line, with the input a call of
    files, the environment, randomness or the clock reads (`inputs.call_kind`); keeps their flags. Its run-time
    inputs are the named one's and the call's own."""
    kind = call_kind(call.removesuffix("()"))
    what = f", {kind.value}" if kind else " is not evaluated statically"
    first = cause(*inputs)
    why = first or whole_environment(inputs, node) or f"{call} at line {node.lineno}{what}"
    found = inputs_of(*inputs) if first else environment(inputs)
    return unresolved(node, why, merge_flags(*inputs), found | kinds(kind))  # the call's own input too


def whole_environment(inputs: list, node: ast.AST) -> str:
    """Why a value made from `os.environ` itself (`dict(os.environ)`, `{**os.environ}`, a loop over it) is not
    known: it reads the host environment ("" when no input is `os.environ`)."""
    return f"it comes from os.environ at line {node.lineno}, {Input.ENVIRONMENT.value}" if environment(inputs) else ""


def environment(inputs: list) -> frozenset[Input]:
    """The environment, when an input is `os.environ` itself."""
    whole = any(isinstance(v, ClassRef) and v.qualname == "os.environ" for v in inputs)
    return kinds(Input.ENVIRONMENT) if whole else NO_INPUTS


def env_read(name: Any, node: ast.AST, args: list) -> Val:
    """An environment variable read at run time: unresolved, tagged `env:NAME` so consumers can tell which."""
    label = name.value if known(name, str) else "?"
    reason = f"it reads the environment variable {label} at run time (line {node.lineno})"
    return unresolved(node, reason, merge_flags(*args) + (ENV_PREFIX + label,), kinds(Input.ENVIRONMENT))
