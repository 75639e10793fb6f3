"""Job surface recognition over the fixture jobs: supported patterns and every fail-closed case."""

from pathlib import Path

import pytest
from autofl_core.importer import api

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jobs"


def imported(case: str, **kwargs) -> dict:
    return api.import_job(FIXTURES / case / "job.py", **kwargs)


def test_there_are_at_least_thirty_job_fixtures():
    assert len([p for p in FIXTURES.glob("*/job.py")]) >= 30


@pytest.mark.parametrize(
    ("case", "cls", "env", "run_call"),
    [
        ("hello_numpy", "NumpyFedAvgRecipe", "SimEnv", "execute"),
        ("pt_fedavg", "FedAvgRecipe", "SimEnv", "execute"),
        ("pt_fedopt", "FedOptRecipe", "SimEnv", "execute"),
        ("pt_scaffold", "ScaffoldRecipe", "SimEnv", "execute"),
        ("pt_fedprox", "FedProxRecipe", "SimEnv", "execute"),
        ("pt_cyclic", "CyclicRecipe", "SimEnv", "execute"),
        ("sklearn_recipe", "SklearnFedAvgRecipe", "SimEnv", "execute"),
        ("poc_env", "NumpyFedAvgRecipe", "PocEnv", "execute"),
        ("prod_env", "NumpyFedAvgRecipe", "ProdEnv", "execute"),
        ("export_only", "NumpyFedAvgRecipe", None, "export"),
    ],
)
def test_recipe_pattern(case, cls, env, run_call):
    config = imported(case)
    assert config["import"]["support"]["status"] == "supported"
    assert config["job"]["pattern"] == "recipe"
    assert config["job"]["class"] == cls
    assert (config["job"]["env"] or {}).get("class") == env
    assert config["environment"]["discovered"]["name"] == env
    assert config["job"]["run_call"] == run_call
    assert config["admission_errors"] == []


def test_fedprox_mu_is_a_recipe_argument_and_tunable():
    config = imported("pt_fedprox")
    assert config["recipe_args"]["fedprox_mu"] == {"confidence": "high", "flags": ["--fedprox_mu"], "value": 0.01}
    # --lr is parsed but never used by job.py (not forwarded to the client): it cannot change anything
    assert [s["flag"] for s in config["search_space"]["suggested"]] == ["--fedprox_mu"]


def test_model_object_argument_is_unresolved_but_not_fatal():
    config = imported("pt_fedavg")
    assert config["recipe_args"]["model"]["confidence"] == "unresolved"
    assert {"field": "recipe_args.model", "reason": "an object, not a data value"} in config["unresolved"]
    assert config["admission_errors"] == []


def test_fedjob_simulator_run():
    config = imported("fedjob_simulator")
    assert config["job"]["pattern"] == "fedjob"
    assert config["job"]["class"] == "FedJob"
    assert config["job"]["run_call"] == "simulator_run"
    assert config["job"]["env"]["class"] == "FedJob.simulator_run"
    assert config["fixed_budget"]["num_rounds"]["source"] == "FedAvg(num_rounds=...)"
    clients = config["fixed_budget"]["num_clients"]
    assert (clients["value"], clients["source"]) == (2, "FedJob.to(..., site) targets")
    assert clients["flag"] == "--n_clients", "the sites come from range(args.n_clients)"
    assert config["objective"]["job_key_metric_source"] == "IntimeModelSelector(key_metric=...)"
    assert config["trust"]["train_script"] == "client.py"
    assert config["admission_errors"] == []


