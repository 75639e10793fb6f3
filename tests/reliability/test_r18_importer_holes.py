"""Attacks on the importer's holes left open in session 10: an environment value matched by hash, a namespace handed
to a function the static reading does not follow, and a job's own subclass of an NVFLARE env.

The promises under attack: a budget that a user's environment or a helper of another module changes is refused
(statically: naming the line; by the dry run: naming the variables), never admitted as the value one run saw; and
the dry run records the environment that runs the job by the NVFLARE class it is, whatever job.py calls it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun
from autofl_core.runner.store import contract
from test_r16_session_attacks import PARSED, RECORDER, TAIL, _job_with

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def _job(folder: Path, source: str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    for name, text in (files or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "job.py"


def _real_budget(job: Path) -> dict:
    """The budget `python job.py` runs (its folder first on sys.path, as Python puts it): recipe and SimEnv
    replaced by recorders (`test_r16_session_attacks.RECORDER`)."""
    recorder = RECORDER.replace("sys.argv = sys.argv[1:]", "sys.argv = sys.argv[1:]\nsys.path.insert(0, '.')")
    done = subprocess.run(
        [sys.executable, "-I", "-c", recorder, str(job)], cwd=job.parent, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fixed(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


# --- 1. an environment value matched by hash ----------------------------------------------------------------------

HASHED_ENV = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

rounds = 3
PICK
recipe = NumpyFedAvgRecipe(name="h", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
BY_HASH = {  # case: job.py's lines that run 2 rounds when MODE is "fast" (3 otherwise)
    "in a set": 'if os.environ.get("MODE") in {"fast", "quick"}:\n    rounds = 2',
    "in a frozenset": 'if os.environ.get("MODE") in frozenset(("quick", "fast")):\n    rounds = 2',
    "an item of a dict": 'rounds = {"fast": 2, "full": 3}[os.environ.get("MODE", "full")]',
    "get of a literal dict": 'rounds = {"fast": 2, "full": 3}.get(os.environ.get("MODE"), 3)',
    "get of a named dict": 'ROUNDS = {"fast": 2, "full": 3}\nmode = os.getenv("MODE")\nrounds = ROUNDS.get(mode, 3)',
    "in a dict's keys": 'PLANS = {"fast": 2}\nif os.environ.get("MODE") in PLANS:\n    rounds = PLANS[os.environ["MODE"]]',
    "in a class attribute": 'class Modes:\n    quick = {"fast"}\n\n\nif os.environ.get("MODE") in Modes.quick:\n'
    "    rounds = 2",
    "match": 'match os.environ.get("MODE"):\n    case "fast" | "quick":\n        rounds = 2',
    "a set a function returns": 'def quick():\n    return {"fast"}\n\n\nif os.environ.get("MODE") in quick():\n    rounds = 2',
}


@sealed
@pytest.mark.parametrize("case", list(BY_HASH), ids=lambda c: c.replace(" ", "-"))
def test_rounds_picked_by_an_environment_value_matched_by_hash_are_refused(tmp_path, private_cache, case):
    """A hash lookup compares the value with the container's members (only on a hash match), never through the
    value's own `__eq__`. Before: the environment runs set MODE to a number, no run set it to "fast", and the 3
    rounds were admitted pinned though a user with MODE=fast runs 2."""
    config = api.import_job(_job(tmp_path / "job", HASHED_ENV.replace("PICK", BY_HASH[case])), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "environment variable" in said and re.search(r"\bMODE\b", said), (_fixed(config), said)


@sealed
def test_a_variable_matched_by_hash_that_decides_no_budget_keeps_the_job_admitted(tmp_path, private_cache):
    """The further run with LOG set to each key changes nothing NVFLARE is asked for: the 3 rounds stay admitted."""
    pick = 'LEVELS = {"debug": 10, "trace": 5}\nif os.environ.get("LOG") in {"debug", "trace"}:\n    print(LEVELS)'
    config = api.import_job(_job(tmp_path / "job", HASHED_ENV.replace("PICK", pick)), dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3


# --- 3. a job's own subclass of an NVFLARE env --------------------------------------------------------------------

ENV_SUBCLASS = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import PocEnv, SimEnv


class NAME(BASE):
    pass


recipe = NumpyFedAvgRecipe(name="e", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(NAME(num_clients=2))
"""
SUBCLASSES = {  # case: (class name, its NVFLARE base, the env that runs the job)
    "a SimEnv subclass": ("FastSim", "SimEnv", "SimEnv"),
    "a SimEnv subclass called PocEnv": ("PocEnv", "SimEnv", "SimEnv"),
    "a SimEnv subclass called ProdEnv": ("ProdEnv", "SimEnv", "SimEnv"),
    "a PocEnv subclass": ("LocalPoc", "PocEnv", "PocEnv"),
}


