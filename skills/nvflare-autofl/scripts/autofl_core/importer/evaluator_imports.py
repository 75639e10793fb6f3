"""The job-local modules a frozen evaluator imports, found statically and transitively (pure, AST only), resolved
like `trust.imported_candidates`; a file that does not parse stops the walk with a ValueError naming it. Usage::

    files = local_imports("evaluate.py", read)   # read(rel) -> source text, or None when no such file
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .files import UNPARSABLE
from .trust import imported_candidates

MAX_MODULES = 256


def local_imports(script: str, read: Callable[[str], str | None]) -> list[str]:
    """Job-relative paths of the job-local modules `script` imports, directly or through each other (sorted)."""
    seen: dict[str, None] = {}
    queue = [script]
    while queue:
        rel = queue.pop()
        text = read(rel)
        if text is None:
            continue
        try:
            tree = ast.parse(text, filename=rel)
        except UNPARSABLE as error:
            raise ValueError(f"{rel} does not parse ({error.__class__.__name__}: {error})") from None
        for candidate in imported_candidates(tree, rel):
            if candidate in seen or candidate == script or read(candidate) is None:
                continue
            seen[candidate] = None
            if len(seen) > MAX_MODULES:
                raise ValueError(f"{script} imports more than {MAX_MODULES} job-local modules")
            queue.append(candidate)
    return sorted(seen)
