"""Import by dry run: job.py runs in the trial sandbox up to NVFLARE's entry point, with the real NVFLARE.

The jobs in tests/fixtures/jobs/dryrun are runnable NumPy jobs whose budget or recipe class the static reading
cannot pin (a value held by an object, a while loop, a class picked from a table, a hidden setattr). Each test
runs real dry runs (about 1-2 s cold under load); records are cached by the hash of the job's files and args.
"""

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun, recorded
from autofl_core.runner import runargs
from autofl_core.runner.outcome import CampaignError
from autofl_core.runner.store import contract
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "tests" / "fixtures" / "jobs" / "dryrun"

pytestmark = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def budget(config: dict) -> dict:
    return {k: (config["fixed_budget"][k]["value"], config["fixed_budget"][k]["depends_on"]) for k in api.FIELDS}


@pytest.fixture()
def job(tmp_path):
    """A private copy of a fixture job (its cache key is its own)."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(JOBS / name, target)
        return target / "job.py"

    return copy


def test_a_budget_only_a_run_can_read_is_admitted_with_the_options_that_move_it(job):
    path = job("computed_budget")
    static = api.import_job(path)
    assert static["admission_errors"], "precondition: the static reading cannot pin this budget"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == []
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert budget(config) == {
        "num_clients": (2, ["--n_clients"]),
        "min_clients": (2, ["--n_clients"]),
        "num_rounds": (4, ["--epochs"]),  # epochs * 2: found by perturbed runs, not by reading
    }
    assert config["fixed_budget"]["num_rounds"]["confidence"] == "pinned"
    assert config["fixed_budget"]["num_clients"]["confidence"] == "high"
    assert config["job"]["nvflare_class"] == "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"
    assert config["objective"]["job_key_metric"] == "accuracy"
    assert "--lr" in config["summary"]["allowed"] and "--epochs" not in config["summary"]["allowed"]
    assert set(contract.budget_args(config)) >= {"--epochs", "--n_clients"}
    assert not (path.parent / "touched.txt").exists(), "the dry run's writes stay in its sandbox"


def test_base_args_and_a_candidate_edit_reach_the_dry_run(job):
    path = job("computed_budget")
    assert api.import_job(path, dry_run=True, base_args=["--epochs", "3"])["fixed_budget"]["num_rounds"]["value"] == 6
    base = api.import_job(path, dry_run=True)
    edited = path.read_bytes().replace(b"args.epochs * 2", b"args.epochs * 3")
    candidate = api.import_job(path, dry_run=True, overlay={"job.py": edited})
    assert candidate["fixed_budget"]["num_rounds"]["value"] == 6
    assert contract.budget_digest(candidate) != contract.budget_digest(base)
    assert path.read_bytes() != edited, "the overlay is never written into the job"


def test_candidate_run_args_that_move_the_budget_are_named(job):
    path = job("computed_budget")
    # an abbreviation the perturbed runs did not try: it is run, and what it moves is named
    moved = api.import_job(path, dry_run=True, run_args=["--epo", "5"])
    assert moved["import"]["dry_run"]["run_args_changes"] == ["num_rounds 4 -> 10"]
    # an option the perturbed runs tried and found harmless needs no further run
    harmless = api.import_job(path, dry_run=True, run_args=["--lr", "0.5"])
    assert harmless["import"]["dry_run"]["run_args_changes"] == []


def test_a_class_picked_from_a_table_is_admitted_and_a_raise_names_its_line(job):
    path = job("picked_from_table")
    assert api.import_job(path)["admission_errors"], "precondition: a class from a table is dynamic statically"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == []
    assert budget(config)["num_rounds"] == (4, ["--num_rounds", "--algo"])  # --algo decides what runs
    refused = api.import_job(path, dry_run=True, base_args=["--algo", "fedprox"])
    message = refused["admission_errors"][0]["message"]
    assert "job.py line 18 (recipe_class = RECIPES[args.algo])" in message and "KeyError" in message


def test_a_non_training_recipe_picked_at_run_time_is_refused_by_family(job):
    config = api.import_job(job("eval_from_table"), dry_run=True)
    assert config["job"]["family"] == "evaluation"
    message = config["admission_errors"][0]["message"]
    assert "NumpyCrossSiteEvalRecipe (line 17), of the evaluation family" in message


def test_a_budget_the_reading_cannot_follow_is_replaced_by_what_runs(job):
    """`tune(args)` of another module rebinds the rounds: the reading refuses, naming the line; the run pins 7."""
    path = job("hidden_rounds")
    static = api.import_job(path)["fixed_budget"]["num_rounds"]
    assert static["value"] is None and "given to tune() at line 21" in static["reason"], static
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 7


def test_records_are_cached_by_the_job_files_and_args(job, monkeypatch):
    """The second import starts no dry run (bench/importer_dryrun.py measures its 0.15 s bar)."""
    path = job("picked_from_table")
    first = api.import_job(path, dry_run=True)

    def started(*_args, **_kwargs):
        raise AssertionError("a cached import started a dry run")

    monkeypatch.setattr(dryrun.Session, "start", started)
    again = api.import_job(path, dry_run=True)
    assert again == first
    before = dryrun.job_digest(path.parent, None, [], "python")
    (path.parent / "client.py").write_text("# changed\n")
    assert dryrun.job_digest(path.parent, None, [], "python") != before


def test_a_job_with_a_schema_is_imported_again_from_the_cache(job, monkeypatch):
    """The run's arguments are the base ones plus the schema's budget arguments: the cache is looked up with them,
    so the second import starts no sandbox."""
    path = job("computed_budget")
    (path.parent / "mutation_schema.yaml").write_text(
        "comparison_budget_args:\n  default_candidate_budget:\n    n_clients: 3\n", encoding="utf-8"
    )
    first = api.import_job(path, dry_run=True)
    assert first["argparse"]["schema_args"] == ["--n_clients", "3"] and first["admission_errors"] == []
    assert first["import"]["dry_run"]["status"] == "recorded" and budget(first)["num_clients"][0] == 3

    def started(*_args, **_kwargs):
        raise AssertionError("a cached import started a dry run")

    monkeypatch.setattr(dryrun.Session, "start", started)
    assert api.import_job(path, dry_run=True) == first


def test_the_campaign_files_a_dry_run_cannot_see_leave_its_cache_key_alone(job):
    """Every runner action rewrites files under .nvflare/; a source-edit candidate's dry run must still hit."""
    path = job("picked_from_table")
    before = dryrun.job_digest(path.parent, {"client.py": b"# edited"}, [], "python")
    (path.parent / ".nvflare" / "autofl").mkdir(parents=True)
    (path.parent / ".nvflare" / "autofl" / "campaign_state.json").write_text("{}")
    (path.parent / "autofl_runs").mkdir()
    (path.parent / "autofl_runs" / "trial.json").write_text("{}")
    assert dryrun.job_digest(path.parent, {"client.py": b"# edited"}, [], "python") == before
    (path.parent / "settings.json").write_text("{}")  # a file the job could read is part of the key
    assert dryrun.job_digest(path.parent, {"client.py": b"# edited"}, [], "python") != before


