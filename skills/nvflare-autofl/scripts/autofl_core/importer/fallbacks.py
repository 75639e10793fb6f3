"""A dry run that stood in for a module job.py imports inside a `try` that would catch its ImportError (pure).

The dry run notes each line of the job's own files on the stack where a stand-in for an absent module was
imported (`record.stood_in_at`). Where such a line lies in the body of a `try` whose handler catches the ImportError
and goes on (or of a `with suppress(...)` of it), or asks whether the module is installed (`find_spec`,
`find_loader`), `python job.py` on this host runs other code than the dry run did: the import is refused naming
that line. A name the file binds stands for what it is bound to; a handler type the reading cannot follow is taken
to catch.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .files import parsed
from .recorded import DryRunRecord
from .targets import last_name

CATCHING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
PROBES = frozenset({"find_spec", "find_loader"})  # the calls that ask whether a module is installed
TRY_NODES = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
REASONS = (  # a stand-in imported in a guarded body; one a line asked for
    "{file} line {line} imports {module} inside a try whose handler catches the ImportError this interpreter raises "
    "({module} is not installed), but the dry run stood in for it and ran the try's body instead: install {module} "
    "where the import runs, or remove the fallback from {file}",
    "{file} line {line} asks whether {module} is installed, which it is not on this interpreter, but the dry run's "
    "stand-in answered that it is and ran what job.py runs then: install {module} where the import runs, or remove "
    "the check from {file}",
)


def refusal(record: DryRunRecord, read_file: Callable[[str], str | None]) -> str | None:
    """The one-line reason to refuse (naming the file, line and module), or None when no stand-in was imported
    where a handler would catch the ImportError, nor asked for by a line checking whether it is installed."""
    spans: dict[str, tuple[list, list]] = {}  # per file: the guarded bodies' lines, the asking calls' lines
    for site in record.stood_in_at:
        if site.file not in spans:
            tree = parsed(read_file(site.file))
            spans[site.file] = ([], []) if tree is None else (guarded_spans(tree), _asking_spans(tree))
        for reason, lines in zip(REASONS, spans[site.file], strict=True):
            if any(start <= site.line <= end for start, end in lines):
                return reason.format(file=site.file, line=site.line, module=site.module)
    return None


def _asking_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """The (first, last) lines of each call asking whether a module is installed."""
    return [_lines(node) for node in ast.walk(tree) if isinstance(node, ast.Call) and last_name(node.func) in PROBES]


def _lines(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.end_lineno or node.lineno


def guarded_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """The (first, last) lines of each statement in the body of a `try` (or `with suppress(...)`) that would catch
    an ImportError."""
    names, spans = _bindings(tree), []
    for node in ast.walk(tree):
        trying = isinstance(node, TRY_NODES) and any(_falls_back(h, names) for h in node.handlers)
        with_ = isinstance(node, (ast.With, ast.AsyncWith)) and any(
            _suppresses(i.context_expr, names) for i in node.items
        )
        if trying or with_:
            spans += [_lines(stmt) for stmt in node.body]
    return spans


def _bindings(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """{name: the expressions the file binds it to}: assignments, and `from m import x as name` (bound to `x`)."""
    names: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.ImportFrom):
            pairs = [(ast.Name(alias.asname), ast.Name(alias.name)) for alias in node.names if alias.asname]
        else:
            continue
        for target, value in pairs:
            if isinstance(target, ast.Name):
                names.setdefault(target.id, []).append(value)
    return names


def _falls_back(handler: ast.ExceptHandler, names: dict) -> bool:
    """True for a handler that catches an ImportError and goes on (one ending in `raise` stops job.py either way)."""
    return _catches(handler.type, names) and not isinstance(handler.body[-1], ast.Raise)


def _catches(kind: ast.expr | None, names: dict, seen: frozenset = frozenset()) -> bool:
    """True for a handler type that catches an ImportError: none (bare), one of CATCHING, a tuple holding one, a
    name the file binds to one of those, or an expression the reading does not follow (a call, a subscript)."""
    if kind is None:
        return True
    if isinstance(kind, ast.Starred):
        return _catches(kind.value, names, seen)
    if isinstance(kind, ast.Tuple):
        return any(_catches(element, names, seen) for element in kind.elts)
    if isinstance(kind, ast.Name) and kind.id in names and kind.id not in seen:
        return any(_catches(value, names, seen | {kind.id}) for value in names[kind.id])
    if isinstance(kind, (ast.Name, ast.Attribute)):
        return last_name(kind) in CATCHING
    return not isinstance(kind, ast.Constant)


def _suppresses(expr: ast.expr, names: dict) -> bool:
    """True for `suppress(...)` / `contextlib.suppress(...)` (or a name bound to it) given a type that catches an
    ImportError."""
    call = isinstance(expr, ast.Call) and _is_suppress(expr.func, names, frozenset())
    return call and any(_catches(a, names) for a in expr.args)


def _is_suppress(func: ast.expr, names: dict, seen: frozenset) -> bool:
    if isinstance(func, ast.Name) and func.id in names and func.id not in seen:
        return any(_is_suppress(value, names, seen | {func.id}) for value in names[func.id])
    return last_name(func) == "suppress"
