"""Run job.py up to the point where NVFLARE would start training, and record what it built (run with `python -I`).

Usage (inside the trial sandbox, cwd = the job's folder):
    python -I dryrun_boot.py --serve JOB.py      # stdin: {"runs": [{"out": PATH, "args": [...], "env": {...}}]}
                                                  # lines (env: variables set for that run); stdout: "done" each

Each run is a child forked after NVFLARE is imported and patched. NVFLARE's entry points (`FedJobConfig.simulator_run`,
`FedJob.export_job`, `PocEnv.deploy`, `ProdEnv.deploy`) export the job into a private temp folder, keep its JSON
configs (with each component's `EFFECTIVE_ARGS`) and return what the real call returns (`STAND_IN_JOB_ID`): job.py goes on as after a run that trained, and `after` says how it went on
(a second run stops it). An export is kept and the run goes on. Recipes note which one runs; parsers record their
actions; absent top-level modules become inert stand-ins (`_InertFinder`); environment reads and comparisons are
noted (`_Noted`). OUT.json gets one record: `{status: recorded|raised|exited|no_run|sandbox_failed, ...}`.
Standard library and nvflare only; nothing here trains, and nothing is written outside the temp folder.
"""

from __future__ import annotations

import _posixsubprocess
import argparse
import atexit
import contextlib
import dis
import functools
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import runpy
import select
import signal
import sys
import tempfile
import threading
import time
import traceback
import types

PARALLEL = max(1, min(4, os.cpu_count() or 1))
STATE: dict = {"recipe": None, "recipe_call": None, "parsers": [], "stubbed": set(), "absent": set(), "built": []}
STATE.update(stood_in_at={}, env_read=set(), env_compared={}, unreadable=[])  # stood_in_at: (file, line) -> site
# exported even when equal to the default: the rounds, the selection metric, the clients a workflow waits for
EFFECTIVE_ARGS = ("num_rounds", "key_metric", "negate_key_metric", "min_clients", "num_clients")
MAX_FILE = 1 << 20
AFTER_RUN_SECONDS = 10  # job.py's code after its run ends within this, else `after` is "unfinished"
STAND_IN_JOB_ID = "autofl-dry-run"  # what a POC or production deploy returns in place of the job id it submits
PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen"}
PROCESS_EVENTS.add("_posixsubprocess.fork_exec")  # multiprocessing's spawn and forkserver (`_audited_fork_exec`)
FORKED_RUN = ".forked-run"  # beside OUT.json: a process job.py forked ran the job (`_record`), read by its parent
# what Python runs after the main code, kept before job.py may replace them (`_exit_as_python`)
AT_EXIT = (atexit._run_exitfuncs, threading.enumerate, threading._threading_atexits, threading.Thread.daemon.fget)
MAX_STOOD_IN_AT = 4096  # distinct job lines noted importing a stand-in (the importer reads each for a `try`)
OS_FILES = (os.__file__, os.getenv.__code__.co_filename)  # the second is "<frozen os>" where os is frozen
UNPACKS = ("DICT_UPDATE", "DICT_MERGE", "SET_UPDATE", "LIST_EXTEND")  # `{**x}`, `{*x}`, `[*x]` inside a literal
CONTAINERS = (dict, set, frozenset, tuple, list)  # whose string members a lookup by hash may match
UNSEEN = "\0"  # noted for a variable hashed where the lookup shows no string: `moves.moving_env` refuses it
LOADS = {"LOAD_CONST": "const", "LOAD_ATTR": "attr", "LOAD_METHOD": "attr"}  # other LOAD_s of a name: "name"
MAX_COMPARED = 8  # strings noted per variable (`_Noted`): more than moves.MAX_ENV_RUNS tries, so one past it refuses
FRAMEWORKS = set(  # imported by NVFLARE's own framework recipes; stand-ins when absent
    "torch torchvision tensorflow keras sklearn joblib xgboost lightning pytorch_lightning transformers peft "
    "datasets monai jax flax optax pandas tenseal opacus safetensors tensorboard tensorboardX".split()
)


class Stop(BaseException):
    """Raised at a second run, or when the time after the run is out (`STATE["after"]` says which): nothing after it
    runs (a BaseException passes `except Exception`)."""


class _Exited(SystemExit):
    """job.py's main thread called `os._exit` (`_exit_now`): its run ends as an exit, and nothing Python runs at exit
    runs."""


class _Inert(types.ModuleType):
    """A module that is not installed: every attribute is an inert class, so imports and class bodies pass."""

    def __getattr__(self, name):
        return _inert_attribute(self, self.__name__, name)


class _InertMeta(type):
    def __getattr__(cls, name):
        return _inert_attribute(cls, cls.__qualname__, name)

    def __call__(cls, *args, **kwargs):
        return type.__call__(cls)

    def __getitem__(cls, item):
        return cls

    __or__ = __getitem__

    def __instancecheck__(cls, obj):  # stand-ins among themselves: GraphSAGE() is a torch.nn.Module
        return _stand_in(cls) and _stand_in(type(obj)) or type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        return _stand_in(cls) and _stand_in(sub) or type.__subclasscheck__(cls, sub)


