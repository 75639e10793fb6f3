"""mutation_schema.yaml: load and validate the optional, authoritative campaign schema of a workspace.

Format (all sections optional):
    objective: {requested_metric, optimization_metric, metric_extraction_order: [..], metric_source, mode}
    mutable_args: {name: {type: int|float|bool|str, min, max, choices: [..]}}
    comparison_budget_args: {default_candidate_budget: {n_clients, num_rounds, ...}, fixed_within_campaign: [..]}
    preferred_targets: [relative/path.py, ...]
`validate_schema` is pure; `parse_schema_text` wraps PyYAML (imported only when a schema exists).
"""

from __future__ import annotations

from typing import Any

from ..common.bounded import is_finite, is_integer
from .argparse_flow import Flag

SCHEMA_FILE = "mutation_schema.yaml"
TOP_KEYS = {"objective", "mutable_args", "comparison_budget_args", "preferred_targets"}
OBJECTIVE_KEYS = {"requested_metric", "optimization_metric", "metric_extraction_order", "metric_source", "mode"}
ARG_TYPES = {"int": int, "float": (int, float), "bool": bool, "str": str}
POSITIVE_INT_BUDGET = set(
    "n_clients num_rounds aggregation_epochs local_train_steps batch_size eval_batch_size max_model_params "
    "final_eval_clients".split()
)
RUNNER_SETTINGS = {"run_timeout_seconds", "simulator_no_progress_timeout_seconds"}  # the runner's, not job options
POSITIVE_NUMBER_BUDGET = RUNNER_SETTINGS | {"alpha"}
BUDGET_TYPES = {"seed": int, "model_arch": str, "aggregator": str, "cross_site_eval": bool}
BUDGET_KEYS = POSITIVE_INT_BUDGET | POSITIVE_NUMBER_BUDGET | set(BUDGET_TYPES)


def _unknown(section: str, data: dict, allowed: set) -> list[str]:
    extra = sorted(str(k) for k in data if k not in allowed)
    return [f"{section}: unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})"] if extra else []


