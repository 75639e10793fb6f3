"""What a dry-run record says (pure): the typed record, and the class, family, budget, key metric, train script
(why a run settled nothing, in words: `run_reasons`).

`parse` reads the JSON the dry-run boot (`dryrun_boot/run.py`) wrote once into a `DryRunRecord`; a malformed or
partial one becomes a record whose status is `malformed`, so nothing later reads a missing key.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from . import recipes
from .argparse_flow import ACTION_NAMES, Flag
from .surface import EVAL_COMPONENTS, STATS_COMPONENTS

Status = Literal["recorded", "raised", "exited", "no_run", "sandbox_failed", "timeout", "malformed"]
STATUSES: tuple[str, ...] = get_args(Status)
NOT_RUN: tuple[str, ...] = ("sandbox_failed", "timeout", "malformed")  # no run was made: never cached


@dataclass(frozen=True)
class Where:
    """A source line: job.py (or a module beside it), or NVFLARE's own file."""

    file: str
    line: int | None
    text: str


@dataclass(frozen=True)
class StoodIn:
    """A line of job.py (or a module beside it) on the stack when the run made a stand-in for a module it lacks."""

    module: str
    file: str
    line: int


@dataclass(frozen=True)
class Parser:
    """A parser job.py built and parsed with."""

    allow_abbrev: bool
    fromfile_prefix_chars: str | None
    actions: tuple[Flag, ...]  # each recorded action's name by `argparse_flow.ACTION_NAMES`, else custom


@dataclass(frozen=True)
class Env:
    """The environment a recipe ran in (SimEnv, PocEnv, ...), with its plain attributes."""

    name: str | None
    attrs: dict


Text = str  # the job's own words (an exception's message): any JSON value is read as its text
How = Literal["ended", "again", "raised", "exited", "unfinished", "spawned"]


@dataclass(frozen=True)
class After:
    """How job.py went on after its recorded run: it `ended` (it ran once), ran `again` (at `where`), or `raised`,
    `exited` with a non-zero code, was still running when its time was out (`unfinished`), or started a process
    (`spawned`, at `where`): a later run may have been skipped or not seen, so one run is not shown. `what`: the exception, the exit code or the second entry point; `first`:
    the innermost line of job.py's own files at the first run (of a second one)."""

    how: How
    where: Where | None = None
    what: Text = ""
    first: Where | None = None


@dataclass(frozen=True)
class DryRunRecord:
    """One run of job.py up to NVFLARE's entry point (`status` says how it ended)."""

    status: Status
    reason: Text = ""  # why no run was made (sandbox_failed, timeout, malformed)
    entry: str | None = None  # simulator_run, export_job, deploy
    call: Where | None = None
    recipe: tuple[str, ...] = ()  # the recipe's class chain, most derived first
    recipe_call: str | None = None
    recipe_attrs: dict = field(default_factory=dict)
    configs: dict[str, dict] = field(default_factory=dict)  # the exported job's JSON files by relative path
    job_dir: str = ""
    workspace: str | None = None
    clients: tuple[str, ...] = ()
    n_clients: int | None = None
    env: Env | None = None
    parsers: tuple[Parser, ...] = ()
    stubbed: tuple[str, ...] = ()
    stood_in_at: tuple[StoodIn, ...] = ()
    env_read: tuple[str, ...] = ()  # environment variables job.py's own code read
    env_compared: tuple[str, ...] = ()  # "NAME=text": a string job.py's code compared that variable's value with
    files_read: tuple[str, ...] = ()  # files and folders read before the run: relative inside the job's folder
    unreadable: tuple[str, ...] = ()  # "name: Class.name raises ...": exported arguments saying nothing of the run
    code: int | None = None
    parser_error: str | None = None
    exception: Text = ""
    message: Text = ""
    where: Where | None = None
    nvflare: Where | None = None
    callee: str | None = None  # what of NVFLARE job.py's own line asked for: a callable (TypeError), an attribute
    root_variable: str = ""
    after: After | None = None  # how job.py went on after its recorded run (None: not recorded)
    installed: tuple[str, ...] = ()  # "SIZE:MTIME_NS:PATH" of NVFLARE's package file and METADATA the run imported


class _Malformed(Exception):
    pass


def _typed(data: dict, key: str, kinds: tuple) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _Malformed(f"{key} is {type(value).__name__}")
    return value