def _inert_attribute(owner, prefix: str, name: str) -> type:
    """An inert class for `owner.name`, kept on `owner`: the same class each time (`tf.keras.Model`)."""
    if name.startswith("__"):
        raise AttributeError(name)
    value = _inert_class(f"{prefix}.{name}")
    setattr(owner, name, value)
    return value


def _stand_in(cls) -> bool:
    """True for a class made here for an absent module (not for a class the job derives from one)."""
    return isinstance(cls, _InertMeta) and "_stand_in" in cls.__dict__


def _inert_class(name: str) -> type:
    def attribute(self, attr):
        if _called_from_nvflare():  # NVFLARE's probes (`getattr(obj, "add_to_fed_job", None)`) find nothing
            raise AttributeError(attr)
        return _inert_class(f"{name}.{attr}")()

    body = {
        "__qualname__": name,
        "__init__": lambda self, *a, **k: None,
        "__getattr__": attribute,
        "__call__": lambda self, *args, **kwargs: _inert_class(name + "()")(),
        "__iter__": lambda self: iter([_inert_class(f"{name}[]")() for _ in range(_unpacked(sys._getframe(1), name))]),
        "__getitem__": lambda self, key: _inert_class(f"{name}[]")(),
        "__fspath__": lambda self: f"/nonexistent/stand-in/{name}",  # `Path(x)`, `os.path.join(x, ...)`: no file
        "__bool__": lambda self: _called_from_nvflare(),  # an object to NVFLARE (`if not obj`), absent to the job
        "_stand_in": True,
    }
    return _InertMeta(name.rpartition(".")[2] or name, (), body)


def _unpacked(frame, name: str) -> int:
    """How many values the instruction iterating a stand-in unpacks: `a, b = x` two, `a, *r, b = x` the two named;
    0 for another iteration (`f(*x)`), and for a loop over a framework's value (`for gpu in tf.config...`: device
    set-up). A loop or comprehension over another stand-in raises: the passes the module's values would make (a
    config library's settings) are not known, and a pass may set the budget."""
    at = next((i for i in _instructions(frame.f_code) if i.offset == frame.f_lasti), None)
    if at is not None and at.opname == "GET_ITER" and name.partition(".")[0] not in FRAMEWORKS:
        raise TypeError(f"{name} is not installed here, and job.py loops over it: its passes are not known")
    if at is not None and at.opname == "UNPACK_SEQUENCE":
        return at.arg
    return (at.arg & 0xFF) + (at.arg >> 8) if at is not None and at.opname == "UNPACK_EX" else 0


@functools.cache
def _instructions(code) -> tuple:
    return tuple(dis.get_instructions(code))


