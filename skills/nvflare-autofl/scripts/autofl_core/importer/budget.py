"""Fixed training budget: num_clients, min_clients, num_rounds, and every job option that decides each one.

Values come from the recipe / FedJob constructor (or an argument object the recipe table names, e.g.
CollabRecipe's `server=`), the env (SimEnv `num_clients` or `clients`, `simulator_run(n_clients=...)`), or the
installed NVFLARE's constructor defaults (recipe table, confidence `medium`, with a note). Each entry lists
`depends_on`: the job options the value is computed from, by data flow or by the branch that built the recipe
or env; the runner pins all of them. Confidence: `high` (a literal, or one option's own value), `pinned`
(computed from options only), `medium` (a constant expression or an NVFLARE default), `unresolved`
(safety-critical: admission rejects it; the reason names the input: a file, the environment, a random draw,
the clock, or a call the importer cannot evaluate).
"""

from __future__ import annotations

from typing import Any

from ..common.bounded import is_integer
from . import recipes
from .inputs import NO_INPUTS
from .surface import ALL_SITES
from .values import HIGH, MEDIUM, PINNED, UNRESOLVED, Val, known, merge_flags, option_flags, to_jsonable, weakest

FIELDS = ("num_clients", "min_clients", "num_rounds")
NOT_APPLICABLE = "not_applicable"
_INPUTS = "inputs"  # an entry's run-time inputs while the budget is built: `fixed_budget` takes them out


def _entry(val: Any, source: str, control: tuple[str, ...]) -> dict:
    """The budget record of one value; `control` = options of the branches that built or ran its owner."""
    if not isinstance(val, Val):
        return _missing(getattr(val, "origin", "") or "an object, not a number", source, val)
    own = option_flags(val.flags)
    depends_on = list(dict.fromkeys([*own, *option_flags(control)]))
    ok = val.resolved and is_integer(val.value) and val.value > 0
    entry = {
        "value": to_jsonable(val.value) if ok else None,
        "confidence": _confidence(val, own, depends_on) if ok else UNRESOLVED,
        "flag": own[0] if len(own) == 1 else None,
        "source": source,
        "depends_on": depends_on,
    }
    if len(own) > 1:
        entry["flags"] = own
    if not ok:
        entry["reason"] = val.reason or (
            f"value {val.value!r} is not a positive integer" if val.resolved else "not resolved statically"
        )
        entry[_INPUTS] = val.inputs
    return entry


def _confidence(val: Val, own: list[str], depends_on: list[str]) -> str:
    if val.confidence == HIGH and len(depends_on) <= 1 and own == depends_on:
        return HIGH  # a literal, or the value of exactly one option
    return PINNED if depends_on else val.confidence


def _missing(reason: str, source: str | None, of: Any = None) -> dict:
    """An unresolved field; `of`: the value `reason` names (its run-time inputs are the field's)."""
    entry = {"value": None, "confidence": UNRESOLVED, "flag": None, "source": source, "reason": reason}
    return {**entry, "depends_on": [], _INPUTS: getattr(of, "inputs", NO_INPUTS)}


def _not_applicable(reason: str) -> dict:
    return {**_missing(reason, None), "confidence": NOT_APPLICABLE}


def _from_defaults(obj: Any, param: str, source: str) -> dict:
    """An omitted constructor argument, from the installed NVFLARE's signature of `obj`'s class (a subclass the job
    defines without its own `__init__` has its NVFLARE base's). A class of the job's own code is not read: refused
    with the line (the dry run records what it builds)."""
    name, default, version = obj.name, recipes.default_of(obj.cls, param), recipes.nvflare_version()
    if obj.cls.qualname.startswith(recipes.LOCAL_PREFIX) and default.status == "unknown":
        return _missing(
            f"{name} (built at job.py line {obj.line}) is the job's own class and its {param} is decided in its "
            f"code, which the static reading does not follow; pass {param}= where job.py builds it, or import where "
            "the dry run can run job.py",
            source,
        )
    if default.status in ("value", "fixed") and isinstance(default.value, int) and default.value > 0:
        how = "default" if default.status == "value" else "fixed value"
        what = "recipe" if recipes.is_known_recipe(obj.cls) else name
        return {**_entry(Val(default.value, MEDIUM), f"{name} {how}", ()), "note": f"{what} {how}, nvflare {version}"}
    reasons = {
        "value": f"{name}'s default {param} is {default.value!r} in nvflare {version} (decided inside the recipe); "
        f"pass {param}= explicitly",
        "computed": f"{name}'s default {param} is computed ({default.detail}); pass {param}= explicitly",
        "required": f"{name} requires {param}= (nvflare {version}) and job.py does not pass it; pass it explicitly",
        "absent": f"{name} takes no {param}= in nvflare {version}; pass the budget where {name} reads it",
        "ambiguous": f"nvflare {version} ships several {name} classes with different {param} defaults; import it "
        f"from its module or pass {param}= explicitly",
    }
    return _missing(reasons.get(default.status, f"{name} gets no {param}=; pass it explicitly"), source)


