"""Which import-corpus jobs use the constructs the static reading follows off the straight path.

Usage:
    python bench/static_constructs.py

Reads every job.py of the import corpus (evals/import_corpus.py) with `ast` only and prints, per construct, how many
jobs use it and which: `match`, `:=`, reflection calls (`setattr`, `delattr`, `exec`, `eval`, `globals`, `locals`),
reflective attributes (`__setattr__`, `__dict__`, `__defaults__`, ...), `global`/`nonlocal`, job-local decorators,
class bodies that run more than definitions, job-local functions passed as values, lambdas, `try`, a loop's `else:`.
The walker reads each of these (importer/uncertain.py); the figure says what refusing them instead would cost. No job
is imported or run. Exit 0 always (a measurement, no bar).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "evals"))
import import_corpus  # noqa: E402

REFLECTION = {"setattr", "delattr", "exec", "eval", "globals", "locals"}
REFLECTIVE_ATTRIBUTES = {"__setattr__", "__delattr__", "__dict__", "__defaults__", "__kwdefaults__", "__code__"}


def _runs_code(stmt: ast.stmt) -> bool:
    """True for a class-body statement other than a definition, `pass` or a docstring."""
    quiet = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Pass)
    return not isinstance(stmt, quiet) and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def constructs(tree: ast.Module) -> set[str]:
    """The constructs of the list above that `tree` uses."""
    local = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Match):
            found.add("match")
        elif isinstance(node, ast.NamedExpr):
            found.add(":=")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.add("global/nonlocal")
        elif isinstance(node, ast.Lambda):
            found.add("lambda")
        elif isinstance(node, ast.Try):
            found.add("try")
        elif isinstance(node, ast.Attribute) and node.attr in REFLECTIVE_ATTRIBUTES:
            found.add("reflective attribute")
        elif isinstance(node, (ast.For, ast.While)) and node.orelse:
            found.add("loop else")
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in REFLECTION:
                found.add("reflection call")
            if any(isinstance(a, ast.Name) and a.id in local for a in [*node.args, *(k.value for k in node.keywords)]):
                found.add("function as value")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if any(isinstance(d, ast.Name) and d.id in local for d in node.decorator_list):
                found.add("job-local decorator")
        if isinstance(node, ast.ClassDef) and any(_runs_code(stmt) for stmt in node.body):
            found.add("class body that runs code")
    return found


def main() -> int:
    jobs = import_corpus.corpus()
    users: dict[str, list[str]] = {}
    for name, job, _family, _args in jobs:
        for construct in constructs(ast.parse(job.read_text(encoding="utf-8"))):
            users.setdefault(construct, []).append(name)
    print(f"{len(jobs)} corpus jobs")
    for construct, names in sorted(users.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"{construct:<28} {len(names):>3}  {', '.join(sorted(names))}")
    print("(constructs no corpus job uses are not listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
