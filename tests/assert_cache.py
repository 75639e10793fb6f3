"""Write pytest's assert-rewritten bytecode of the test modules once, before xdist starts its workers.

pytest rewrites the asserts of every test module it imports and caches the result in `__pycache__` (a
`*-pytest-<version>.pyc` beside the source), but only when bytecode may be written: with PYTHONDONTWRITEBYTECODE
set (as on CI images), and once the suite has imported a CLI that sets `sys.dont_write_bytecode`, every xdist worker
rewrites every module it collects again (about 5 s of CPU per worker for the whole suite). The controller writes
the cache here instead; the workers' importer reads it (pytest reads a valid cached pyc whatever the flag says).
Uses pytest's own rewrite and pyc functions (pytest is pinned in requirements-dev.txt).
"""

from __future__ import annotations

from pathlib import Path

from _pytest.assertion import rewrite
from _pytest.assertion.rewrite import assertstate_key


def modules_under(paths: list[Path]) -> list[Path]:
    """The test and conftest modules under `paths` (folders searched, files kept when they are such modules)."""
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(p for p in path.rglob("*.py") if _is_test_module(p) and "__pycache__" not in p.parts)
        elif path.is_file() and _is_test_module(path):
            found.add(path)
    return sorted(found)


def _is_test_module(path: Path) -> bool:
    return path.name == "conftest.py" or (path.name.startswith("test_") and path.suffix == ".py")


def write_rewritten(config, paths: list[Path]) -> int:
    """Rewrite each module whose cached pyc is missing or stale and write it; returns how many were written."""
    if assertstate_key not in config.stash:
        return 0  # --assert=plain: nothing is rewritten
    state = config.stash[assertstate_key]
    written = 0
    for source in modules_under(paths):
        cache_dir = rewrite.get_cache_dir(source)
        pyc = cache_dir / (source.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(source, pyc, state.trace) is not None or not rewrite.try_makedirs(cache_dir):
            continue
        try:
            source_hash, code = rewrite._rewrite_test(source, config)
        except SyntaxError:
            continue  # the worker's own import reports it
        if rewrite._write_pyc(state, code, source_hash, pyc):
            written += 1
    return written
