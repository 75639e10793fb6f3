"""Fixed training budget: num_clients, min_clients, num_rounds, and the job flag that feeds each one.

Values come from the recipe / FedJob constructor, the env (SimEnv `num_clients` or `clients`,
`simulator_run(n_clients=...)`), or NVFLARE's documented constructor defaults. A field whose value
cannot be determined is `unresolved` (safety-critical: admission rejects it).
"""

from __future__ import annotations

from typing import Any

from .values import HIGH, UNRESOLVED, Val, merge_flags, to_jsonable, weakest

FIELDS = ("num_clients", "min_clients", "num_rounds")
NOT_APPLICABLE = "not_applicable"
ALL_SITES = "@ALL"  # nvflare.apis.job_def.ALL_SITES: job.to_clients(obj)
# NVFLARE 2.9 constructor defaults (facts from the recipe signatures); absent = required or unknown.
NUM_ROUNDS_DEFAULTS = {
    "FedAvgRecipe": 2, "NumpyFedAvgRecipe": 2, "FedOptRecipe": 2, "ScaffoldRecipe": 2, "FedProxRecipe": 2,
    "CyclicRecipe": 2, "SklearnFedAvgRecipe": 2, "KMeansFedAvgRecipe": 5, "FedCERecipe": 2,
}  # fmt: skip
MIN_CLIENTS_DEFAULTS = {"CyclicRecipe": 2}
CONTROLLER_DEFAULTS = {"num_rounds": 5, "num_clients": 3}  # BaseFedAvg
ENV_NUM_CLIENTS_DEFAULTS = {"PocEnv": 2}


def _entry(val: Any, source: str) -> dict:
    if not isinstance(val, Val):
        return {"value": None, "confidence": UNRESOLVED, "flag": None, "source": source,
                "reason": "an object, not a number"}  # fmt: skip
    ok = val.resolved and isinstance(val.value, int) and not isinstance(val.value, bool) and val.value > 0
    entry = {
        "value": to_jsonable(val.value) if ok else None,
        "confidence": val.confidence if ok else UNRESOLVED,
        "flag": val.flags[0] if len(val.flags) == 1 else None,
        "source": source,
    }
    if len(val.flags) > 1:
        entry["flags"] = list(val.flags)
    if not ok:
        entry["reason"] = val.reason or (
            f"value {val.value!r} is not a positive integer" if val.resolved else "not resolved statically"
        )
    return entry


def _default(value: int, source: str) -> dict:
    return {"value": value, "confidence": HIGH, "flag": None, "source": source}


def _missing(reason: str, source: str) -> dict:
    return {"value": None, "confidence": UNRESOLVED, "flag": None, "source": source, "reason": reason}


def _not_applicable(reason: str) -> dict:
    return {"value": None, "confidence": NOT_APPLICABLE, "flag": None, "source": None, "reason": reason}


def recipe_budget(surface: Any) -> dict:
    recipe = surface.target
    name, kwargs = recipe.name, recipe.kwargs
    budget = {}
    if "num_rounds" in kwargs:
        budget["num_rounds"] = _entry(kwargs["num_rounds"], f"{name}(num_rounds=...)")
    elif name in NUM_ROUNDS_DEFAULTS:
        budget["num_rounds"] = _default(NUM_ROUNDS_DEFAULTS[name], f"{name} default")
    else:
        budget["num_rounds"] = _missing(f"{name} gets no num_rounds=; pass it explicitly", f"{name}(num_rounds=...)")
    if "min_clients" in kwargs:
        budget["min_clients"] = _entry(kwargs["min_clients"], f"{name}(min_clients=...)")
    elif name in MIN_CLIENTS_DEFAULTS:
        budget["min_clients"] = _default(MIN_CLIENTS_DEFAULTS[name], f"{name} default")
    else:
        budget["min_clients"] = _missing(f"{name} gets no min_clients=; pass it explicitly", f"{name}(...)")
    budget["num_clients"] = _env_clients(surface)
    if recipe.unpacked:
        for field in FIELDS[1:]:
            if budget[field]["confidence"] != UNRESOLVED and field not in kwargs:
                budget[field] = _missing(f"{name} receives **kwargs the importer cannot see", f"{name}(**...)")
    return budget


