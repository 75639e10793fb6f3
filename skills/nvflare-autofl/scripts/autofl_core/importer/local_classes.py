"""Classes defined in the job's own files (job.py or a module beside it): their `__init__` as the budget sees it.

A collaborative recipe reads `num_rounds` from a `server=` object whose class the job defines; a recipe subclass
the job defines (an SFT recipe built on FedAvgRecipe, say) passes its own defaults to NVFLARE's base class. Both
are read statically (never run): the parameters of `__init__` with their literal defaults, and what its
`super().__init__(...)` call passes on (a parameter of its own, a literal, or an expression). Pure apart from the
`read_file` callback. Usage::

    classes = LocalClasses(job_tree, "job.py", read_file)
    init = classes.find(obj.cls)          # LocalInit, or None when the class is not defined in the workspace
    init.params["num_rounds"]             # ("value", 5) | ("required", None) | ("computed", "N * 2")
    init.passes.get("num_rounds")         # ("param", "rounds") | ("value", 3) | ("computed", "...") | None
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .trust import safe_relative
from .values import source_text

LOCAL_PREFIX = "<local>."


@dataclass(frozen=True)
class LocalInit:
    """What the budget needs of a workspace class: where it is, its parameters, what it passes to its base."""

    name: str
    file: str
    line: int  # of `__init__`, or of the class when it has none
    defines_init: bool
    params: dict = field(default_factory=dict)  # name -> (status, value)
    var_kwargs: bool = False
    passes: dict = field(default_factory=dict)  # base __init__ keyword -> (status, value)
    passes_kwargs: bool = False  # super().__init__(..., **kwargs)
    passes_positional: bool = False
    super_line: int | None = None
    bases: tuple[str, ...] = ()  # qualified names of its bases, through the module's imports

    @property
    def where(self) -> str:
        return f"{self.name}.__init__ ({self.file} line {self.line})"


class LocalClasses:
    """Finds the classes job.py builds that are defined in job.py or in a module of the workspace."""

    def __init__(self, job_tree: ast.Module | None, job_name: str, read_file: Callable[[str], str | None]):
        self._job_tree, self._job_name, self._read_file = job_tree, job_name, read_file
        self._trees: dict[str, ast.Module | None] = {}

    def find(self, cls: Any) -> LocalInit | None:
        qualname = getattr(cls, "qualname", "") or ""
        if getattr(cls, "dynamic", False) or not qualname or qualname.startswith("nvflare."):
            return None
        module, _, name = qualname.rpartition(".")
        if qualname.startswith(LOCAL_PREFIX):
            return class_init(self._job_tree, name, self._job_name)
        for path in self._candidates(module):
            tree = self._tree(path)
            if tree is not None:
                return class_init(tree, name, path)
        return None

    def _candidates(self, module: str) -> list[str]:
        level = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(self._job_name)
        for _ in range(max(level - 1, 0)):
            base = posixpath.dirname(base)
        dotted = module.lstrip(".")
        if not dotted:
            return []
        path = posixpath.join(base, *dotted.split("."))
        return [p for p in (safe_relative(path + ".py"), safe_relative(posixpath.join(path, "__init__.py"))) if p]

    def _tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self._read_file(path)
            try:
                self._trees[path] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                self._trees[path] = None
        return self._trees[path]


def class_init(tree: ast.Module | None, name: str, file: str) -> LocalInit | None:
    """The `__init__` of the top-level class `name` in `tree`, or None when there is no such class."""
    node = next((n for n in (tree.body if tree else []) if isinstance(n, ast.ClassDef) and n.name == name), None)
    if node is None:
        return None
    bases = _bases(tree, node)
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return LocalInit(name, file, node.lineno, defines_init=False, bases=bases)
    info = {"params": _params(init), "var_kwargs": init.args.kwarg is not None, "bases": bases}
    call = _super_call(init)
    if call is not None:
        info.update(_passes(call, init))
    return LocalInit(name, file, init.lineno, defines_init=True, **info)


def _bases(tree: ast.Module, node: ast.ClassDef) -> tuple[str, ...]:
    """The bases of `node` as qualified names, through the module's `from X import Y [as Z]` / `import X as Z`."""
    imported: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                imported[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                imported[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    found = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            found.append(imported.get(base.id, f"{LOCAL_PREFIX}{base.id}"))
        elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id in imported:
            found.append(f"{imported[base.value.id]}.{base.attr}")
    return tuple(found)


def _params(init: ast.FunctionDef) -> dict:
    spec = init.args
    positional = spec.posonlyargs + spec.args
    pairs = list(zip(positional, [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults), strict=True))
    pairs += list(zip(spec.kwonlyargs, spec.kw_defaults, strict=True))
    out = {}
    for arg, default in pairs[1:] if positional else pairs:  # `self` first
        out[arg.arg] = ("required", None) if default is None else _literal(default)
    return out


def _super_call(init: ast.FunctionDef) -> ast.Call | None:
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            return node
    return None


def _passes(call: ast.Call, init: ast.FunctionDef) -> dict:
    own = {a.arg for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs}
    kwarg = init.args.kwarg.arg if init.args.kwarg else None
    passes, passes_kwargs = {}, False
    for keyword in call.keywords:
        if keyword.arg is None:
            passes_kwargs = passes_kwargs or (isinstance(keyword.value, ast.Name) and keyword.value.id == kwarg)
            continue
        value = keyword.value
        if isinstance(value, ast.Name) and value.id in own:
            passes[keyword.arg] = ("param", value.id)
        else:
            passes[keyword.arg] = _literal(value)
    return {
        "passes": passes,
        "passes_kwargs": passes_kwargs,
        "passes_positional": bool(call.args),
        "super_line": call.lineno,
    }


def _literal(node: ast.expr) -> tuple[str, Any]:
    try:
        return "value", ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return "computed", source_text(node, 80)