def _strings(data: dict, key: str) -> tuple[str, ...]:
    items = _typed(data, key, (list,)) or []
    if not all(isinstance(item, str) for item in items):
        raise _Malformed(f"{key} holds a non-string")
    return tuple(items)


def _where(data: dict, key: str) -> Where | None:
    raw = _typed(data, key, (dict,))
    if not raw:
        return None
    line = _typed(raw, "line", (int,))
    return Where(str(raw.get("file", "job.py")), line, str(raw.get("text") or ""))


def _stood_in(raw: Any) -> StoodIn:
    if not isinstance(raw, dict):
        raise _Malformed("a stand-in's line is not an object")
    module, file, line = _typed(raw, "module", (str,)), _typed(raw, "file", (str,)), _typed(raw, "line", (int,))
    if module is None or file is None or line is None:
        raise _Malformed("a stand-in's line without module, file or line")
    return StoodIn(module, file, line)


def _action(raw: Any) -> Flag:
    if not isinstance(raw, dict) or not isinstance(raw.get("dest"), str) or not isinstance(raw.get("action"), str):
        raise _Malformed("a parser action without dest or action")
    typed = {"type": _typed(raw, "type", (str,)), "choices": _typed(raw, "choices", (list,))}
    action = ACTION_NAMES.get(raw["action"], "custom")
    return Flag.from_dict({**raw, **typed, "option_strings": _strings(raw, "option_strings"), "action": action})


def _parser(raw: Any) -> Parser:
    if not isinstance(raw, dict):
        raise _Malformed("a parser is not an object")
    return Parser(
        bool(raw.get("allow_abbrev", True)),
        _typed(raw, "fromfile_prefix_chars", (str,)),
        tuple(_action(a) for a in _typed(raw, "actions", (list,)) or []),
    )


def _after(data: dict, key: str) -> After | None:
    raw = _typed(data, key, (dict,))
    if raw is None:
        return None
    if raw.get("how") not in get_args(How):
        raise _Malformed(f"unknown after {raw.get('how')!r}")
    return After(raw["how"], _where(raw, "where"), str(raw.get("what") or ""), _where(raw, "first"))


def _env(data: dict, key: str) -> Env | None:
    env = _typed(data, key, (dict,))
    return Env(_typed(env, "class", (str,)), _typed(env, "attrs", (dict,)) or {}) if env else None


READERS: dict[str, Callable[[dict, str], Any]] = {  # a record field's annotation -> how its JSON value is read
    "Text": lambda data, key: str(data.get(key) or ""),
    "str": lambda data, key: _typed(data, key, (str,)) or "",
    "str | None": lambda data, key: _typed(data, key, (str,)),
    "int | None": lambda data, key: _typed(data, key, (int,)),
    "dict": lambda data, key: _typed(data, key, (dict,)) or {},
    "dict[str, dict]": lambda data, key: {
        k: v for k, v in (_typed(data, key, (dict,)) or {}).items() if isinstance(v, dict)
    },
    "tuple[str, ...]": _strings,
    "Where | None": _where,
    "Env | None": _env,
    "After | None": _after,
    "tuple[Parser, ...]": lambda data, key: tuple(_parser(p) for p in _typed(data, key, (list,)) or []),
    "tuple[StoodIn, ...]": lambda data, key: tuple(_stood_in(s) for s in _typed(data, key, (list,)) or []),
}


def parse(data: Any) -> DryRunRecord:
    """The typed record of the boot's JSON (or of a cached copy), each field read by its annotation (`READERS`);
    `malformed` naming what is wrong otherwise."""
    try:
        if not isinstance(data, dict):
            raise _Malformed("it is not a JSON object")
        status = data.get("status")
        if status not in STATUSES:
            raise _Malformed(f"unknown status {status!r}")
        if status == "recorded" and not isinstance(data.get("entry"), str):
            raise _Malformed("a recorded run names no entry point")
        read = {f.name: READERS[f.type](data, f.name) for f in fields(DryRunRecord) if f.name != "status"}
        return DryRunRecord(status, **read)
    except _Malformed as what:
        return DryRunRecord("malformed", reason=f"the dry run's record is malformed ({what}); run it again")


def options(record: DryRunRecord) -> tuple[Flag, ...]:
    """The actions of the first parser job.py parsed with (its main parser), or none."""
    return record.parsers[0].actions if record.parsers else ()