class _InertFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module no other finder found becomes an inert stand-in when the job's files or
    NVFLARE's recipes (a framework) import it; one NVFLARE asks for while job.py runs is noted in STATE["absent"]
    and stood in only on a rerun (STATE["optional"])."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top in ("nvflare", "__main__"):
            return None
        if "." in fullname and not isinstance(sys.modules.get(top), _Inert):
            return None  # an optional submodule of an installed package
        if os.path.exists(os.path.join(os.getcwd(), top + ".py")) or os.path.isdir(os.path.join(os.getcwd(), top)):
            return None  # the job's own module: its real ImportError must show
        asker = _asker()
        if top not in FRAMEWORKS and asker != "job":
            if asker != "nvflare" or not STATE.get("in_job"):
                return None  # a library's optional import, or NVFLARE's own before job.py runs: the real ImportError
            if not STATE.get("optional"):  # NVFLARE asks for it during the run: noted, stood in only on a rerun
                STATE["absent"].add(top)
                return None
        STATE["stubbed"].add(top)
        if asker in ("job", "job folder"):
            _note_importers(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _Inert(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__file__ = f"<stand-in for the absent module {module.__name__}>"  # not a namespace package


def _note_importers(module: str) -> None:
    """Note every line of the job's own files on the stack importing `module`'s stand-in (read by
    `importer/fallbacks.py`)."""
    folder, noted = os.path.dirname(STATE["job"]), STATE["stood_in_at"]
    for frame in traceback.extract_stack():
        line = (os.path.relpath(frame.filename, folder), frame.lineno)
        if _in_job_folder(frame.filename) and frame.filename != __file__ and line not in noted:
            if len(noted) < MAX_STOOD_IN_AT:  # each line once: a loop importing many stand-ins fills no list
                noted[line] = {"module": module, "file": line[0], "line": line[1]}


IMPORT_MACHINERY = os.path.dirname(importlib.__file__) + os.sep  # importlib.import_module, importlib.util.find_spec


def _asker() -> str | None:
    """Who runs the import being resolved: "job" (a file in the job's folder), "job folder" (one of the job's own
    files in a folder below it), "nvflare" (NVFLARE's package), or None (another library, or this script)."""
    name = _caller(lambda name: name.startswith(("<frozen", IMPORT_MACHINERY)))
    if os.path.dirname(name) == os.path.dirname(STATE["job"]):
        return "job"
    if _in_job_folder(name):
        return "job folder"
    return "nvflare" if _in_nvflare(name) else None


def _in_job_folder(filename: str) -> bool:
    """True for one of the job's own files: below job.py's folder, outside a folder of installed packages."""
    folder = os.path.dirname(STATE["job"]) + os.sep
    inside = filename[len(folder) :].split(os.sep)
    return filename.startswith(folder) and not {"site-packages", "dist-packages"} & set(inside)


def _caller(skipped) -> str:
    """The file of the innermost frame on the stack outside this script and the files `skipped` names ("" if none)."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename == __file__ or skipped(frame.f_code.co_filename)):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def _in_nvflare(filename: str) -> bool:
    """True for a file of the installed nvflare package."""
    return bool(STATE.get("nvflare_dirs")) and filename.startswith(STATE["nvflare_dirs"])


def _job_frame(job: str, tb=None, inner: bool = False) -> dict | None:
    """The innermost frame inside job.py, else inside a module beside it (`inner`: inside either), of the current
    stack or of `tb`."""
    folder = os.path.dirname(job)
    frames = traceback.extract_tb(tb) if tb is not None else traceback.extract_stack()
    own = [f for f in frames if f.filename == job]
    beside = [f for f in frames if os.path.dirname(f.filename) == folder and f.filename != __file__]
    frame = ((beside if inner else own) or beside or [None])[-1]
    return None if frame is None else _frame(frame, os.path.relpath(frame.filename, folder))


def _nvflare_frame(tb) -> dict | None:
    frames = [f for f in traceback.extract_tb(tb) if _in_nvflare(f.filename)]
    if not frames:
        return None
    root = next(d for d in STATE["nvflare_dirs"] if frames[-1].filename.startswith(d))
    return _frame(frames[-1], "nvflare" + os.sep + frames[-1].filename[len(root) :])


def _frame(frame: traceback.FrameSummary, file: str) -> dict:
    return {"file": file, "line": frame.lineno, "text": (frame.line or "").strip()}


def _plain(value, depth=0):
    """A JSON-safe copy of a value (objects become their class name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 6:
        return repr(value)[:200]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_plain(v, depth + 1) for v in list(items)[:256]]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in list(value.items())[:256]}
    plain = {"__class__": f"{type(value).__module__}.{type(value).__qualname__}"}
    if depth == 1:  # an object a recipe holds (a collaborative server): its plain public numbers too
        own = getattr(value, "__dict__", None) or {}
        plain.update({k: v for k, v in own.items() if not k.startswith("_") and type(v) in (bool, int, float, str)})
    return plain


def _read_configs(folder: str) -> dict:
    """Every JSON file of an exported job, by path relative to the job folder."""
    found = {}
    for root, _dirs, files in os.walk(folder):
        for path in [os.path.join(root, name) for name in files if name.endswith(".json")]:
            if os.path.getsize(path) <= MAX_FILE:
                with open(path, encoding="utf-8") as handle, contextlib.suppress(ValueError):
                    found[os.path.relpath(path, folder)] = json.load(handle)
    return found


def _record(kind: str, fed_job_config, final: bool = True, env=None, **extra) -> None:
    """Export the job config into a private temp folder and keep its JSON: the first run's is the record, and job.py
    goes on (for at most AFTER_RUN_SECONDS); a second run stops it (`after`: "again", at its line). An export
    (`final` False) is kept in STATE["exported"] (the first one): job.py may run the job next. `env`: the env
    deploying it (else the one a recipe was given)."""
    job, configs, recipe = STATE["job"], {}, STATE["recipe"]
    if final and STATE.get("forked"):  # a child job.py forked: its parent's record says it ran the job
        STATE["after"] = {"how": "again", "where": _job_frame(job, inner=True), "what": kind}
        with open(STATE["out"] + FORKED_RUN, "w", encoding="utf-8") as note:
            json.dump(STATE["after"], note)
        raise Stop
    if final and "record" in STATE:
        STATE["after"] = {"how": "again", "where": _job_frame(job, inner=True), "first": STATE["first"], "what": kind}
        raise Stop
    if fed_job_config is not None:
        with tempfile.TemporaryDirectory(prefix="autofl-dryrun-") as folder:
            fed_job_config.generate_job_config(folder)
            configs = _read_configs(folder)
        # the recipe built around the FedJob that runs (job.py may run `recipe._job`)
        owner = next(
            (r for r in STATE["built"] if getattr(getattr(r, "_job", None), "job", None) is fed_job_config), None
        )
        if owner is not None or STATE["recipe_call"] == "export":  # not one job.py only exported before
            recipe = owner
    record = {
        "status": "recorded",
        "entry": kind,
        "call": _job_frame(job),
        "recipe": None if recipe is None else [f"{c.__module__}.{c.__qualname__}" for c in type(recipe).__mro__[:-1]],
        "recipe_call": STATE["recipe_call"],
        "recipe_attrs": _recipe_attrs(recipe),
        "configs": configs,
        "job_dir": os.path.dirname(job),
        "env": _env_record(STATE.get("env_object") if env is None else env),
        **extra,
    }
    if not final:
        STATE.setdefault("exported", record)
        return
    STATE["record"], STATE["first"] = record, _job_frame(job, inner=True)
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, AFTER_RUN_SECONDS)


