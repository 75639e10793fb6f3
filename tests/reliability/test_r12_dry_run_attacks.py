"""Attacks on the dry run's boot and the static fallback as a hostile or careless job.py would make them.

The promises under attack: the static reading stays bounded whatever `range()` and loop nesting a job writes (one
line naming the problem, never a traceback); a refusal that quotes the run's raise quotes it as one bounded line
(it goes to stderr and into envelopes); the record of a run names the recipe whose job the simulation runs, not
one job.py only exported before; a job's folder under a directory named `nvflare` is not NVFLARE's code.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun, dryrun_config, runner_view
from runner_support import dry_run

SIMPLE_TAIL = """
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="x", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def write_job(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "client.py").write_text("print('trains')\n")
    (folder / "job.py").write_text(source)
    return folder / "job.py"


# --- the static reading: range() and loops stay bounded ---------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "for i in range(99999999999999999999999):\n    pass\n",  # len() of this range overflows a C ssize_t
        "n = -(10 ** 30)\nfor i in range(n, 10 ** 30):\n    pass\n",
        "for i in range(0, 10 ** 40, 10 ** 39):\n    pass\n",  # 10 items of huge ints: unrolled, harmless
        "for i in range(True, 3):\n    for j in range(-5):\n        pass\n",  # a bool bound is not an int
        "for i in range(1, 2, 0):\n    pass\n",  # a zero step
        "r = range(10000)\ns = r * 100000\nt = [s] * 100000\n",  # MAX_ITEMS items, repeated
        'r = range(10000)\na = f"{r}{r}{r}{r}{r}{r}{r}{r}"\nb = a * 100000\n',
        "n = 10 ** 10 ** 8\n",
    ],
    ids=["huge", "huge-span", "huge-step", "bool-and-negative", "zero-step", "repeated", "f-string", "power"],
)
def test_range_of_any_integers_keeps_the_static_reading_bounded(tmp_path, head):
    path = write_job(tmp_path / "job", head + SIMPLE_TAIL)
    config = api.import_job(path)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert {k: config["fixed_budget"][k]["value"] for k in api.FIELDS} == {
        "num_clients": 2,
        "min_clients": 2,
        "num_rounds": 3,
    }


def test_nested_short_loops_do_not_multiply_past_the_step_budget(tmp_path):
    """Five nested loops of 64 items would be 64**5 walks: the step budget ends the reading with one refusal."""
    nest = "".join("    " * depth + f"for v{depth} in range(64):\n" for depth in range(5)) + "    " * 5 + "x = 1\n"
    path = write_job(tmp_path / "job", nest + SIMPLE_TAIL)
    started = time.monotonic()
    config = api.import_job(path)
    assert time.monotonic() - started < 20
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_UNSUPPORTED_JOB"]
    assert "step budget exhausted" in config["admission_errors"][0]["message"]


# --- the dry run: what a refusal quotes, and which recipe a run records -----------------------------------------

LOUD_RAISE = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=2)
clients = eval("parser.parse_args().n")
if clients: raise RuntimeError("fine\\nERROR forged line\\n" * 40 + "Z" * 2000); pad = "PAD"
recipe = NumpyFedAvgRecipe(name="x", model=[0.0], min_clients=clients, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=clients))
"""


@needs_sandbox
def test_a_refusal_quotes_the_run_s_raise_as_one_bounded_line(tmp_path):
    path = write_job(tmp_path / "loud", LOUD_RAISE.replace("PAD", "Y" * 20_000))
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised"
    message = config["admission_errors"][0]["message"]
    assert "running job.py raises at job.py line 9" in message and "RuntimeError: fine" in message
    assert "\n" not in message and "\r" not in message
    assert len(message) < 1500, len(message)


EXPORT_ONE_RUN_ANOTHER = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe

small = NumpyFedAvgRecipe(name="small", model=[0.0], min_clients=2, num_rounds=2, train_script="client.py")
big = NumpyFedAvgRecipe(name="big", model=[0.0], min_clients=3, num_rounds=50, train_script="client.py")
small.export("/tmp/autofl-attack-export")
big._job.simulator_run("/tmp/autofl-attack-ws", n_clients=3)
"""


@needs_sandbox
def test_a_simulation_after_an_export_records_the_recipe_it_runs_not_the_exported_one(tmp_path):
    """job.py exports a small recipe, then runs a second recipe's FedJob: the budget is the one that runs."""
    path = write_job(tmp_path / "two_recipes", EXPORT_ONE_RUN_ANOTHER)
    record = dry_run(path, [])
    assert record.status == "recorded" and record.entry == "simulator_run"
    assert record.recipe_attrs["name"] == "big"
    assert record.recipe_attrs["min_clients"] == 3
    config = api.import_job(path, dry_run=True)
    assert config["fixed_budget"]["min_clients"]["value"] != 2 or config["admission_errors"]


