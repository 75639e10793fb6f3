"""Fold a dry-run record into the static import's config (pure): the record decides where reading could not.

- No record (no namespaces here): the static config stands; `import.dry_run.status` says why.
- A recorded training run (the static import admits): the record is the source (`record_first`): job, budget,
  key metric and trust are what NVFLARE was asked to build, with the options the perturbed runs found to move
  them in `depends_on`; the reading only fills a field the run left without a value (`import.dry_run.corrected`
  names where the two disagreed).
- The static import refuses for a reason a run settles (a client list built at run time, a value held by an
  object, computed values, a class picked at run time, a FedJob's simulator folder): the job, budget, objective
  and that folder come from the record.
  Refusals that no single run can settle stay: input errors, non-training families, and budgets that read the
  environment, files, random numbers or the clock.
- The run raised before anything ran: the refusal names the job.py line from the traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from . import moves, recorded
from .admission import UNISOLATED_WORKSPACE, UNSUPPORTED, admission_errors

SETTLED_BY_RUNNING = {  # a recorded run names the job, its budget and the folder its simulation writes to
    "AUTOFL_UNSUPPORTED_JOB",
    "AUTOFL_EMPTY_FIXED_BUDGET",
    "AUTOFL_UNRESOLVED_SAFETY_FIELD",
    UNISOLATED_WORKSPACE,
}
SETTLED_TOO = {"AUTOFL_RECIPE_WOULD_RAISE"}  # a recorded run got past NVFLARE's own checks
UNPINNABLE = (  # inputs.DESCRIPTIONS and the environment-variable reasons: one run cannot pin these
    "environment variable",
    "host environment",
    "reads files",
    "random numbers",
    "reads the clock",
    "is imported instead of NVFLARE",  # the job's own nvflare: a run in the boot would not show what it does
)
NOT_TRAINING = ("statistics", "psi", "evaluation", "inference", "nested")


def summary(record: dict | None, why: str = "") -> dict:
    if record is None:
        return {"status": "unavailable", "reason": why or "this host cannot seal a dry run (no namespaces)"}
    out = {"status": record.get("status"), "stubbed": record.get("stubbed") or []}
    if record.get("status") == "recorded":
        out.update(
            entry=record.get("entry"),
            nvflare_class=recorded.recipe_class(record),
            family=recorded.family(record),
            budget={k: v.get("value") for k, v in recorded.budget(record).items()},
        )
    elif record.get("status") == "raised":
        out["reason"] = recorded.raise_reason(record)
    elif record.get("status") == "exited":
        out["reason"] = recorded.exit_reason(record)
    elif record.get("reason"):
        out["reason"] = record["reason"]
    return out


def _settled_by_running(config: dict) -> bool:
    errors = config["admission_errors"]
    codes = {e["code"] for e in errors}
    if not codes or not codes <= SETTLED_BY_RUNNING | SETTLED_TOO:
        return False
    texts = " ".join(e["message"] for e in errors) + " ".join(u.get("reason", "") for u in config["unresolved"])
    if (config.get("job") or {}).get("family") in NOT_TRAINING:
        return False
    return not any(mark in texts for mark in UNPINNABLE)


def _budget_entry(entry: dict, moved: list[str], option_values: dict) -> dict:
    """One `fixed_budget` field, shaped like the static reading's, from what the run recorded."""
    if entry.get("not_applicable"):
        return {
            "value": None,
            "confidence": "not_applicable",
            "flag": None,
            "source": entry["source"],
            "depends_on": [],
            "reason": "the deployment decides the clients (no simulation)",
        }
    value = entry.get("value")
    if value is None:
        return {
            "value": None,
            "confidence": "unresolved",
            "flag": None,
            "source": entry["source"],
            "depends_on": list(moved),
            "reason": entry.get("reason") or "the dry run recorded no value",
        }
    own = [name for name in moved if option_values.get(name) == value]
    confidence = "high" if len(moved) == 1 and own == moved else ("pinned" if moved else "medium")
    return {
        "value": value,
        "confidence": confidence,
        "flag": own[0] if len(own) == 1 else None,
        "source": entry["source"],
        "depends_on": list(moved),
    }


