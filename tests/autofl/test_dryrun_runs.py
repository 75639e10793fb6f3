"""The dry run sees every run of one `python job.py`: at a run it records the job, returns what NVFLARE's call
returns, and lets job.py go on; a second run stops it. A run after which job.py ended normally settles
AUTOFL_SEVERAL_RUNS; a second run refuses naming both lines; a raise after the run leaves the refusal, saying why;
an option that changes how many times job.py runs is pinned."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from autofl_core.importer import admission, api, dryrun, recorded, run_reasons
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"

pytestmark = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

import helpers

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--num_rounds", type=int, default=3)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="h", model=[0.0], min_clients=args.n_clients, num_rounds=args.num_rounds, train_script="client.py"
)
ENV = SimEnv(clients=[f"site-{i + 1}" for i in range(args.n_clients)])
AFTER
"""
ONCE = "def launch(recipe, env):\n    return recipe.execute(env)\n"


def _job(folder: Path, after: str, helpers: str = ONCE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(JOB.replace("AFTER", after), encoding="utf-8")
    (folder / "helpers.py").write_text(helpers, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    return folder / "job.py"


def _codes(config: dict) -> list[str]:
    return [e["code"] for e in config["admission_errors"]]


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(dryrun.tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})


READ_AFTER = {  # job.py's code after the run, reading what the run returned; it ends normally
    "the run's status and result": "run = helpers.launch(recipe, ENV)\nprint(run.get_status(), run.get_result())",
    "the result of the call itself": "print(helpers.launch(recipe, ENV).get_result())",
    "a run that returns nothing read": "helpers.launch(recipe, ENV)\nprint('done')",
}


@pytest.mark.parametrize("case", list(READ_AFTER))
def test_a_recipe_run_once_by_a_helper_module_is_admitted_with_the_recorded_budget(tmp_path, private_cache, case):
    """Before: the dry run stopped at the first run, could not show the helper runs it once, and kept the static
    AUTOFL_SEVERAL_RUNS refusal."""
    path = _job(tmp_path / "job", READ_AFTER[case])
    assert _codes(api.import_job(path)) == [admission.SEVERAL_RUNS], "precondition: the static reading refuses"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert {k: config["fixed_budget"][k]["value"] for k in api.FIELDS} == {
        "num_clients": 2,
        "min_clients": 2,
        "num_rounds": 3,
    }
    assert config["import"]["support"] == {"status": "supported", "reason": config["import"]["support"]["reason"]}


def test_the_record_says_job_py_ended_after_its_one_run(tmp_path, private_cache):
    record = dry_run(_job(tmp_path / "job", READ_AFTER["the run's status and result"]), [])
    assert (record.status, record.after, run_reasons.runs(record)) == ("recorded", recorded.After("ended"), "once")


def test_a_helper_that_runs_the_recipe_twice_is_refused_naming_both_lines(tmp_path, private_cache):
    """Before: the dry run stopped at the first run and the static reason said only that code not followed may run
    it any number of times."""
    twice = "def launch(recipe, env):\n    recipe.execute(env)\n    return recipe.execute(env)\n"
    config = api.import_job(_job(tmp_path / "job", "helpers.launch(recipe, ENV)", twice), dry_run=True)
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]
    message = config["admission_errors"][0]["message"]
    assert "helpers.py line 2 (recipe.execute(env))" in message, message
    assert "again at helpers.py line 3 (return recipe.execute(env))" in message, message
    assert config["import"]["support"]["several_runs"] is True


def test_a_second_recipe_run_after_the_first_is_refused_naming_both_lines(tmp_path, private_cache):
    after = (
        "helpers.launch(recipe, ENV)\nother = NumpyFedAvgRecipe(name='o', model=[0.0], min_clients=2, num_rounds=9, "
        "train_script='client.py')\nother.execute(ENV)"
    )
    config = api.import_job(_job(tmp_path / "job", after), dry_run=True)
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]
    message = config["admission_errors"][0]["message"]
    assert "at helpers.py line 2" in message and "again at job.py line 18 (other.execute(ENV))" in message, message


