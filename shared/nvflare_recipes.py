"""Build the table of NVFLARE recipe classes the Auto-FL importer ships, from the installed nvflare, statically.

Usage (normally through `make sync`, see shared/sync.py):
    python shared/nvflare_recipes.py            # print the rendered JSON
    python shared/nvflare_recipes.py --list     # one line per recipe class: qualname, family

nvflare is never imported: its source files are located with importlib.util.find_spec and read as ASTs, the
version comes from the installed distribution's metadata. Every subclass of nvflare.recipe.spec.Recipe is
found, its effective `__init__` signature is read (own parameters, plus the base's when it forwards **kwargs or
has no __init__), and values a subclass passes to `super().__init__` for a budget field it does not expose
(`num_rounds=2` in SVMFedAvgRecipe) are recorded as `fixed`. What makes a recipe raise for some arguments is
recorded too: `requires_sites` (it raises at export/execute unless set_per_site_config() named its sites) and
`guards` (`if min_clients < 2: raise ...` at the top of its __init__). Families come from
shared/catalog/recipe_families.yaml; a recipe class missing there is an error (classify it first).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FAMILIES_SOURCE = REPO / "shared" / "catalog" / "recipe_families.yaml"
OUTPUT = REPO / "skills" / "nvflare-autofl" / "scripts" / "autofl_core" / "importer" / "nvflare_recipes.json"
RECIPE_ROOT = "nvflare.recipe.spec.Recipe"
BUDGET_PARAMS = ("num_rounds", "min_clients", "num_clients")
FAMILIES = {"training", "statistics", "psi", "evaluation", "inference", "nested"}
MAX_REEXPORT_DEPTH = 8


class RecipeTableError(ValueError):
    """The installed NVFLARE or the families file cannot produce a table (message says what to do)."""


@dataclass
class SourceTree:
    """The installed `nvflare` package read as source: module name -> parsed AST (parsed on demand)."""

    root: Path
    _trees: dict = field(default_factory=dict)

    def module_path(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != "nvflare":
            return None
        base = self.root.joinpath(*parts[1:])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
        return None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            path = self.module_path(module)
            self._trees[module] = ast.parse(path.read_text(encoding="utf-8"), str(path)) if path else None
        return self._trees[module]

    def modules_mentioning(self, word: str) -> list[str]:
        found = []
        for path in sorted(self.root.rglob("*.py")):
            if "__pycache__" in path.parts or word not in path.read_text(encoding="utf-8", errors="replace"):
                continue
            rel = path.relative_to(self.root).with_suffix("")
            parts = ["nvflare", *rel.parts]
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        return found

    def is_package(self, module: str) -> bool:
        path = self.module_path(module)
        return path is not None and path.name == "__init__.py"


def installed_nvflare() -> tuple[Path, str]:
    """(package folder, version) of the installed nvflare, without importing it."""
    spec = importlib.util.find_spec("nvflare")
    if spec is None or not spec.submodule_search_locations:
        raise RecipeTableError("nvflare is not installed in this interpreter; run `make setup` (nvflare==2.9.0)")
    return Path(list(spec.submodule_search_locations)[0]), importlib.metadata.version("nvflare")


def _class_def(tree: ast.Module | None, name: str) -> ast.ClassDef | None:
    for node in tree.body if tree else []:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def resolve(source: SourceTree, module: str, name: str, depth: int = 0) -> str | None:
    """Qualified name of the class `name` as seen from `module` (follows `from x import y as z`)."""
    if depth > MAX_REEXPORT_DEPTH:
        return None
    tree = source.tree(module)
    if tree is None:
        return None
    if _class_def(tree, name) is not None:
        return f"{module}.{name}"
    for node in ast.walk(tree):  # module level and lazy __getattr__ imports alike
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    target = _absolute(module, node, source.is_package(module))
                    return resolve(source, target, alias.name, depth + 1)
    return None


def _bases(source: SourceTree, qualname: str) -> list[str]:
    module, _, name = qualname.rpartition(".")
    node = _class_def(source.tree(module), name)
    found = []
    for base in node.bases if node else []:
        base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        target = resolve(source, module, base_name) if base_name else None
        if target:
            found.append(target)
    return found


def recipe_classes(source: SourceTree) -> list[str]:
    """Every class of the installed nvflare that derives from nvflare.recipe.spec.Recipe, sorted."""
    candidates = []
    for module in source.modules_mentioning("Recipe"):
        candidates += [f"{module}.{n.name}" for n in source.tree(module).body if isinstance(n, ast.ClassDef)]
    parents = {qualname: _bases(source, qualname) for qualname in candidates}
    recipes: set[str] = set()
    changed = True
    while changed:
        changed = False
        for qualname, bases in parents.items():
            if qualname not in recipes and any(b == RECIPE_ROOT or b in recipes for b in bases):
                recipes.add(qualname)
                changed = True
    return sorted(recipes)


def _literal(node: ast.expr) -> tuple[bool, object]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False, None
    return True, json.loads(json.dumps(value))  # tuples -> lists, JSON-safe


def signature(source: SourceTree, qualname: str) -> dict:
    """{defaults, required, computed, fixed} of a class's effective __init__ (see the module docstring)."""
    module, _, name = qualname.rpartition(".")
    node = _class_def(source.tree(module), name)
    init = (
        next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if node else None
    )
    bases = _bases(source, qualname)
    inherited = signature(source, bases[0]) if bases and bases[0] != RECIPE_ROOT else _empty()
    if init is None:
        return inherited
    own = _own_params(init)
    if init.args.kwarg is not None:
        for key in ("defaults", "computed"):
            own[key] = {**{k: v for k, v in inherited[key].items() if k not in own["names"]}, **own[key]}
        own["required"] = sorted(set(own["required"]) | {p for p in inherited["required"] if p not in own["names"]})
    own["fixed"] = _fixed_by_super(init, own["names"])
    del own["names"]
    return own


