"""Admission: decide, before any campaign file is written, whether an imported job may start a campaign.

`admission_errors(config, requested_metric)` is pure and returns `[{code, message}]`; empty = admissible.
Every message says exactly what to change.
"""

from __future__ import annotations

from .budget import FIELDS
from .objective import is_lower_better_name
from .runner_view import fromfile_arguments
from .surface import STATIC_LIMIT

UNSUPPORTED = "AUTOFL_UNSUPPORTED_JOB"
EMPTY_BUDGET = "AUTOFL_EMPTY_FIXED_BUDGET"
UNRESOLVED_SAFETY = "AUTOFL_UNRESOLVED_SAFETY_FIELD"
NOT_DECLARED = "AUTOFL_METRIC_NOT_DECLARED"
DIRECTION_CONFLICT = "AUTOFL_METRIC_DIRECTION_CONFLICT"
INVALID_BASE_ARGS = "AUTOFL_INVALID_BASE_ARGS"
INVALID_SCHEMA = "AUTOFL_INVALID_MUTATION_SCHEMA"
BUDGET_CONFLICT = "AUTOFL_BUDGET_ARGUMENT_CONFLICT"
SCHEMA_BUDGET_MISMATCH = "AUTOFL_SCHEMA_BUDGET_MISMATCH"
UNISOLATED_WORKSPACE = "AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED"
WOULD_RAISE = "AUTOFL_RECIPE_WOULD_RAISE"
SEVERAL_RUNS = "AUTOFL_SEVERAL_RUNS"  # settled by a dry run that shows job.py ran once and ended (dryrun_config)
SETTLED_BY_RUNNING = {  # a recorded run names the job, its budget, its key metric and its simulator folder
    UNSUPPORTED,
    EMPTY_BUDGET,
    UNRESOLVED_SAFETY,
    NOT_DECLARED,  # recomputed against the recorded key metric
    UNISOLATED_WORKSPACE,
    WOULD_RAISE,  # a recorded run got past NVFLARE's own checks
    SCHEMA_BUDGET_MISMATCH,  # recomputed against the recorded budget
}
JUDGED_ON_THE_RECORD = {  # no run settles it before a fold; once folded, admission judges the recorded key metric
    DIRECTION_CONFLICT,
}
READ_BY_RUNNING = (EMPTY_BUDGET, UNRESOLVED_SAFETY)  # what a recorded run reads where the static reading cannot
DRY_RUN_HINT = (
    "; a dry run may settle this: add --dry-run (it runs job.py sealed up to NVFLARE and records what it builds; "
    "initialize does this wherever the host can seal a run)"
)


def _error(code: str, message: str) -> dict:
    return {"code": code, "message": message}


def _input_errors(config: dict) -> list[dict]:
    schema, args = config.get("schema", {}), config.get("argparse", {})
    errors = [
        _error(INVALID_SCHEMA, f"mutation_schema.yaml: {e}; fix the schema file or remove it")
        for e in schema.get("errors", [])
    ]
    errors += [
        _error(INVALID_BASE_ARGS, f"--base-args: {e}; job.py's parser would reject it, fix --base-args")
        for e in args.get("base_args_errors", [])
    ]
    errors += [
        _error(
            INVALID_BASE_ARGS,
            f"--base-args: {token!r} starts with {token[0]!r}, which job.py's parser reads as a file of more "
            "arguments (fromfile_prefix_chars); write those arguments out in --base-args",
        )
        for token in fromfile_arguments(config, args.get("base_args", []))
    ]
    errors += [_error(BUDGET_CONFLICT, c) for c in args.get("budget_conflicts", [])]
    errors += [_error(SCHEMA_BUDGET_MISMATCH, m) for m in schema.get("budget_mismatches", [])]
    return errors


def _class_parser_hint(config: dict) -> str:
    """The fix when job.py parses its options inside a class the importer does not follow ("" otherwise)."""
    section = config.get("argparse") or {}
    found = section.get("class_parsers") or []
    if not found or section.get("parsed"):
        return ""
    return (
        f"job.py parses its options inside class {found[0]['class']} (line {found[0]['line']}), and the importer "
        "does not follow classes, so those values are unknown: build the parser in a function (e.g. "
        "args = define_parser()) and pass args.<option> to the recipe and env"
    )


def _budget_errors(config: dict) -> list[dict]:
    budget = config.get("fixed_budget") or {}
    entries = [budget.get(f) or {} for f in FIELDS]
    hint = _class_parser_hint(config)
    if not any(e.get("value") is not None for e in entries):
        if hint:
            return [_error(EMPTY_BUDGET, f"no fixed training budget could be read: {hint}")]
        why = next((f" ({f}: {e['reason']})" for f, e in zip(FIELDS, entries, strict=True) if e.get("reason")), "")
        message = (
            f"no fixed training budget (num_clients, min_clients, num_rounds) could be read from job.py{why}; pass "
            "them as literals or argparse values to the recipe and SimEnv"
        )
        return [_error(EMPTY_BUDGET, message)]
    fix = "set {0} from a literal or an argparse default in job.py, or pass its option in --base-args"
    return [
        _error(UNRESOLVED_SAFETY, f"fixed_budget.{field} is unresolved ({entry.get('reason')}); {fix.format(field)}")
        for field, entry in zip(FIELDS, entries, strict=True)
        if entry.get("confidence") == "unresolved"
    ]