def test_a_raise_after_the_run_keeps_the_refusal_and_says_why(tmp_path, private_cache):
    """The result folder is never written by a dry run, so reading it raises: the raise may skip a second run (a
    real result may lead job.py on), so one run is not shown."""
    after = "import os\nrun = helpers.launch(recipe, ENV)\nprint(os.listdir(os.path.join(run.get_result(), 'server')))"
    config = api.import_job(_job(tmp_path / "job", after), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]
    message = config["admission_errors"][0]["message"]
    assert "raises at job.py line 18" in message and "FileNotFoundError" in message, message
    assert "cannot show job.py trains once" in message, message


REPEATS = {  # a run per loop pass over an option's range: once with the default, more with another value
    "the same recipe run by a helper per pass": "for r in range(args.repeats):\n    helpers.launch(recipe, ENV)",
    "a run NVFLARE refuses the second time (a job given a client count)": (
        "for r in range(args.repeats):\n    recipe.execute(SimEnv(num_clients=args.n_clients))"
    ),
}


def _repeated(folder: Path, case: str) -> Path:
    path = _job(folder, REPEATS[case])
    option = 'parser.add_argument("--repeats", type=int, default=1)\n'
    path.write_text(path.read_text().replace("args = parser", option + "args = parser"))
    return path


@pytest.mark.parametrize("case", list(REPEATS))
def test_an_option_that_changes_how_many_times_job_py_runs_is_pinned(tmp_path, private_cache, case):
    """Before: the perturbed run with --repeats 7 stopped at its first run, recorded the same budget, and --repeats
    was suggested for tuning: a trial with --repeats 7 trains seven times (or raises after its first run)."""
    config = api.import_job(_repeated(tmp_path / "job", case), dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert all("--repeats" in config["fixed_budget"][k]["depends_on"] for k in api.FIELDS), config["fixed_budget"]
    assert "--repeats" not in config["summary"]["allowed"]


def test_base_arguments_that_make_a_loop_run_twice_are_refused_naming_the_line(tmp_path, private_cache):
    path = _repeated(tmp_path / "job", "the same recipe run by a helper per pass")
    config = api.import_job(path, dry_run=True, base_args=["--repeats", "2"])
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]
    assert "again at helpers.py line 2" in config["admission_errors"][0]["message"]


def test_code_after_the_run_writes_nothing_outside_the_sandbox(tmp_path, private_cache):
    after = (
        "import os\nrun = helpers.launch(recipe, ENV)\nos.makedirs(run.get_result(), exist_ok=True)\n"
        "for folder in ('.', run.get_result(), os.path.dirname(os.path.abspath(__file__))):\n"
        "    with open(os.path.join(folder, 'after.txt'), 'w') as handle:\n        handle.write('written')"
    )
    path = _job(tmp_path / "job", after)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "tmp" not in p.parts)
    record = dry_run(path, [])
    assert run_reasons.runs(record) == "once", record.after  # the writes ran, inside the sandbox
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "tmp" not in p.parts) == before
    assert not list((tmp_path / "tmp").rglob("after.txt"))


def test_the_corpus_job_run_by_a_launcher_module_is_admitted_by_its_dry_run(tmp_path, private_cache):
    """tests/fixtures/jobs/dryrun/helper_run: a launcher module beside job.py executes the recipe once, and job.py
    prints the run's status and result."""
    shutil.copytree(REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "helper_run", tmp_path / "job")
    path = tmp_path / "job" / "job.py"
    assert _codes(api.import_job(path)) == [admission.SEVERAL_RUNS], "precondition: the static reading refuses"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    budget = {k: (config["fixed_budget"][k]["value"], config["fixed_budget"][k]["depends_on"]) for k in api.FIELDS}
    assert budget == {
        "num_clients": (2, ["--n_clients"]),
        "min_clients": (2, ["--n_clients"]),
        "num_rounds": (3, ["--num_rounds"]),
    }


def test_code_after_the_run_that_never_ends_is_stopped_and_shows_no_single_run(tmp_path, private_cache):
    path = _job(tmp_path / "job", "helpers.launch(recipe, ENV)\nwhile True:\n    pass")
    record = dry_run(path, [])
    assert record.status == "recorded" and run_reasons.runs(record) == "unknown", record
    assert record.after.how == "unfinished" and "10 s after its run" in run_reasons.runs_reason(record)