def _field(obj: Any, param: str, control: tuple[str, ...]) -> dict:
    """`param` of a recipe/controller: its keyword, an argument object the table names, or its class's default."""
    if param in obj.kwargs:
        return _entry(obj.kwargs[param], f"{obj.name}({param}=...)", control)
    nested = recipes.budget_source(obj.cls, param)
    if nested is not None:
        holder = obj.kwargs.get(nested["object"])
        if holder is None or not hasattr(holder, "kwargs"):
            return _missing(
                f"{obj.name} reads {param} from its {nested['object']}= object; build it in job.py "
                f"with the budget: {nested['object']}=<class>({nested['param']}=N)",
                f"{obj.name}({nested['object']}=...)",
            )
        inner = _field(holder, nested["param"], control + holder.control)
        inner["source"] = f"{obj.name}({nested['object']}={inner['source']})"
        return inner
    return _from_defaults(obj, param, f"{obj.name}({param}=...)")


def recipe_budget(surface: Any) -> dict:
    recipe = surface.target
    control = recipe.control + surface.run_control
    budget = {field: _field(recipe, field, control) for field in ("num_rounds", "min_clients")}
    budget["num_clients"] = _env_clients(surface)
    if recipe.unpacked:
        for field in FIELDS[1:]:
            if budget[field]["confidence"] != UNRESOLVED and field not in recipe.kwargs:
                budget[field] = _missing(
                    f"{recipe.name} receives **kwargs the importer cannot see", f"{recipe.name}(**...)"
                )
    return budget


def _env_clients(surface: Any) -> dict:
    env = surface.env
    given = [*surface.run_args, *surface.run_kwargs.values()][:1]
    if env is None and given and surface.run_call in ("execute", "run"):  # `execute(make_env())`: clients unknown
        why = getattr(given[0], "reason", None) or getattr(given[0], "origin", None) or "not an env the reading knows"
        where = f"the env given to {surface.run_call}() at line {surface.run_line}"
        return _missing(f"{where}: {why}", "env", given[0])
    if env is None:
        return _not_applicable(f"no simulation env: job.py calls {surface.run_call}(); clients come from deployment")
    if env.name == "ProdEnv":
        return _not_applicable("ProdEnv: clients are the provisioned production sites")
    kwargs, control = env.kwargs, env.control + surface.run_control
    if "num_clients" in kwargs:
        value = kwargs["num_clients"]
        if not (isinstance(value, Val) and value.resolved and value.value == 0 and "clients" in kwargs):
            return _entry(value, f"{env.name}(num_clients=...)", control)
    if "clients" in kwargs:
        return _count(kwargs["clients"], f"{env.name}(clients=[...])", control)
    entry = _from_defaults(env, "num_clients", f"{env.name}(num_clients=...)")
    if entry["confidence"] == UNRESOLVED:
        return _missing(f"{env.name} gets neither num_clients= nor clients=", f"{env.name}(num_clients=...)")
    return entry


def _count(val: Any, source: str, control: tuple[str, ...]) -> dict:
    if known(val, (list, tuple)):
        return _entry(Val(len(val.value), val.confidence, val.expr, val.flags), source, control)
    why = val.reason if isinstance(val, Val) and val.reason else getattr(val, "origin", "")
    why = f"client list is not resolved: {why}" if why else "client list is not resolved"
    return _missing(why, source, val)


def fedjob_budget(surface: Any) -> dict:
    job = surface.target
    names = ("FedAvg", "ScatterAndGather")
    controllers = [c for c in surface.components if "num_rounds" in c.kwargs or c.name in names]
    controller = controllers[0] if controllers else None
    control = job.control + surface.run_control
    budget = {}
    if len(controllers) > 1:  # NVFLARE runs the server's workflows one after the other
        lines = ", ".join(str(c.line) for c in controllers)
        why = f"{len(controllers)} controllers (lines {lines}) run one after the other: the rounds add up; send one"
        budget["num_rounds"] = _missing(why, "FedJob")
    elif "num_rounds" in job.kwargs:
        budget["num_rounds"] = _field(job, "num_rounds", control)
    elif controller is not None:
        budget["num_rounds"] = _field(controller, "num_rounds", control + controller.control)
    else:
        budget["num_rounds"] = _missing("no controller with num_rounds= is attached to the FedJob", "FedJob")
    budget["min_clients"] = _waited_for(job, controller, control)
    if controller is not None and not recipes.keeps_nvflare_arguments(controller.cls):
        for field in ("num_rounds", "min_clients"):
            budget[field] = _not_nvflare(controller, field)
    budget["num_clients"] = _run_clients(surface, control)
    return budget