def _objective_errors(config: dict, requested: str | None) -> list[dict]:
    obj = config.get("objective") or {}
    owner = (config.get("job") or {}).get("class") or "the recipe"
    key = obj.get("job_key_metric")
    if key is None:
        fix = f'pass key_metric="..." as a literal to {owner}(...) in job.py'
        return [_error(UNRESOLVED_SAFETY, f"the job key metric is unresolved; {fix}")]
    requested = requested or obj.get("requested_metric")
    bridges = (config.get("schema") or {}).get("bridged_metrics") or []
    if requested and requested != key and requested not in bridges:
        message = (
            f"requested metric '{requested}' is not the job key metric '{key}' and mutation_schema.yaml does not "
            f"bridge it; use --metric {key}, or declare objective.requested_metric: {requested} (with its mode) in "
            "mutation_schema.yaml"
        )
        return [_error(NOT_DECLARED, message)]
    metric, mode, source = obj.get("metric"), obj.get("mode"), obj.get("mode_contract_source")
    if mode is None:
        notes = (u["reason"] for u in config.get("unresolved") or [] if u.get("field") == "objective.mode")
        reason = next(notes, "its direction cannot be read statically")
        fix = f'set key_metric_mode="min" or "max" explicitly in {owner}(...)'
        return [_error(UNRESOLVED_SAFETY, f"the direction of '{metric}' is unresolved ({reason}); {fix}")]
    errors = []
    if metric == key and obj.get("schema_mode") and obj["schema_mode"] != mode:
        message = (
            f"mutation_schema.yaml objective.mode={obj['schema_mode']} would override job.py's direction for its key "
            f"metric '{key}' ({mode} from {source}); remove objective.mode from the schema or change key_metric_mode "
            "in job.py"
        )
        errors.append(_error(DIRECTION_CONFLICT, message))
    if mode == "max" and source == "core_default" and is_lower_better_name(metric or ""):
        where = (
            f'key_metric_mode="min" in {owner}(...) in job.py'
            if metric == key
            else "objective.mode: min in mutation_schema.yaml"
        )
        message = (
            f"'{metric}' looks lower-is-better but would use NVFLARE's implicit max default; set {where} (or an "
            "explicit max if higher really is better)"
        )
        errors.append(_error(DIRECTION_CONFLICT, message))
    return errors


def literal_workspace(config: dict) -> str | None:
    """The resolved path a FedJob's `simulator_run()` writes to while ignoring NVFLARE_SIMULATOR_WORKSPACE_ROOT
    (None when the job reads the variable or it is unknown): a sealed trial maps it onto its private root."""
    workspace = (config.get("environment") or {}).get("simulator_workspace") or {}
    value = workspace.get("value")
    return None if workspace.get("reads_root_variable") or not isinstance(value, str) or not value.strip() else value


def unisolated_message(config: dict, why: str = "") -> str:
    """Why a FedJob's simulator workspace cannot be isolated per trial, and the one-line fix."""
    workspace = (config.get("environment") or {}).get("simulator_workspace") or {}
    where = f"to {workspace['value']!r}" if workspace.get("value") is not None else "to a path"
    return (
        f"FedJob.simulator_run() at line {workspace.get('line')} writes {where} and "
        "ignores NVFLARE_SIMULATOR_WORKSPACE_ROOT (in NVFLARE 2.9 only SimEnv honours it), so trials "
        f"cannot be isolated{why}; read the variable: "
        'job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/some/path")), or run the job as a '
        "recipe with SimEnv"
    )


def admission_errors(config: dict, requested_metric: str | None = None) -> list[dict]:
    """All reasons this config may not start a campaign (empty list = admissible)."""
    errors = _input_errors(config)
    support = (config.get("import") or {}).get("support") or {}
    if support.get("status") != "supported":
        code = SEVERAL_RUNS if support.get("several_runs") else UNSUPPORTED
        return [_error(code, f"job.py is not supported: {support.get('reason')}")] + errors
    errors += [_error(WOULD_RAISE, reason) for reason in (config.get("import") or {}).get("would_raise") or []]
    workspace = (config.get("environment") or {}).get("simulator_workspace")  # neither the variable nor mappable
    if workspace and not workspace.get("reads_root_variable") and not literal_workspace(config):
        errors.append(_error(UNISOLATED_WORKSPACE, unisolated_message(config)))
    return errors + _budget_errors(config) + _objective_errors(config, requested_metric)


def with_dry_run_hint(errors: list[dict]) -> list[dict]:
    """`errors` of a static reading, each budget or objective field it could not read, and a job.py it gave up
    walking, ending with `DRY_RUN_HINT`."""
    return [{**e, "message": e["message"] + DRY_RUN_HINT} if _read_by_running(e) else e for e in errors]


def _read_by_running(error: dict) -> bool:
    return error["code"] in READ_BY_RUNNING or (
        error["code"] == UNSUPPORTED and error["message"].endswith(STATIC_LIMIT)
    )