def _empty() -> dict:
    return {"defaults": {}, "required": [], "computed": {}, "fixed": {}}


def _own_params(init: ast.FunctionDef) -> dict:
    spec = init.args
    positional = spec.posonlyargs + spec.args
    pairs = list(zip(positional, [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults), strict=True))
    pairs += list(zip(spec.kwonlyargs, spec.kw_defaults, strict=True))
    out = {"defaults": {}, "required": [], "computed": {}, "names": set()}
    for arg, default in pairs:
        if arg.arg == "self":
            continue
        out["names"].add(arg.arg)
        if default is None:
            out["required"].append(arg.arg)
            continue
        ok, value = _literal(default)
        if ok:
            out["defaults"][arg.arg] = value
        else:
            out["computed"][arg.arg] = ast.unparse(default)
    out["required"].sort()
    return out


def _fixed_by_super(init: ast.FunctionDef, own_names: set[str]) -> dict:
    """Budget values a subclass hard-codes in its call of the base __init__ (not parameters of its own)."""
    fixed = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            for keyword in node.keywords:
                if keyword.arg in BUDGET_PARAMS and keyword.arg not in own_names:
                    ok, value = _literal(keyword.value)
                    if ok:
                        fixed[keyword.arg] = value
    return fixed


def raises(source: SourceTree, qualname: str) -> dict:
    """What makes the recipe raise for some arguments, read statically: `requires_sites` when its
    `_validate_before_use` raises unless `set_per_site_config()` configured sites (own or inherited), and `guards`,
    the `if <budget parameter> <op> <int>: raise ...` checks at the top of its own `__init__`."""
    out: dict = {}
    sites = _site_requirement(source, qualname)
    if sites:
        out["requires_sites"] = sites
    guards = _budget_guards(source, qualname)
    if guards:
        out["guards"] = guards
    return out


def _where(source: SourceTree, qualname: str) -> tuple[ast.ClassDef | None, str]:
    module, _, name = qualname.rpartition(".")
    path = source.module_path(module)
    rel = path.relative_to(source.root.parent).as_posix() if path else module
    return _class_def(source.tree(module), name), rel