def _not_nvflare(controller: Any, field: str) -> dict:
    """A workflow that is not NVFLARE's (another package's class named like one, or the job's own with its own
    `__init__`) decides in its code what its arguments mean: refused naming its line."""
    cls = controller.cls
    if cls.qualname.startswith(recipes.LOCAL_PREFIX):
        where = cls.qualname.removeprefix(recipes.LOCAL_PREFIX)
        whose = "the job's own class" + (f" ({where})" if where != cls.name else "")
    else:
        whose = f"{cls.qualname} of another package"
    why = (
        f"the workflow {controller.name} (built at job.py line {controller.line}) is {whose}, not NVFLARE's: its "
        f"{field} is decided in its code, which only running job.py shows (a dry run, with its module installed)"
    )
    return _missing(why, f"{controller.name}(...)")


WORKFLOW_CLIENTS = ("min_clients", "num_clients")  # the clients a workflow waits for (ScatterAndGather, FedAvg)
BUILT_WORKFLOW = "n_clients"  # FedAvgJob and SAGMLFlowJob build their workflow waiting for n_clients


def _waited_for(job: Any, controller: Any, control: tuple[str, ...]) -> dict:
    """min_clients: the clients the server workflow waits for each round, as the dry run records it: the
    controller's min_clients= or num_clients= (else its class's default), the n_clients= of a job class that
    builds its workflow, else the job's own min_clients (meta.json)."""
    if controller is not None:
        for param in WORKFLOW_CLIENTS:
            if param in controller.kwargs or recipes.default_of(controller.cls, param).status == "value":
                return _field(controller, param, control + controller.control)
    if recipes.default_of(job.cls, BUILT_WORKFLOW).status == "required":
        return _field(job, BUILT_WORKFLOW, control)
    return _field(job, "min_clients", control)


def _run_clients(surface: Any, control: tuple[str, ...]) -> dict:
    """Simulated clients of `FedJob.simulator_run`, by NVFLARE 2.9's rules: `clients=` replaces the sites named
    with `to()`; `n_clients=` is required after `to_clients()` and rejected when `to()` named the sites."""
    kwargs = surface.run_kwargs
    if surface.run_call != "simulator_run":
        return _not_applicable("export-only FedJob: clients come from deployment")
    given = "n_clients" in kwargs
    if "clients" in kwargs:
        if given:
            return _missing("NVFLARE rejects n_clients= together with clients=; pass only one", "simulator_run(...)")
        return _count(kwargs["clients"], "simulator_run(clients=[...])", control)
    targets = surface.site_targets
    unknown = [t for t in targets if not known(t, str)]
    if unknown:
        why = getattr(unknown[0], "reason", "") or getattr(unknown[0], "origin", "")
        return _missing(
            "a site name given to job.to(...) is not resolved statically" + (f": {why}" if why else ""),
            "FedJob.to(..., site)",
            unknown[0],
        )
    names = list(dict.fromkeys(t.value for t in targets))
    if not names:
        return _missing(
            "no component is sent to the clients; use job.to(obj, 'site-1') or job.to_clients(obj)",
            "FedJob.to(..., site)",
        )
    if ALL_SITES in names:
        if given:
            return _entry(kwargs["n_clients"], "simulator_run(n_clients=...)", control + merge_flags(*targets))
        return _missing(
            "components go to every client (to_clients) but simulator_run gets no n_clients=",
            "simulator_run(n_clients=...)",
        )
    if given:
        return _missing(
            "NVFLARE rejects simulator_run(n_clients=...) when job.to() already named the sites; drop n_clients=",
            "simulator_run(n_clients=...)",
        )
    sites = Val(len(names), weakest(HIGH, *(t.confidence for t in targets)), "", merge_flags(*targets))
    return _entry(sites, "FedJob.to(..., site) targets", control)


def fixed_budget(surface: Any) -> tuple[dict, frozenset]:
    """The `fixed_budget` block for a supported surface (empty dict when unsupported), and the run-time inputs its
    unresolved fields rest on."""
    if surface.status != "supported":
        return {}, NO_INPUTS
    budget = recipe_budget(surface) if surface.pattern == "recipe" else fedjob_budget(surface)
    found = [budget[field].pop(_INPUTS, NO_INPUTS) for field in budget]
    return {field: budget[field] for field in FIELDS}, NO_INPUTS.union(*found)
