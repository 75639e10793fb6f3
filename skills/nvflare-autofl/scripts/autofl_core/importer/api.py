"""Public API of the job importer: a static reading (never imports nvflare), settled by a sealed dry run of job.py
only when asked (`dry_run=True`).

import_job(job_path, metric=None, base_args=(), schema_path=None, dry_run=False) -> config   (reads files)
import_source(source, job_name="job.py", ...) -> config                        (pure core: derive(read_source(...)))
admission_errors(config, requested_metric) -> [{code, message}]
cli_flags(config) -> {long_flags, groups, name_flag, takes_value, allow_abbrev}
fixed_budget_args(config) -> ["--n_clients", "2", "--num_rounds", "3"]
fixed_budget_options(config) -> ["--n_clients", "--num_rounds"]   (every option the budget depends on)
canonical_option(config, token) -> (canonical long option | None, inline value | None, error | None)
parse_job_args(config, argv, known_only=False) -> ({canonical option: value}, errors)
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import os
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from . import argparse_flow as ap
from . import data_shaping, display, real_parser, recipes
from .admission import admission_errors  # noqa: F401  (re-exported public API)
from .budget import FIELDS, fixed_budget  # noqa: F401  (FIELDS re-exported)
from .files import UNPARSABLE, Overlay, Workspace, load_job, parsed
from .inputs import NO_INPUTS, Input, kinds
from .objective import build_objective, empty_objective, objective_inputs
from .reach import forwarded_options, reaching_options
from .recipe_raises import would_raise
from .runner_view import (  # noqa: F401  (re-exported public API)
    canonical_option,
    cli_flags,
    fixed_budget_args,
    fixed_budget_options,
    parse_job_args,
)
from .schema import (
    RUNNER_SETTINGS,
    SCHEMA_FILE,
    budget_mismatches,
    comparison_args,
    parse_schema_text,
    schema_section,
    schema_unapplied,
)
from .search import suggested
from .surface import Surface, analyze, job_section, simulator_workspace
from .targets import last_name
from .trust import module_files, outside_job, safe_relative, train_script_of, trust_section
from .values import UNRESOLVED, describe, to_jsonable
from .walker import Walker

if TYPE_CHECKING:
    from .moves import Moved

IMPORTER_VERSION = "1.0"


def _parse(source: str, job_name: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse(source, filename=job_name), ""
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        return None, f"{job_name} has a syntax error{where}: {exc.msg}; fix it (python -m py_compile {job_name})"
    except UNPARSABLE as exc:  # after SyntaxError: what is left is nesting or NUL bytes
        detail = str(exc) or "expressions nested too deeply"
        return None, f"{job_name} cannot be parsed ({detail}); simplify the file"


def _main_parser(walk: Any) -> ap.Parser | None:
    """The parser job.py parses with (its first namespace's), else the first it builds."""
    if walk.namespaces:
        return walk.namespaces[0].parser
    return walk.parsers[0] if walk.parsers else None


def _schema_args(parser: ap.Parser | None, budget: dict, base_args: list[str]) -> tuple[list[str], list[str]]:
    """Job flags set by the schema's default_candidate_budget, and conflicts with --base-args."""
    if parser is None or not budget:
        return [], []
    given = real_parser.parse(parser, base_args, "parse_known_args").values
    args, conflicts = [], []
    for key, value in sorted(budget.items()):
        flag = next((f for f in parser.flags if f.dest == key), None)
        if key in RUNNER_SETTINGS or flag is None or flag.positional:
            continue
        if key in given and given[key] != value:
            conflicts.append(
                f"--base-args sets {flag.name} {given[key]!r} but mutation_schema.yaml fixes "
                f"{key}: {value!r}; drop it from --base-args"
            )
        switch = ap.arguments(flag, value)
        if switch is None:
            conflicts.append(
                f"mutation_schema.yaml fixes {key}: {value!r}, but job.py's {flag.name} ({flag.action}) cannot be "
                "set to it on the command line; change the schema or the option"
            )
        args += switch or []
    return args, conflicts


def _argparse_section(walk: Any, base_args: list[str], schema_args: list[str], conflicts: list[str]) -> dict:
    parser, namespace = _main_parser(walk), (walk.namespaces or [None])[0]
    values = namespace.values if namespace else {}
    known = {dest: to_jsonable(v.value) for dest, v in values.items() if v.resolved}
    flags = [replace(flag, value=known.get(flag.dest)).to_dict() for flag in parser.flags] if parser else []
    problems = [p for prs in walk.parsers for p in prs.problems]
    return {
        "allow_abbrev": parser.allow_abbrev if parser else True,
        "fromfile_prefix_chars": parser.fromfile_prefix_chars if parser else None,
        "class_parsers": [{"class": name, "line": line} for name, line in walk.class_parsers],
        "base_args": list(base_args),
        "base_args_errors": list(walk.base_args_errors),
        "budget_conflicts": conflicts,
        "flags": flags,
        "parsed": namespace is not None,
        "problems": problems,
        "schema_args": schema_args,
    }


@dataclass
class Reading:
    """A static reading: the config's facts (no field derived from another) and the notes only the reading makes.
    A dry run folds its record into `facts` before `derive` makes the config."""

    facts: dict  # its objective's `_reasons`: objective field -> why it is unresolved
    tree: ast.Module | None = None  # job.py's
    notes: list[dict] = field(default_factory=list)  # the client script's, then the schema's options reaching nothing
    script: tuple[str | None, Any] = (None, None)  # the client script trust reads: its path and tree
    reached: list[str] = field(default_factory=list)  # options a perturbed dry run showed reaching what NVFLARE builds
    inputs: frozenset[Input] = NO_INPUTS  # the run-time inputs its refusal, unresolved budget and objective rest on


def derive(reading: Reading) -> dict:
    """The config of a reading's facts: the budget's comparison arguments and schema mismatches, the unresolved
    notes, the runner's flags, the summary and the admission errors."""
    config = copy.deepcopy(reading.facts)
    _unseen_options(config, reading)
    budget, schema, section = config["fixed_budget"], config["schema"], config["argparse"]
    flags = section["flags"]
    schema["budget_mismatches"] = budget_mismatches(budget, schema, flags, section["schema_args"]) if budget else []
    if budget:
        budget["comparison_args"] = comparison_args(schema, flags)
    pinned = set(fixed_budget_options(config))
    config["search_space"]["suggested"] = [s for s in config["search_space"]["suggested"] if s["flag"] not in pinned]
    items = [
        {"field": f"recipe_args.{k}", "reason": v.get("reason", "dynamic value")}
        for k, v in config["recipe_args"].items()
        if v["confidence"] == UNRESOLVED
    ]
    items += [
        {"field": f"fixed_budget.{k}", "reason": budget[k].get("reason", "")}
        for k in FIELDS
        if k in budget and budget[k].get("confidence") == UNRESOLVED
    ]
    reasons = config["objective"].pop("_reasons", {})
    items += [{"field": f"objective.{k}", "reason": v} for k, v in sorted(reasons.items())]
    items += [{"field": "argparse", "reason": p} for p in section["problems"]]
    items += reading.notes
    if budget:  # a job whose budget is read (the static reading supports it, or a run recorded it)
        items += schema_unapplied(schema, flags)
    config["unresolved"] = items
    config["cli_flags"], config["summary"] = cli_flags(config), display.summary(config)
    config["admission_errors"] = admission_errors(config)
    return config


def _script_tree(job_name: str, script: str | None, read_file: Callable) -> tuple[str | None, Any, list]:
    if script is None:
        return None, None, []
    rel = safe_relative(posixpath.join(posixpath.dirname(job_name), script))
    if rel is None:
        return None, None, [{"field": "trust.train_script", "reason": f"{script!r} is outside the workspace"}]
    text = read_file(rel)
    if text is None:
        return rel, None, [{"field": "trust.train_script", "reason": f"{rel} is missing or unreadable"}]
    tree = parsed(text)
    if tree is None:
        return rel, None, [{"field": "trust.train_script", "reason": f"{rel} does not parse; its imports are unknown"}]
    return rel, tree, []


def _script_parser(script_rel: str | None, tree: ast.Module | None) -> ap.Parser | None:
    """The client script's argparse (walked like job.py, with no arguments; one without options when it has none),
    or None when unreadable."""
    if script_rel is None or tree is None:
        return None
    names = {last_name(n) for n in ast.walk(tree)}
    if "argv" in names:
        return None  # reads sys.argv itself
    if "ArgumentParser" not in names:
        return ap.Parser()
    walk = Walker([], script_rel).run(tree)
    if walk.problems or not walk.parsers or any(p.problems for p in walk.parsers):
        return None
    return _main_parser(walk)


def import_source(source: str, **options: Any) -> dict:
    """Import job.py source text into a campaign config (pure; see `read_source` for the options)."""
    return derive(read_source(source, **options))


def read_source(
    source: str,
    *,
    job_name: str = "job.py",
    metric: str | None = None,
    base_args: Sequence[str] = (),
    schema_text: str | None = None,
    read_file: Callable[[str], str | None] | None = None,
    exists: Callable[[str], bool] | None = None,
) -> Reading:
    """The static reading of job.py source text (pure; files via the two callbacks)."""
    read_file = read_file or (lambda _rel: None)
    exists = exists or (lambda rel: read_file(rel) is not None)
    schema_data, schema_errors = parse_schema_text(schema_text) if schema_text is not None else (None, [])
    schema = schema_section(schema_data, schema_errors, schema_text is not None)
    args = [str(a) for a in base_args]
    tree, walk, surface, schema_args, conflicts = _walk(source, job_name, args, schema, exists)
    supported = surface.status == "supported"
    args_section = _argparse_section(walk, args, schema_args, conflicts)
    named = train_script_of(surface) if supported else None
    script_rel, script_tree, notes = _script_tree(job_name, named, read_file)
    script = (script_rel, script_tree)
    objective = build_objective(surface, metric, schema, script_rel) if supported else empty_objective(metric, schema)
    budget, inputs = fixed_budget(surface)  # `derive` adds the comparison arguments, from the flags a run replaces
    trust = trust_section(
        job_name, tree or ast.Module([], []), script_rel, script_tree, exists, schema["preferred_targets"]
    )
    space, unused, shaping = _space_and_shaping(walk, tree, schema, budget, args_section, script)
    job_block = job_section(surface, job_name)
    env = job_block["env"] or {}
    facts = {
        "argparse": args_section,
        "data_shaping": shaping,
        "environment": {
            "discovered": {"args": env.get("args", {}), "name": env.get("class")},
            "simulator_env_passthrough": [],
            "simulator_workspace": simulator_workspace(surface),
        },
        "fixed_budget": budget,
        "import": {
            "support": {
                "reason": outside_job(named) or surface.reason or f"recognized {surface.pattern} pattern",
                "status": "unsupported" if outside_job(named) else surface.status,
                **({"several_runs": True} if surface.several_runs else {}),
            },
            "would_raise": would_raise(surface, budget),
        },
        "importer_version": IMPORTER_VERSION,
        "job": job_block,
        "objective": objective,
        "recipe_args": {k: describe(v) for k, v in sorted(surface.target.kwargs.items())} if supported else {},
        "schema": schema,
        "search_space": {"suggested": space},
        "source_sha256": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        "trust": trust,
    }
    inputs |= surface.inputs | (objective_inputs(surface) if supported else NO_INPUTS)
    return Reading(facts, tree, notes + unused if supported else [], script, inputs=inputs)


def _walk(
    source: str, job_name: str, base_args: list[str], schema: dict, exists: Callable[[str], bool]
) -> tuple[ast.Module | None, Any, Surface, list[str], list[str]]:
    """(job.py's tree, its walk, its surface, the schema's budget arguments, their conflicts with base_args)."""
    tree, syntax_error = _parse(source, job_name)
    schema_args, conflicts = [], []
    if tree is None:
        walk, surface = Walker(base_args).out, Surface(reason=syntax_error)
    else:
        walk = Walker(base_args, job_name).run(tree)
        budget = schema["comparison_budget_args"]["default_candidate_budget"]
        schema_args, conflicts = _schema_args(_main_parser(walk), budget, base_args)
        if schema_args:  # walked again with the schema's budget arguments the runner adds
            walk = Walker(base_args + schema_args, job_name).run(tree)
        _mark_job_classes(walk, exists)
        surface = analyze(walk, tree)
    shadow = next((rel for rel in ("nvflare.py", "nvflare/__init__.py") if exists(rel)), None)
    if shadow is not None:  # `python job.py` imports the job's own nvflare, not NVFLARE's
        why = f"{shadow} beside {job_name} is imported instead of NVFLARE; rename it"
        surface = Surface(reason=why, inputs=kinds(Input.OWN_NVFLARE))
    return tree, walk, surface, schema_args, conflicts


def _mark_job_classes(walk: Any, exists: Callable[[str], bool]) -> None:
    """A class imported from a module beside job.py is the job's own: never matched to an NVFLARE class by name
    (its defaults are unknown to the static reading; the dry run records what it builds)."""
    for obj in walk.objects:
        cls = obj.cls
        module = cls.qualname.rpartition(".")[0].lstrip(".")
        if not module or cls.qualname.startswith(("nvflare.", recipes.LOCAL_PREFIX)):
            continue
        if any(exists(path) for path in module_files(module, "")):
            cls.qualname = recipes.LOCAL_PREFIX + cls.qualname.lstrip(".")


def _space_and_shaping(
    walk: Any, tree: ast.Module | None, schema: dict, budget: dict, args_section: dict, script: tuple
) -> tuple[list[dict], list, dict]:
    """(suggested search space, notes on schema-declared options that reach nothing, data-shaping classes): an
    option the budget depends on, that does not reach the job, or is classed as data shaping (fixed or
    unclassified), is never suggested."""
    parser, (script_rel, script_tree) = _main_parser(walk), script
    pinned = set(fixed_budget_options({"fixed_budget": budget, "argparse": args_section}))
    space = suggested(parser.flags if parser else [], pinned, schema["mutable_args"])
    reached = reaching_options(walk, _script_parser(script_rel, script_tree))
    unused = [
        {
            "field": f"schema.mutable_args.{s['dest']}",
            "reason": f"job.py parses {s['flag']} but its value never reaches the job (not used, or forwarded to "
            "a client script that does not accept it), so tuning it changes nothing",
        }
        for s in space
        if s["flag"] not in reached and s["dest"] in schema["mutable_args"]
    ]
    space = [s for s in space if s["flag"] in reached]
    shaping = data_shaping.classify(args_section["flags"], tree, script_tree, forwarded_options(walk))
    for entry in space:  # mutation_schema.yaml's mutable_args are the user's word on a flow the importer cannot read
        if entry["dest"] in schema["mutable_args"]:
            shaping["unclassified"].pop(entry["flag"], None)
    space = [s for s in space if s["flag"] not in shaping["fixed"] and s["flag"] not in shaping["unclassified"]]
    return space, unused, shaping


def import_job(
    job_path: str | os.PathLike,
    *,
    metric: str | None = None,
    base_args: Sequence[str] = (),
    schema_path: str | os.PathLike | None = None,
    overlay: dict[str, bytes] | None = None,
    dry_run: bool = False,
    python: str | None = None,
    run_args: Sequence[str] | None = None,
) -> dict:
    """Import an existing job.py (reads it, its train script's imports and mutation_schema.yaml).

    `overlay` ({workspace-relative path: bytes}) shows those files instead of the workspace's (a candidate's
    draft). `dry_run`: also run job.py (with `python`) in the trial sandbox up to NVFLARE's entry point and fold
    what it built into the config (dryrun_config.py); `run_args`: a candidate's run arguments, run once more on
    top of the base ones (`import.dry_run.run_args_changes`). Raises files.JobImportError when job.py (or an
    explicit schema) cannot be read.
    """
    path, source, schema_text = load_job(job_path, schema_path)
    root = path.absolute().parent
    workspace = Overlay(root, overlay) if overlay else Workspace(root)
    if overlay:
        source = workspace.read_file(path.name) or source
        schema_text = workspace.read_file(SCHEMA_FILE) if workspace.exists(SCHEMA_FILE) else schema_text

    options = {"job_name": path.name, "metric": metric, "base_args": base_args, "schema_text": schema_text}
    static = functools.partial(read_source, source, read_file=workspace.read_file, exists=workspace.exists, **options)
    if not dry_run or not _uses_nvflare(source, workspace.read_file):
        return derive(static())
    from . import dryrun

    with dryrun.Session(path, overlay=overlay, python=python) as session:  # it starts on a run the cache misses
        return _with_dry_run(static(), path, workspace, session, [str(a) for a in run_args or ()])


def _unseen_options(config: dict, reading: Reading) -> None:
    """Options only the real parser has: classified for data shaping like the others, and suggested for tuning
    when the perturbed run showed them reaching what NVFLARE builds and the client script, where readable, defines
    them."""
    unseen = [f for f in config["argparse"]["flags"] if f.get("line") is None and not f["positional"]]
    if not unseen:
        return
    flags = [ap.Flag.from_dict(f) for f in unseen]
    (script_rel, script_tree), reached = reading.script, reading.reached
    shaping = config["data_shaping"]
    for kind, found in data_shaping.classify(unseen, reading.tree, script_tree, set(reached)).items():
        shaping[kind].update(found)  # `reached` is looked up for the unseen options only
    script = _script_parser(script_rel, script_tree)
    tunable = [f for f in flags if f.name in reached and (script is None or f.dest in {s.dest for s in script.flags})]
    blocked = {*shaping["fixed"], *shaping["unclassified"]}  # `derive` drops the options the budget depends on
    known = {s["flag"] for s in config["search_space"]["suggested"]}
    config["search_space"]["suggested"] += [
        s for s in suggested(tunable, blocked, config["schema"]["mutable_args"]) if s["flag"] not in known
    ]


def _uses_nvflare(source: str, read_file: Callable[[str], str | None]) -> bool:
    """True when job.py, or a module beside it that job.py imports, imports nvflare: only then can a dry run stop
    at NVFLARE's entry points (a job that trains by other means would train in it)."""

    def imports(text: str | None) -> set[str]:
        names = set()
        for node in ast.walk(parsed(text) or ast.Module([], [])):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        return names

    own = imports(source)
    return "nvflare" in own or any("nvflare" in imports(read_file(f"{name}.py")) for name in sorted(own))


def _with_dry_run(reading: Reading, path: Any, workspace: Any, session: Any, run_args: list[str]) -> dict:
    """Run job.py's dry run (and, once recorded, the perturbed runs) in `session`; fold them into the reading."""
    from . import dryrun, dryrun_config, fallbacks, moves, run_reasons

    section = reading.facts["argparse"]
    args = [*section["base_args"], *section["schema_args"]]
    if section["base_args_errors"]:
        return derive(reading)  # the job's own parser would reject the arguments: nothing to run
    record = session.run(args)
    # a refusal the record decides alone: a stand-in ran code `python job.py` would not, or another NVFLARE's API
    fallback = None
    if record is not None:
        family = reading.facts["job"].get("family")
        fallback = fallbacks.refusal(record, workspace.read_file) or run_reasons.other_version(record, family)
    recorded_run = record is not None and record.status == "recorded" and fallback is None
    moved, env_moved = moves.Moved(), {}
    if recorded_run:
        keep = dryrun.PERTURBED_STORED
        runs = functools.partial(session.run_many, keep=keep)
        again = functools.partial(session.run, args, env={moves.AGAIN_VAR: "1"}, keep=keep)
        moved = moves.moving_options(record, args, runs, reading.reached, again)
        env_moved = moves.moving_env(record, lambda env: session.run(args, env=env, keep=keep), dryrun.FIXED_ENV)

    def trust_for(script: str | None) -> dict:
        rel, script_tree, _notes = _script_tree(path.name, script, workspace.read_file)
        reading.script = (rel, script_tree)
        job_tree, targets = reading.tree or ast.Module([], []), reading.facts["schema"]["preferred_targets"]
        return trust_section(path.name, job_tree, rel, script_tree, workspace.exists, targets)

    config = fold_run(reading, record, moved, trust_for, env_moved, fallback)
    if recorded_run:
        dry = config["import"]["dry_run"]
        dry["tried_options"], dry["args"] = moves.tried_options(record), list(args)
        if run_args:  # options the perturbed runs did not try are run
            covered = moves.covered_by(dry["tried_options"], run_args)
            dry["run_args_changes"] = [] if covered else dryrun_config.changes(record, session.run(args + run_args))
    return config


def fold_run(
    reading: Reading,
    record: Any,
    moved: Moved,
    trust_for: Callable[[str | None], dict],
    env_moved: dict | None = None,
    fallback: str | None = None,
) -> dict:
    """The config of the reading with a dry run's record folded into its facts (dryrun_config.py)."""
    from . import dryrun_config

    static = derive(reading)
    run = (record, moved, trust_for, env_moved or {}, fallback, reading.inputs)
    kept = dryrun_config.apply(reading.facts, static, *run)
    return static if kept is None else dryrun_config.settle(derive(reading), kept, record)