@sealed
@pytest.mark.parametrize("case", list(SUBCLASSES), ids=lambda c: c.replace(" ", "-"))
def test_the_dry_run_names_a_job_s_own_env_class_by_the_nvflare_env_it_is(tmp_path, private_cache, case):
    """The boot named an env reached through `simulator_run` by its own class name (`_env()`), one that deploys by
    the patched class. Before: a SimEnv subclass was recorded as `FastSim`, `PocEnv` or `ProdEnv` (the runner then
    took it for no simulation, and a class called PocEnv for a POC deployment) though it runs a simulation."""
    name, base, runs = SUBCLASSES[case]
    source = ENV_SUBCLASS.replace("NAME", name).replace("BASE", base)
    if name in ("PocEnv", "ProdEnv"):  # the job's class shadows NVFLARE's name
        source = source.replace("import PocEnv, SimEnv", "import SimEnv")
    config = api.import_job(_job(tmp_path / "job", source), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["job"]["env"]["class"] == runs, config["job"]["env"]
    assert config["environment"]["discovered"]["name"] == runs
    assert contract.uses_simenv(config) == (runs == "SimEnv")
    if runs == "SimEnv":
        assert _fixed(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 3}, _fixed(config)


# --- 2. a namespace (or what holds the budget) given to code the static reading does not follow ------------------

TUNING = """def tune(namespace):
    namespace.num_rounds = 9


def tune_items(options):
    options["num_rounds"] = 9


def tune_first(namespaces):
    namespaces[0].num_rounds = 9
"""
GIVES = "  # gives it away"
HANDED = {  # case: the lines after the parse (tuning.py beside job.py rebinds what it is given)
    "a function of a module": f"import tuning\ntuning.tune(args){GIVES}\nrounds = args.num_rounds\n",
    "a function imported by name": f"from tuning import tune\ntune(args){GIVES}\nrounds = args.num_rounds\n",
    "by keyword": f"from tuning import tune\ntune(namespace=args){GIVES}\nrounds = args.num_rounds\n",
    "in a list": f"import tuning\ntuning.tune_first([args]){GIVES}\nrounds = args.num_rounds\n",
    "vars of the namespace": f"import tuning\ntuning.tune_items(vars(args)){GIVES}\nrounds = args.num_rounds\n",
    "a dict holding the rounds": f'import tuning\nplan = {{"num_rounds": 2}}\ntuning.tune_items(plan){GIVES}\n'
    'rounds = plan["num_rounds"]\n',
    "a class of job.py": f"class Plan:\n    def __init__(self, a):\n        a.num_rounds = 9\n\n\nPlan(args){GIVES}\n"
    "rounds = args.num_rounds\n",
    "a method of an object of job.py": "class Plan:\n    def apply(self, a):\n        a.num_rounds = 9\n\n\n"
    f"Plan().apply(args){GIVES}\nrounds = args.num_rounds\n",
    "a function of functools": "import functools\nfunctools.reduce(lambda a, _: setattr(a, 'num_rounds', 9) or a, "
    f"[1], args){GIVES}\nrounds = args.num_rounds\n",
}


@pytest.mark.parametrize("case", list(HANDED), ids=lambda c: c.replace(" ", "-"))
def test_a_namespace_given_to_code_the_reading_does_not_follow_is_refused_naming_the_line(tmp_path, case):
    """Before: the walk kept the parsed 2 rounds after `tuning.tune(args)` (or a class of job.py, a method of its
    object, `functools.reduce` given a setter) rebound them to 9, and admitted 2 though job.py runs 9."""
    job = _job_with(tmp_path, PARSED + HANDED[case])
    (job.parent / "tuning.py").write_text(TUNING, encoding="utf-8")
    assert _real_budget(job)["num_rounds"] == 9
    config = api.import_job(job)
    assert config["fixed_budget"]["num_rounds"]["value"] is None, _fixed(config)
    said = " ".join(e["message"] for e in config["admission_errors"])
    line = next(n for n, text in enumerate(job.read_text().splitlines(), 1) if text.endswith(GIVES))
    assert f"at line {line}, which is not followed statically and may change it" in said, said


def test_a_recipe_given_to_a_helper_of_another_module_is_refused(tmp_path):
    """NVFLARE reads `num_rounds` off the recipe when it runs; a helper given the recipe may set it. Before: the
    constructor's 2 rounds were admitted."""
    tail = TAIL.replace("recipe.execute(", "import tuning\ntuning.tune(recipe)\nrecipe.execute(")
    job = _job_with(tmp_path, "", tail)
    (job.parent / "tuning.py").write_text(TUNING, encoding="utf-8")
    config = api.import_job(job)
    assert config["fixed_budget"].get("num_rounds", {}).get("value") is None, config["fixed_budget"]
    assert config["admission_errors"], config["fixed_budget"]


KEPT = {  # code given the namespace or the recipe that cannot change either: the budget stays read
    "print": "print(args)\n",
    "a logger": 'import logging\nlogging.getLogger("job").info("%s", args)\n',
    "json of vars": "import json\ntext = json.dumps(vars(args))\n",
    "a copy": "import copy\nsaved = copy.deepcopy(args)\n",
    "NVFLARE's tracking": "from nvflare.recipe.utils import add_experiment_tracking\n",
    "a path's method given its json": "import json\nimport pathlib\n"
    'pathlib.Path("/nonexistent/options.json").write_text(json.dumps(vars(args)))\n',
}


@pytest.mark.parametrize("case", list(KEPT), ids=lambda c: c.replace(" ", "-"))
def test_a_namespace_given_to_builtins_the_standard_library_or_nvflare_keeps_the_budget(tmp_path, case):
    tail = TAIL
    if case == "NVFLARE's tracking":
        tail = TAIL.replace("recipe.execute(", 'add_experiment_tracking(recipe, "tensorboard")\nrecipe.execute(')
    job = _job_with(tmp_path, PARSED + KEPT[case] + "rounds = args.num_rounds\n", tail)
    config = api.import_job(job)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 2}