def _env_clients(surface: Any) -> dict:
    env = surface.env
    if env is None:
        return _not_applicable(f"no simulation env: job.py calls {surface.run_call}(); clients come from deployment")
    if env.name == "ProdEnv":
        return _not_applicable("ProdEnv: clients are the provisioned production sites")
    kwargs = env.kwargs
    if "num_clients" in kwargs:
        value = kwargs["num_clients"]
        if not (isinstance(value, Val) and value.resolved and value.value == 0 and "clients" in kwargs):
            return _entry(value, f"{env.name}(num_clients=...)")
    if "clients" in kwargs:
        return _count(kwargs["clients"], f"{env.name}(clients=[...])")
    if env.name in ENV_NUM_CLIENTS_DEFAULTS:
        return _default(ENV_NUM_CLIENTS_DEFAULTS[env.name], f"{env.name} default")
    return _missing(f"{env.name} gets neither num_clients= nor clients=", f"{env.name}(num_clients=...)")


def _count(val: Any, source: str) -> dict:
    if isinstance(val, Val) and val.resolved and isinstance(val.value, (list, tuple)):
        return _entry(Val(len(val.value), val.confidence, val.expr, val.flags), source)
    return _missing("client list is not resolved", source)


def fedjob_budget(surface: Any) -> dict:
    job = surface.target
    controllers = [c for c in surface.components if "num_rounds" in c.kwargs or c.name in ("FedAvg", "ScatterAndGather")]
    budget = {}
    if "num_rounds" in job.kwargs:
        budget["num_rounds"] = _entry(job.kwargs["num_rounds"], f"{job.name}(num_rounds=...)")
    elif controllers and "num_rounds" in controllers[0].kwargs:
        budget["num_rounds"] = _entry(controllers[0].kwargs["num_rounds"], f"{controllers[0].name}(num_rounds=...)")
    elif controllers and controllers[0].name == "FedAvg":
        budget["num_rounds"] = _default(CONTROLLER_DEFAULTS["num_rounds"], "FedAvg default")
    else:
        budget["num_rounds"] = _missing("no controller with num_rounds= is attached to the FedJob", "FedJob")
    if controllers and "num_clients" in controllers[0].kwargs:
        budget["min_clients"] = _entry(controllers[0].kwargs["num_clients"], f"{controllers[0].name}(num_clients=...)")
    elif "min_clients" in job.kwargs:
        budget["min_clients"] = _entry(job.kwargs["min_clients"], f"{job.name}(min_clients=...)")
    else:
        budget["min_clients"] = _default(1, "FedJob default")
    budget["num_clients"] = _run_clients(surface, job)
    return budget


def _run_clients(surface: Any, job: Any) -> dict:
    """Simulated clients of `FedJob.simulator_run`, by NVFLARE 2.9's rules: `clients=` replaces the sites named
    with `to()`; `n_clients=` is required after `to_clients()` and rejected when `to()` named the sites."""
    kwargs = surface.run_kwargs
    if surface.run_call != "simulator_run":
        return _not_applicable("export-only FedJob: clients come from deployment")
    given = "n_clients" in kwargs
    if "clients" in kwargs:
        if given:
            return _missing("NVFLARE rejects n_clients= together with clients=; pass only one", "simulator_run(...)")
        return _count(kwargs["clients"], "simulator_run(clients=[...])")
    targets = surface.site_targets
    if not all(isinstance(t, Val) and t.resolved and isinstance(t.value, str) for t in targets):
        return _missing("a site name given to job.to(...) is not resolved statically", "FedJob.to(..., site)")
    names = list(dict.fromkeys(t.value for t in targets))
    if not names:
        return _missing("no component is sent to the clients; use job.to(obj, 'site-1') or job.to_clients(obj)",
                        "FedJob.to(..., site)")  # fmt: skip
    if ALL_SITES in names:
        if given:
            return _entry(kwargs["n_clients"], "simulator_run(n_clients=...)")
        return _missing("components go to every client (to_clients) but simulator_run gets no n_clients=",
                        "simulator_run(n_clients=...)")  # fmt: skip
    if given:
        return _missing("NVFLARE rejects simulator_run(n_clients=...) when job.to() already named the sites; "
                        "drop n_clients=", "simulator_run(n_clients=...)")  # fmt: skip
    sites = Val(len(names), weakest(HIGH, *(t.confidence for t in targets)), "", merge_flags(*targets))
    return _entry(sites, "FedJob.to(..., site) targets")


def fixed_budget(surface: Any) -> dict:
    """The `fixed_budget` block for a supported surface (empty dict when unsupported)."""
    if surface.status != "supported":
        return {}
    budget = recipe_budget(surface) if surface.pattern == "recipe" else fedjob_budget(surface)
    return {field: budget[field] for field in FIELDS}