def _option_values(record: dict) -> dict:
    parsers = record.get("parsers") or []
    return {moves.option_name(a): a["value"] for a in (parsers[0]["actions"] if parsers else []) if a["option_strings"]}


def _objective_moves(moved: dict) -> list[str]:
    return list(dict.fromkeys(moved.get("objective", [])))


def pinned_too(config: dict, record: dict, moved: dict) -> None:
    """Add the options a run showed to move a field (or the objective) to that field's `depends_on`."""
    budget = config.get("fixed_budget") or {}
    extra = _objective_moves(moved)
    for field in recorded.FIELDS:
        entry = budget.get(field)
        if not entry or entry.get("confidence") == "not_applicable":
            continue
        found = [name for name in [*moved.get(field, []), *extra] if name not in entry.get("depends_on", [])]
        if found:
            entry["depends_on"] = [*entry.get("depends_on", []), *found]
            if entry.get("confidence") == "high" and len(entry["depends_on"]) > 1:
                entry["confidence"] = "pinned"


def contradictions(config: dict, record: dict) -> list[str]:
    """Budget fields whose static value differs from what NVFLARE was asked to run."""
    ran = recorded.budget(record)
    found = []
    for field in recorded.FIELDS:
        entry = (config.get("fixed_budget") or {}).get(field) or {}
        value, actual = entry.get("value"), (ran.get(field) or {}).get("value")
        if entry.get("confidence") in ("not_applicable", "unresolved") or value is None or actual is None:
            continue
        if value != actual:
            found.append(f"{field}: job.py reads as {value}, but running it asks NVFLARE for {actual}")
    return found


def _recorded_budget(record: dict, moved: dict) -> dict:
    values = _option_values(record)
    extra = _objective_moves(moved)
    ran = recorded.budget(record)
    return {
        field: _budget_entry(ran[field], list(dict.fromkeys([*moved.get(field, []), *extra])), values)
        for field in recorded.FIELDS
    }


def rebuild(config: dict, record: dict, moved: dict, trust_for: Callable[[str | None], dict]) -> None:
    """Replace the job, budget and objective of a statically refused job by what its dry run recorded."""
    name = recorded.recipe_class(record)
    chain = record.get("recipe") or []
    call = record.get("call") or {}
    env = record.get("env") or {}
    pattern = "recipe" if chain else "fedjob"
    config["job"].update(
        {
            "class": (chain[0].rpartition(".")[2] if chain else "FedJob"),
            "family": recorded.family(record),
            "nvflare_class": name,
            "env": {"class": env.get("class") or "FedJob.simulator_run", "args": {}},
            "line": call.get("line"),
            "pattern": pattern,
            "run_call": record.get("recipe_call") or record.get("entry"),
        }
    )
    config["environment"]["discovered"] = {"args": {}, "name": env.get("class")}
    if pattern == "fedjob" and record.get("entry") == "simulator_run":
        root = record.get("root_variable") or "\0"
        workspace = record.get("workspace") or ""
        config["environment"]["simulator_workspace"] = {
            "confidence": "high",
            "line": call.get("line"),
            "reads_root_variable": workspace == root or workspace.startswith(root + "/"),
            "value": None if workspace.startswith(root) else workspace,
        }
    budget = _recorded_budget(record, moved)
    budget["comparison_args"] = (config.get("fixed_budget") or {}).get("comparison_args", {})
    config["fixed_budget"] = budget
    metric, mode = recorded.key_metric(record)
    objective = config["objective"]
    if objective.get("job_key_metric") is None:
        requested = objective.get("requested_metric") or metric
        objective.update(
            job_key_metric=metric,
            job_key_metric_mode=mode or "max",
            job_key_metric_source="dry_run",
            metric=requested,
            mode=mode or "max",
            mode_contract_source="key_metric_mode" if mode else "core_default",
            metric_extraction_order=[requested] if requested else [],
        )
    config["trust"] = trust_for(recorded.train_script(record))
    config["recipe_args"] = {}
    config["unresolved"] = [
        u for u in config["unresolved"] if not u["field"].startswith(("fixed_budget.", "objective."))
    ]
    config["import"]["support"] = {
        "status": "supported",
        "reason": f"recorded by a dry run: {pattern} {config['job']['class']} at job.py line {call.get('line')}",
    }
    config["import"]["would_raise"] = []