SCRIPT_KEYS = ("script", "task_script_path")  # a ScriptRunner's script, as NVFLARE versions export it
NON_TRAINING_WORKFLOWS = {  # server workflows of jobs that train nothing (FedJob without a recipe)
    **dict.fromkeys(STATS_COMPONENTS, "statistics"),
    **dict.fromkeys(EVAL_COMPONENTS, "evaluation"),
    "DhPSIController": "psi",
}
NESTED_MARKS = ("flower", "edge", "ccwf")


def recipe_class(record: DryRunRecord) -> str | None:
    """The NVFLARE recipe class the job ran (the first of its class chain the recipe table knows)."""
    known = recipes.table()["classes"]
    for name in record.recipe:
        if name in known and known[name].get("kind") == "recipe":
            return name
    return None


def family(record: DryRunRecord) -> str | None:
    """training / statistics / psi / evaluation / inference / nested, or None when unknown."""
    name = recipe_class(record)
    if name is not None:
        return recipes.table()["classes"][name].get("family")
    workflows = [str(w.get("path", "")) for w in _workflows(record)]
    if any(mark in path.lower() for path in workflows for mark in NESTED_MARKS):
        return "nested"
    kinds = {NON_TRAINING_WORKFLOWS.get(path.rpartition(".")[2]) for path in workflows}
    if workflows and None not in kinds:
        return min(kinds)
    # a recipe NVFLARE does not ship is training, its budget passed explicitly
    return "training" if record.recipe or _values(record, "num_rounds") else None


def _configs(record: DryRunRecord, part: str) -> list[dict]:
    return [c for name, c in sorted(record.configs.items()) if part in name]


def _listed(config: dict, key: str) -> list[dict]:
    items = config.get(key)
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _workflows(record: DryRunRecord) -> list[dict]:
    return [w for c in _configs(record, "config_fed_server") for w in _listed(c, "workflows")]


def _args_of(items: list[dict]) -> list[dict]:
    return [i["args"] for i in items if isinstance(i.get("args"), dict)]


def _found(node: Any, key: str) -> list[int]:
    """Every integer `key` value in a JSON tree, sorted and distinct."""
    if isinstance(node, dict):
        items = [
            [v] if k == key and isinstance(v, int) and not isinstance(v, bool) else _found(v, key)
            for k, v in node.items()
        ]
    else:
        items = [_found(value, key) for value in node] if isinstance(node, list) else []
    return sorted({value for found in items for value in found})


def _values(record: DryRunRecord, key: str) -> list[int]:
    """Every integer `key` argument of the server workflows, else of any component of the exported job."""
    return _found(_args_of(_workflows(record)), key) or _found(list(record.configs.values()), key)


def _entry(value: Any, source: str) -> dict:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return {"value": value, "source": source}
    return {"value": None, "source": source, "reason": f"the dry run recorded {value!r}, not a positive integer"}


def budget(record: DryRunRecord) -> dict[str, dict]:
    """`{field: {value, source[, reason]}}` for the three budget fields, as NVFLARE was asked to run them."""
    attrs = record.recipe_attrs
    out = {}
    rounds = _values(record, "num_rounds")
    for server in _configs(record, "config_fed_server"):  # its workflows run one after the other, each its rounds
        each = [w["num_rounds"] for w in _args_of(_listed(server, "workflows")) if "num_rounds" in w]
        rounds = each if len(each) > 1 else rounds
    if len(rounds) == 1:
        out["num_rounds"] = _entry(rounds[0], "dry run: the exported job's num_rounds")
    elif rounds:
        out["num_rounds"] = {"value": None, "source": "dry run", "reason": f"the job holds several num_rounds {rounds}"}
    elif "num_rounds" not in attrs and isinstance(attrs.get("server"), dict):  # a collaborative recipe's server
        out["num_rounds"] = _entry(attrs["server"].get("num_rounds"), "dry run: the recipe's server num_rounds")
    else:
        out["num_rounds"] = _entry(attrs.get("num_rounds"), "dry run: the recipe's num_rounds")
    _unreadable(out, record, "num_rounds", ("num_rounds",))
    workflows = _args_of(_workflows(record))  # ScatterAndGather/Cyclic say min_clients, FedAvg num_clients
    wanted = _found(workflows, "min_clients") or _found(workflows, "num_clients")
    meta = next(iter(_configs(record, "meta.json")), {})
    if len(wanted) == 1:
        out["min_clients"] = _entry(wanted[0], "dry run: the server workflow's minimum clients")
    elif isinstance(attrs.get("min_clients"), int):
        out["min_clients"] = _entry(attrs["min_clients"], "dry run: the recipe's min_clients")
    else:
        out["min_clients"] = _entry(meta.get("min_clients"), "dry run: the job's meta.json min_clients")
    _unreadable(out, record, "min_clients", ("min_clients", "num_clients"))
    env = record.env or Env(None, {})
    if record.entry == "simulator_run" and not record.clients and record.n_clients is not None:
        out["num_clients"] = _entry(record.n_clients, "dry run: the n_clients simulator_run was given")
    elif record.entry == "simulator_run":
        out["num_clients"] = _entry(len(record.clients), "dry run: the sites simulator_run was given")
    elif env.name == "PocEnv":
        out["num_clients"] = _entry(env.attrs.get("num_clients"), "dry run: PocEnv num_clients")
    else:
        out["num_clients"] = {"value": None, "source": "dry run", "not_applicable": True}
    return out