def test_environment_discovery_records_workspace_root_and_empty_passthrough():
    env = imported("hello_numpy")["environment"]
    assert env["discovered"]["args"]["workspace_root"]["value"] == "/tmp/nvflare/simulation"
    assert env["simulator_env_passthrough"] == []


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("evaluation_only", ["FedEvalRecipe", "evaluation-only"]),
        ("statistics_only", ["FedStatsRecipe", "statistics-only"]),
        ("nested_flower", ["FlowerRecipe", "nested unsupported application"]),
        ("dynamic_getattr", ["dynamic construction", "construct the recipe by its class name"]),
        ("dynamic_dict", ["dynamic construction", "line 15"]),
        ("no_recipe", ["no recognizable NVFLARE recipe or FedJob"]),
        ("syntax_error", ["syntax error at line 3", "fix it"]),
        ("unresolved_branch", ["cannot resolve", "line 7"]),
        ("never_run", ["never run", "recipe.execute(env)"]),
        ("two_recipes", ["several recipes"]),
    ],
)
def test_fail_closed_with_actionable_reason(case, words):
    config = imported(case)
    support = config["import"]["support"]
    assert support["status"] == "unsupported"
    for word in words:
        assert word in support["reason"]
    assert config["fixed_budget"] == {}
    errors = config["admission_errors"]
    several = case == "two_recipes"  # a dry run stops at the first run: it cannot settle a second
    assert errors[0]["code"] == ("AUTOFL_SEVERAL_RUNS" if several else "AUTOFL_UNSUPPORTED_JOB")
    assert support["reason"] in errors[0]["message"]


def test_import_is_deterministic_and_hashes_the_source():
    first, second = imported("branch_selection"), imported("branch_selection")
    assert first == second
    import hashlib

    source = (FIXTURES / "branch_selection" / "job.py").read_bytes()
    assert first["source_sha256"] == hashlib.sha256(source).hexdigest()
    assert first["importer_version"]


def test_import_source_is_pure_over_text():
    text = (FIXTURES / "hello_numpy" / "job.py").read_text()
    config = api.import_source(text)
    assert config["job"]["class"] == "NumpyFedAvgRecipe"
    assert config["trust"]["allowed_edit_paths"] == ["job.py"]
    with_files = api.import_source(text, read_file={"client.py": "import numpy\n"}.get)
    assert with_files["trust"]["allowed_edit_paths"] == ["client.py", "job.py"]


FEDJOB = (
    "from nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.app_common.workflows.cross_site_model_eval import CrossSiteModelEval\n"
    "from nvflare.app_common.workflows.statistics_controller import StatisticsController\n"
    "job = FedJob(name='j')\n"
)


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (
            "job.to_server(CrossSiteModelEval())\njob.simulator_run('/tmp/w', n_clients=2)\n",
            "unsupported",
            "evaluation-only",
        ),
        (
            "job.to_server(StatisticsController(statistic_configs={}))\njob.export_job('/tmp/j')\n",
            "unsupported",
            "statistics-only",
        ),
        (
            "job.to_server(FedAvg(num_rounds=4))\njob.to_server(CrossSiteModelEval())\njob.export_job('/tmp/j')\n",
            "supported",
            "fedjob",
        ),
    ],
)
def test_fedjob_components_decide_support(body, status, fragment):
    config = api.import_source(FEDJOB + body)
    assert config["import"]["support"]["status"] == status
    assert fragment in config["import"]["support"]["reason"]


def test_fedjob_export_job_budget_defaults():
    config = api.import_source(FEDJOB + "job.to_server(FedAvg())\njob.export_job('/tmp/j')\n")
    budget = config["fixed_budget"]
    assert config["job"]["run_call"] == "export_job"
    assert (budget["num_rounds"]["value"], budget["num_rounds"]["source"]) == (5, "FedAvg default")
    assert budget["num_clients"]["confidence"] == "not_applicable"


def test_recipe_run_and_nested_recipe_argument():
    base = "from nvflare.recipe import SimEnv\nfrom x import ARecipe, BRecipe\n"
    ran = api.import_source(base + "r = ARecipe(min_clients=2, num_rounds=2)\nr.run(SimEnv(num_clients=2))\n")
    assert (ran["job"]["run_call"], ran["import"]["support"]["status"]) == ("run", "supported")
    nested = api.import_source(base + "r = ARecipe(inner=BRecipe(), min_clients=2)\nr.execute(SimEnv(num_clients=2))\n")
    assert "nests another application (BRecipe)" in nested["import"]["support"]["reason"]


