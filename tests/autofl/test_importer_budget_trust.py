"""Fixed budget, trust contract and mutation_schema.yaml handling."""

from pathlib import Path

import pytest
from autofl_core.importer import api
from autofl_core.importer.schema import validate_schema
from autofl_core.importer.trust import safe_relative

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jobs"


def imported(case: str, **kwargs) -> dict:
    return api.import_job(FIXTURES / case / "job.py", **kwargs)


def budget_values(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in ("num_clients", "min_clients", "num_rounds")}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("hello_numpy", {"num_clients": 2, "min_clients": 2, "num_rounds": 3}),
        ("pt_fedprox", {"num_clients": 3, "min_clients": 3, "num_rounds": 5}),
        ("pt_cyclic", {"num_clients": 3, "min_clients": 2, "num_rounds": 4}),
        ("sklearn_recipe", {"num_clients": 3, "min_clients": 3, "num_rounds": 2}),
        ("poc_env", {"num_clients": 2, "min_clients": 2, "num_rounds": 5}),
        ("fedjob_simulator", {"num_clients": 2, "min_clients": 2, "num_rounds": 4}),
        ("fedjob_to_clients", {"num_clients": 3, "min_clients": 3, "num_rounds": 2}),
    ],
)
def test_budget_values(case, expected):
    assert budget_values(imported(case)) == expected


def test_budget_sources_record_defaults_and_flags():
    cyclic = imported("pt_cyclic")["fixed_budget"]
    assert cyclic["min_clients"] == {
        "confidence": "medium",
        "flag": None,
        "source": "CyclicRecipe default",
        "value": 2,
        "depends_on": [],
        "note": "recipe default, nvflare 2.9.0",
    }
    assert cyclic["num_clients"]["source"] == "SimEnv(clients=[...])"
    hello = imported("hello_numpy")["fixed_budget"]
    assert hello["num_clients"]["flag"] == "--n_clients" and hello["num_rounds"]["flag"] == "--num_rounds"


def test_prod_and_export_have_no_simulated_client_count():
    for case in ("prod_env", "export_only"):
        entry = imported(case)["fixed_budget"]["num_clients"]
        assert entry["confidence"] == "not_applicable" and entry["value"] is None


def test_dynamic_num_rounds_is_unresolved_and_safety_critical():
    config = imported("num_rounds_dynamic")
    entry = config["fixed_budget"]["num_rounds"]
    assert entry["confidence"] == "unresolved" and entry["value"] is None
    assert "fixed_budget.num_rounds" in config["summary"]["unresolved"]
    assert config["admission_errors"][0]["code"] == "AUTOFL_UNRESOLVED_SAFETY_FIELD"


def test_trust_contract_with_local_modules_of_job_and_client():
    trust = imported("trust_local_modules")["trust"]
    assert trust["train_script"] == "src/client.py"
    assert trust["allowed_edit_paths"] == [
        "job.py",
        "job_helpers.py",
        "src/client.py",
        "src/local_peer.py",
        "src/model.py",
        "src/utils/__init__.py",
        "src/utils/data.py",
    ]
    assert "src/unrelated.py" not in trust["allowed_edit_paths"]
    assert trust["allowed_create_patterns"] == ["**/*.py"]


def test_trust_includes_model_module_imported_by_job():
    assert imported("pt_fedavg")["trust"]["allowed_edit_paths"] == ["client.py", "job.py", "model.py"]


def test_preferred_targets_only_existing_files():
    config = imported("bridge_schema")
    assert config["schema"]["preferred_targets"] == ["client.py", "missing.py"]
    assert config["trust"]["preferred_targets"] == ["client.py"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b.py", "a/b.py"),
        ("./a.py", "a.py"),
        ("../x.py", None),
        ("/etc/passwd", None),
        (".git/config", None),
        ("a/__pycache__/m.py", None),
        ("C:/x.py", None),
    ],
)
def test_safe_relative(path, expected):
    assert safe_relative(path) == expected


def test_schema_budget_is_authoritative_and_pins_fixed_flags():
    config = imported("schema_budget")
    assert budget_values(config) == {"num_clients": 3, "min_clients": 3, "num_rounds": 5}
    assert config["argparse"]["schema_args"] == ["--n_clients", "3", "--num_rounds", "5"]
    assert config["fixed_budget"]["comparison_args"] == {"local_steps": {"flag": "--local_steps", "value": 5}}
    assert api.fixed_budget_args(config) == ["--n_clients", "3", "--num_rounds", "5", "--local_steps", "5"]
    assert "--local_steps" not in [s["flag"] for s in config["search_space"]["suggested"]]
    assert config["admission_errors"] == []


