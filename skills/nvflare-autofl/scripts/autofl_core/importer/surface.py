"""Recognize what job.py runs: a Recipe executed in an env / exported, or a FedJob simulated / exported.

Input is the walker's event list (objects constructed, methods called, branches met); output is a
`Surface` describing the pattern, the object that runs, its env and run call, or an unsupported
verdict with an actionable reason (fail closed). What a recipe class does (training or not) comes from the
NVFLARE recipe table (`recipes.py`), by class, so a non-training recipe stays refused whatever it is named.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any

from . import recipes
from .events import UNSEEN_RUN
from .inputs import NO_INPUTS, Input
from .targets import last_name
from .values import ENV_PREFIX, HIGH, Val, describe, merge_flags

ENV_CLASSES = ("SimEnv", "PocEnv", "ProdEnv")
RECIPE_RUNS = ("execute", "run", "export")
FEDJOB_RUNS = ("simulator_run", "export_job")
TRAINING_RUNS = ("execute", "run", "simulator_run")
NESTED_CLASSES = {  # job classes (not recipes: those are classified in the recipe table)
    "FlowerJob": "it runs a nested Flower application",
    "CCWFJob": "it runs a client-controlled workflow application",
    "EdgeJob": "it runs a nested edge application",
}
FAMILY_LABELS = {
    "statistics": "statistics-only",
    "psi": "private set intersection (PSI)",
    "evaluation": "evaluation-only",
    "inference": "inference-only",
    "nested": "a nested unsupported application",
}
NEEDS_TRAINING = "; Auto-FL needs a training job"
ALL_SITES, SERVER_SITE = "@ALL", "server"  # NVFLARE's names (nvflare.apis.job_def)
WORKSPACE_ROOT_VARIABLE = "NVFLARE_SIMULATOR_WORKSPACE_ROOT"  # nvflare.recipe.sim_env
EVAL_COMPONENTS = ("CrossSiteModelEval", "CrossSiteEval", "GlobalModelEval")
STATS_COMPONENTS = ("StatisticsController",)


STATIC_LIMIT = "; simplify job.py so the recipe is built in straight-line code"  # ends a reason the walk gave up on


@dataclass
class Surface:
    status: str = "unsupported"
    reason: str = ""
    pattern: str | None = None
    target: Any = None
    env: Any = None
    run_call: str | None = None
    run_line: int = 0
    components: list = field(default_factory=list)
    run_kwargs: dict = field(default_factory=dict)
    run_args: list = field(default_factory=list)
    site_targets: list = field(default_factory=list)  # FedJob client targets of to()/to_clients(), in call order
    run_control: tuple = ()  # job options of the branches under which the run call was made
    several_runs: bool = False  # job.py may train more than once: only a dry run that sees it run once settles it
    inputs: frozenset[Input] = NO_INPUTS  # the run-time inputs the refusal rests on


def is_recipe(obj: Any) -> bool:
    named = obj.name.endswith("Recipe") or any(c.endswith("Recipe") for c in obj.cls.candidates)
    return named or recipes.is_known_recipe(obj.cls)


def is_fedjob(obj: Any) -> bool:
    return obj.name == "FedJob" or (obj.name.endswith("Job") and obj.cls.qualname.startswith("nvflare"))


def is_env(obj: Any) -> bool:
    return obj.name in ENV_CLASSES


def touches_surface(objects: list, calls: list, once: bool = False) -> str:
    """What these events do to a recipe or job (flags ambiguous branches): "runs" when they may train one more than
    once (`once`: they are every pass's, or the one pass's), "built" when they build, export, give or train one
    once, else ""."""
    trains = [c for c in calls if c.method in TRAINING_RUNS]
    if len(trains) > 1 or (trains and not once):
        return "runs"
    built = any(is_recipe(o) or is_fedjob(o) or is_env(o) for o in objects)
    return "built" if built or trains or any(c.method in RECIPE_RUNS + FEDJOB_RUNS for c in calls) else ""


def _not_training(obj: Any) -> Surface | None:
    """The refusal of a recipe or job class that trains nothing (by the recipe table, else by its name), or None."""
    kind, reason = recipes.family_of(obj.cls) or _family_by_name(obj.name)
    if kind == "training":
        return None
    return Surface(reason=f"{obj.name} is {FAMILY_LABELS[kind]}: {reason}{NEEDS_TRAINING}", target=obj)


def _family_by_name(name: str) -> tuple[str, str]:
    if name in NESTED_CLASSES:
        return "nested", NESTED_CLASSES[name]
    if "Eval" in name:
        return "evaluation", "it trains nothing, so there is no objective to improve"
    if "Stats" in name:
        return "statistics", "it computes federated statistics, not a trained model"
    return "training", ""


def _run_calls(walk: Any) -> list:
    """The calls that run a recipe or a FedJob (or an object of a class chosen at run time)."""
    runs = {**dict.fromkeys(RECIPE_RUNS, is_recipe), **dict.fromkeys(FEDJOB_RUNS, is_fedjob)}
    return [c for c in walk.calls if c.method in runs and (runs[c.method](c.target) or c.target.cls.dynamic)]


def analyze(walk: Any, tree: ast.Module | None = None) -> Surface:
    """Decide the supported surface of a walked job.py (pure over the walk result and job.py's `tree`)."""
    if walk.problems:
        return Surface(reason=walk.problems[0] + STATIC_LIMIT)
    b = next((b for b in walk.branches if not b.resolved and b.touched_surface), None)  # the first ambiguous one
    if b is not None:
        if b.kind == "loop":  # a run in it may run any number of times
            return Surface(
                reason=f"a recipe/job/env is built or run inside a loop (line {b.line}); build and run exactly "
                "one, outside loops, so every trial runs the same job",
                several_runs=b.touched_surface == "runs",
            )
        return Surface(
            reason=f"which recipe/job runs depends on a condition the importer cannot resolve (line {b.line}: "
            f"{b.test}); make it depend only on parsed arguments or literals, or pass the choice in --base-args"
        )
    runs = _run_calls(walk)
    dynamic = [c for c in runs if c.target.cls.dynamic]
    if dynamic:
        return Surface(
            reason=f"dynamic construction: the object run at line {dynamic[0].line} is built from a class chosen at "
            "run time (getattr/dict lookup); construct the recipe by its class name, e.g. FedAvgRecipe(...), in job.py"
        )
    if not runs:
        return _no_run_reason(walk, tree)
    targets = list(dict.fromkeys(c.target for c in runs))
    if len(targets) > 1:
        names = ", ".join(t.name for t in targets)
        why = f"job.py runs several recipes/jobs ({names}); keep one so a trial has one objective"
        return Surface(reason=why, several_runs=True)
    trains = [c for c in runs if c.method in TRAINING_RUNS]
    if len(trains) > 1:  # each run trains: the budget is not one run's
        lines = ", ".join(str(c.line) for c in trains)
        why = f"job.py runs {targets[0].name} {len(trains)} times (lines {lines}); run it once so a trial trains once"
        return Surface(reason=why, several_runs=True)
    return _describe_target(targets[0], runs, trains, walk)


def _run_unseen(walk: Any) -> Surface | None:
    """A recipe or job given to code the reading does not follow, which may run it (any number of times)."""
    unseen = [c for c in walk.calls if c.method == UNSEEN_RUN and (is_recipe(c.target) or is_fedjob(c.target))]
    if not unseen:
        return None
    name, line = unseen[0].target.name, unseen[0].line
    why = f"{name} is given at line {line} to code the reading does not follow, which may run it any number of times"
    return Surface(reason=why + "; run it once in job.py's own code", several_runs=True)


def _no_run_reason(walk: Any, tree: ast.Module | None) -> Surface:
    built = [o for o in walk.objects if is_recipe(o) or is_fedjob(o)]
    unseen = _run_unseen(walk) if built else None
    if unseen is not None:
        return unseen
    if built:
        if refused := _not_training(built[0]):
            return refused
        return Surface(
            reason=f"{built[0].name} is built at line {built[0].line} but never run; call recipe.execute(env) "
            "(or job.simulator_run(...)) in job.py"
        )
    if walk.ended_by is not None:
        return Surface(reason=raise_reason(walk.ended_by))
    if walk.raises:
        return Surface(
            reason=f"job.py reaches `raise` at line {walk.raises[0]} before any recipe or FedJob runs (with the "
            "arguments given); check the values passed in --base-args"
        )
    uncalled = _uncalled_runner(tree) if tree is not None else None
    if uncalled is not None:
        return Surface(
            reason=f"job.py defines {uncalled.name}() at line {uncalled.lineno}, which runs the job, but "
            f'never calls it; call {uncalled.name}(...) in job.py (under `if __name__ == "__main__":`) with the '
            "arguments it needs"
        )
    return Surface(
        reason="no recognizable NVFLARE recipe or FedJob: Auto-FL needs a job.py that builds a *Recipe and runs it "
        "with recipe.execute(SimEnv(...)), or a FedJob run with simulator_run(...)"
    )


def _uncalled_runner(tree: ast.Module) -> ast.FunctionDef | None:
    """The first top-level function of job.py that runs a recipe or job (job.py builds a *Recipe or *Job) and that
    job.py never names anywhere else (so nothing calls it), or None."""
    if not any(last_name(n.func).endswith(("Recipe", "Job")) for n in ast.walk(tree) if isinstance(n, ast.Call)):
        return None
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in named):
        if any(
            last_name(n.func) in (*RECIPE_RUNS, *FEDJOB_RUNS) for n in ast.walk(function) if isinstance(n, ast.Call)
        ):
            return function
    return None


