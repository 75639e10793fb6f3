"""What a dry-run record says (pure): the class that ran, its family, the budget, the key metric, the refusal line.

A record is what `dryrun_boot.py` wrote: the recipe's class chain, the exported job's JSON configs, the clients
`simulator_run` was given, the env, the parsers' actions, or the job.py line a raise came from.
"""

from __future__ import annotations

import posixpath
from typing import Any

from . import recipes

FIELDS = ("num_clients", "min_clients", "num_rounds")
SCRIPT_KEYS = ("script", "task_script_path")  # a ScriptRunner's script, as NVFLARE versions export it
NON_TRAINING_WORKFLOWS = {  # server workflows of jobs that train nothing (FedJob without a recipe)
    "StatisticsController": "statistics",
    "DhPSIController": "psi",
    "CrossSiteModelEval": "evaluation",
    "CrossSiteEval": "evaluation",
    "GlobalModelEval": "evaluation",
}
NESTED_MARKS = ("flower", "edge", "ccwf")


def recipe_class(record: dict) -> str | None:
    """The NVFLARE recipe class the job ran (the first of its class chain the recipe table knows)."""
    known = recipes.table()["classes"]
    for name in record.get("recipe") or []:
        if name in known and known[name].get("kind") == "recipe":
            return name
    return None


def family(record: dict) -> str | None:
    """training / statistics / psi / evaluation / inference / nested, or None when unknown."""
    name = recipe_class(record)
    if name is not None:
        return recipes.table()["classes"][name].get("family")
    workflows = [w.get("path", "") for w in _workflows(record)]
    if any(mark in path.lower() for path in workflows for mark in NESTED_MARKS):
        return "nested"
    kinds = {NON_TRAINING_WORKFLOWS.get(path.rpartition(".")[2]) for path in workflows}
    if workflows and None not in kinds:
        return sorted(k for k in kinds if k)[0]
    if record.get("recipe"):
        return "training"  # a recipe NVFLARE does not ship: training, its budget passed explicitly
    return "training" if _values(record, "num_rounds") else None


def _configs(record: dict, part: str) -> list[dict]:
    return [c for name, c in sorted((record.get("configs") or {}).items()) if part in name and isinstance(c, dict)]


def _workflows(record: dict) -> list[dict]:
    return [w for c in _configs(record, "config_fed_server") for w in c.get("workflows") or [] if isinstance(w, dict)]


def _args_of(items: list[dict]) -> list[dict]:
    return [i.get("args") for i in items if isinstance(i, dict) and isinstance(i.get("args"), dict)]


def _found(node: Any, key: str, out: list) -> None:
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key and isinstance(value, int) and not isinstance(value, bool):
                out.append(value)
            else:
                _found(value, key, out)
    elif isinstance(node, list):
        for value in node:
            _found(value, key, out)


def _values(record: dict, key: str) -> list[int]:
    """Every integer `key` argument of the server workflows, else of any component of the exported job."""
    found: list[int] = []
    _found(_args_of(_workflows(record)), key, found)
    if not found:
        _found(list((record.get("configs") or {}).values()), key, found)
    return sorted(set(found))


def _entry(value: Any, source: str) -> dict:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return {"value": value, "source": source}
    return {"value": None, "source": source, "reason": f"the dry run recorded {value!r}, not a positive integer"}


def budget(record: dict) -> dict[str, dict]:
    """`{field: {value, source[, reason]}}` for the three budget fields, as NVFLARE was asked to run them."""
    attrs = record.get("recipe_attrs") or {}
    out = {}
    rounds = _values(record, "num_rounds")
    if len(rounds) == 1:
        out["num_rounds"] = _entry(rounds[0], "dry run: the exported job's num_rounds")
    elif rounds:
        out["num_rounds"] = {"value": None, "source": "dry run", "reason": f"the job holds several num_rounds {rounds}"}
    elif "num_rounds" not in attrs and isinstance(attrs.get("server"), dict):  # a collaborative recipe's server
        out["num_rounds"] = _entry(attrs["server"].get("num_rounds"), "dry run: the recipe's server num_rounds")
    else:
        out["num_rounds"] = _entry(attrs.get("num_rounds"), "dry run: the recipe's num_rounds")
    wanted: list[int] = []
    for key in ("min_clients", "num_clients"):  # ScatterAndGather/Cyclic say min_clients, FedAvg num_clients
        if not wanted:
            found: list[int] = []
            _found(_args_of(_workflows(record)), key, found)
            wanted = sorted(set(found))
    meta = next(iter(_configs(record, "meta.json")), {})
    if len(wanted) == 1:
        out["min_clients"] = _entry(wanted[0], "dry run: the server workflow's minimum clients")
    elif isinstance(attrs.get("min_clients"), int):
        out["min_clients"] = _entry(attrs["min_clients"], "dry run: the recipe's min_clients")
    else:
        out["min_clients"] = _entry(meta.get("min_clients"), "dry run: the job's meta.json min_clients")
    env = record.get("env") or {}
    if record.get("entry") == "simulator_run":
        out["num_clients"] = _entry(len(record.get("clients") or []), "dry run: the sites simulator_run was given")
    elif env.get("class") == "PocEnv":
        out["num_clients"] = _entry((env.get("attrs") or {}).get("num_clients"), "dry run: PocEnv num_clients")
    else:
        out["num_clients"] = {"value": None, "source": "dry run", "not_applicable": True}
    return out