def record_first(config: dict, record: dict, moved: dict, trust_for: Callable[[str | None], dict]) -> None:
    """A recorded training run is the config's source: the job, budget, key metric and trust are what NVFLARE was
    asked to build. The static reading only fills a budget field the run left without a value, and keeps what
    no run records (the recipe's arguments as written, notes for the human, the objective's schema contract)."""
    static_budget = {field: dict((config.get("fixed_budget") or {}).get(field) or {}) for field in recorded.FIELDS}
    found = contradictions(config, record)
    recipe_args, notes = config["recipe_args"], list(config["unresolved"])
    would_raise, trust = config["import"]["would_raise"], config["trust"]
    metric, _mode = recorded.key_metric(record)
    read = config["objective"].get("job_key_metric")
    if metric is not None and read not in (None, metric):  # the run's key metric replaces the reading's (rebuild)
        found.append(f"key metric: job.py reads as {read}, but running it asks NVFLARE for {metric}")
        config["objective"]["job_key_metric"] = None
    rebuild(config, record, moved, trust_for)
    for field in recorded.FIELDS:  # a value the run did not record: the reading's stands, pinned by both
        entry = config["fixed_budget"][field]
        if entry["confidence"] == "unresolved" and static_budget[field].get("confidence") not in (None, "unresolved"):
            config["fixed_budget"][field] = static_budget[field]
    pinned_too(config, record, moved)
    config["recipe_args"], config["unresolved"] = recipe_args, notes
    config["import"]["would_raise"] = would_raise
    if recorded.train_script(record) is None:  # the run names no client script: the reading's trust stands
        config["trust"] = trust
    if found:
        config["import"]["dry_run"]["corrected"] = found


def _environment(record: dict) -> bool:
    """True when the run raised because this interpreter lacks a module (not something job.py decides)."""
    if record.get("exception") in ("ModuleNotFoundError", "ImportError"):
        return True
    return "is not installed" in str(record.get("message"))  # NVFLARE's optional_import checks


def refuse_with_line(config: dict, record: dict) -> None:
    """The refusal also names the job.py line the run's raise came from, and what to change."""
    support = config["import"]["support"]
    ran = recorded.raise_reason(record)
    if support["status"] == "supported":
        config["import"]["support"] = {"status": "unsupported", "reason": ran}
    else:
        support["reason"] = f"{support['reason']} (and {ran})"


def changes(baseline: dict, candidate: dict | None) -> list[str]:
    """What a candidate's run (its run arguments on top of the base ones) changes against the baseline's run."""
    if candidate is None:
        return []
    if candidate.get("status") != "recorded":
        why = recorded.raise_reason(candidate) if candidate.get("status") == "raised" else candidate.get("status")
        return [f"job.py no longer reaches NVFLARE with them ({why})"]
    before, after = moves.signature(baseline), moves.signature(candidate)
    found = [
        f"{field} {before['budget'][field]} -> {after['budget'][field]}"
        for field in recorded.FIELDS
        if before["budget"].get(field) != after["budget"].get(field)
    ]
    found += [f"{key} {before[key]} -> {after[key]}" for key in moves.RUN_KEYS if before[key] != after[key]]
    return found


ACTION_NAMES = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_CountAction": "count",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_ExtendAction": "extend",
    "BooleanOptionalAction": "boolean_optional",
    "_VersionAction": "version",
}
NO_VALUE = {"store_true", "store_false", "store_const", "count", "append_const", "boolean_optional", "version"}


