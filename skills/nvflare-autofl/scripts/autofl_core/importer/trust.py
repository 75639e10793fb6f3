"""Trust contract: which files a candidate may edit or create.

allowed_edit_paths = job.py, the train script, and the local modules either of them imports that
exist inside the workspace; allowed_create_patterns = ["**/*.py"]; preferred_targets = the schema's
targets that exist. Pure: file existence is asked through an `exists(relative_path)` callback.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable
from typing import Any

from .values import known

CREATE_PATTERNS = ["**/*.py"]
RESERVED_PARTS = set(".git .nvflare .tox .venv venv __pycache__ autofl_runs node_modules site-packages".split())


def safe_relative(path: str) -> str | None:
    """Normalize a workspace-relative path; None for absolute, escaping or reserved paths."""
    if not path or path.startswith(("/", "\\")) or ":" in path:
        return None
    norm = posixpath.normpath(path.replace("\\", "/"))
    parts = norm.split("/")
    return None if norm in (".", "") or ".." in parts or RESERVED_PARTS & set(parts) else norm


def outside_job(script: str | None) -> str | None:
    """Why the job is refused when the train script it names is an absolute path outside job.py's folder (a run
    records one inside the folder relative to it): no candidate may edit it and the trust contract cannot name what
    the clients run. None otherwise; a relative path above the folder (`../client.py`, NVFLARE's examples sharing a
    client script) is admitted with no train script in the trust contract."""
    if script is None or not posixpath.isabs(script.replace("\\", "/")):
        return None
    return (
        f"the train script {script!r} is an absolute path outside job.py's folder, so a candidate cannot edit it and "
        "the trust contract cannot name what the clients run; copy it beside job.py and name it by a relative path "
        '(train_script="client.py")'
    )


def train_script_of(surface: Any) -> str | None:
    """The script the clients of a supported surface run: recipe `train_script=` or a ScriptRunner's `script=`."""
    candidates = [surface.target.kwargs.get("train_script")]
    candidates += [c.kwargs.get("script") for c in getattr(surface, "components", [])]
    return next((val.value for val in candidates if known(val, str)), None)


def module_files(module: str, base: str) -> list[str]:
    """The files a module `a.b` of the folder `base` may be: `base/a/b.py` or the package `base/a/b/__init__.py`."""
    path = posixpath.join(base, *module.split("."))
    return [path + ".py", posixpath.join(path, "__init__.py")]


def _package_files(module: str, base: str) -> list[str]:
    """The files of `module` and of each package above it (`a`, `a.b`, `a.b.c`)."""
    parts = module.split(".")
    return [path for i in range(len(parts)) for path in module_files(".".join(parts[: i + 1]), base)]


def imported_candidates(tree: ast.Module, file_rel: str) -> list[str]:
    """Workspace-relative files that could satisfy the imports of `file_rel` (first match per module)."""
    base = posixpath.dirname(file_rel)
    paths: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            paths += [path for alias in node.names for path in _package_files(alias.name, base)]
        elif isinstance(node, ast.ImportFrom):
            origin = base
            for _ in range(max(node.level - 1, 0)):
                origin = posixpath.dirname(origin)
            if node.module:
                paths += _package_files(node.module, origin)
            prefix = node.module or ""
            for alias in node.names:
                if alias.name != "*":
                    paths += module_files(f"{prefix}.{alias.name}".strip("."), origin)
    return list(dict.fromkeys(norm for norm in map(safe_relative, paths) if norm))


def trust_section(
    job_rel: str,
    job_tree: ast.Module,
    script_rel: str | None,
    script_tree: ast.Module | None,
    exists: Callable[[str], bool],
    preferred: list[str],
) -> dict:
    """The `trust` block of the config."""
    edit = [job_rel]
    if script_rel and exists(script_rel):
        edit.append(script_rel)
    sources = [(job_rel, job_tree)] + ([(script_rel, script_tree)] if script_rel and script_tree else [])
    found = dict.fromkeys(path for file_rel, tree in sources for path in imported_candidates(tree, file_rel))
    modules = [path for path in found if path not in edit and exists(path)]
    targets = [t for t in (safe_relative(p) for p in preferred) if t and exists(t)]
    return {
        "allowed_create_patterns": list(CREATE_PATTERNS),
        "allowed_edit_paths": sorted(set(edit + modules)),
        "local_modules": sorted(modules),
        "preferred_targets": list(dict.fromkeys(targets)),
        "train_script": script_rel,
    }
