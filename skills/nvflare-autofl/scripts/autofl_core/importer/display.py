"""What a human is shown of an imported config: the `summary` block and the shortened YAML view (pure).

`summary(config)` holds what the user must agree to before a campaign: the objective, the fixed budget, the files
a candidate may edit, what could not be resolved and the tunable options. `elide(config)` is a display copy with
long literal values shortened (`[0.0] x 210`); the config's data (JSON, autofl.yaml) keeps the full value.
"""

from __future__ import annotations

from typing import Any

from .budget import FIELDS
from .objective import DIRECTION

MAX_ITEMS = 16  # a list of numbers longer than this is shortened (a model's initial weights, say)
MAX_CHARS = 500  # a string longer than this is shortened
SHOWN_ITEMS = 3  # items kept before "... (N items: types)"
VALUE_KEYS = ("value", "default")  # where the config holds literals taken from the job's source


def summary(config: dict) -> dict:
    """The `summary` block of an imported config (values elided for display)."""
    objective, budget = config["objective"], config["fixed_budget"]
    return elide(
        {
            "objective": {
                "metric": objective.get("metric"),
                "direction": DIRECTION.get(objective.get("mode") or "", "unresolved"),
                "mode": objective.get("mode"),
                "source": objective.get("mode_contract_source"),
            },
            "fixed_budget": {
                field: {key: (budget.get(field) or {}).get(key) for key in ("value", "confidence", "source")}
                for field in FIELDS
                if field in budget
            },
            "editable": list(config["trust"]["allowed_edit_paths"]),
            "unresolved": [u["field"] for u in config["unresolved"]],
            "allowed": [s["flag"] for s in config["search_space"]["suggested"]],
        }
    )


def elide(value: Any, *, literal: bool = False) -> Any:
    """A display copy of `value` with long literal data shortened: lists of numbers (also nested) longer than
    MAX_ITEMS anywhere; under a `value` or `default` key (a literal from the job's source) any list or mapping of
    plain data longer than MAX_ITEMS; and strings longer than MAX_CHARS. A shortened list keeps its first items and
    says how many there are and of which types; a mapping keeps its first keys. The input is not changed."""
    if isinstance(value, dict):
        if literal and len(value) > MAX_ITEMS and all(_plain(item) for item in value.values()):
            keys = ", ".join(repr(key) for key in list(value)[:SHOWN_ITEMS])
            return f"{{{keys}, ...}} ({len(value)} keys; values: {_types(value.values())})"
        return {key: elide(item, literal=literal or key in VALUE_KEYS) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = list(value)
        if len(items) > MAX_ITEMS and (
            all(_numeric(item) for item in items) or (literal and all(_plain(item) for item in items))
        ):
            return _shorten(items)
        return [elide(item, literal=literal) for item in items]
    if isinstance(value, str) and len(value) > MAX_CHARS:
        return f"{value[: MAX_CHARS // 5]}... ({len(value)} characters)"
    return value


def _numeric(item: Any) -> bool:
    """A number, None, or a (nested) list of them: literal data rather than configuration."""
    if isinstance(item, (list, tuple)):
        return all(_numeric(inner) for inner in item)
    return item is None or isinstance(item, (int, float))


def _plain(item: Any, depth: int = 0) -> bool:
    """Plain data: a scalar, or (nested, a few levels at most) lists and mappings of scalars."""
    if isinstance(item, (list, tuple)) and depth < 4:
        return all(_plain(inner, depth + 1) for inner in item)
    if isinstance(item, dict) and depth < 4:
        return all(_plain(inner, depth + 1) for inner in item.values())
    return item is None or isinstance(item, (int, float, str))


def _types(items) -> str:
    """The type names of `items`, each once, in order of first appearance."""
    return ", ".join(dict.fromkeys(type(item).__name__ for item in items))


def _shorten(items: list) -> str | list:
    if all(type(item) is type(items[0]) and item == items[0] for item in items):
        first = elide(items[0])  # a shortened inner list is shown as it is, any other item by its repr
        shown = first if isinstance(first, str) and isinstance(items[0], (list, tuple)) else repr(first)
        return f"[{shown}] x {len(items)}"
    return [elide(item) for item in items[:SHOWN_ITEMS]] + [f"... ({len(items)} items: {_types(items)})"]