def test_without_namespaces_the_static_reading_stands(job, monkeypatch):
    path = job("computed_budget")
    monkeypatch.setattr(dryrun, "_MEMO", {})
    monkeypatch.setattr(dryrun, "_cache_dir", lambda: None)
    monkeypatch.setattr(dryrun, "available", lambda python=None: False)
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "unavailable"
    static = api.import_job(path)
    assert config["admission_errors"] == static["admission_errors"] != []


def test_a_job_that_imports_no_nvflare_is_never_run(tmp_path):
    shutil.copytree(REPO / "tests" / "autofl" / "standin_campaign", tmp_path / "ws")
    config = api.import_job(tmp_path / "ws" / "job.py", dry_run=True)
    assert "dry_run" not in config["import"]
    assert config["admission_errors"] == []


def test_the_cli_runs_the_dry_run_only_when_asked(job):
    import subprocess
    import sys

    path = job("computed_budget")
    cli = REPO / "skills" / "nvflare-autofl" / "scripts" / "job_importer.py"
    static = subprocess.run([sys.executable, str(cli), str(path)], capture_output=True, text=True, check=False)
    assert static.returncode == 2 and "AUTOFL_" in static.stderr
    ran = subprocess.run(
        [sys.executable, str(cli), str(path), "--dry-run"], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert '"status": "recorded"' in ran.stdout
    assert sorted(p.name for p in path.parent.iterdir()) == ["client.py", "job.py"]


def test_a_budget_read_from_the_environment_stays_refused(job):
    config = api.import_job(job("env_rounds"), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"  # one run sees 3 rounds ...
    message = config["admission_errors"][0]["message"]
    assert "environment variable ROUNDS" in message  # ... but trials could see others: refused, saying why


@pytest.mark.parametrize("name", ["computed_budget", "picked_from_table", "hidden_rounds", "eval_from_table"])
def test_a_config_settled_by_a_dry_run_keeps_the_documented_shape(job, name):
    """The same shape rules as tests/test_importer_contract_shape.py, on configs a record changed."""
    path = job(name)
    config = api.import_job(path, dry_run=True)
    static = api.import_job(path)
    assert set(config) == set(static) and set(config["import"]) == {"support", "would_raise", "dry_run"}
    if config["import"]["support"]["status"] == "supported":
        for field in api.FIELDS:
            entry = config["fixed_budget"][field]
            unresolved = entry["confidence"] in ("unresolved", "not_applicable")
            required = {"value", "confidence", "flag", "source", "depends_on"} | ({"reason"} if unresolved else set())
            assert required <= set(entry) <= required | {"note"}, field
            assert (entry["value"] is None) == unresolved
            assert entry["flag"] is None or entry["flag"] in entry["depends_on"]
    assert api.admission_errors(config, None) == config["admission_errors"]
    assert config["summary"]["editable"] == config["trust"]["allowed_edit_paths"]
    assert config["summary"]["unresolved"] == [item["field"] for item in config["unresolved"]]
    assert set(config["summary"]["allowed"]) <= {item["flag"] for item in config["search_space"]["suggested"]}
    assert {k: v["value"] for k, v in config["summary"]["fixed_budget"].items()} == {
        k: config["fixed_budget"][k]["value"] for k in config["summary"]["fixed_budget"]
    }


def test_options_only_the_real_parser_knows_are_read_from_it(job):
    path = job("class_parser")
    static = api.import_job(path)
    assert static["argparse"]["flags"] == [] and static["admission_errors"]  # parsed inside a class
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == []
    flags = {f["dest"]: f for f in config["argparse"]["flags"]}
    assert flags["n_clients"]["default"] == 2 and flags["num_rounds"]["option_strings"] == ["--num_rounds", "-r"]
    assert config["argparse"]["allow_abbrev"] is False
    assert api.fixed_budget_args(config) == ["--n_clients", "2", "--num_rounds", "3"]
    assert api.canonical_option(config, "-r5") == ("--num_rounds", "5", None)
    assert api.parse_job_args(config, ["--lr", "0.5"]) == ({"--lr": 0.5}, [])


def test_a_comparison_argument_only_the_real_parser_knows_is_pinned(job):
    """mutation_schema.yaml fixes `lr` within the campaign; only the real parser sees `--lr` (parsed inside a
    class): it is pinned at the parsed value, never suggested or accepted from a candidate, and no note claims job.py
    lacks it."""
    path = job("class_parser")
    (path.parent / "mutation_schema.yaml").write_text("comparison_budget_args:\n  fixed_within_campaign: [lr]\n")
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["comparison_args"] == {"lr": {"flag": "--lr", "value": 0.1}}
    assert api.fixed_budget_args(config) == ["--n_clients", "2", "--num_rounds", "3", "--lr", "0.1"]
    assert "--lr" in api.fixed_budget_options(config)
    assert [s["flag"] for s in config["search_space"]["suggested"]] == []
    assert not [u for u in config["unresolved"] if u["field"] == "schema.comparison_budget_args.lr"]
    with pytest.raises(CampaignError, match="fixed-budget option --lr"):
        runargs.candidate_args(config, "--lr 0.2")


def test_a_schema_value_for_an_option_only_the_real_parser_knows_is_named_as_not_passed(job):
    """The schema's default_candidate_budget asks for seed 7; the import passes schema values through the options
    the static reading saw, and `--seed` is parsed inside a class: the run keeps job.py's 0, pinned, and a note says
    so and what to do."""
    path = job("class_parser")
    source = path.read_text()
    line = '        parser.add_argument("--lr", type=float, default=0.1)\n'
    assert line in source
    path.write_text(source.replace(line, line + '        parser.add_argument("--seed", type=int, default=0)\n'))
    (path.parent / "mutation_schema.yaml").write_text(
        "comparison_budget_args:\n  default_candidate_budget:\n    seed: 7\n"
    )
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["comparison_args"] == {"seed": {"flag": "--seed", "value": 0}}
    notes = [u["reason"] for u in config["unresolved"] if u["field"] == "schema.comparison_budget_args.seed"]
    assert len(notes) == 1 and "did not pass it" in notes[0] and "--base-args" in notes[0], config["unresolved"]


def test_export_flags_are_consumed_for_the_job_as_nvflare_does(job):
    """`python job.py --export` exports (NVFLARE strips the flag before job.py's parser sees it): a candidate run
    argument `--export` turns the simulation into an export, and the dry run names the change (an export trains
    nothing and names no clients)."""
    config = api.import_job(job("picked_from_table"), dry_run=True, run_args=["--export"])
    changes = config["import"]["dry_run"]["run_args_changes"]
    assert changes == ["num_clients 3 -> None", "entry simulator_run -> export_job"]


def write_job(folder: Path, source: str) -> Path:
    """A minimal job folder: job.py plus the client script it names."""
    folder.mkdir()
    (folder / "client.py").write_text("print('trains')\n")
    (folder / "job.py").write_text(source)
    return folder / "job.py"


def test_a_model_derived_from_an_absent_framework_passes_nvflares_own_type_check(tmp_path):
    """NVFLARE's TF recipe checks `isinstance(model, tf.keras.Model)`: with TensorFlow absent, the job's class and
    NVFLARE's check see the same stand-in class, so the run records the job instead of raising."""
    if importlib.util.find_spec("tensorflow") is not None:
        pytest.skip("tensorflow is installed here: nothing is stood in")
    path = write_job(
        tmp_path / "tf_job",
        "import argparse\n"
        "import tensorflow as tf\n"
        "from nvflare.app_opt.tf.recipes.fedavg import FedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n\n\n"
        "class Net(tf.keras.Model):\n"
        "    pass\n\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--num_rounds', type=int, default=3)\n"
        "args = parser.parse_args()\n"
        "recipe = FedAvgRecipe(name='tf', model=Net(), min_clients=2, num_rounds=args.num_rounds,"
        " train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=2))\n",
    )
    config = api.import_job(path, dry_run=True)
    record = config["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert "tensorflow" in record["stubbed"]
    assert record["budget"] == {"num_rounds": 3, "min_clients": 2, "num_clients": 2}
    assert config["admission_errors"] == []


def test_a_refusal_says_which_arguments_job_py_requires(tmp_path):
    """A job whose parser requires arguments exits before NVFLARE: the refusal quotes argparse's own message."""
    path = write_job(
        tmp_path / "needs_args",
        "import argparse\n"
        "from nvflare.app_common.np.recipes.fedavg import NumpyFedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--task', required=True, choices=['a', 'b'])\n"
        "parser.add_argument('--sites', nargs='+', required=True)\n"
        "args = parser.parse_args()\n"
        "rounds = {'a': 2, 'b': 3}[args.task]\n"
        "recipe = NumpyFedAvgRecipe(name='n', model=[0.0], min_clients=len(args.sites), num_rounds=rounds,"
        " train_script='client.py')\n"
        "recipe.execute(SimEnv(clients=args.sites))\n",
    )
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "exited"
    message = config["admission_errors"][0]["message"]
    assert "running job.py exits with code 2 at job.py line 8 (args = parser.parse_args())" in message
    assert "the following arguments are required: --task, --sites" in message
    assert "pass what it needs in --base-args" in message
    given = api.import_job(path, dry_run=True, base_args=["--task", "b", "--sites", "x", "y"])
    assert given["admission_errors"] == [] and given["fixed_budget"]["num_rounds"]["value"] == 3


def test_a_name_nvflare_lacks_is_refused_as_another_version_s_api(tmp_path):
    """A run that stops on job.py's import of a name NVFLARE does not have says so in the refusal, naming the line,
    as another NVFLARE version's API (installing nothing helps; a module this interpreter lacks is told to install
    it: test_importer_recorded.py::test_a_module_this_interpreter_lacks_is_told_to_install_not_another_version)."""
    path = write_job(
        tmp_path / "missing_module",
        "from nvflare.app_common.np.recipes.fedavg import NumpyFedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n"
        "from nvflare.app_common.np.recipes import NoSuchRecipe\n\n"
        "rounds = NoSuchRecipe.ROUNDS\n"
        "recipe = NumpyFedAvgRecipe(name='n', min_clients=2, num_rounds=rounds, train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=2))\n",
    )
    static = api.import_job(path)
    assert static["admission_errors"], "precondition: the reading cannot pin num_rounds"
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised"
    message = config["admission_errors"][0]["message"]
    assert message.startswith("job.py is not supported: running job.py raises at job.py line 3 (from nvflare.app_")
    assert "ImportError: cannot import name 'NoSuchRecipe'" in message
    assert "has no nvflare.app_common.np.recipes.NoSuchRecipe: job.py was written for another NVFLARE" in message
    assert "this interpreter cannot import it" not in message


def test_a_fedjob_workspace_computed_at_run_time_is_recorded_and_the_options_that_move_it_pinned(tmp_path):
    """`simulator_run(f"{args.workspace}/{job.name}")`: the reading cannot resolve the folder (so a sealed trial
    could not map it); the run records it, and every option that moves it is pinned, so trials write there."""
    path = write_job(
        tmp_path / "computed_workspace",
        "import argparse\n\n"
        "from nvflare.app_common.workflows.fedavg import FedAvg\n"
        "from nvflare.job_config.api import FedJob\n"
        "from nvflare.job_config.script_runner import ScriptRunner\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--n_clients', type=int, default=2)\n"
        "parser.add_argument('--num_rounds', type=int, default=3)\n"
        "parser.add_argument('--workspace', default='/tmp/autofl-test-ws')\n"
        "parser.add_argument('--lr', type=float, default=0.1)\n"
        "args = parser.parse_args()\n"
        "job = FedJob(name=f'fedavg_{args.n_clients}')\n"
        "job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds))\n"
        "for i in range(args.n_clients):\n"
        "    job.to(ScriptRunner(script='client.py', script_args=f'--lr {args.lr}'), f'site-{i + 1}')\n"
        "job.simulator_run(f'{args.workspace}/{job.name}')\n",
    )
    static = api.import_job(path)
    assert "AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED" in [e["code"] for e in static["admission_errors"]]
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == []
    workspace = config["environment"]["simulator_workspace"]
    assert workspace["value"] == "/tmp/autofl-test-ws/fedavg_2" and not workspace["reads_root_variable"]
    assert budget(config) == {
        "num_clients": (2, ["--n_clients", "--workspace"]),
        "min_clients": (2, ["--n_clients", "--workspace"]),
        "num_rounds": (3, ["--num_rounds", "--n_clients", "--workspace"]),
    }
    # --lr (a client option) moves nothing: it stays free, as budget() above shows
    assert not (tmp_path / "autofl-test-ws").exists() and not Path("/tmp/autofl-test-ws").exists()


@pytest.mark.parametrize(
    ("name", "module", "source"),
    [
        ("subclass_module", "sft_recipe.py", "dry run: the exported job's num_rounds"),
        ("collab_module", "fedavg_server.py", "dry run: the exported job's num_rounds"),  # its effective value
    ],
)
def test_a_budget_decided_in_the_job_s_own_module_is_pinned_by_the_run(job, name, module, source):
    """A recipe subclass or a collaborative server class beside job.py: the static reading refuses (it does not
    follow the job's own classes, never matching them to NVFLARE's by name); the run records what they build, and
    an edit of their default is a budget change."""
    path = job(name)
    static = api.import_job(path)
    assert "is the job's own class" in static["admission_errors"][0]["message"]
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [] and config["import"]["dry_run"]["status"] == "recorded"
    rounds = config["fixed_budget"]["num_rounds"]
    assert (rounds["value"], rounds["source"]) == (7, source)
    edited = (path.parent / module).read_bytes().replace(b"=7", b"=70")
    candidate = api.import_job(path, dry_run=True, overlay={module: edited})
    assert candidate["fixed_budget"]["num_rounds"]["value"] == 70
    assert contract.budget_digest(candidate) != contract.budget_digest(config)


def test_the_options_are_the_real_parser_s_with_the_lines_the_reading_found(job):
    """Options from a parent parser built beside job.py: the reading does not see them, the real parser has them
    (so the runner can pin and parse them); an option the reading found keeps its job.py line. Those the perturbed
    run shows reaching the job (here through train_args) are suggested when the client script defines them, unless
    their name says they shape the data (fixed like the budget)."""
    path = job("parent_parser")
    static = api.import_job(path)
    assert "lr" not in {f["dest"] for f in static["argparse"]["flags"]}, "precondition: the reading misses them"
    config = api.import_job(path, dry_run=True)
    flags = {f["dest"]: f for f in config["argparse"]["flags"]}
    assert set(flags) == {"lr", "momentum", "val_ratio", "warmup", "n_clients"}
    assert (flags["lr"]["default"], flags["lr"]["type"], flags["lr"]["line"]) == (0.1, "float", None)
    assert flags["n_clients"]["line"] == 12
    assert api.parse_job_args(config, ["--momentum", "0.5"]) == ({"--momentum": 0.5}, [])
    assert config["summary"]["allowed"] == ["--lr", "--momentum"]  # not --warmup: the client script ignores it
    assert "--val_ratio" in config["data_shaping"]["fixed"]


FILLED_IN_A_LOOP = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
clients = []
for name in ["site-1", "site-2", "site-3", "site-4"][: args.n_clients]:
    clients.append(name)
plan = {"rounds": 1}
plan["rounds"] = args.num_rounds
recipe = NumpyFedAvgRecipe(
    name="filled", model=[0.0], min_clients=len(clients), num_rounds=plan["rounds"], train_script="client.py"
)
recipe.execute(SimEnv(clients=clients))
"""


READ_THROUGH_METHODS = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
names = ",".join(["site-1", "site-2", "site-3", "site-4"][: args.n_clients]).split(",")
plan = {"rounds": args.num_rounds}
recipe = NumpyFedAvgRecipe(
    name="methods", model=[0.0], min_clients=len(names), num_rounds=plan.get("rounds", 2), train_script="client.py"
)
recipe.execute(SimEnv(clients=names))
"""


REBOUND_BY_GLOBAL = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
rounds = 1
def configure():
    global rounds
    rounds = args.num_rounds
configure()
recipe = NumpyFedAvgRecipe(name="global", model=[0.0], min_clients=args.n_clients, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


BOUND_BY_WALRUS = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
rounds = 1
print(rounds := args.num_rounds)
recipe = NumpyFedAvgRecipe(name="walrus", model=[0.0], min_clients=args.n_clients, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


CONFIGURED_SITES = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(name="sites", model=[0.0], min_clients=args.n_clients, num_rounds=args.num_rounds, train_script="client.py")
recipe.set_per_site_config({f"site-{i + 1}": {} for i in range(args.n_clients)})
recipe.execute(SimEnv(clients=recipe.configured_sites()))
"""


BUILT_BY_BUILTINS = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
sites = [f"site-{i + 1}" for i in range(args.n_clients)]
rounds = int(str(args.num_rounds))
recipe = NumpyFedAvgRecipe(
    name="built", model=[0.0], min_clients=len(sites), num_rounds=max(rounds, 1), train_script="client.py"
)
recipe.execute(SimEnv(clients=sites))
"""


FEDJOB_LOOP = """import argparse
import os

from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=4)  # FedAvg's default 5: see ..._default_rounds_records_them
args = parser.parse_args()
job = FedJob(name="loop", min_clients=args.n_clients)
job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds))
for i in range(int(args.n_clients)):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/autofl-fedjob-loop"))
"""


@pytest.mark.parametrize(
    ("source", "static_refusal", "rounds"),
    [
        # builtins (`len`, `range`, `int`, `str`, `max`) and comprehensions: refused naming the line of the call
        (BUILT_BY_BUILTINS, "a comprehension at line 10 is not evaluated statically", 5),
        # a FedJob's sites added in a loop over range() of a value a builtin computes: refused naming the line
        (FEDJOB_LOOP, "int() at line 14 is not evaluated statically", 4),
        # methods of data values (`str.join`, `str.split`, `dict.get`): refused naming the line of the call
        (READ_THROUGH_METHODS, ".join() at line 10 is not evaluated statically", 5),
        # containers changed in place (a list appended to in a loop, a dict item set): refused naming the change
        (FILLED_IN_A_LOOP, ".append() at line 12 changes a container in place", 5),
        # `global` and `:=` anywhere in job.py: refused naming the first line that uses one
        (REBOUND_BY_GLOBAL, "job.py uses `global` at line 12, which the static reading does not follow", 5),
        (BOUND_BY_WALRUS, "job.py uses `:=` at line 11, which the static reading does not follow", 5),
        # a recipe's configured sites: refused naming the line of the call
        (CONFIGURED_SITES, "result of NumpyFedAvgRecipe.configured_sites() at line 12", 5),
    ],
    ids=[
        "builtins-and-comprehensions",
        "fedjob-loop",
        "data-methods",
        "filled-in-a-loop",
        "global",
        "walrus",
        "configured-sites",
    ],
)
def test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run(tmp_path, source, static_refusal, rounds):
    """The static reading refuses, naming the line; the run records the sites and rounds NVFLARE was given, and
    the perturbed runs find the options that decide them."""
    (tmp_path / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    static = api.import_job(tmp_path / "job.py")
    assert static_refusal in static["admission_errors"][0]["message"]
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["admission_errors"] == [] and config["import"]["dry_run"]["status"] == "recorded"
    assert budget(config) == {
        "num_clients": (3, ["--n_clients"]),
        "min_clients": (3, ["--n_clients"]),
        "num_rounds": (rounds, ["--num_rounds"]),
    }


def test_a_training_job_whose_run_raises_in_nvflare_is_refused_naming_its_line(tmp_path):
    """The static reading cannot pin the budget (it evaluates no builtin) and the run raises inside NVFLARE
    (2.9's recipe needs a model): refused, naming the job.py line the raise came from and NVFLARE's message.
    A raise the run cannot settle (stand-ins) adds it to the reading's refusal: test_importer_corpus.py::
    test_a_refusal_names_the_line_the_reading_cannot_pin_and_the_run_s_raise."""
    (tmp_path / "job.py").write_text(BUILT_BY_BUILTINS.replace("model=[0.0], ", ""), encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised"
    [error] = config["admission_errors"]
    assert "running job.py raises at job.py line 12" in error["message"] and "model source" in error["message"]


def test_a_file_relative_train_script_is_recorded_by_the_run(tmp_path):
    """`os.path.*` is not evaluated statically; the run records the absolute script path NVFLARE was given and the
    trust contract holds it relative to the job's folder."""
    source = READ_THROUGH_METHODS.replace(
        'train_script="client.py"',
        'train_script=os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "client.py")',
    ).replace("import argparse\n", "import argparse\nimport os\n")
    (tmp_path / "job.py").write_text(source, encoding="utf-8")
    (tmp_path / "src").mkdir()
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "src" / "client.py")
    assert api.import_job(tmp_path / "job.py")["trust"]["train_script"] is None
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["trust"]["train_script"] == "src/client.py"
    assert "src/client.py" in config["trust"]["allowed_edit_paths"]

    assert set(contract.budget_args(config)) >= {"--n_clients", "--num_rounds"}


def absent(*modules: str) -> None:
    """Skip where one of `modules` is installed (nothing would be stood in)."""
    for name in modules:
        if importlib.util.find_spec(name) is not None:
            pytest.skip(f"{name} is installed here: nothing is stood in")


def test_a_model_derived_from_an_absent_framework_is_an_object_to_nvflare_and_absent_to_the_job(tmp_path):
    """NVFLARE refuses an object it tests false (`if not obj: cannot add empty object to job`, FedOpt's
    `job.to_server(model)`) and asks any object for its Job API hooks (`getattr(obj, "get_job_target_type", None)`):
    a stand-in is truthy and has no hooks when NVFLARE asks, while job.py's own tests still see an absent framework
    (no GPU) and its attributes (the job asserts them, so a wrong answer makes the run raise)."""
    absent("torch")
    path = write_job(
        tmp_path / "fedopt",
        "import argparse\n"
        "import torch\n"
        "from nvflare.app_opt.pt.recipes.fedopt import FedOptRecipe\n"
        "from nvflare.recipe import SimEnv\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    pass\n\n\n"
        "assert not torch.cuda.is_available() and not Net()\n"
        "assert Net().get_job_target_type is not None\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--num_rounds', type=int, default=4)\n"
        "args = parser.parse_args()\n"
        "recipe = FedOptRecipe(name='opt', num_rounds=args.num_rounds, min_clients=2, model=Net(),"
        " train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=2))\n",
    )
    config = api.import_job(path, dry_run=True)
    record = config["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert record["nvflare_class"] == "nvflare.app_opt.pt.recipes.fedopt.FedOptRecipe"
    assert record["budget"] == {"num_rounds": 4, "min_clients": 2, "num_clients": 2}
    assert config["admission_errors"] == []


def test_stand_in_classes_accept_each_other_s_instances_and_nothing_else(tmp_path):
    """A model from one absent module (torch_geometric) is an instance of another absent module's class
    (torch.nn.Module), as NVFLARE's PyTorch recipe checks; real classes and the job's own classes keep Python's
    answer (the job asserts them, so a wrong one makes the run raise)."""
    absent("torch", "torch_geometric")
    path = write_job(
        tmp_path / "gnn",
        "import torch\n"
        "import torch_geometric\n"
        "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    pass\n\n\n"
        "class Plain:\n"
        "    pass\n\n\n"
        "model = torch_geometric.nn.GraphSAGE(in_channels=8, hidden_channels=4, num_layers=2)\n"
        "assert isinstance(model, torch.nn.Module) and issubclass(torch_geometric.nn.GraphSAGE, torch.nn.Module)\n"
        "assert isinstance(Net(), torch.nn.Module) and not isinstance(model, Net)\n"
        "assert not isinstance(Plain(), torch.nn.Module) and not issubclass(Plain, torch.nn.Module)\n"
        "assert not isinstance(model, (int, dict, Plain)) and not issubclass(torch.nn.Module, Plain)\n"
        "recipe = FedAvgRecipe(name='gnn', model=model, min_clients=2, num_rounds=6, train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=2))\n",
    )
    record = api.import_job(path, dry_run=True)["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert {"torch", "torch_geometric"} <= set(record["stubbed"])
    assert record["budget"] == {"num_rounds": 6, "min_clients": 2, "num_clients": 2}


def test_a_model_derived_from_an_absent_framework_gets_its_constructor_arguments(tmp_path):
    """The job's own class derived from a stand-in runs its `__init__` with the arguments job.py passes (before:
    with none, so `Net(8)` raised "missing 'width'" and the run settled nothing); a stand-in itself takes any."""
    absent("torch")
    path = write_job(
        tmp_path / "args",
        "import torch.nn as nn\n"
        "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, width, *, depth=1):\n"
        "        super().__init__()\n"
        "        assert (width, depth) == (8, 3)\n"
        "        self.fc = nn.Linear(width, 2, bias=False)\n\n\n"
        "recipe = FedAvgRecipe(name='a', model=Net(8, depth=3), min_clients=3, num_rounds=2, train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=3))\n",
    )
    record = api.import_job(path, dry_run=True)["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert record["budget"] == {"num_rounds": 2, "min_clients": 3, "num_clients": 3}


TRACKED = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv, add_experiment_tracking

parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=5)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="tracked", model=[0.0], min_clients=2, num_rounds=args.num_rounds, train_script="client.py"
)
add_experiment_tracking(recipe, tracking_type="mlflow")
recipe.execute(SimEnv(num_clients=2))
"""


def test_a_module_nvflare_looks_for_is_stood_in_only_when_the_run_needs_it(tmp_path):
    """`add_experiment_tracking(recipe, "mlflow")` raises where mlflow is absent: the run is made again with the
    modules NVFLARE looked for stood in (named in `stubbed`). The trial itself never sees them: the same job run
    as plain Python still lacks mlflow."""
    absent("mlflow")
    path = write_job(tmp_path / "tracked", TRACKED)
    config = api.import_job(path, dry_run=True)
    record = config["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert "mlflow" in record["stubbed"]
    assert record["budget"] == {"num_rounds": 5, "min_clients": 2, "num_clients": 2}
    assert config["admission_errors"] == []
    plain = subprocess.run(
        [sys.executable, "-I", str(path)], cwd=path.parent, capture_output=True, text=True, timeout=120, check=False
    )
    assert plain.returncode != 0 and "mlflow is not installed" in plain.stderr


def test_a_run_that_records_never_gets_nvflare_s_optional_modules_stood_in(tmp_path):
    """NVFLARE's own optional import of an absent module, in a run that records, keeps its real answer: the record
    is the one without stand-ins (the budget the job picks when the module is missing), and the module is not
    named in `stubbed`."""
    path = write_job(
        tmp_path / "optional",
        "from nvflare.app_common.np.recipes import NumpyFedAvgRecipe\n"
        "from nvflare.fuel.utils.import_utils import optional_import\n"
        "from nvflare.recipe import SimEnv\n\n"
        "_, found = optional_import('autofl_absent_module')\n"
        "rounds = 7 if found else 3\n"
        "recipe = NumpyFedAvgRecipe(name='opt', model=[0.0], min_clients=2, num_rounds=rounds,"
        " train_script='client.py')\n"
        "recipe.execute(SimEnv(num_clients=2))\n",
    )
    record = api.import_job(path, dry_run=True)["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert record["budget"]["num_rounds"] == 3
    assert "autofl_absent_module" not in record["stubbed"]


def test_a_shell_script_the_job_ships_is_in_the_cache_key(tmp_path):
    """NVFLARE copies a script named in `job.to("client_wrapper.sh", site)` and raises where it is missing, so a
    `.sh` file decides the record as much as a `.py` file does."""
    path = write_job(tmp_path / "wrapped", TRACKED)
    before = dryrun.job_digest(path.parent, None, [], "python")
    (path.parent / "client_wrapper.sh").write_text('exec python3 -u "$@"\n')
    assert dryrun.job_digest(path.parent, None, [], "python") != before


EXPORT_THEN_RUN = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(name="both", model=[0.0], min_clients=2, num_rounds=4, train_script="client.py")
recipe._job.export_job("/tmp/exported")
AFTER_EXPORT
"""


@pytest.mark.parametrize(
    ("after", "entry", "num_clients"),
    [
        ("recipe.execute(SimEnv(num_clients=args.n_clients))", "simulator_run", 3),
        ("raise RuntimeError('no startup kit')", "export_job", None),
    ],
    ids=["then-runs", "then-raises"],
)
def test_a_job_that_exports_its_job_first_is_recorded_where_it_runs(tmp_path, after, entry, num_clients):
    """An export is not where job.py ends: the run goes on to the simulation it starts next (the sites it runs and
    the recipe built around the exported FedJob are recorded); where nothing after the export records, the export
    stands, as when the export was the last thing job.py asked NVFLARE for."""
    path = write_job(tmp_path / "export_first", EXPORT_THEN_RUN.replace("AFTER_EXPORT", after))
    config = api.import_job(path, dry_run=True)
    record = config["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert record["entry"] == entry
    assert record["nvflare_class"] == "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"
    assert record["budget"] == {"num_rounds": 4, "min_clients": 2, "num_clients": num_clients}


BUILT_IN_A_RECURSIVE_HELPER = """import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def build(args, depth):
    if depth:
        return build(args, depth - 1)  # the reading gives up on a recursive call: it sees no recipe at all
    recipe = NumpyFedAvgRecipe(
        name="helper", model=[0.0], min_clients=args.n_clients, num_rounds=ROUNDS, train_script="client.py"
    )
    recipe.execute(SimEnv(num_clients=args.n_clients))


parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
parser.add_argument("--num_rounds", type=int, default=4)
build(parser.parse_args(), 2)
"""


@pytest.mark.parametrize(
    ("rounds", "admitted"),
    [("args.num_rounds", True), ('int(os.environ.get("ROUNDS", "4"))', False)],
    ids=["options", "environment"],
)
def test_a_recorded_job_the_reading_cannot_follow_is_admitted_pinned_unless_the_environment_moves_it(
    tmp_path, rounds, admitted
):
    """Everything is built inside a helper the static reading gives up on (it refuses, seeing no recipe); the run
    is the source: its budget is admitted with the options that move it, and a budget an environment variable
    moves (found by one run with the variables job.py read changed) is refused, naming the variable."""
    (tmp_path / "job.py").write_text(BUILT_IN_A_RECURSIVE_HELPER.replace("ROUNDS,", f"{rounds},"), encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    static = api.import_job(tmp_path / "job.py")
    assert static["admission_errors"] and static["job"]["nvflare_class"] is None, "precondition: nothing read"
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    if admitted:
        assert config["admission_errors"] == []
        assert budget(config) == {
            "num_clients": (3, ["--n_clients"]),
            "min_clients": (3, ["--n_clients"]),
            "num_rounds": (4, ["--num_rounds"]),
        }
        assert config["job"]["nvflare_class"] == "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"
        assert config["trust"]["train_script"] == "client.py"
    else:
        assert config["fixed_budget"]["num_rounds"]["value"] is None
        assert any("environment variable ROUNDS" in e["message"] for e in config["admission_errors"])


def test_a_fedjob_controller_given_nvflare_s_default_rounds_records_them(tmp_path):
    """`FedAvg(num_rounds=5)` equals FedAvg's default, which NVFLARE's export leaves out: the boot exports the
    controller's effective value, so the record holds 5 rounds."""
    (tmp_path / "job.py").write_text(FEDJOB_LOOP.replace("default=4", "default=5"), encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    record = dry_run(tmp_path / "job.py", [])
    assert record.status == "recorded"
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["admission_errors"] == []
    assert budget(config)["num_rounds"] == (5, ["--num_rounds"]), (budget(config), config["fixed_budget"])
    assert config["fixed_budget"]["num_rounds"]["source"] == "dry run: the exported job's num_rounds"


FEDJOB_N_CLIENTS = """import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=3)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(name="n", model=[0.0], min_clients=args.n_clients, num_rounds=2, train_script="client.py")
root = os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/autofl-n")
recipe._job.simulator_run(root, n_clients=args.n_clients)  # NVFLARE passes on 0 clients: it names no site
"""


def test_a_fedjob_simulation_given_n_clients_records_that_many_clients(tmp_path):
    (tmp_path / "job.py").write_text(FEDJOB_N_CLIENTS, encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    record = dry_run(tmp_path / "job.py", [])
    assert record.status == "recorded" and record.n_clients == 3 and record.clients == (), record
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["admission_errors"] == []
    assert budget(config)["num_clients"] == (3, ["--n_clients"])


ALIAS_AFTER_EARLY_PARSE = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def build(depth):
    if depth > 0:
        return build(depth - 1)  # with HIDDEN, the reading gives up here: it sees no parser at all
    parser = argparse.ArgumentParser()
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    early, _ = parser.parse_known_args()
    parser.add_argument("-r", type=int, dest="num_rounds", default=3)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="alias",
        model=[0.0, 0.0],
        min_clients=args.n_clients,
        num_rounds=early.num_rounds,
        train_script="client.py",
        train_args=f"--lr {args.lr} --num_rounds {args.num_rounds}",
    )
    recipe.execute(SimEnv(num_clients=args.n_clients))


build(DEPTH)
"""
ALIAS_CLIENT = (
    "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float)\n"
    "parser.add_argument('--num_rounds', type=int)\nparser.parse_args()\n"
)


@pytest.mark.parametrize("depth", [0, 2], ids=["read", "hidden"])
def test_an_option_sharing_the_budget_option_s_dest_is_never_suggested_after_a_run(tmp_path, depth):
    """`-r` writes num_rounds, which --num_rounds pins (the runner refuses it): the run shows its value reaching the
    client script, yet it is not offered for tuning, whether the reading saw the parser or only the run did."""
    (tmp_path / "job.py").write_text(ALIAS_AFTER_EARLY_PARSE.replace("DEPTH", str(depth)), encoding="utf-8")
    (tmp_path / "client.py").write_text(ALIAS_CLIENT, encoding="utf-8")
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["admission_errors"] == []
    assert config["fixed_budget"]["num_rounds"]["depends_on"] == ["--num_rounds"]
    assert "-r" in api.fixed_budget_options(config)  # the runner refuses a candidate that sets it
    assert [s["flag"] for s in config["search_space"]["suggested"]] == ["--lr"]


METRIC_SET_AT_RUN_TIME = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv
from tuning import tune  # a helper of another module: only a run sees what it sets


def define_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--metric", default="val_loss")
    parser.add_argument("--mode", default=None)
    return parser.parse_args()


args = define_parser()
tune(args)
recipe = NumpyFedAvgRecipe(
    name="direction",
    model=[0.0, 0.0],
    min_clients=args.n_clients,
    num_rounds=args.num_rounds,
    train_script="client.py",
    key_metric=args.metric,
    key_metric_mode=args.mode,
)
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


@pytest.mark.parametrize(
    ("tune", "objective", "refused_for"),
    [
        ('object.__setattr__(namespace, "met" + "ric", "accuracy")', ("accuracy", "max"), None),
        ('object.__setattr__(namespace, "mo" + "de", "min")', ("val_loss", "min"), None),
        ('object.__setattr__(namespace, "met" + "ric", "train_loss")', ("train_loss", "max"), "train_loss"),
        ("pass", ("val_loss", "max"), "val_loss"),
    ],
    ids=["another-metric", "explicit-min", "another-lower-is-better-metric", "as-read"],
)
def test_a_direction_conflict_is_judged_on_the_metric_the_run_recorded(tmp_path, tune, objective, refused_for):
    """The reading refuses the options given to `tune()` (not followed); the run may record `val_loss` with NVFLARE's
    implicit max (a direction conflict), another key metric or an explicit mode. The fold judges what the run recorded: admitted when that has no conflict, refused
    naming the recorded metric (never the one the run no longer uses) when it has."""
    (tmp_path / "job.py").write_text(METRIC_SET_AT_RUN_TIME, encoding="utf-8")
    (tmp_path / "tuning.py").write_text(f"def tune(namespace):\n    {tune}\n", encoding="utf-8")
    shutil.copy(JOBS / "hidden_rounds" / "client.py", tmp_path / "client.py")
    static = api.import_job(tmp_path / "job.py")  # the reading does not follow tune(): it pins nothing
    assert "given to tune() at line 18" in static["fixed_budget"]["num_rounds"]["reason"], "precondition"
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert (config["objective"]["metric"], config["objective"]["mode"]) == objective
    if refused_for is None:
        assert config["admission_errors"] == []
    else:
        errors = config["admission_errors"]
        assert [e["code"] for e in errors] == ["AUTOFL_METRIC_DIRECTION_CONFLICT"], errors
        assert errors[0]["message"].startswith(f"'{refused_for}' looks lower-is-better")


SWITCHES = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--fast", action="store_true")
parser.add_argument("--slow", action="store_false")
parser.add_argument("--level", action="store_const", const=5)
parser.add_argument("-v", "--verbose", action="count")
parser.add_argument("--early", action=argparse.BooleanOptionalAction, default=True)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(name="s", model=[0.0], min_clients=args.n_clients, num_rounds=2, train_script="client.py")
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


def test_the_static_reading_records_a_switch_as_the_run_s_parser_does(tmp_path):
    """argparse gives store_true/store_false their const and default itself: the static Flag of every switch kind
    is the one the dry run records (its line aside, which the run does not know)."""
    (tmp_path / "job.py").write_text(SWITCHES, encoding="utf-8")
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "client.py")
    static = {f["dest"]: f for f in api.import_job(tmp_path / "job.py")["argparse"]["flags"]}
    record = dry_run(tmp_path / "job.py", [])
    assert record.status == "recorded", record
    for flag in recorded.options(record):
        assert static[flag.dest] == {**flag.to_dict(), "line": static[flag.dest]["line"]}, flag.dest
    assert static["fast"]["const"] is True and static["slow"]["const"] is False


FEDAVG_WORKFLOW = """\
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

job = FedJob(name="demo")
job.to_server(FedAvg(num_clients=SITES, num_rounds=2))
for i in range(SITES):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run("/tmp/nvflare/demo")
"""


@pytest.mark.parametrize("sites", [3, 4])
def test_a_workflow_s_client_count_equal_to_its_default_is_the_recorded_min_clients(tmp_path, sites):
    """NVFLARE leaves an argument equal to its default out of the exported config (FedAvg's num_clients defaults
    to 3): the run still records the count the workflow waits for, as the static reading does, not meta.json's."""
    path = write_job(tmp_path / "fedavg", FEDAVG_WORKFLOW.replace("SITES", str(sites)))
    static = api.import_job(path)
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["import"]["dry_run"]["budget"] == {"num_rounds": 2, "min_clients": sites, "num_clients": sites}
    assert config["fixed_budget"]["min_clients"]["value"] == static["fixed_budget"]["min_clients"]["value"] == sites
    assert "corrected" not in config["import"]["dry_run"]


OTHER_VERSION = """\
import absent_helpers_h13
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

IMPORT


def own(rounds):
    return rounds


recipe = NumpyFedAvgRecipe(name="d", min_clients=2, num_rounds=own(ROUNDS), model=[0.0], train_script="client.py"ARG)
recipe.execute(SimEnv(num_clients=2))
"""


@pytest.mark.parametrize(
    ("imports", "rounds", "arg", "line", "lacks"),
    [
        ("from nvflare import FedAvg", "3", "", 5, "NVFLARE {v} has no nvflare.FedAvg"),
        ("import nvflare.fox.api", "3", "", 5, "NVFLARE {v} has no nvflare.fox"),
        ("", "3", ", initial_weights=[0.0]", 12, "NVFLARE {v} has no nvflare.app_common.np.recipes.fedavg.Numpy"),
    ],
)
def test_a_job_written_for_another_nvflare_version_is_refused_even_with_stand_ins(
    tmp_path, imports, rounds, arg, line, lacks
):
    """The static reading admits it, but running it raises on job.py's own line asking NVFLARE for a name it lacks
    or passing an argument it does not take: refused naming the line, whatever was stood in (here a helper)."""
    source = OTHER_VERSION.replace("IMPORT", imports).replace("ROUNDS", rounds).replace("ARG", arg)
    path = write_job(tmp_path / "other", source)
    assert api.import_job(path)["admission_errors"] == [], "precondition: the static reading admits it"
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised"
    assert "absent_helpers_h13" in config["import"]["dry_run"]["stubbed"]
    [error] = config["admission_errors"]
    version = importlib.metadata.version("nvflare")
    assert f"running job.py raises at job.py line {line} " in error["message"]
    assert lacks.format(v=version) in error["message"] and "written for another NVFLARE version" in error["message"]
    assert "install what is missing" not in error["message"]


def test_an_attribute_of_another_nvflare_version_is_refused_naming_it(tmp_path):
    """`recipe.job` (NVFLARE 2.7/2.8's Recipe attribute; 2.9's recipes keep `_job`) raises AttributeError on job.py's
    own line: refused as another version's API, naming the attribute, not as something to install."""
    source = OTHER_VERSION.replace("IMPORT", "").replace("ROUNDS", "3").replace("ARG", "")
    source = source.replace("recipe.execute(", "recipe.job.to_clients('run.sh')\nrecipe.execute(")
    config = api.import_job(write_job(tmp_path / "attr", source), dry_run=True)
    [error] = config["admission_errors"]
    version = importlib.metadata.version("nvflare")
    assert "running job.py raises at job.py line 13 " in error["message"]
    assert f"NVFLARE {version} has no nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe.job" in error["message"]
    assert "written for another NVFLARE version" in error["message"]


def test_an_attribute_error_on_job_py_s_own_object_is_not_another_version(tmp_path):
    source = OTHER_VERSION.replace("IMPORT", "").replace("ROUNDS", "3").replace("ARG", "")
    source = source.replace("def own(rounds):", "def own(rounds):\n    own.cache.clear()")
    config = api.import_job(write_job(tmp_path / "own", source), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised", config["import"]["dry_run"]
    assert "AttributeError" in config["import"]["dry_run"]["reason"]
    assert "another NVFLARE version" not in config["import"]["dry_run"]["reason"]


@pytest.mark.parametrize("absent_package", [True, False])
def test_a_job_that_reaches_no_run_names_the_package_stood_in(tmp_path, absent_package):
    """A job that runs NVFLARE only through a package not installed here (a user's FedJob subclass) reaches no run
    with it stood in: the refusal says so and what to do; with nothing stood in, nothing is added."""
    imports = "from medsync_h14 import MedSyncFedJob\n" if absent_package else "MedSyncFedJob = dict\n"
    source = "import nvflare\n" + imports + "job = MedSyncFedJob(n_clients=5, num_rounds=5)\nprint(job)\n"
    config = api.import_job(write_job(tmp_path / "pkg", source), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "no_run"
    [error] = config["admission_errors"]
    assert error["message"].startswith("job.py is not supported: no recognizable NVFLARE recipe or FedJob")
    said = "(and running job.py reaches no NVFLARE run with medsync_h14 stood in (not installed here); install"
    assert (said in error["message"]) is absent_package
    assert ("(and " in error["message"]) is absent_package


def test_a_type_error_in_job_py_s_own_code_refuses_nothing_the_reading_admits(tmp_path):
    path = write_job(tmp_path / "own", OTHER_VERSION.replace("IMPORT", "").replace("ROUNDS", "3, 4").replace("ARG", ""))
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "raised" and "own() takes" in config["import"]["dry_run"]["reason"]
    assert config["admission_errors"] == []


def test_a_train_script_the_run_records_outside_the_job_folder_is_refused(tmp_path):
    """The static reading cannot evaluate `os.path.*`; the run records a script above job.py's folder, which no
    candidate may edit: refused naming it, not admitted with no train script in the trust contract."""
    source = READ_THROUGH_METHODS.replace(
        'train_script="client.py"',
        'train_script=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared", "client.py")',
    ).replace("import argparse\n", "import argparse\nimport os\n")
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "job.py").write_text(source, encoding="utf-8")
    (tmp_path / "shared").mkdir()
    shutil.copy(JOBS / "computed_budget" / "client.py", tmp_path / "shared" / "client.py")
    config = api.import_job(tmp_path / "job" / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    [error] = config["admission_errors"]
    assert error["code"] == "AUTOFL_UNSUPPORTED_JOB"
    assert f"the train script '{tmp_path}/job/../shared/client.py' is an absolute path outside" in error["message"]
    assert config["trust"]["allowed_edit_paths"] == ["job.py"]


@pytest.mark.parametrize("sites", ["['site-a', 'site-b', 'site-c']", "sorted({'site-a', 'site-b', 'site-c'})"])
def test_a_stand_in_unpacks_into_as_many_values_and_is_a_path_that_does_not_exist(tmp_path, sites):
    """A stand-in for an absent helper module gets past unpacking (`a, b = helper()`, `a, *rest, b = ...`), a
    subscript and `os.fspath` (`Path(x)`, `os.path.join(x, ...)`, naming no file), so the run reaches NVFLARE. Its
    path is outside the job's folder: a budget the static reading leaves to the run (`sorted()`) is not pinned by a
    run that tested it (with the module installed the path may exist)."""
    count = "3" if sites.startswith("[") else "len(sites)"  # the static reading pins the budget, or leaves it
    path = write_job(
        tmp_path / "unpack",
        "import os\n"
        "from pathlib import Path\n\n"
        "from absent_splits_h13 import make_splits\n"
        "from nvflare.app_common.np.recipes import NumpyFedAvgRecipe\n"
        "from nvflare.recipe import SimEnv\n\n"
        f"sites = {sites}\n"
        "train_parts, test_part = make_splits(len(sites))\n"
        "first, *rest, last = make_splits(2)\n"
        "data = Path(train_parts[0]) / 'x'\n"
        "assert not os.path.exists(os.path.join(test_part, 'y')) and not data.exists()\n"
        f"recipe = NumpyFedAvgRecipe(name='d', min_clients={count}, num_rounds=3, model=[0.0],"
        " train_script='client.py')\n"
        "recipe.execute(SimEnv(clients=sites))\n",
    )
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["import"]["dry_run"]["stubbed"] == ["absent_splits_h13"]
    assert config["import"]["dry_run"]["budget"] == {"num_rounds": 3, "min_clients": 3, "num_clients": 3}
    if sites.startswith("["):
        assert config["admission_errors"] == []
    else:
        said = " ".join(e["message"] for e in config["admission_errors"])
        assert "num_clients is unresolved" in said and "/nonexistent/stand-in/absent_splits_h13" in said, said
