"""A dry run that stood in for a module job.py imports inside a `try` that would catch its ImportError (pure).

The dry run makes an inert stand-in for a module this interpreter lacks (`dryrun_boot._InertFinder`) and notes the
lines of job.py (and of the modules beside it) on the stack at that import (`record.stood_in_at`). Where one of
those lines lies in the body of a `try` with a handler that catches the ImportError (`except ImportError`,
`ModuleNotFoundError`, `Exception`, `BaseException`, a bare `except`, or a tuple holding one) that does not end
in `raise`, or in a `with suppress(...)` of one, `python job.py` on this host runs the handler where the dry run
ran the body: the record is not what job.py does here, and the import is refused naming that line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .recorded import DryRunRecord, StoodIn

CATCHING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
TRY_NODES = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


def refusal(record: DryRunRecord, read_file: Callable[[str], str | None]) -> str | None:
    """The one-line reason to refuse (naming the file, line and module), or None when no stand-in was imported
    where a handler would catch the ImportError."""
    trees: dict[str, ast.Module | None] = {}
    for site in record.stood_in_at:
        if site.file not in trees:
            trees[site.file] = _parse(read_file(site.file))
        tree = trees[site.file]
        if tree is not None and guarded(tree, site.line):
            return _reason(site)
    return None


def _reason(site: StoodIn) -> str:
    return (
        f"{site.file} line {site.line} imports {site.module} inside a try whose handler catches the ImportError this "
        f"interpreter raises ({site.module} is not installed), but the dry run stood in for it and ran the try's body "
        f"instead: install {site.module} where the import runs, or remove the fallback from {site.file}"
    )


def _parse(text: str | None) -> ast.Module | None:
    try:
        return ast.parse(text) if text else None
    except (SyntaxError, ValueError, RecursionError):
        return None


def guarded(tree: ast.Module, line: int) -> bool:
    """True when `line` lies in the body of a `try` (or `with suppress(...)`) that would catch an ImportError."""
    for node in ast.walk(tree):
        if isinstance(node, TRY_NODES) and any(_falls_back(h) for h in node.handlers):
            body = node.body
        elif isinstance(node, (ast.With, ast.AsyncWith)) and any(_suppresses(i.context_expr) for i in node.items):
            body = node.body
        else:
            continue
        if any(stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for stmt in body):
            return True
    return False


def _falls_back(handler: ast.ExceptHandler) -> bool:
    """True for a handler that catches an ImportError and goes on (one ending in `raise` stops job.py either way)."""
    return _catches(handler.type) and not isinstance(handler.body[-1], ast.Raise)


def _catches(kind: ast.expr | None) -> bool:
    """True for a handler type that catches an ImportError: none (bare), one of CATCHING, or a tuple holding one."""
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(_catches(element) for element in kind.elts)
    return _name(kind) in CATCHING


def _suppresses(expr: ast.expr) -> bool:
    """True for `suppress(...)` / `contextlib.suppress(...)` given a type that catches an ImportError."""
    return isinstance(expr, ast.Call) and _name(expr.func) == "suppress" and any(_catches(a) for a in expr.args)


def _name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else None
