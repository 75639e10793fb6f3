"""The nvfdiag folder tree is the architecture: stages import only earlier stages, no import cycle, true maps.

Layers, lowest first: the shared modules at the package top (model, textindex, regexfacts, logline), read/,
untrusted/ (the matcher runs it first), match/, report/, then pipeline.py. A module may import its own layer and
lower ones only (so read never imports match or report, match never imports report, ...). Every import counts,
also one inside a function. Each package's `__init__.py` holds a docstring only (importing a package costs nothing)
and that docstring maps exactly the modules the folder holds. `python tests/diagnose/test_package_layers.py`
prints the violations.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "nvfdiag"
SHARED = ("model", "textindex", "regexfacts", "logline", "pylines")
LAYERS = {"shared": 0, "read": 1, "untrusted": 2, "match": 3, "report": 4, "pipeline": 5}
MAP_LINE = re.compile(r"^([a-z_]+/?)\s{2,}\S")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package under `root` (packages by their __init__)."""
    return {module_name(path, root): path for path in sorted(root.rglob("*.py")) if "__pycache__" not in path.parts}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's own modules that module `name` imports (relative imports resolved, `from . import x` too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known and target != name)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    found = modules(root)
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def layer(name: str) -> int:
    parts = name.split(".")
    if len(parts) == 1:
        return -1  # the package itself: its __init__ imports nothing (checked below)
    head = parts[1]
    return LAYERS["shared"] if head in SHARED else LAYERS[head]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """`a imports b` where b sits in a later layer than a (or in no known layer at all)."""
    out = []
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer(target) > layer(name):
                out.append(f"{name} imports {target} (a later stage)")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles between modules (each one found once, as the path that closes it)."""
    found, state = [], {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles between the subpackages (read, untrusted, match, report) and the top-level modules."""

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:2])

    folded: dict[str, set[str]] = {}
    for name, targets in graph.items():
        folded.setdefault(unit(name), set()).update(unit(t) for t in targets if unit(t) != unit(name))
    return cycles(folded)


def mapped_names(docstring: str) -> set[str]:
    return {match.group(1) for line in docstring.splitlines() if (match := MAP_LINE.match(line))}


def held_names(folder: Path) -> set[str]:
    files = {path.stem for path in folder.glob("*.py") if path.name != "__init__.py"}
    return files | {f"{path.parent.name}/" for path in folder.glob("*/__init__.py")}


def test_the_graph_sees_every_module_and_relative_import():
    graph = import_graph(PACKAGE)
    assert {"nvfdiag.read.evidence", "nvfdiag.match.matcher", "nvfdiag.report.assemble"} <= set(graph)
    assert {"nvfdiag.read.bounded", "nvfdiag.read.evidence", "nvfdiag.read.jsontext"} <= graph["nvfdiag.read.collect"]
    assert {"nvfdiag.model", "nvfdiag.untrusted.injection"} <= graph["nvfdiag.match.matcher"]
    assert "nvfdiag.logline" in graph["nvfdiag.untrusted.injection"]  # `from .. import logline`


def test_no_stage_imports_a_later_stage():
    assert layer_violations(import_graph(PACKAGE)) == []


def test_no_import_cycle_between_modules_or_packages():
    graph = import_graph(PACKAGE)
    assert cycles(graph) == []
    assert package_cycles(graph) == []


def test_the_checks_catch_a_later_stage_import_and_a_cycle():
    graph = {
        "nvfdiag.read.evidence": {"nvfdiag.match.catalog"},
        "nvfdiag.match.catalog": {"nvfdiag.read.jsontext"},
        "nvfdiag.read.jsontext": {"nvfdiag.model"},
        "nvfdiag.model": set(),
    }
    assert layer_violations(graph) == ["nvfdiag.read.evidence imports nvfdiag.match.catalog (a later stage)"]
    assert layer_violations({"nvfdiag.match.scan": {"nvfdiag.report.render"}}) != []
    assert layer_violations({"nvfdiag.logline": {"nvfdiag.read.sites"}}) != []
    assert cycles(graph) == []
    graph["nvfdiag.read.jsontext"].add("nvfdiag.read.evidence")
    assert cycles(graph) == [
        ["nvfdiag.match.catalog", "nvfdiag.read.jsontext", "nvfdiag.read.evidence", "nvfdiag.match.catalog"]
    ]
    assert package_cycles(graph) == [["nvfdiag.match", "nvfdiag.read", "nvfdiag.match"]]


def test_package_inits_are_a_docstring_only():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        body = ast.parse(init.read_text(encoding="utf-8")).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), init


def test_each_package_docstring_maps_exactly_its_modules():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert mapped_names(docstring) == held_names(init.parent), init


def test_the_map_check_sees_a_missing_or_stale_entry(tmp_path):
    (tmp_path / "kept.py").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    doc = "Map.\n\nkept    holds things\nsub/    a stage\ngone    was removed\n"
    assert held_names(tmp_path) == {"kept", "sub/"}
    assert mapped_names(doc) == {"kept", "sub/", "gone"}


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def diagnose_section() -> str:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = page.index("## Diagnose pipeline")
    return page[start : page.index("\n## ", start + 1)]


def named_in(section: str) -> list[tuple[Path, str | None]]:
    """(file, attribute or None) for every `stage/module[.py][.name]` and `diagnose_job.name` the section quotes."""
    out = []
    for token in re.findall(r"`([^`\s]+)`", section):
        staged = re.fullmatch(r"(read|match|untrusted|report)/([a-z_]+)(?:\.py)?(?:\.([A-Za-z_]+))?", token)
        if staged:
            out.append((PACKAGE / staged.group(1) / f"{staged.group(2)}.py", staged.group(3)))
        elif re.fullmatch(r"[a-z_]+\.py", token) and token != "diagnose_job.py":
            out.append((PACKAGE / token, None))
        elif token.startswith("diagnose_job."):
            name = token.removeprefix("diagnose_job.")
            out.append((PACKAGE.parent / "diagnose_job.py", None if name == "py" else name))
    return out


def test_the_architecture_page_names_existing_modules_and_functions():
    named = named_in(diagnose_section())
    assert len(named) > 30
    for path, name in named:
        assert path.is_file(), f"docs/architecture.md names {path.relative_to(REPO)}, which does not exist"
        assert name is None or name in top_level_names(path), f"{path.relative_to(REPO)} has no {name}"


def test_the_architecture_package_map_lists_every_module():
    rows = re.findall(r"^\| `(read|match|untrusted|report)/` \| (.+) \|$", diagnose_section(), re.M)
    assert {folder for folder, _ in rows} == {"read", "match", "untrusted", "report"}
    for folder, cells in rows:
        listed = {token for token in re.findall(r"`([a-z_]+)`", cells) if (PACKAGE / folder / f"{token}.py").exists()}
        assert listed == held_names(PACKAGE / folder), folder


if __name__ == "__main__":
    graph = import_graph(PACKAGE)
    problems = layer_violations(graph) + [" -> ".join(cycle) for cycle in cycles(graph) + package_cycles(graph)]
    print("\n".join(problems) or "nvfdiag: no later-stage import, no cycle")
    sys.exit(1 if problems else 0)