def _no_process_after_the_run(event: str, _args) -> None:
    """An audit hook: job.py starting a process after its run stops it (`after` "spawned"): what the process runs
    (another training) is not seen. A child job.py forks before its run writes no record (its parent does)."""
    if event in PROCESS_EVENTS and STATE.get("in_job") and "record" in STATE:
        STATE["after"] = {"how": "spawned", "where": _job_frame(STATE["job"], inner=True), "what": event}
        raise Stop


def _audited_fork_exec(fork_exec, *args):
    """`_posixsubprocess.fork_exec` with an audit event: multiprocessing's spawn and forkserver start a process
    through it alone (no `os` or `subprocess` event)."""
    sys.audit("_posixsubprocess.fork_exec")
    return fork_exec(*args)


def _exit_now(real_exit, code: int) -> None:
    """`os._exit` as job.py's main thread sees it: its run ends as an exit with `code` and is recorded; the real one
    in another thread, a process job.py forked, and outside job.py's run."""
    if STATE.get("in_job") and not STATE.get("forked") and threading.current_thread() is threading.main_thread():
        raise _Exited(code)
    real_exit(code)


def _out_of_time(_signum, _frame) -> None:
    if STATE.get("in_job"):
        STATE["after"] = {"how": "unfinished", "what": f"still running {AFTER_RUN_SECONDS} s after its run"}
        raise Stop


def _recipe_attrs(recipe) -> dict:
    if recipe is None:
        return {}
    return {k: _plain(v, 1) for k, v in sorted(vars(recipe).items()) if not k.startswith("_")}


def _install_fedjob() -> None:
    """FedJob's simulation and export record the job; its exported components carry their effective arguments."""
    import nvflare
    from nvflare.fuel.utils.class_utils import get_component_init_parameters
    from nvflare.job_config.api import FedJob
    from nvflare.job_config.fed_job_config import FedJobConfig

    def simulator_run(self, workspace, clients=None, n_clients=None, threads=None, gpu=None, log_config=None):
        names = [c for c in str(clients or "").split(",") if c]
        n_clients = n_clients or STATE.get("n_clients")  # FedJob passes 0 when job.py named no site, only a count
        _record("simulator_run", self, workspace=str(workspace), clients=names, n_clients=n_clients)
        return 0  # the simulator's return code of a run that succeeded

    def note_n_clients(self, *args, **kwargs):  # FedJob.simulator_run(workspace, n_clients=None, ...)
        given = kwargs.get("n_clients", args[1] if len(args) > 1 else None)
        STATE["n_clients"] = given if type(given) is int else None

    def export_job(self, job_root):
        self._set_all_apps()
        _record("export_job", self.job, final=False)

    exported_args = FedJobConfig._get_args

    def effective_args(self, component, custom_dir):
        args = exported_args(self, component, custom_dir)
        own = getattr(component, "__dict__", None) or {}
        try:
            parameters = dict(get_component_init_parameters(component))
        except Exception:  # noqa: BLE001  (the export's own call raises the same way, and says so)
            parameters = {}
        for name in EFFECTIVE_ARGS:
            if name in args or name not in parameters:
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
    STATE["nvflare_dirs"] = tuple(sorted({folder + os.sep, os.path.realpath(folder) + os.sep}))
    FedJobConfig.simulator_run, FedJob.export_job, FedJobConfig._get_args = simulator_run, export_job, effective_args
    _before(FedJob, "simulator_run", note_n_clients)


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
    STATE["unreadable"].append(f"{name}: {type(component).__name__}.{name} {problem}")