RAISES_IN_ITS_OWN_CODE = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe

raise ValueError("the job's own check")
"""


@needs_sandbox
def test_a_job_folder_under_a_directory_named_nvflare_is_not_nvflare_s_code(tmp_path):
    path = write_job(tmp_path / "nvflare" / "myjob", RAISES_IN_ITS_OWN_CODE)
    record = dry_run(path, [])
    assert record.status == "raised"
    assert record.where.line == 3
    assert record.nvflare is None, record.nvflare


# --- a job that ships its own `nvflare` ----------------------------------------------------------------------------

PASS_THROUGH = """import os
import sys

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
del sys.modules["nvflare"]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import nvflare  # noqa: E402  (the installed one; a hostile copy would patch it here)
"""


@pytest.mark.parametrize("shadow", ["nvflare/__init__.py", "nvflare.py"])
def test_a_job_folder_shipping_its_own_nvflare_is_refused_statically(tmp_path, shadow):
    """`python job.py` imports a `nvflare` beside job.py before the installed one: what runs is the job's code."""
    path = write_job(tmp_path / "shadowed", "import nvflare\n" + SIMPLE_TAIL)
    (path.parent / shadow).parent.mkdir(exist_ok=True)
    (path.parent / shadow).write_text(PASS_THROUGH)
    errors = api.import_job(path)["admission_errors"]
    assert [e["code"] for e in errors] == ["AUTOFL_UNSUPPORTED_JOB"]
    assert f"{shadow} beside job.py is imported instead of NVFLARE" in errors[0]["message"]


@needs_sandbox
def test_a_job_folder_shipping_its_own_nvflare_stays_refused_when_its_dry_run_records(tmp_path):
    path = write_job(tmp_path / "shadowed", "import nvflare\n" + SIMPLE_TAIL)
    (path.parent / "nvflare").mkdir()
    (path.parent / "nvflare" / "__init__.py").write_text(PASS_THROUGH)
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", "precondition: the pass-through copy runs"
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_UNSUPPORTED_JOB"]
    assert "is imported instead of NVFLARE" in config["admission_errors"][0]["message"]


# --- who is asking: a job's module whose name ends like one the caller test skips ---------------------------------

HOOK = """import torch  # absent here: a stand-in

SEEN = []


class Hook:
    def add_to_fed_job(self, job, ctx, **kwargs):  # NVFLARE's FedJob.to calls it
        SEEN.append(bool(torch.cuda.is_available()))
"""

CALLS_THE_HOOK = """import sys

from nvflare.job_config.api import FedJob

import hooks_argparse

FedJob(name="hooked").to(hooks_argparse.Hook(), "server")
sys.exit(3 if hooks_argparse.SEEN[0] else 4)
"""


@needs_sandbox
def test_a_job_module_named_like_argparse_is_still_the_job_to_the_caller_test(tmp_path):
    """A stand-in is absent (false) to job.py and its modules even when NVFLARE called the module's code."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: no stand-in to ask")
    path = write_job(tmp_path / "hooked", CALLS_THE_HOOK)
    (path.parent / "hooks_argparse.py").write_text(HOOK)
    record = dry_run(path, [])
    assert record.status == "exited", record
    assert record.code == 4, "the job's own module saw a stand-in as present"


# --- a candidate's run arguments that need the rerun with NVFLARE's optional modules -----------------------------

TRACKED_ON_REQUEST = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv, add_experiment_tracking

parser = argparse.ArgumentParser()
parser.add_argument("--track", action="store_true")
args = parser.parse_args()
rounds = 40 if args.track else 5
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
if args.track:
    add_experiment_tracking(recipe, tracking_type="mlflow")  # raises where mlflow is absent: the run is made again
recipe.execute(SimEnv(num_clients=2))
"""


@needs_sandbox
def test_a_candidate_whose_run_needs_the_rerun_still_shows_its_budget_change(tmp_path):
    """The perturbed run of `--track` is made again with mlflow stood in and records 40 rounds: `--track` is an
    option the budget depends on, which a candidate's run arguments may not mention (the runner refuses it); the
    run of the candidate's own arguments names the change too."""
    if importlib.util.find_spec("mlflow") is not None:
        pytest.skip("mlflow is installed here: no rerun")
    path = write_job(tmp_path / "tracked", TRACKED_ON_REQUEST)
    config = api.import_job(path, dry_run=True, run_args=["--track"])
    assert config["fixed_budget"]["num_rounds"]["value"] == 5
    assert "--track" in runner_view.fixed_budget_options(config)
    candidate = dry_run(path, ["--track"])
    assert "mlflow" in candidate.stubbed
    changes = dryrun_config.changes(dry_run(path, []), candidate)
    assert changes == ["num_rounds 5 -> 40"], changes