def test_base_args_conflicting_with_schema_budget_are_rejected():
    config = imported("schema_budget", base_args=["--num_rounds", "9"])
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_BUDGET_ARGUMENT_CONFLICT"]
    assert imported("schema_budget", base_args=["--num_rounds", "5"])["admission_errors"] == []


def test_invalid_schema_is_rejected_with_each_problem():
    config = imported("schema_invalid")
    messages = [e["message"] for e in config["admission_errors"]]
    assert all(e["code"] == "AUTOFL_INVALID_MUTATION_SCHEMA" for e in config["admission_errors"])
    assert any("unknown key(s) unknown_section" in m for m in messages)
    assert any("mutable_args.lr.type" in m for m in messages)


def test_schema_bounds_flow_into_search_space():
    suggested = {s["flag"]: s for s in imported("bridge_schema")["search_space"]["suggested"]}
    assert suggested["--lr"]["min"] == 0.001 and suggested["--lr"]["max"] == 1.0
    assert suggested["--local_steps"] == {
        "default": 5,
        "dest": "local_steps",
        "flag": "--local_steps",
        "max": 20,
        "min": 1,
        "type": "int",
    }


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([1], "top level must be a mapping"),
        ({"objective": {"mode": "up"}}, "objective.mode"),
        ({"mutable_args": {"lr": {"type": "float", "min": 2, "max": 1}}}, "min is greater than max"),
        ({"mutable_args": {"opt": {"type": "str", "choices": []}}}, "choices"),
        ({"mutable_args": {"n": {"type": "int", "min": True}}}, "mutable_args.n.min"),
        ({"comparison_budget_args": {"default_candidate_budget": {"num_rounds": 0}}}, "positive integer"),
        ({"comparison_budget_args": {"fixed_within_campaign": "seed"}}, "list of argument names"),
        ({"preferred_targets": ["../escape.py"]}, "relative path"),
        (
            {"mutable_args": {"lr": {"type": "float"}}, "comparison_budget_args": {"fixed_within_campaign": ["lr"]}},
            "both mutable_args and fixed_within_campaign",
        ),
    ],
)
def test_schema_validation_messages(data, fragment):
    errors = validate_schema(data)
    assert any(fragment in e for e in errors), errors


def test_valid_schema_has_no_errors():
    assert (
        validate_schema(
            {
                "objective": {"requested_metric": "val_loss", "mode": "min"},
                "mutable_args": {"lr": {"type": "float", "min": 0.0, "max": 1}},
                "preferred_targets": ["client.py"],
            }
        )
        == []
    )


def test_schema_budget_without_matching_option_is_a_mismatch():
    source = (FIXTURES / "namespace_not_args" / "job.py").read_text()
    schema = "comparison_budget_args:\n  default_candidate_budget: {num_rounds: 9, n_clients: 4}\n"
    config = api.import_source(source, schema_text=schema)
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_SCHEMA_BUDGET_MISMATCH"]
    assert "num_rounds: 9" in config["admission_errors"][0]["message"]
    same = "comparison_budget_args:\n  default_candidate_budget: {num_rounds: 7}\n"
    assert api.import_source(source, schema_text=same)["admission_errors"] == []


def test_schema_arguments_job_py_cannot_take_are_reported_not_dropped():
    config = imported("schema_budget")
    assert [u["field"] for u in config["unresolved"]] == ["schema.comparison_budget_args.seed"]
    assert "no --seed option" in config["unresolved"][0]["reason"]
    assert config["summary"]["unresolved"] == ["schema.comparison_budget_args.seed"]
    assert config["admission_errors"] == [], "informational: the job simply has no such option"
    source = (FIXTURES / "hello_numpy" / "job.py").read_text()
    schema = (
        "mutable_args:\n  lr: {type: float, min: 0.01, max: 0.5}\n  momentum: {type: float}\n"
        "comparison_budget_args:\n  fixed_within_campaign: [local_steps, alpha]\n"
    )
    unresolved = api.import_source(source, schema_text=schema)["unresolved"]
    assert [u["field"] for u in unresolved if u["field"].startswith("schema.")] == [
        "schema.comparison_budget_args.alpha",
        "schema.mutable_args.momentum",
    ]


