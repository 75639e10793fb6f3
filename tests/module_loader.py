"""Load a repository script (evals/, bench/) as a module by file path, once per test session.

Usage: `module = load_by_path("eval_checks", REPO / "evals" / "eval_checks.py")`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_by_path(name: str, path: Path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