def test_hello_world_summary_for_the_human():
    config = imported("hello_numpy")
    assert config["summary"] == {
        "allowed": ["--lr", "--local_steps"],
        "editable": ["client.py", "job.py"],
        "unresolved": [],
        "objective": {"metric": "accuracy", "direction": "higher is better", "mode": "max", "source": "core_default"},
        "fixed_budget": {
            "num_clients": {"value": 2, "confidence": "high", "source": "SimEnv(num_clients=...)"},
            "min_clients": {"value": 2, "confidence": "high", "source": "NumpyFedAvgRecipe(min_clients=...)"},
            "num_rounds": {"value": 3, "confidence": "high", "source": "NumpyFedAvgRecipe(num_rounds=...)"},
        },
    }
    suggested = {s["flag"]: s for s in config["search_space"]["suggested"]}
    assert suggested["--lr"] == {"default": 0.05, "dest": "lr", "flag": "--lr", "type": "float"}
    assert not {"--name", "--n_clients", "--num_rounds", "--workspace"} & set(suggested), "plumbing and budget"
    assert config["import"]["support"] == {"reason": "recognized recipe pattern", "status": "supported"}


SITES = (
    "from nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.job_config.script_runner import ScriptRunner\n"
    "job = FedJob(name='j')\njob.to(FedAvg(num_clients=2, num_rounds=3), 'server')\n"
)


@pytest.mark.parametrize(
    ("deploy", "run", "clients", "fragment"),
    [
        ("for i in [1, 2, 3]:\n    job.to(ScriptRunner(script='c.py'), f'site-{i}')\n", "", 3, None),
        ("for s in ['a', 'b', 'a']:\n    job.to(ScriptRunner(script='c.py'), s)\n", "", 2, None),
        ("job.to_clients(ScriptRunner(script='c.py'))\n", ", n_clients=4", 4, None),
        ("job.to(ScriptRunner(script='c.py'), 'site-1')\n", ", clients=['x', 'y', 'z']", 3, None),
        ("job.to(ScriptRunner(script='c.py'), 'site-1')\n", ", n_clients=2", None, "drop n_clients="),
        ("job.to_clients(ScriptRunner(script='c.py'))\n", "", None, "no n_clients="),
        ("", ", n_clients=2", None, "no component is sent to the clients"),
        ("import os\njob.to(ScriptRunner(script='c.py'), os.environ['SITE'])\n", "", None, "not resolved"),
        ("for i in range(100):\n    job.to(ScriptRunner(script='c.py'), f'site-{i}')\n", "", None, "not resolved"),
    ],
)
def test_fedjob_simulated_clients_follow_nvflare_rules(deploy, run, clients, fragment):
    """NVFLARE 2.9 FedJob.simulator_run: to() names the sites, to_clients() needs n_clients=, both is an error."""
    config = api.import_source(
        SITES
        + deploy
        + f"import os\njob.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/tmp/w'){run})\n"
    )
    entry = config["fixed_budget"]["num_clients"]
    assert entry["value"] == clients
    if fragment:
        assert fragment in entry["reason"]
        assert "fixed_budget.num_clients" in [u["field"] for u in config["unresolved"]]
        assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_UNRESOLVED_SAFETY_FIELD"]


NEVER_CALLED = """\
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def build(args):
    return NumpyFedAvgRecipe(name="d", min_clients=2, num_rounds=3, model=[0.0], train_script="client.py")


def launch(args):
    recipe = build(args)
    recipe.execute(SimEnv(num_clients=2))
CALL
"""


@pytest.mark.parametrize("call", ["", "\nlaunch_later = None\n"])
def test_a_function_that_runs_the_job_but_is_never_called_is_named(tmp_path, call):
    """job.py only defines the function that runs the job (another module calls it): the refusal names it."""
    (tmp_path / "job.py").write_text(NEVER_CALLED.replace("CALL", call), encoding="utf-8")
    config = api.import_job(tmp_path / "job.py")
    reason = config["import"]["support"]["reason"]
    assert config["import"]["support"]["status"] == "unsupported"
    assert reason.startswith("job.py defines launch() at line 9, which runs the job, but never calls it; call launch(")


def test_a_function_job_py_calls_is_not_named_as_never_called(tmp_path):
    (tmp_path / "job.py").write_text(NEVER_CALLED.replace("CALL", "\nif __name__ == '__main__':\n    launch(None)\n"))
    config = api.import_job(tmp_path / "job.py")
    assert config["import"]["support"]["status"] == "supported", config["import"]["support"]