def _install_recipes() -> None:
    """A POC or production env's deploy records the job it was given instead of deploying it (and asks no server
    about it afterwards); a SimEnv writes no policy file into the workspace the runs share (one would read another's
    half-written file); recipes note that they were built, and which one was executed, run or exported first."""

    def deploy(self, job):
        job._set_all_apps()
        _record("deploy", job.job, env=self)
        return STAND_IN_JOB_ID

    def unknown(self, *args, **kwargs):  # the job's status or result ("not available"), an abort, a stop: no server
        return None

    def note_call(method, self, *args, **kwargs):
        if STATE["recipe"] is None or STATE["recipe_call"] == "export":  # a run after an export is the call
            STATE["recipe"], STATE["recipe_call"] = self, method
            STATE["env_object"] = kwargs.get("env", args[0] if args and method != "export" else None)

    for module, name in (("nvflare.recipe.poc_env", "PocEnv"), ("nvflare.recipe.prod_env", "ProdEnv")):
        with contextlib.suppress(ImportError, AttributeError):
            env = getattr(__import__(module, fromlist=[name]), name)
            env.deploy = deploy
            env.get_job_status = env.get_job_result = env.abort_job = env.stop = unknown
    with contextlib.suppress(ImportError):
        from nvflare.recipe.sim_env import SimEnv

        SimEnv._ensure_default_component_policy = staticmethod(lambda workspace: None)
    from nvflare.recipe.spec import Recipe

    _before(Recipe, "__init__", lambda self, *args, **kwargs: STATE["built"].append(self))
    for method in ("execute", "run", "export"):
        _before(Recipe, method, functools.partial(note_call, method))


