"""Malformed and hostile job.py sources: always a config with a clear verdict, never an exception."""

import json

import pytest
from autofl_core.importer import api

RECIPE = "from nvflare.recipe import SimEnv\nfrom nvflare.app_common.np.recipes import NumpyFedAvgRecipe as R\n"


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("", "no recognizable NVFLARE recipe"),
        ("x = 1\x00\n", "cannot contain null bytes"),
        ("x = " + "(" * 150 + "1" + ")" * 150 + "\n", "no recognizable"),
        ("def f():\n    return f()\nf()\n", "no recognizable"),
        ("\n".join(f"a{i} = {i}" for i in range(51_000)), "too complex to follow statically"),
        ("class R:\n    pass\n" + "R().execute(SimEnv())\n", "no recognizable"),
        ("x = 'a' * 10**12\n", "no recognizable"),
        ("x = " + "-" * 100_000 + "1\n", "cannot be parsed"),
    ],
)
def test_hostile_sources_fail_closed(source, fragment):
    config = api.import_source(source)
    assert config["import"]["support"]["status"] == "unsupported"
    assert fragment in config["import"]["support"]["reason"]
    json.dumps(config, allow_nan=False)


def test_a_file_relative_train_script_is_left_to_the_run():
    """`os.path.join(os.path.dirname(__file__), ...)` is not evaluated statically: the static trust contract names
    no train script (test_importer_dryrun.py::test_a_file_relative_train_script_is_recorded_by_the_run)."""
    source = RECIPE + (
        "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
        "r = R(min_clients=2, num_rounds=3, train_script=os.path.join(HERE, 'src', 'client.py'))\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source, read_file={"src/client.py": "import numpy\n"}.get)
    assert config["recipe_args"]["train_script"]["confidence"] == "unresolved"
    assert (config["trust"]["train_script"], config["trust"]["allowed_edit_paths"]) == (None, ["job.py"])


def test_parse_args_with_a_fixed_list_ignores_the_command_line():
    source = RECIPE + (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--r', type=int, default=1)\n"
        "a = p.parse_args(['--r', '4'])\n"
        "R(min_clients=2, num_rounds=a.r, train_script='c.py').execute(SimEnv(num_clients=2))\n"
    )
    assert api.import_source(source, base_args=["--r", "9"])["fixed_budget"]["num_rounds"]["value"] == 4


def test_non_finite_values_stay_json_serializable():
    source = RECIPE + (
        "r = R(min_clients=2, num_rounds=3, train_script='c.py', aggregation_weights={'a': 1e999})\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source)
    assert config["recipe_args"]["aggregation_weights"]["value"] == {"a": "inf"}
    json.dumps(config, allow_nan=False)


@pytest.mark.parametrize(
    "schema_text",
    [
        "mutable_args: {1: {type: int}}\n",
        "mutable_args: {lr: {type: float, choices: [.nan]}}\n",
        "objective: &a {mode: *a}\n",
        "preferred_targets: [2024-01-01]\n",
        "objective: [unclosed\n",
        "- just a list\n",
    ],
)
def test_hostile_schemas_are_reported_not_raised(schema_text):
    source = RECIPE + "R(min_clients=2, num_rounds=3, train_script='c.py').execute(SimEnv(num_clients=2))\n"
    config = api.import_source(source, schema_text=schema_text)
    assert config["schema"]["errors"]
    assert config["admission_errors"][0]["code"] == "AUTOFL_INVALID_MUTATION_SCHEMA"
    json.dumps(config, allow_nan=False)


def test_recipe_run_inside_a_loop_fails_closed():
    source = RECIPE + (
        "for lr in [0.1, 0.01]:\n"
        "    r = R(min_clients=2, num_rounds=3, train_script='c.py', train_args=f'--lr {lr}')\n"
        "    r.execute(SimEnv(num_clients=2))\n"
    )
    reason = api.import_source(source)["import"]["support"]["reason"]
    assert "inside a loop (line 4)" in reason


def test_loop_that_only_attaches_components_is_fine():
    source = (
        "from nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
        "from nvflare.job_config.script_runner import ScriptRunner\n"
        "job = FedJob(name='j')\njob.to_server(FedAvg(num_clients=2, num_rounds=3))\n"
        "for i in [1, 2]:\n    job.to(ScriptRunner(script='client.py'), f'site-{i}')\n"
        "import os\njob.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/tmp/w'))\n"
    )
    config = api.import_source(source, read_file={"client.py": ""}.get)
    assert config["import"]["support"]["status"] == "supported"
    assert config["trust"]["train_script"] == "client.py"
    assert config["fixed_budget"]["num_clients"]["value"] == 2 and config["admission_errors"] == []


@pytest.mark.parametrize("use", ['text = f"{p}"', "text = str(p)", "text = repr(p) + str(len(p.prog))"])
def test_a_parser_used_as_a_value_is_no_crash(use):
    source = f"""import argparse
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

p = argparse.ArgumentParser()
p.add_argument("--num_rounds", type=int, default=3)
{use}
args = p.parse_args()
recipe = NumpyFedAvgRecipe(name="x", model=[0.0], min_clients=2, num_rounds=args.num_rounds, train_script="c.py")
recipe.execute(SimEnv(num_clients=2))
"""
    config = api.import_source(source)
    assert config["admission_errors"] == []
    assert config["fixed_budget"]["num_rounds"]["value"] == 3