def real_parser(config: dict, record: dict) -> None:
    """The parser's facts are the real argparse parser's: its settings and every option with its default and
    parsed value; the reading only adds the job.py line an option is declared on (for refusals to name)."""
    parsers = record.get("parsers") or []
    if not parsers:
        return
    real, section = parsers[0], config["argparse"]
    section["allow_abbrev"] = bool(real.get("allow_abbrev", True))
    section["fromfile_prefix_chars"] = real.get("fromfile_prefix_chars")
    lines = {f["dest"]: f.get("line") for f in section["flags"]}
    section["flags"] = [
        {**_flag(a), "line": lines.get(a["dest"])}
        for a in real["actions"]
        if ACTION_NAMES.get(a["action"]) != "version"
    ]
    section["parsed"] = True


def _flag(action: dict) -> dict:
    name = ACTION_NAMES.get(action["action"], "store")
    flag = {
        "option_strings": list(action["option_strings"]),
        "dest": action["dest"],
        "action": name,
        "type": action["type"],
        "default": action["default"],
        "default_confidence": "high",
        "required": action["required"],
        "takes_value": name not in NO_VALUE,
        "positional": not action["option_strings"],
        "line": None,
        "value": action["value"],
    }
    if action["choices"] is not None:
        flag["choices"] = action["choices"]
    if action["nargs"] not in (None, 0):
        flag["nargs"] = action["nargs"]
    return flag


def apply(
    config: dict, record: dict | None, moved: dict, trust_for: Callable[[str | None], dict], why: str = ""
) -> dict:
    """The config with the dry run folded in (see the module docstring); admission is recomputed."""
    config["import"]["dry_run"] = summary(record, why)
    if record is None:
        return config
    if record.get("parsers"):
        real_parser(config, record)
    metric = config["objective"].get("requested_metric")
    status, stubbed = record.get("status"), record.get("stubbed") or []
    if not config["admission_errors"]:
        if status == "recorded" and recorded.family(record) == "training":
            record_first(config, record, moved, trust_for)
        elif status == "recorded":
            pinned_too(config, record, moved)
    elif status == "recorded" and _settled_by_running(config):
        family = recorded.family(record)
        if family == "training":
            rebuild(config, record, moved, trust_for)
        elif family in NOT_TRAINING:
            chain = record.get("recipe") or ["a FedJob"]
            config["job"].update(family=family, nvflare_class=recorded.recipe_class(record))
            what = (
                "a nested application whose rounds Auto-FL cannot budget"
                if family == "nested"
                else "which trains no model; Auto-FL tunes training jobs only"
            )
            config["import"]["support"] = {
                "status": "unsupported",
                "reason": f"running job.py builds {chain[0].rpartition('.')[2]} (line "
                f"{(record.get('call') or {}).get('line')}), of the {family} family, {what}",
            }
    elif status == "raised" and not stubbed and not _environment(record) and _settled_by_running(config):
        refuse_with_line(config, record)
    config["admission_errors"] = admission_errors(config, metric)
    if config["import"]["support"]["status"] != "supported" and not any(
        e["code"] == UNSUPPORTED for e in config["admission_errors"]
    ):
        config["admission_errors"].insert(0, {"code": UNSUPPORTED, "message": config["import"]["support"]["reason"]})
    errors, why_not_run = config["admission_errors"], unsettled_reason(record)
    if errors and why_not_run and "running job.py" not in errors[0]["message"]:  # a refusal the run left says why
        errors[0]["message"] += f" (and {why_not_run})"
    return config


def unsettled_reason(record: dict) -> str | None:
    """Why the run settled nothing, for a refusal to name: job.py exited (its parser refused the arguments), something
    it or NVFLARE imports cannot be imported here, or it raised. None for a recorded run."""
    if record.get("status") == "exited":
        return recorded.exit_reason(record)
    if record.get("status") == "raised":
        return recorded.environment_reason(record) if _environment(record) else recorded.raise_reason(record)
    return None