def _unreadable(out: dict, record: DryRunRecord, field: str, names: tuple[str, ...]) -> None:
    """`field` unpinnable when the workflow holds one of `names` as no count the run would use: read through a
    getter that fails, or a count its constructor sets that a copy built from the exported arguments cannot give."""
    found = [u.partition(": ")[2] for u in record.unreadable if u.partition(": ")[0] in names]
    if found:
        what = {"num_rounds": "number of rounds", "min_clients": "minimum of clients"}[field]
        reason = f"{found[0]}, so the job runs no known {what}; keep {field} an int"
        out[field] = {"value": None, "source": "dry run", "reason": reason, "unpinnable": True}


@dataclass(frozen=True)
class Ran:
    """What a recorded run asked NVFLARE to run, each fact read once from its record (`ran`)."""

    budget: dict[str, dict]  # `budget`
    values: dict  # {field: value} of the budget
    metric: str | None  # `key_metric`
    mode: str | None
    recipe_class: str | None
    family: str | None


def ran(record: DryRunRecord) -> Ran:
    found = budget(record)
    values = {k: v.get("value") for k, v in found.items()}
    return Ran(found, values, *key_metric(record), recipe_class(record), family(record))


def fedjob_workspace(record: DryRunRecord) -> str | None:
    """The folder a FedJob's own `simulator_run(...)` was told to write to (None for SimEnv runs and exports)."""
    return None if record.entry != "simulator_run" or (record.env is not None and record.env.name) else record.workspace


def key_metric(record: DryRunRecord) -> tuple[str | None, str | None]:
    """(key metric, mode) the job asked NVFLARE to select models by; mode None when the job leaves it implicit."""
    attrs = record.recipe_attrs
    metric = attrs.get("key_metric") if isinstance(attrs.get("key_metric"), str) else None
    mode = attrs.get("key_metric_mode") if attrs.get("key_metric_mode") in ("min", "max") else None
    if metric is None:
        selectors = [
            args
            for config in _configs(record, "config_fed_server")
            for args in _args_of(_listed(config, "components"))
            if isinstance(args.get("key_metric"), str)
        ]
        if selectors:  # a model selector's key metric; negate_key_metric=True selects the lowest (False: implicit)
            metric = selectors[0]["key_metric"]
            mode = mode or ("min" if selectors[0].get("negate_key_metric") is True else None)
    return metric, mode


def train_script(record: DryRunRecord) -> str | None:
    """The client training script the job sends (the recipe's train_script, or a ScriptRunner's script), relative
    to job.py's folder when the job named it by an absolute path inside that folder."""
    attrs = record.recipe_attrs
    script = attrs["train_script"] if isinstance(attrs.get("train_script"), str) else None
    for config in [] if script is not None else _configs(record, "config_fed_client"):
        for item in _listed(config, "executors") + _listed(config, "components"):
            inner = item.get("executor") if isinstance(item.get("executor"), dict) else item
            args = inner.get("args")
            found = [args[k] for k in SCRIPT_KEYS if isinstance(args, dict) and isinstance(args.get(k), str)]
            if found and script is None:
                script = found[0].split()[-1] if " " in found[0] else found[0]
    folder = record.job_dir.rstrip("/")
    if script is not None and folder and posixpath.isabs(script):
        inside = posixpath.normpath(script)
        return inside[len(folder) + 1 :] if inside.startswith(folder + "/") else script
    return script