def raise_reason(note: Any) -> str:
    """Why a job whose walk ends in a `raise` is refused, naming the line and what the user can change."""
    where = f"job.py reaches `raise` at line {note.line} ({note.exception}) before any recipe or FedJob runs"
    options = [flag for flag in note.control if not flag.startswith("env:")]
    if options:
        return (
            f"{where}, with the arguments given (job.py's defaults and --base-args): the branches leading there "
            f"depend on {', '.join(options)}; pass values for them in --base-args that avoid the raise, or change "
            "job.py so it runs with its defaults"
        )
    return f"{where}, whatever the arguments; remove the raise or make job.py build and run its recipe"


def _describe_target(target: Any, runs: list, trains: list, walk: Any) -> Surface:
    if refused := _not_training(target):
        return refused
    nested = [v for v in target.kwargs.values() if hasattr(v, "cls") and (is_recipe(v) or is_fedjob(v))]
    if nested:
        return Surface(reason=f"{target.name} nests another application ({nested[0].name}); Auto-FL cannot budget it")
    unseen = _run_unseen(walk)
    if unseen is not None:
        return unseen
    chosen = trains[-1] if trains else runs[-1]
    surface = Surface(
        "supported", target=target, run_call=chosen.method, run_line=chosen.line, run_control=chosen.control
    )
    surface.run_kwargs, surface.run_args = dict(chosen.kwargs), list(chosen.args)
    if is_recipe(target):
        surface.pattern = "recipe"
        surface.env = _env_of(chosen)
    else:
        surface.pattern = "fedjob"
        surface.components = _components(target, walk)
        surface.site_targets = _site_targets(target, walk)
        names = [c.name for c in surface.components]
        trains = any("num_rounds" in c.kwargs for c in surface.components) or "num_rounds" in target.kwargs
        stats, evals = any(n in STATS_COMPONENTS for n in names), any(n in EVAL_COMPONENTS for n in names)
        if stats or (evals and not trains):
            kind = FAMILY_LABELS["statistics" if stats else "evaluation"]
            return Surface(reason=f"FedJob at line {target.line} is {kind}{NEEDS_TRAINING}")
    return surface


