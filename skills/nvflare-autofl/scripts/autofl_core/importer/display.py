"""What a human is shown of an imported config: the `summary` block and the shortened YAML view.

The summary holds what the user must agree to before a campaign: the objective (metric, direction, where the
direction comes from), the fixed budget (each field's value, confidence and source), then the files a candidate
may edit, what could not be resolved and the tunable options. Long literal values (a 210-element model list, a
long string) are elided for display only (`[0.0] x 210`); the config's data always keeps the full value. Pure.
Usage::

    config["summary"] = summary(objective, budget, editable=[...], unresolved=[...], allowed=[...])
    view = elide(config)   # a copy for `job_importer.py --format yaml`; `config` is unchanged
"""

from __future__ import annotations

from typing import Any

MAX_ITEMS = 8  # a list or mapping longer than this is shortened
MAX_CHARS = 160  # a string longer than this is shortened
SHOWN_ITEMS = 3  # items kept before "... (N items)"
BUDGET_FIELDS = ("num_clients", "min_clients", "num_rounds")
DIRECTION = {"max": "higher is better", "min": "lower is better"}


def summary(objective: dict, budget: dict, *, editable: list, unresolved: list, allowed: list) -> dict:
    """The `summary` block of an imported config (values elided for display)."""
    return elide(
        {
            "objective": {
                "metric": objective.get("metric"),
                "direction": DIRECTION.get(objective.get("mode") or "", "unresolved"),
                "mode": objective.get("mode"),
                "source": objective.get("mode_contract_source"),
            },
            "fixed_budget": {
                field: {
                    "value": (budget.get(field) or {}).get("value"),
                    "confidence": (budget.get(field) or {}).get("confidence"),
                    "source": (budget.get(field) or {}).get("source"),
                }
                for field in BUDGET_FIELDS
                if field in budget
            },
            "editable": list(editable),
            "unresolved": list(unresolved),
            "allowed": list(allowed),
        }
    )


def elide(value: Any) -> Any:
    """A display copy of `value` with long lists, mappings and strings shortened (the input is not changed)."""
    if isinstance(value, dict):
        items = list(value.items())
        shown = {str(key): elide(item) for key, item in items[: MAX_ITEMS if len(items) <= MAX_ITEMS else SHOWN_ITEMS]}
        if len(items) > MAX_ITEMS:
            shown["..."] = f"{len(items) - SHOWN_ITEMS} more entries ({len(items)} in all)"
        return shown
    if isinstance(value, (list, tuple)):
        return _elide_list(list(value))
    if isinstance(value, str) and len(value) > MAX_CHARS:
        return f"{value[: MAX_CHARS // 2]}... ({len(value)} characters)"
    return value


def _elide_list(items: list) -> Any:
    if len(items) <= MAX_ITEMS:
        return [elide(item) for item in items]
    if all(_same(item, items[0]) for item in items):
        return f"[{_short(items[0])}] x {len(items)}"
    return [elide(item) for item in items[:SHOWN_ITEMS]] + [f"... ({len(items)} items)"]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _short(item: Any) -> str:
    shown = elide(item)
    text = shown if isinstance(shown, str) and isinstance(item, (list, tuple)) else repr(shown)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS // 2] + "..."