def test_schema_mutable_args_are_always_suggested_with_their_bounds():
    source = (
        "import argparse\nfrom nvflare.app_common.np.recipes import NumpyFedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
        "p = argparse.ArgumentParser()\np.add_argument('--optimizer', default='sgd')\n"
        "p.add_argument('--seed', type=int, default=0)\np.add_argument('--tag')\np.add_argument('--num_rounds', type=int, default=3)\n"
        "a = p.parse_args()\n"
        "NumpyFedAvgRecipe(min_clients=2, num_rounds=a.num_rounds, train_script='client.py',"
        " train_args=f'--optimizer {a.optimizer} --seed {a.seed}').execute(SimEnv(num_clients=2))\n"
    )
    assert api.import_source(source)["search_space"]["suggested"] == [], "a free string and a seed are not tunables"
    schema = (
        "mutable_args:\n  optimizer: {type: str, choices: [sgd, adam]}\n  seed: {type: int, min: 0, max: 3}\n"
        "  tag: {type: str}\n"
        "comparison_budget_args:\n  default_candidate_budget: {num_rounds: 3}\n"
    )
    config = api.import_source(source, schema_text=schema)
    assert config["search_space"]["suggested"] == [
        {"choices": ["sgd", "adam"], "default": "sgd", "dest": "optimizer", "flag": "--optimizer", "type": "str"},
        {"default": 0, "dest": "seed", "flag": "--seed", "max": 3, "min": 0, "type": "int"},
    ], "--tag is declared mutable but job.py never uses it: tuning it would change nothing"
    assert config["summary"]["allowed"] == ["--optimizer", "--seed"]
    [note] = [u for u in config["unresolved"] if u["field"] == "schema.mutable_args.tag"]
    assert "never reaches the job" in note["reason"]
    contradictory = schema.replace("  tag: {type: str}\n", "  num_rounds: {type: int}\n")
    [error] = api.import_source(source, schema_text=contradictory)["admission_errors"]
    assert error["code"] == "AUTOFL_INVALID_MUTATION_SCHEMA" and "num_rounds are both mutable_args" in error["message"]


FEDJOB_WORKFLOW = """\
import torch
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.app_common.workflows.scatter_and_gather import ScatterAndGather
from nvflare.app_opt.pt.job_config.fed_avg import FedAvgJob
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

JOB
for i in range(2):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run("/tmp/nvflare/demo")
"""


@pytest.mark.parametrize(
    ("built", "min_clients", "source"),
    [
        ("job = FedAvgJob(name='d', n_clients=2, num_rounds=3, initial_model=torch.nn.Linear(2, 1))", 2, "n_clients"),
        ("job = FedAvgJob(name='d', n_clients=2, min_clients=1, num_rounds=3, initial_model=None)", 2, "n_clients"),
        ("job = FedJob(name='d')\njob.to_server(FedAvg(num_rounds=3))", 3, "FedAvg default"),
        ("job = FedJob(name='d', min_clients=1)\njob.to_server(ScatterAndGather(min_clients=2, num_rounds=3))", 2, ""),
        ("job = FedJob(name='d', min_clients=2)\njob.to_server(ScatterAndGather(num_rounds=3))", 1000, "default"),
    ],
)
def test_min_clients_is_the_count_the_server_workflow_waits_for(tmp_path, built, min_clients, source):
    """min_clients is what the server workflow waits for each round (as the dry run records it): FedAvgJob builds
    FedAvg(num_clients=n_clients), a controller's own count or its class's default outranks the job's meta.json
    min_clients."""
    (tmp_path / "job.py").write_text(FEDJOB_WORKFLOW.replace("JOB", built), encoding="utf-8")
    (tmp_path / "client.py").write_text("print('trains')\n", encoding="utf-8")
    config = api.import_job(tmp_path / "job.py")
    assert config["fixed_budget"]["min_clients"]["value"] == min_clients, config["fixed_budget"]["min_clients"]
    assert source in config["fixed_budget"]["min_clients"]["source"]
    assert config["admission_errors"] == []


OUTSIDE_SCRIPT = """\
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="d", min_clients=2, num_rounds=3, model=[0.0], train_script=SCRIPT)
recipe.execute(SimEnv(num_clients=2))
"""


def test_a_train_script_given_as_an_absolute_path_outside_job_py_s_folder_is_refused_with_the_fix(tmp_path):
    """A candidate may edit the train script and the frozen evaluation must know what runs: an absolute path outside
    the job's folder (the author's machine) is neither, so the job is refused, naming the script and the fix. A
    relative path above the folder (NVFLARE's examples share `../client.py`) stays admitted, with no train script
    in the trust contract."""
    (tmp_path / "job").mkdir()
    (tmp_path / "client.py").write_text("print('trains')\n", encoding="utf-8")
    for script, refused in (("'/home/someone/project/client.py'", True), ("'../client.py'", False)):
        (tmp_path / "job" / "job.py").write_text(OUTSIDE_SCRIPT.replace("SCRIPT", script), encoding="utf-8")
        config = api.import_job(tmp_path / "job" / "job.py")
        assert config["trust"]["train_script"] is None
        if not refused:
            assert config["admission_errors"] == []
            continue
        [error] = config["admission_errors"]
        assert error["code"] == "AUTOFL_UNSUPPORTED_JOB"
        assert f"the train script {script} is an absolute path outside job.py's folder" in error["message"]
        assert "copy it beside job.py and name it by a relative path" in error["message"]
