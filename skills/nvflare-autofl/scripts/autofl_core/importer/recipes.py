"""NVFLARE's recipe classes as the importer knows them: family and constructor defaults, read from a table.

`nvflare_recipes.json` (next to this file) is rendered by `make sync` from the installed NVFLARE's source
(shared/nvflare_recipes.py), so nvflare is never imported. A class is found by its import path, else by name; a
local subclass inherits its base's family, and its base's defaults unless it builds its instances otherwise
(`targets.own_constructor`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_FILE = Path(__file__).with_name("nvflare_recipes.json")
LOCAL_PREFIX = "<local>."


@lru_cache(maxsize=1)
def table() -> dict:
    return json.loads(TABLE_FILE.read_text(encoding="utf-8"))


def nvflare_version() -> str:
    return table()["nvflare_version"]


@dataclass(frozen=True)
class Default:
    """What NVFLARE uses for an omitted constructor argument: status value | fixed | required | computed | absent |
    ambiguous (same-named classes disagree) | unknown (not in the table, or a local subclass with its own __init__)."""

    status: str
    value: Any = None
    detail: str = ""


def _matches(cls: Any) -> tuple[dict[str, dict], bool]:
    """({table qualname: entry} the class may be, whether a local subclass redefines __init__)."""
    if cls is None or getattr(cls, "dynamic", False):
        return {}, False
    classes = table()["classes"]
    if cls.qualname.startswith(LOCAL_PREFIX) or (cls.bases and cls.qualname not in classes):
        for base in cls.bases:  # a class of the job's own (job.py, or a module beside it with its bases read)
            found, own_init = _matches(base)
            if found:
                return found, own_init or cls.defines_init
        return {}, False
    if cls.qualname in classes:
        return {cls.qualname: classes[cls.qualname]}, False
    same_name = {q: e for q, e in classes.items() if e["name"] == cls.name}
    module = cls.qualname.rpartition(".")[0]
    under = {q: e for q, e in same_name.items() if module.startswith("nvflare") and q.startswith(module + ".")}
    return under or same_name, False


def _recipes(cls: Any) -> dict[str, dict]:
    """The recipe classes (not controllers or other components) the class may be."""
    return {q: e for q, e in _matches(cls)[0].items() if e["kind"] == "recipe"}


def nvflare_class(cls: Any) -> str | None:
    """The NVFLARE class a job's class resolves to (its module path), when exactly one matches."""
    found = list(_recipes(cls))
    return found[0] if len(found) == 1 else None


def keeps_nvflare_arguments(cls: Any) -> bool:
    """True when NVFLARE's code takes the class's constructor arguments as given: a class imported from an
    `nvflare` module, or a job's own subclass building its instances as its bases do, each of which keeps them
    (never a class of another package, whatever its name, nor one derived from it)."""
    if cls is None or getattr(cls, "dynamic", False):
        return False
    if cls.qualname.partition(".")[0] == "nvflare":
        return True
    local = cls.qualname.startswith(LOCAL_PREFIX) and not cls.defines_init and bool(_matches(cls)[0])
    return local and all(keeps_nvflare_arguments(base) for base in cls.bases)  # a mixin's __init__ runs first


def is_known_recipe(cls: Any) -> bool:
    return bool(_recipes(cls))


def family_of(cls: Any) -> tuple[str, str] | None:
    entry = next(iter(_recipes(cls).values()), None)
    return None if entry is None else (entry["family"], entry.get("reason", ""))


def budget_source(cls: Any, field: str) -> dict | None:
    for entry in _matches(cls)[0].values():
        if field in entry.get("budget", {}):
            return entry["budget"][field]
    return None


def _default_in(entry: dict, param: str) -> Default:
    if param in entry["fixed"]:
        return Default("fixed", entry["fixed"][param])
    if param in entry["defaults"]:
        return Default("value", entry["defaults"][param])
    if param in entry["required"]:
        return Default("required")
    return Default("computed", detail=entry["computed"][param]) if param in entry["computed"] else Default("absent")


def default_of(cls: Any, param: str) -> Default:
    entries, own_init = _matches(cls)
    if not entries or own_init:
        return Default("unknown")
    found = [_default_in(entry, param) for entry in entries.values()]
    return found[0] if all(d == found[0] for d in found) else Default("ambiguous")


def site_requirement(cls: Any) -> dict | None:
    """`{file, line, raises}` when the recipe raises at export/execute unless set_per_site_config() named its sites."""
    return next((e["requires_sites"] for e in _matches(cls)[0].values() if e.get("requires_sites")), None)


def guards(cls: Any) -> list[dict]:
    """The recipe's `if <budget parameter> <op> <int>: raise` checks (`{param, op, value, file, line, raises}`)."""
    entries, own_init = _matches(cls)
    return [] if own_init or not entries else list(next(iter(entries.values())).get("guards") or [])