def fedjob_workspace(record: dict) -> str | None:
    """The folder a FedJob's own `simulator_run(...)` was told to write to (None for SimEnv runs and exports)."""
    if record.get("entry") != "simulator_run" or (record.get("env") or {}).get("class"):
        return None
    return record.get("workspace")


def key_metric(record: dict) -> tuple[str | None, str | None]:
    """(key metric, mode) the job asked NVFLARE to select models by; mode None when the job leaves it implicit."""
    attrs = record.get("recipe_attrs") or {}
    metric = attrs.get("key_metric") if isinstance(attrs.get("key_metric"), str) else None
    if metric is None:
        for config in _configs(record, "config_fed_server"):
            for args in _args_of(config.get("components") or []):
                if isinstance(args.get("key_metric"), str):
                    metric = args["key_metric"]
                    break
    mode = attrs.get("key_metric_mode") if attrs.get("key_metric_mode") in ("min", "max") else None
    return metric, mode


def train_script(record: dict) -> str | None:
    """The client training script the job sends (the recipe's train_script, or a ScriptRunner's script), relative
    to job.py's folder when the job named it by an absolute path inside that folder."""
    attrs = record.get("recipe_attrs") or {}
    script = attrs["train_script"] if isinstance(attrs.get("train_script"), str) else None
    for config in [] if script is not None else _configs(record, "config_fed_client"):
        for item in (config.get("executors") or []) + (config.get("components") or []):
            args = (item.get("executor") or item).get("args") if isinstance(item, dict) else None
            found = [args[k] for k in SCRIPT_KEYS if isinstance(args, dict) and isinstance(args.get(k), str)]
            if found and script is None:
                script = found[0].split()[-1] if " " in found[0] else found[0]
    folder = str(record.get("job_dir") or "").rstrip("/")
    if script is not None and folder and posixpath.isabs(script):
        inside = posixpath.normpath(script)
        return inside[len(folder) + 1 :] if inside.startswith(folder + "/") else script
    return script


MAX_QUOTED = 200  # characters of the job's own text (a source line, an exception message) a reason quotes


def quoted(value: Any) -> str:
    """The job's own text as one printable line of at most MAX_QUOTED characters (a reason goes to stderr)."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 3] + "..."


def _at(where: dict) -> str:
    return f"{quoted(where.get('file', 'job.py'))} line {where.get('line')} ({quoted(where.get('text'))})"


def raise_reason(record: dict, fix: str = "pass values in --base-args that get past it, or change that line") -> str:
    """Why the dry run ended in a raise before anything ran, naming the job.py line and what to change."""
    where = record.get("where") or {}
    inside = record.get("nvflare") or {}
    what = f"{quoted(record.get('exception'))}: {quoted(record.get('message'))}"
    line = _at(where) if where else "job.py"
    if inside:
        return f"running job.py raises at {line}, in NVFLARE's {quoted(inside['file'])} line {inside['line']}: {what}; {fix}"
    return f"running job.py raises at {line}: {what}; {fix}"


def environment_reason(record: dict) -> str:
    """Why a run that stopped on a module this interpreter lacks could not record the job, and what to do."""
    return raise_reason(
        record, "this interpreter cannot import it: install what is missing, or import where it is installed"
    )


def exit_reason(record: dict) -> str:
    """Why job.py exited before reaching NVFLARE (argparse's own message when its parser refused the arguments)."""
    where = record.get("where") or {}
    line = f" at {_at(where)}" if where else ""
    why = record.get("parser_error")
    if why:
        why = quoted(why)
        return f"running job.py exits with code {record.get('code')}{line}: {why}; pass what it needs in --base-args"
    return f"running job.py exits with code {record.get('code')}{line} before NVFLARE runs; check its arguments"