def _before(cls, name: str, note) -> None:
    """`cls.name` calls `note(self, *args, **kwargs)` first, then runs as it did."""
    original = getattr(cls, name)

    def noting(self, *args, **kwargs):
        note(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    setattr(cls, name, noting)


def _record_env_reads() -> None:
    """Note every environment variable job.py (or a module beside it) reads: `os.environ[...]`, `.get`, `getenv`;
    the value it gets is a `_Noted` string."""
    original = os._Environ.__getitem__

    def getitem(self, key):
        job = STATE.get("in_job") and _from_job(lambda name: name in OS_FILES or "_collections_abc" in name)
        name = key.decode(errors="replace") if isinstance(key, bytes) else str(key)
        if job:
            STATE["env_read"].add(name)
        value = original(self, key)
        return _Noted(value, name) if job and type(value) is str else value

    os._Environ.__getitem__ = getitem


def _from_job(skipped) -> bool:
    """True when the innermost frame outside this script and `skipped` files is job.py's or a module's beside it."""
    return os.path.dirname(_caller(skipped)) == os.path.dirname(STATE["job"])


class _Noted(str):
    """An environment variable's value as job.py gets it: the strings job.py's code compares it with are noted in
    `env_compared`, so a further run can set the variable to one of them (`moves.moving_env`)."""

    def __new__(cls, value: str, variable: str = ""):
        noted = super().__new__(cls, value)
        noted.variable = variable
        return noted

    def _note(self, *others) -> None:
        if not STATE.get("in_job") or not _from_job(lambda name: False):
            return
        kept = STATE["env_compared"].setdefault(self.variable, [])
        for other in others:
            if isinstance(other, str) and str(other) not in kept and len(kept) < MAX_COMPARED:
                kept.append(str(other))

    def __hash__(self):  # a dict or set lookup compares the members only on a hash match: note them all
        if STATE.get("in_job") and _from_job(lambda name: False):
            self._note(*(_keys_at(sys._getframe(1), self.variable) or [UNSEEN]))
        return str.__hash__(self)


def _comparing(method):
    """`method` of str noting the string job.py compares the value with (each of `startswith`'s tuple)."""

    def compare(self, other, *bounds):
        self._note(*(other if isinstance(other, tuple) and method in (str.startswith, str.endswith) else (other,)))
        return method(self, other, *bounds)

    return compare


def _keeps_noting(method):
    """`method` of str giving `_Noted` strings of the same variable (`lower()`, `strip()`, `split()`, ...)."""

    def kept(self, *args, **kwargs):
        value = method(self, *args, **kwargs)
        return [_Noted(v, self.variable) for v in value] if type(value) is list else _Noted(value, self.variable)

    return kept


for _name in ("__eq__", "__ne__", "__contains__", "startswith", "endswith"):
    setattr(_Noted, _name, _comparing(getattr(str, _name)))
for _name in "lower upper casefold strip lstrip rstrip title capitalize removeprefix split".split():
    setattr(_Noted, _name, _keeps_noting(getattr(str, _name)))


def _keys_at(frame, variable: str) -> list[str]:
    """The strings a lookup by hash at `frame`'s instruction may match: the string constants of the expression it
    runs (`x in {"fast"}`, `{"fast": 2}[x]`) and the string keys of the dicts, sets and sequences its names and their
    attributes hold (`ROUNDS.get(x)`, `x in Modes.quick`) and the attribute names of the classes they are
    (`getattr(Plans, x)`), but the variable's own name; [] when it shows none, UNSEEN among them when the
    expression unpacks a container into another (`{**table}`: keys it does not show)."""
    found, held = [], None
    for kind, value in _loads(frame.f_code, frame.f_lasti):
        if kind == "unseen":
            found.append(UNSEEN)
            continue
        if kind == "const":
            held = value
        elif kind == "name":
            held = frame.f_locals.get(value, frame.f_globals.get(value))
        else:  # an attribute of what was loaded before it, as stored (no property or __getattr__ runs)
            held = inspect.getattr_static(held, value, None) if held is not None else None
        # a class's own attributes, as stored (no __getattr__ runs)
        members = [name for name in vars(held) if not name.startswith("__")] if isinstance(held, type) else held
        items = [members] if isinstance(members, str) else members if isinstance(members, CONTAINERS) else ()
        found += [item for item in list(items)[:64] if isinstance(item, str) and item != variable]
    return found


@functools.cache
def _loads(code, offset: int) -> list[tuple[str, object]]:
    """What the instructions inside the expression of the instruction at `offset` load: constants, names, attributes,
    and "unseen" for a container a call made unpacked into another (`{**dict(fast=2)}`)."""
    instructions = list(dis.get_instructions(code))
    at = next((i.positions for i in instructions if i.offset == offset), None)
    if at is None or None in (at.lineno, at.end_lineno):
        return []
    start, end = (at.lineno, at.col_offset or 0), (at.end_lineno, at.end_col_offset or 1 << 30)
    out, after_call = [], False
    for i in instructions:
        unseen, after_call = i.opname in UNPACKS and after_call, i.opname.startswith("CALL")
        where = i.positions
        if where is None or None in (where.lineno, where.end_lineno):
            continue
        if start <= (where.lineno, where.col_offset or 0) and (where.end_lineno, where.end_col_offset or 0) <= end:
            kind = "unseen" if unseen else LOADS.get(i.opname)
            kind = kind or ("name" if i.opname.startswith("LOAD_") and isinstance(i.argval, str) else None)
            if kind is not None:
                out.append((kind, i.argval))
    return out


def _env_record(env) -> dict | None:
    """An env named by the nearest NVFLARE class in its MRO (a job's `class FastSim(SimEnv)` is a SimEnv, its own
    `class PocEnv(SimEnv)` too), with its plain attributes; None for no env."""
    if env is None:
        return None
    named = next((c for c in type(env).__mro__ if c.__module__.startswith("nvflare.")), type(env))
    return {"class": named.__name__, "attrs": _recipe_attrs(env)}


def _record_parsers() -> None:
    original, original_error = argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.error

    def parse_known_args(self, args=None, namespace=None):
        result = original(self, args, namespace)
        if self not in [p for p, _ in STATE["parsers"]] and not _called_from_nvflare():
            STATE["parsers"].append((self, vars(result[0]).copy()))
        return result

    def error(self, message):
        if not _called_from_nvflare():  # job.py's parser rejects its arguments: say why in the record
            STATE["parser_error"] = f"{self.prog}: error: {message}"[:500]
        return original_error(self, message)

    argparse.ArgumentParser.parse_known_args = parse_known_args
    argparse.ArgumentParser.error = error


def _called_from_nvflare() -> bool:
    """True when the caller of the function that asks (an argparse parse, a stand-in's `__bool__` or attribute) is
    NVFLARE's own code, not job.py, its modules or another library."""
    return _in_nvflare(_caller(lambda name: name == argparse.__file__))  # exactly: a job's `hooks_argparse.py` asks too


def _parser_record(parser: argparse.ArgumentParser, values: dict) -> dict:
    actions = [_action_record(a, values) for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    return dict(allow_abbrev=parser.allow_abbrev, fromfile_prefix_chars=parser.fromfile_prefix_chars, actions=actions)


def _action_record(action: argparse.Action, values: dict) -> dict:
    return {
        **{field: _plain(getattr(action, field)) for field in ("option_strings", "dest", "default", "nargs", "const")},
        "action": type(action).__name__,
        "type": getattr(action.type, "__name__", None) if action.type else None,
        "choices": _plain(list(action.choices)) if action.choices is not None else None,
        "required": bool(action.required),
        "value": _plain(values.get(action.dest)),
    }


def _imported(before: set) -> list[str]:
    """Modules this run imported that live outside the job's folder (safe to import again in the parent)."""
    folder = os.path.dirname(STATE["job"])
    names = []
    for name in sorted(set(sys.modules) - before):
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None) or ""
        if isinstance(module, _Inert) or (where and not where.startswith(folder + os.sep)):
            names.append(name)
    return names


def _consume_export_flags() -> None:
    """NVFLARE strips `--export`/`--export-dir` from sys.argv when nvflare.recipe.spec is imported, which here
    happened before job.py's arguments were set: do it again for them, as `python job.py ARGS` would."""
    spec = sys.modules["nvflare.recipe.spec"]  # imported by `_install_recipes`
    if hasattr(spec, "_CONSUMED") and hasattr(spec, "_consume_recipe_args"):
        spec._CONSUMED = False
        spec._RECIPE_EXPORT, spec._RECIPE_EXPORT_DIR = spec._consume_recipe_args()


def _run_once(out: str, job: str, args: list[str], before: set, env: dict) -> None:
    """Run job.py once with `args` and `env` (in a forked child) and write its record to `out`."""
    os.environ.update(env)
    sys.argv = [job, *args]
    STATE["parser_error"], STATE["out"] = None, out
    _consume_export_flags()
    STATE["in_job"] = True
    try:
        try:
            runpy.run_path(job, run_name="__main__")
        except _Exited:
            raise
        except SystemExit:
            _exit_as_python()
            raise
        _exit_as_python()
        ending = {"status": "no_run"}
    except Stop:
        ending = STATE["after"]
    except KeyboardInterrupt:  # a SIGINT job.py turned into a raise: an interrupted run, never the job's failure
        return _write(out, {"status": "sandbox_failed", "reason": "the dry run was interrupted"})
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        ending = {"status": "exited", "code": code, "where": _job_frame(job, stop.__traceback__)}
        if STATE["parser_error"]:
            ending["parser_error"] = STATE["parser_error"]
    except BaseException as error:  # job.py raised: name its line
        ending = {"status": "raised", "exception": type(error).__name__, "message": str(error)[:500]}
        ending.update(where=_job_frame(job, error.__traceback__), nvflare=_nvflare_frame(error.__traceback__))
        ending["callee"] = _nvflare_callee(error)
    finally:
        STATE["in_job"] = False  # the time after the run is job.py's only
        signal.setitimer(signal.ITIMER_REAL, 0)
    first = STATE.get("record") or STATE.get("exported")  # job.py ran (else exported), then went on: how
    _wait_forked()
    if (forked := _forked_run(out)) and first is not None:
        STATE["after"] = {**forked, "first": STATE.get("first")}
    record = ending if first is None else {**first, "after": _after(ending)}
    record["parsers"] = [_parser_record(p, values) for p, values in STATE["parsers"]]
    record["stubbed"] = sorted(STATE["stubbed"])
    record["stood_in_at"] = list(STATE["stood_in_at"].values())
    record["env_read"] = sorted(STATE["env_read"])
    record["env_compared"] = sorted(f"{name}={value}" for name, kept in STATE["env_compared"].items() for value in kept)
    record["unreadable"] = STATE["unreadable"][:16]
    if STATE["absent"] and record["status"] != "recorded":  # asks for a rerun with them stood in (`_fork`)
        record["absent"] = sorted(STATE["absent"])
    record["imported"] = _imported(before)
    _write(out, record)


def _noted_fork(real_fork) -> int:
    """`os.fork` noting the children job.py forks during its run (`_wait_forked`)."""
    pid = real_fork()
    if pid and STATE.get("in_job"):
        STATE.setdefault("children", []).append(pid)
    return pid


def _wait_forked() -> None:
    """Wait for the processes job.py forked during its run (a copy of job.py may run the job later) for at most
    AFTER_RUN_SECONDS; one still running then makes `after` "unfinished"."""
    deadline = time.monotonic() + AFTER_RUN_SECONDS
    for pid in STATE.pop("children", []):
        with contextlib.suppress(ChildProcessError):  # job.py waited for it
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() >= deadline:
                    STATE.setdefault("after", {"how": "unfinished", "what": "a process job.py forked still runs"})
                    break
                time.sleep(0.02)


def _forked_run(out: str) -> dict:
    """How a child job.py forked ran the job (its note beside `out`, removed here); {} when none did, and in the
    child itself (its parent reads the note)."""
    if STATE.get("forked"):
        return {}
    forked = _read(out + FORKED_RUN)
    with contextlib.suppress(OSError):
        os.remove(out + FORKED_RUN)
    return forked


def _exit_as_python() -> None:
    """What Python runs after job.py's main code returns or exits: threading's exit calls (a thread pool's), then it
    joins job.py's non-daemon threads (for at most AFTER_RUN_SECONDS, else `after` is "unfinished"), then calls its
    atexit handlers; a run in any is seen, and through what job.py may have replaced (`AT_EXIT`)."""
    run_exitfuncs, enumerate_threads, thread_exits, daemon = AT_EXIT
    for call in reversed(thread_exits):  # a thread pool's: its idle workers end
        call()
    deadline = time.monotonic() + AFTER_RUN_SECONDS
    while alive := [t for t in enumerate_threads() if t is not threading.current_thread() and not daemon(t)]:
        if time.monotonic() >= deadline:
            STATE.setdefault("after", {"how": "unfinished", "what": f"a thread still running {AFTER_RUN_SECONDS} s"})
            break
        alive[0].join(deadline - time.monotonic())
    run_exitfuncs()  # a raise in a handler is printed, as at Python's exit


def _after(ending: dict) -> dict:
    """How job.py went on after its first run (or export): "again" or "unfinished" when a stop said so (also one
    job.py caught), else from how it ended: "ended" (it returned or exited with code 0), "raised" or "exited"."""
    if STATE.get("after"):
        return STATE["after"]
    if ending["status"] == "no_run" or (ending["status"] == "exited" and ending["code"] == 0):
        return {"how": "ended"}
    what = f"{ending['exception']}: {ending['message']}" if ending["status"] == "raised" else f"code {ending['code']}"
    return {"how": ending["status"], "where": ending["where"], "what": what}


def _nvflare_callee(error: BaseException) -> str | None:
    """The NVFLARE callable a TypeError names (`FedAvgRecipe.__init__() got ...`) when the job's own line called it:
    the name is looked up where the raise happened (an argument that does not bind raises at the call)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if not isinstance(error, TypeError) or tb is None or not _in_job_folder(tb.tb_frame.f_code.co_filename):
        return None
    name = str(error).partition("(")[0]
    found = tb.tb_frame.f_locals.get(name.partition(".")[0], tb.tb_frame.f_globals.get(name.partition(".")[0]))
    module = getattr(found, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) and module.partition(".")[0] == "nvflare" else None


def _write(path: str, record: dict) -> None:
    if STATE.get("forked"):  # a process job.py forked: its parent writes the run's record
        return
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True, default=repr)


def _read(path: str) -> dict:
    """The record a run wrote at `path` ({} when it wrote none)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _fork(out: str, job: str, args: list[str], env: dict) -> int:
    """Start one run in a child forked from this process (NVFLARE already imported and patched); its pid. The run
    goes first in a grandchild with only the usual stand-ins; when it did not record a job and NVFLARE's own code
    asked for a module this interpreter lacks, the child runs it again with those stood in."""

    def run() -> None:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # job.py never reads the request pipe nor writes into the answers
            os.dup2(quiet, fd)
        before = set(sys.modules)
        os.waitpid(_child(lambda: _run_once(out, job, args, before, env)), 0)
        if _read(out).get("absent"):
            STATE["optional"] = True
            _run_once(out, job, args, before, env)

    return _child(run)


def _child(run) -> int:
    """The pid of a child forked to call `run()` and end."""
    pid = os.fork()
    if pid == 0:
        try:
            run()
        finally:
            os._exit(0)
    return pid


def _wait(pid: int) -> None:
    """Wait for a run; end the boot (and with it the sandbox) as soon as the requests' pipe closes: the caller
    is gone (killed, interrupted) and nobody will read this run's record."""
    try:
        ended = [os.pidfd_open(pid)]  # readable when the run ends: no polling delay
    except (AttributeError, OSError):  # an older kernel or Python: look every 50 ms
        ended = []
    try:
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if sys.stdin in select.select([sys.stdin, *ended], [], [], None if ended else 0.05)[0]:
                os.killpg(0, signal.SIGKILL)  # at end of file: every run and the boot (the init ends the rest)
    finally:
        for fd in ended:
            os.close(fd)


def _runs(requests: list[dict], job: str) -> None:
    """Run every request in its own child, at most PARALLEL at a time; then import here what they imported
    (NVFLARE's recipe modules, framework stand-ins), so later children start with it."""
    running: list[int] = []
    for request in requests:
        if len(running) >= PARALLEL:
            _wait(running.pop(0))
        running.append(_fork(request["out"], job, request["args"], request["env"]))
    for pid in running:
        _wait(pid)
    for name in [name for request in requests for name in _read(request["out"]).get("imported") or []]:
        with contextlib.suppress(BaseException):  # a preload is only an optimization
            __import__(name)


def main(argv: list[str]) -> int:
    """`--serve JOB` reads `{"runs": [{"out", "args", "env"}, ...]}` lines on stdin and answers `done` to each."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a SIGINT ends a run (no record, never a "raised" one)
    signal.signal(signal.SIGALRM, _out_of_time)  # also for a run a thread of job.py makes (`_record`)
    sys.addaudithook(_no_process_after_the_run)
    _posixsubprocess.fork_exec = functools.partial(_audited_fork_exec, _posixsubprocess.fork_exec)
    os._exit = functools.partial(_exit_now, os._exit)
    os.fork = functools.partial(_noted_fork, os.fork)
    os.register_at_fork(after_in_child=lambda: STATE.get("in_job") and STATE.update(forked=True))
    job = os.path.abspath(argv[1])
    STATE["job"] = job
    sys.path.insert(0, os.path.dirname(job))
    sys.meta_path.append(_InertFinder())
    _record_parsers()
    _record_env_reads()
    _install_fedjob()  # NVFLARE's entry points record instead: the FedJob API's, the deploying envs', the recipes'
    _install_recipes()
    for line in sys.stdin:
        _runs(json.loads(line)["runs"], job)
        sys.stdout.write("done\n")
        sys.stdout.flush()
    os._exit(0)  # nothing to clean up: the sandbox's init ends the rest, and interpreter teardown costs ~0.5 s


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
