"""NVFLARE's entry points, replaced so that they record the job they were given instead of running it.

`install_fedjob`: `FedJobConfig.simulator_run` and `FedJob.export_job` record the job (`records.record_job`), and an
exported component carries its effective arguments (`EFFECTIVE_ARGS`; a count its constructor sets from no argument of
that name, as a copy built from the exported arguments holds it). `install_recipes`: a POC or production env's
deploy records the job and returns `STAND_IN_JOB_ID`; recipes note that they were built and which one ran.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os

from .records import record_job
from .state import STATE

# exported even when equal to the default: the rounds, the selection metric, the clients a workflow waits for
EFFECTIVE_ARGS = ("num_rounds", "key_metric", "negate_key_metric", "min_clients", "num_clients")
COUNTS = ("num_rounds", "min_clients", "num_clients")  # budget counts a workflow holds
STAND_IN_JOB_ID = "autofl-dry-run"  # what a POC or production deploy returns in place of the job id it submits


def install_fedjob() -> None:
    """FedJob's simulation and export record the job; its exported components carry their effective arguments."""
    import nvflare
    from nvflare.fuel.utils.class_utils import get_component_init_parameters
    from nvflare.job_config.api import FedJob
    from nvflare.job_config.fed_job_config import FedJobConfig

    def simulator_run(self, workspace, clients=None, n_clients=None, threads=None, gpu=None, log_config=None):
        names = [c for c in str(clients or "").split(",") if c]
        n_clients = n_clients or STATE.n_clients  # FedJob passes 0 when job.py named no site, only a count
        record_job("simulator_run", self, workspace=str(workspace), clients=names, n_clients=n_clients)
        return 0  # the simulator's return code of a run that succeeded

    def note_n_clients(self, *args, **kwargs):  # FedJob.simulator_run(workspace, n_clients=None, ...)
        given = kwargs.get("n_clients", args[1] if len(args) > 1 else None)
        STATE.n_clients = given if type(given) is int else None

    def export_job(self, job_root):
        self._set_all_apps()
        record_job("export_job", self.job, final=False)

    exported_args = FedJobConfig._get_args

    def effective_args(self, component, custom_dir):
        args = exported_args(self, component, custom_dir)
        own = getattr(component, "__dict__", None) or {}
        try:
            parameters = dict(get_component_init_parameters(component))
        except Exception:  # noqa: BLE001  (the export's own call raises the same way, and says so)
            parameters = {}
        for name in EFFECTIVE_ARGS:
            if name in args:
                continue
            if name not in parameters:  # a count its constructor sets, taking no argument of that name
                _rebuilt_count(component, args, name, own)
                continue
            if name in own or "_" + name in own:
                value = own.get(name, own.get("_" + name))
            else:  # kept under another name: the exported job is loaded with the constructor's default
                value = parameters[name].default
                _note_unreadable(component, name, value)
            if type(value) in (int, str, bool):
                args[name] = value
        return args

    folder = os.path.dirname(nvflare.__file__)
    STATE.nvflare_dirs = tuple(sorted({folder + os.sep, os.path.realpath(folder) + os.sep}))
    FedJobConfig.simulator_run, FedJob.export_job, FedJobConfig._get_args = simulator_run, export_job, effective_args
    _before(FedJob, "simulator_run", note_n_clients)


def _rebuilt_count(component, args: dict, name: str, own: dict) -> None:
    """A budget count (`COUNTS`) a component of the job's own (not NVFLARE's, whose export is its design) holds that
    its constructor takes no argument for is what the loaded job's constructor sets from the exported `args` (an
    argument NVFLARE does not export, or one passed through **kwargs, which it drops, takes its default): read from
    a copy built from them, else noted `unreadable`."""
    nvflare_s = type(component).__module__.partition(".")[0] == "nvflare"
    if nvflare_s or name not in COUNTS or type(own.get(name)) is not int:
        return
    try:
        value = getattr(type(component)(**args), name)
    except Exception as error:  # noqa: BLE001  (the job's own constructor: any raise says the same)
        value = error
    if type(value) is int:
        args[name] = value
        return
    problem = f"raises {type(value).__name__}" if isinstance(value, Exception) else f"holds {type(value).__name__}"
    STATE.unreadable.append(f"{name}: {type(component).__name__} built from its exported arguments {problem}")


def _note_unreadable(component, name: str, default) -> None:
    """Note an argument kept under another name whose attribute, read as the workflow reads it when it runs,
    raises or is not of its default's type: the exported value says nothing of what would run (`unreadable`)."""
    if default is None or default is inspect.Parameter.empty:
        return
    try:
        value = getattr(component, name)
    except AttributeError:  # no attribute of that name: the workflow reads its rounds under its own name
        return
    except Exception as error:
        problem = f"raises {type(error).__name__}"
    else:
        if type(value) is type(default):
            return
        problem = f"is {type(value).__name__} {repr(value)[:40]}, not {type(default).__name__}"
    STATE.unreadable.append(f"{name}: {type(component).__name__}.{name} {problem} when read")


def install_recipes() -> None:
    """A POC or production env's deploy records the job it was given instead of deploying it (and asks no server
    about it afterwards); a SimEnv writes no policy file into the workspace the runs share (one would read another's
    half-written file); recipes note that they were built, and which one was executed, run or exported first."""

    def deploy(self, job):
        job._set_all_apps()
        record_job("deploy", job.job, env=self)
        return STAND_IN_JOB_ID

    def unknown(self, *args, **kwargs):  # the job's status or result ("not available"), an abort, a stop: no server
        return None

    def note_call(method, self, *args, **kwargs):
        if STATE.recipe is None or STATE.recipe_call == "export":  # a run after an export is the call
            STATE.recipe, STATE.recipe_call = self, method
            STATE.env_object = kwargs.get("env", args[0] if args and method != "export" else None)

    for module, name in (("nvflare.recipe.poc_env", "PocEnv"), ("nvflare.recipe.prod_env", "ProdEnv")):
        with contextlib.suppress(ImportError, AttributeError):
            env = getattr(__import__(module, fromlist=[name]), name)
            env.deploy = deploy
            env.get_job_status = env.get_job_result = env.abort_job = env.stop = unknown
    with contextlib.suppress(ImportError):
        from nvflare.recipe.sim_env import SimEnv

        SimEnv._ensure_default_component_policy = staticmethod(lambda workspace: None)
    from nvflare.recipe.spec import Recipe

    _before(Recipe, "__init__", lambda self, *args, **kwargs: STATE.built.append(self))
    for method in ("execute", "run", "export"):
        _before(Recipe, method, functools.partial(note_call, method))


def _before(cls, name: str, note) -> None:
    """`cls.name` calls `note(self, *args, **kwargs)` first, then runs as it did."""
    original = getattr(cls, name)

    def noting(self, *args, **kwargs):
        note(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    setattr(cls, name, noting)
