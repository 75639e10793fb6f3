"""Suggested search space: the job's own tunable flags with their defaults, types and schema bounds.

Budget flags, fixed-within-campaign flags and plumbing flags (names, paths, seeds, devices, export
switches) are left out; a flag the schema lists in `mutable_args` is always in (unless pinned) and carries its
bounds, even when its name or type would not have suggested it.
"""

from __future__ import annotations

from typing import Any

from .argparse_flow import TYPES
from .values import to_jsonable

PLUMBING = set(
    "name job_name seed port gpu gpus device threads num_threads log_config export export_dir help version "
    "verbose debug quiet dry_run".split()
)
PATHLIKE = ("path", "dir", "file", "workspace", "root", "output", "ckpt", "checkpoint")


def _kind(flag: Any) -> str | None:
    if flag.action in ("store_true", "store_false", "boolean_optional"):
        return "bool"
    if flag.type in TYPES:
        return flag.type
    value = flag.default.value if flag.default.resolved else None
    return next((name for name, py in TYPES.items() if isinstance(value, py)), None)


def _tunable(flag: Any, kind: str | None, blocked: set[str], declared: bool) -> bool:
    if flag.positional or not flag.option_strings or flag.action in ("help", "version", "count", "append"):
        return False
    if blocked & set(flag.option_strings) or flag.dest in blocked:
        return False
    if declared:
        return True
    if flag.dest in PLUMBING or any(part in flag.dest.lower() for part in PATHLIKE):
        return False
    return kind in ("int", "float", "bool") or (kind == "str" and flag.choices is not None)


def suggested(flags: list, blocked: set[str], mutable_args: dict) -> list[dict]:
    """`search_space.suggested`: [{flag, dest, default, type, choices?, min?, max?}] in definition order."""
    out = []
    for flag in flags:
        kind, bounds = _kind(flag), mutable_args.get(flag.dest) or {}
        if not _tunable(flag, kind, blocked, flag.dest in mutable_args):
            continue
        item = {
            "default": to_jsonable(flag.default.value) if flag.default.resolved else None,
            "dest": flag.dest,
            "flag": flag.name,
            "type": kind or bounds.get("type"),
        }
        if flag.choices is not None:
            item["choices"] = to_jsonable(flag.choices)
        out.append(item | {key: bounds[key] for key in ("min", "max", "choices") if key in bounds})
    return out