def _env_of(call: Any) -> Any:
    return next((v for v in [*call.args, call.kwargs.get("env")] if hasattr(v, "cls") and is_env(v)), None)


def _components(job: Any, walk: Any) -> list:
    """Objects attached to a FedJob with job.to(...)/to_server(...)/to_clients(...)."""
    calls = [c for c in walk.calls if c.target is job and c.method.startswith("to") and c.args]
    return [c.args[0] for c in calls if hasattr(c.args[0], "cls")]


def _site_targets(job: Any, walk: Any) -> list:
    """Client targets the FedJob deploys to: `to(obj, "site-1")` values, ALL_SITES for `to_clients(obj)`."""
    found = []
    for call in (c for c in walk.calls if c.target is job):
        if call.method == "to_clients":
            found.append(Val(ALL_SITES, HIGH, flags=call.control))
        elif call.method == "to":
            target = call.args[1] if len(call.args) > 1 else call.kwargs.get("target")
            if not (isinstance(target, Val) and target.resolved and target.value == SERVER_SITE):
                found.append(_decided_by(target, call.control))
    return found


def _decided_by(target: Any, control: tuple[str, ...]) -> Any:
    """A site name plus the options that decided whether (and how often) it was sent."""
    if not isinstance(target, Val) or not control:
        return target
    return replace(target, flags=merge_flags(target, Val(flags=control)), parts=())


def simulator_workspace(surface: Surface) -> dict | None:
    """Where `FedJob.simulator_run(workspace)` writes, and whether it reads NVFLARE_SIMULATOR_WORKSPACE_ROOT (in
    NVFLARE 2.9 only SimEnv honours it, so job.py must pass its value to simulator_run)."""
    if surface.pattern != "fedjob" or surface.run_call != "simulator_run":
        return None
    value = surface.run_kwargs.get("workspace", surface.run_args[0] if surface.run_args else None)
    reads = isinstance(value, Val) and ENV_PREFIX + WORKSPACE_ROOT_VARIABLE in value.flags
    record = describe(value) if value is not None else {"value": None, "confidence": "unresolved"}
    return {"line": surface.run_line, "reads_root_variable": reads, **record}


def job_section(surface: Surface, job_path: str) -> dict:
    """The `job` block of the config."""
    env = None
    if surface.env is not None:
        env = {"class": surface.env.name, "args": {k: describe(v) for k, v in sorted(surface.env.kwargs.items())}}
    elif surface.run_call == "simulator_run":
        env = {"class": "FedJob.simulator_run", "args": {k: describe(v) for k, v in sorted(surface.run_kwargs.items())}}
    target = surface.target
    family = recipes.family_of(target.cls) if target is not None else None
    return {
        "class": target.name if target is not None else None,
        "family": family[0] if family else None,
        "nvflare_class": recipes.nvflare_class(target.cls) if target is not None else None,
        "env": env,
        "line": target.line if target is not None else None,
        "path": job_path,
        "pattern": surface.pattern,
        "run_call": surface.run_call,
    }
