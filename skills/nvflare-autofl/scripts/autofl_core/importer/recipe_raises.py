"""NVFLARE recipe code that raises for some arguments, checked before a campaign starts (statically, pure).

From the recipe table (`recipes.site_requirement`, `recipes.guards`): a job whose recipe would raise is refused
with the NVFLARE line and what to change in job.py. Usage::

    reasons = would_raise(surface, budget)   # [] when nothing in the table would raise with these arguments
"""

from __future__ import annotations

from operator import eq, ge, gt, le, lt, ne
from typing import Any

from . import recipes

OPERATORS = {"<": lt, "<=": le, ">": gt, ">=": ge, "==": eq, "!=": ne}


def would_raise(surface: Any, budget: dict) -> list[str]:
    """Why the recipe job.py runs would raise with the arguments it is imported with (each names the line)."""
    target = surface.target
    if surface.status != "supported" or surface.pattern != "recipe" or target is None:
        return []
    reasons = []
    version = recipes.nvflare_version()
    needs = recipes.site_requirement(target.cls)
    if needs and target.per_site is None and "per_site_config" not in target.kwargs:
        reasons.append(
            f"{target.name} raises {needs['raises']} at execution ({needs['file']} line {needs['line']}, nvflare "
            f"{version}) because job.py never calls set_per_site_config() on the {target.name} built at line "
            f"{target.line}; call set_per_site_config(recipe, {{'site-1': {{...}}, ...}}) right after building "
            "it, one entry per site"
        )
    for guard in recipes.guards(target.cls):
        entry = budget.get(guard["param"]) or {}
        value = entry.get("value")
        if not isinstance(value, int) or not OPERATORS[guard["op"]](value, guard["value"]):
            continue
        change = (
            f"pass {entry['flag']} with another value in --base-args, or change its default in job.py"
            if entry.get("flag")
            else f"change {guard['param']} where job.py builds {target.name} (line {target.line})"
        )
        reasons.append(
            f"{target.name} raises {guard['raises']} when {guard['param']} {guard['op']} {guard['value']} "
            f"({guard['file']} line {guard['line']}, nvflare {version}), and {guard['param']} is {value} here "
            f"({entry.get('source')}); {change}"
        )
    return reasons
