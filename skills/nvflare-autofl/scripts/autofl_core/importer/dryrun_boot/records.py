"""The record of the job NVFLARE was asked to run: its exported configs, the recipe and env around it.

`record_job` is called by the replaced entry points (`entry_points`): the first run's record is kept, a second run
stops job.py, an export is kept in case job.py runs nothing after it. Values become JSON-safe (`plain`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading

from .frames import job_frame
from .processes import out_of_time
from .state import AFTER_RUN_SECONDS, STATE, Stop

MAX_FILE = 1 << 20
FORKED_RUN = ".forked-run"  # beside OUT.json: a process job.py forked ran the job (`record_job`), read by its parent


def record_job(kind: str, fed_job_config, final: bool = True, env=None, **extra) -> None:
    """Export the job config into a private temp folder and keep its JSON: the first run's is the record, and job.py
    goes on (for at most AFTER_RUN_SECONDS); a second run stops it (`after`: "again", at its line). An export
    (`final` False) is kept in STATE.exported (the first one): job.py may run the job next. `env`: the env
    deploying it (else the one a recipe was given)."""
    job, configs, recipe = STATE.job, {}, STATE.recipe
    if final and STATE.forked:  # a child job.py forked: its parent's record says it ran the job
        STATE.after = {"how": "again", "where": job_frame(job, inner=True), "what": kind}
        with open(STATE.out + FORKED_RUN, "w", encoding="utf-8") as note:
            json.dump(STATE.after, note)
        raise Stop
    if final and STATE.record is not None:
        STATE.after = {"how": "again", "where": job_frame(job, inner=True), "first": STATE.first, "what": kind}
        raise Stop
    if fed_job_config is not None:
        with tempfile.TemporaryDirectory(prefix="autofl-dryrun-") as folder:
            fed_job_config.generate_job_config(folder)
            configs = _read_configs(folder)
        # the recipe built around the FedJob that runs (job.py may run `recipe._job`)
        owner = next((r for r in STATE.built if getattr(getattr(r, "_job", None), "job", None) is fed_job_config), None)
        if owner is not None or STATE.recipe_call == "export":  # not one job.py only exported before
            recipe = owner
    record = {
        "status": "recorded",
        "entry": kind,
        "call": job_frame(job),
        "recipe": None if recipe is None else [f"{c.__module__}.{c.__qualname__}" for c in type(recipe).__mro__[:-1]],
        "recipe_call": STATE.recipe_call,
        "recipe_attrs": _recipe_attrs(recipe),
        "configs": configs,
        "job_dir": os.path.dirname(job),
        "env": _env_record(STATE.env_object if env is None else env),
        **extra,
    }
    if not final:
        STATE.exported = STATE.exported or record
        return
    STATE.record, STATE.first = record, job_frame(job, inner=True)
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, AFTER_RUN_SECONDS)


def plain(value, depth=0):
    """A JSON-safe copy of a value (objects become their class name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 6:
        return repr(value)[:200]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [plain(v, depth + 1) for v in list(items)[:256]]
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in list(value.items())[:256]}
    copy = {"__class__": f"{type(value).__module__}.{type(value).__qualname__}"}
    if depth == 1:  # an object a recipe holds (a collaborative server): its plain public numbers too
        own = getattr(value, "__dict__", None) or {}
        copy.update({k: v for k, v in own.items() if not k.startswith("_") and type(v) in (bool, int, float, str)})
    return copy


def _read_configs(folder: str) -> dict:
    """Every JSON file of an exported job, by path relative to the job folder."""
    found = {}
    for root, _dirs, files in os.walk(folder):
        for path in [os.path.join(root, name) for name in files if name.endswith(".json")]:
            if os.path.getsize(path) <= MAX_FILE:
                with open(path, encoding="utf-8") as handle, contextlib.suppress(ValueError):
                    found[os.path.relpath(path, folder)] = json.load(handle)
    return found


def _recipe_attrs(recipe) -> dict:
    """The public attributes of a recipe (or an env), JSON-safe; {} for none."""
    return {} if recipe is None else {k: plain(v, 1) for k, v in sorted(vars(recipe).items()) if not k.startswith("_")}


def _env_record(env) -> dict | None:
    """An env named by the nearest NVFLARE class in its MRO (a job's `class FastSim(SimEnv)` is a SimEnv, its own
    `class PocEnv(SimEnv)` too), with its plain attributes; None for no env."""
    if env is None:
        return None
    named = next((c for c in type(env).__mro__ if c.__module__.startswith("nvflare.")), type(env))
    return {"class": named.__name__, "attrs": _recipe_attrs(env)}
