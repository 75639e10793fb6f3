"""Read one of the skill's rendered reference JSON files (catalog, message mapping), bounded.

Usage: `document = read_reference(path, limit, error=CatalogError, what="catalog")`; any problem raises `error`
with a one-line message that names the fix (`make sync`).
"""

from __future__ import annotations

import json
from pathlib import Path


def read_reference(path: str | Path, limit: int, *, error: type[Exception], what: str) -> object:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}; run `make sync` to render it") from None
    if len(raw) > limit:
        raise error(f"{what} {path} is larger than {limit} bytes; re-render it with `make sync`")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{what} {path} is not valid JSON ({exc}); re-render it with `make sync`") from None
