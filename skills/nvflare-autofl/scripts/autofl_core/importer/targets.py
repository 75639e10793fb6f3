"""What a block of job.py binds or changes, read from its AST alone (the walker decides what that means for values)."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def bound(body: list[ast.stmt]) -> list[ast.expr]:
    """The names and `name.attr` targets `body` binds in its own scope: assignments, loop and `with` targets, `:=`
    (inside comprehensions too), and the functions and classes it defines (not what their bodies bind)."""
    found, todo = [], list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(ast.Name(node.name, ast.Store(), lineno=node.lineno, col_offset=node.col_offset))
        elif isinstance(node, ast.comprehension):  # its loop variable is the comprehension's own
            todo.extend([node.iter, *node.ifs])
        elif not isinstance(node, ast.Lambda):
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                if isinstance(node, ast.Name) or isinstance(node.value, ast.Name):
                    found.append(node)
            todo.extend(ast.iter_child_nodes(node))
    return found


def changed(block: list[ast.stmt]) -> Iterator[ast.expr]:
    """Every expression `block` binds, deletes, sets an item or attribute on or calls a method of, and the first
    argument of every `setattr`/`delattr` and dunder method it calls, in walk order."""
    for node in (n for stmt in block for n in ast.walk(stmt)):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                yield func.value
            name = last_name(func)
            if node.args and (name in ("setattr", "delattr") or dunder(name)):
                yield node.args[0]


def last_name(expr: ast.expr) -> str:
    """The name an expression ends in: `f` of `f` and of `x.f` ("" for any other expression)."""
    return expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")


def dunder(name: str) -> bool:
    """True for a dunder name (`__setattr__`)."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


REFUSED = {  # what the static reading refuses wherever it appears (a dry run follows it)
    ast.Global: "`global`",
    ast.Nonlocal: "`nonlocal`",
    ast.Match: "`match`",
    ast.NamedExpr: "`:=`",
}


def unfollowed(tree: ast.AST) -> str | None:
    """Why the static reading refuses `tree`: the first line using a construct it does not follow, or None."""
    first = min((n for n in ast.walk(tree) if type(n) in REFUSED), key=lambda n: n.lineno, default=None)
    if first is None:
        return None
    return f"job.py uses {REFUSED[type(first)]} at line {first.lineno}, which the static reading does not follow"


CONSTRUCTORS = ("__init__", "__new__")


def own_constructor(stmt: ast.ClassDef, defs: list) -> bool:
    """True when the class may build its instances otherwise than its bases do: it defines or assigns `__init__`
    or `__new__`, or has a decorator, a metaclass or another class keyword."""
    assigned = [t for n in stmt.body if isinstance(n, (ast.Assign, ast.AnnAssign)) for t in getattr(n, "targets", [])]
    assigned += [n.target for n in stmt.body if isinstance(n, ast.AnnAssign)]
    names = {n.name for n in defs} | {t.id for t in assigned if isinstance(t, ast.Name)}
    return bool(names & set(CONSTRUCTORS) or stmt.decorator_list or stmt.keywords)