def _objective(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return ["objective must be a mapping"]
    errors = _unknown("objective", data, OBJECTIVE_KEYS)
    for key in ("requested_metric", "optimization_metric", "metric_source"):
        if key in data and not (isinstance(data[key], str) and data[key].strip()):
            errors.append(f"objective.{key} must be a non-empty string")
    if "mode" in data and data["mode"] not in ("min", "max"):
        errors.append("objective.mode must be 'min' or 'max'")
    order = data.get("metric_extraction_order")
    if order is not None and not (isinstance(order, list) and order and all(isinstance(m, str) and m for m in order)):
        errors.append("objective.metric_extraction_order must be a non-empty list of metric names")
    return errors


def _mutable_arg(name: str, spec: Any) -> list[str]:
    if not isinstance(name, str) or not name:
        return [f"mutable_args: argument name {name!r} must be a non-empty string"]
    where = f"mutable_args.{name}"
    if not isinstance(spec, dict):
        return [f"{where} must be a mapping with a type"]
    errors = _unknown(where, spec, {"type", "min", "max", "choices"})
    kind = spec.get("type")
    if kind not in ARG_TYPES:
        return errors + [f"{where}.type must be one of int, float, bool, str"]
    for bound in ("min", "max"):
        if bound in spec and (kind not in ("int", "float") or not is_finite(spec[bound])):
            errors.append(f"{where}.{bound} must be a finite number on an int/float argument")
    if is_finite(spec.get("min")) and is_finite(spec.get("max")) and spec["min"] > spec["max"]:
        errors.append(f"{where}: min is greater than max")
    if "choices" in spec:
        choices = spec["choices"]
        ok = isinstance(choices, list) and choices and all(_matches(kind, c) for c in choices)
        if not ok:
            errors.append(f"{where}.choices must be a non-empty list of {kind} values")
    return errors


def _matches(kind: str, value: Any) -> bool:
    if kind in ("int", "float"):
        return is_finite(value) and (kind == "float" or isinstance(value, int))
    return isinstance(value, ARG_TYPES[kind])


def _budget(data: Any, mutable: dict) -> list[str]:
    if not isinstance(data, dict):
        return ["comparison_budget_args must be a mapping"]
    errors = _unknown("comparison_budget_args", data, {"default_candidate_budget", "fixed_within_campaign"})
    budget, fixed = data.get("default_candidate_budget", {}), data.get("fixed_within_campaign", [])
    if not isinstance(budget, dict):
        errors.append("comparison_budget_args.default_candidate_budget must be a mapping")
        return errors + _overlap(mutable, fixed, {})
    errors += _unknown("default_candidate_budget", budget, BUDGET_KEYS)
    for key, value in budget.items():
        if key in POSITIVE_INT_BUDGET and not (is_integer(value) and value > 0):
            errors.append(f"default_candidate_budget.{key} must be a positive integer")
        elif key in POSITIVE_NUMBER_BUDGET and not (is_finite(value) and value > 0):
            errors.append(f"default_candidate_budget.{key} must be a positive number")
        elif key in BUDGET_TYPES and not _matches(BUDGET_TYPES[key].__name__, value):
            errors.append(f"default_candidate_budget.{key} must be a {BUDGET_TYPES[key].__name__}")
    if not (isinstance(fixed, list) and all(isinstance(f, str) and f for f in fixed)):
        errors.append("comparison_budget_args.fixed_within_campaign must be a list of argument names")
    return errors + _overlap(mutable, fixed, budget)


def _overlap(mutable: dict, fixed: Any, budget: dict) -> list[str]:
    """The arguments both mutable and fixed (by fixed_within_campaign or default_candidate_budget)."""
    pinned = {f for f in fixed if isinstance(f, str)} if isinstance(fixed, list) else set()
    both = ", ".join(sorted(set(mutable) & (pinned | set(budget))))
    fixed_too = "are both mutable_args and fixed_within_campaign or default_candidate_budget"
    return [f"argument(s) {both} {fixed_too}; a candidate cannot change a fixed argument"] if both else []


def _targets(data: Any) -> list[str]:
    if not isinstance(data, list) or not all(isinstance(t, str) and t for t in data):
        return ["preferred_targets must be a list of relative file paths"]
    bad = [t for t in data if t.startswith(("/", "\\")) or ".." in t.replace("\\", "/").split("/") or ":" in t]
    return [f"preferred_targets: {bad[0]!r} must be a relative path inside the workspace"] if bad else []


def validate_schema(data: Any) -> list[str]:
    """Return the list of problems of a parsed mutation_schema.yaml (empty when valid)."""
    if data is None:
        return []
    if not isinstance(data, dict):
        return ["the top level must be a mapping"]
    errors = _unknown("mutation_schema.yaml", data, TOP_KEYS)
    if "objective" in data:
        errors += _objective(data["objective"])
    mutable = data.get("mutable_args", {})
    if not isinstance(mutable, dict):
        errors.append("mutable_args must be a mapping of argument name to bounds")
        mutable = {}
    errors += [error for name, spec in mutable.items() for error in _mutable_arg(name, spec)]
    if "comparison_budget_args" in data:
        errors += _budget(data["comparison_budget_args"], mutable)
    if "preferred_targets" in data:
        errors += _targets(data["preferred_targets"])
    return errors


def parse_schema_text(text: str) -> tuple[Any, list[str]]:
    """Parse YAML safely; returns (data, errors)."""
    import yaml  # deferred: only workspaces with a schema pay for PyYAML

    try:
        data = yaml.safe_load(text)
    except RecursionError:
        return None, [f"{SCHEMA_FILE} is not valid YAML: it is nested too deeply"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return None, [f"{SCHEMA_FILE} is not valid YAML{where}"]
    return data, validate_schema(data)


def schema_section(data: Any, errors: list[str], present: bool) -> dict:
    """The `schema` block of the config (normalized; empty sections when absent or invalid)."""
    data = data if isinstance(data, dict) and not errors else {}
    budget_args = data.get("comparison_budget_args") or {}
    objective = data.get("objective") or {}
    bridged = [objective.get(k) for k in ("requested_metric", "optimization_metric") if objective.get(k)]
    return {
        "bridged_metrics": list(dict.fromkeys(bridged)),
        "comparison_budget_args": {
            "default_candidate_budget": dict(sorted((budget_args.get("default_candidate_budget") or {}).items())),
            "fixed_within_campaign": list(budget_args.get("fixed_within_campaign") or []),
        },
        "errors": list(errors),
        "mutable_args": {k: dict(sorted(v.items())) for k, v in sorted((data.get("mutable_args") or {}).items())},
        "objective": dict(sorted(objective.items())),
        "path": SCHEMA_FILE if present else None,
        "preferred_targets": list(data.get("preferred_targets") or []),
        "present": present,
    }


def budget_mismatches(budget: dict, schema: dict, flags: list[dict], given: list[str]) -> list[str]:
    """Schema budget values job.py does not end up using (`budget`: a config's `fixed_budget`; `flags`: its
    `argparse.flags`; `given`: the schema's arguments the import passed, `argparse.schema_args`): it has no option to
    set them, the import could not pass it, or running it with that option set asks NVFLARE for another."""
    wanted = schema["comparison_budget_args"]["default_candidate_budget"]
    options = {f.get("dest"): f.get("option_strings") or [] for f in flags if not f.get("positional")}
    problems = []
    for key, name in (("n_clients", "num_clients"), ("num_rounds", "num_rounds")):
        entry = budget.get(name) or {}
        if key not in wanted or entry.get("confidence") == "not_applicable" or entry.get("value") == wanted[key]:
            continue
        uses = f"mutation_schema.yaml fixes {key}: {wanted[key]} but job.py uses {name}={entry.get('value')}"
        if key not in options:
            fix = f"has no --{key} option to set it; add that option to job.py or change the schema"
        elif set(options[key]) & set(given):
            fix = f"ignores --{key} {wanted[key]}; make that option decide {name} in job.py or change the schema"
        else:
            fix = f"the import could not pass --{key} {wanted[key]} to it; pass it in --base-args or change the schema"
        problems.append(f"{uses} and {fix}")
    return problems


def comparison_keys(schema: dict) -> list[str]:
    """The schema's comparison arguments the runner pins as job options (not its own settings, not the budget's
    n_clients and num_rounds, which fixed_budget covers)."""
    budget = schema["comparison_budget_args"]
    keys = {*budget["default_candidate_budget"], *budget["fixed_within_campaign"]}
    return sorted(keys - RUNNER_SETTINGS - {"n_clients", "num_rounds"})


def comparison_args(schema: dict, flags: list[dict]) -> dict[str, dict]:
    """{key: {flag, value}} for each comparison key job.py has an option for, from a config's flag records (a dest
    several options share is named by the first one declared, the option whose default argparse gives it)."""
    first: dict[str, dict] = {}
    for record in flags:
        if not record["positional"] and record["option_strings"]:
            first.setdefault(record["dest"], record)
    return {
        key: {"flag": Flag(list(first[key]["option_strings"]), key).name, "value": first[key]["value"]}
        for key in comparison_keys(schema)
        if key in first
    }


def schema_unapplied(schema: dict, flags: list[dict]) -> list[dict]:
    """Schema arguments job.py has no option for, then default_candidate_budget values for options only the real
    parser has (no job.py line: the import turns the schema's values into job arguments from the static reading's
    options, so it did not pass them): recorded for the human, never silently dropped."""
    dests = {f["dest"] for f in flags if not f["positional"]}
    unread = dests - {f["dest"] for f in flags if f.get("line") is not None}
    wanted = schema["comparison_budget_args"]["default_candidate_budget"]
    why = {
        "comparison_budget_args": "the runner cannot pin it; candidates are compared with whatever job.py and its "
        "train script use",
        "mutable_args": "a candidate cannot set it as a run argument",
    }
    keys = {"comparison_budget_args": comparison_keys(schema), "mutable_args": sorted(schema["mutable_args"])}
    unapplied = [
        {"field": f"schema.{section}.{key}", "reason": f"job.py has no --{key} option, so {why[section]}"}
        for section in why
        for key in keys[section]
        if key not in dests
    ]
    return unapplied + [
        {
            "field": f"schema.comparison_budget_args.{key}",
            "reason": f"mutation_schema.yaml sets {key}: {wanted[key]!r}, but only running job.py shows its option, "
            f"so the import did not pass it and trials run job.py's default; pass it in --base-args",
        }
        for key in keys["comparison_budget_args"]
        if key in wanted and key in unread
    ]