def _site_requirement(source: SourceTree, qualname: str, depth: int = 0) -> dict | None:
    node, rel = _where(source, qualname)
    if node is None or depth > MAX_REEXPORT_DEPTH:
        return None
    method = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "_validate_before_use"), None)
    if method is None:
        bases = [b for b in _bases(source, qualname) if b != RECIPE_ROOT]
        return _site_requirement(source, bases[0], depth + 1) if bases else None
    for statement in method.body:
        if (
            isinstance(statement, ast.If)
            and isinstance(statement.test, ast.UnaryOp)
            and isinstance(statement.test.op, ast.Not)
            and "configured_sites" in ast.unparse(statement.test)
            and statement.body
            and isinstance(statement.body[0], ast.Raise)
        ):
            return {"file": rel, "line": statement.body[0].lineno, "raises": _raised(statement.body[0])}
    return None


COMPARE_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _budget_guards(source: SourceTree, qualname: str) -> list[dict]:
    node, rel = _where(source, qualname)
    init = (
        next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if node else None
    )
    guards = []
    for statement in init.body if init else []:
        test = statement.test if isinstance(statement, ast.If) else None
        if not (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id in BUDGET_PARAMS
            and len(test.ops) == 1
            and type(test.ops[0]) in COMPARE_OPS
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, int)
            and statement.body
            and isinstance(statement.body[0], ast.Raise)
        ):
            continue
        guards.append(
            {
                "param": test.left.id,
                "op": COMPARE_OPS[type(test.ops[0])],
                "value": test.comparators[0].value,
                "file": rel,
                "line": statement.body[0].lineno,
                "raises": _raised(statement.body[0]),
            }
        )
    return guards


def _raised(node: ast.Raise) -> str:
    text = ast.unparse(node.exc) if node.exc is not None else "an exception"
    return text if len(text) <= 160 else text[:157] + "..."


def load_families(path: Path = FAMILIES_SOURCE) -> dict:
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    for name, entry in data["recipes"].items():
        if entry.get("family") not in FAMILIES:
            raise RecipeTableError(
                f"{path.name}: {name} has family {entry.get('family')!r}; use one of {sorted(FAMILIES)}"
            )
        if entry["family"] != "training" and not entry.get("reason"):
            raise RecipeTableError(f"{path.name}: {name} is {entry['family']} but has no reason; add one")
    return data


def build_table(source: SourceTree, version: str, families: dict) -> dict:
    """The rendered document: every recipe class plus the listed components, with their signatures."""
    classes = {}
    for qualname in recipe_classes(source):
        name = qualname.rpartition(".")[2]
        family = families["recipes"].get(name)
        if family is None:
            raise RecipeTableError(
                f"nvflare {version} ships {qualname}, which shared/catalog/recipe_families.yaml "
                "does not classify; add it (training, statistics, psi, evaluation, inference or "
                "nested)"
            )
        classes[qualname] = {
            "bases": _bases(source, qualname),
            "kind": "recipe",
            "name": name,
            **family,
            **signature(source, qualname),
            **raises(source, qualname),
        }
    for qualname in families["components"]:
        if _class_def(source.tree(qualname.rpartition(".")[0]), qualname.rpartition(".")[2]) is None:
            raise RecipeTableError(f"nvflare {version} has no class {qualname}; update the components list")
        classes[qualname] = {"kind": "component", "name": qualname.rpartition(".")[2], **signature(source, qualname)}
    return {
        "_generated": f"generated by make sync from the installed nvflare {version} (shared/nvflare_recipes.py and "
        "shared/catalog/recipe_families.yaml); do not edit",
        "classes": dict(sorted(classes.items())),
        "nvflare_version": version,
    }


def render() -> bytes:
    """The JSON bytes of the table for the installed NVFLARE (what `make sync` writes)."""
    root, version = installed_nvflare()
    table = build_table(SourceTree(root), version, load_families())
    return (json.dumps(table, indent=1, sort_keys=True) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the NVFLARE recipe table (statically, never imports nvflare).")
    parser.add_argument("--list", action="store_true", help="list the recipe classes and their families")
    args = parser.parse_args(argv)
    try:
        text = render()
    except (RecipeTableError, OSError, SyntaxError, yaml.YAMLError) as exc:
        print(f"nvflare_recipes: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for qualname, entry in json.loads(text)["classes"].items():
            if entry["kind"] == "recipe":
                print(f"{qualname}\t{entry['family']}")
        return 0
    sys.stdout.write(text.decode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
