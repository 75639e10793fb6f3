"""Budgets pinned by data flow (issue 15): values computed from job options are `pinned` with `depends_on`,
every such option is pinned in every trial, and anything read at run time stays unresolved, naming the input."""

import pytest
from autofl_core.importer import api
from autofl_core.trial import argv as trial_argv
from autofl_core.trial.argv import TrialError

HEAD = (
    "import argparse, json, os, random, time\n"
    "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
    "p = argparse.ArgumentParser()\np.add_argument('--n_clients', type=int, default=3)\n"
    "p.add_argument('--num_rounds', type=int, default=4)\np.add_argument('--epochs', type=int, default=2)\n"
    "p.add_argument('--fast', action='store_true')\np.add_argument('--lr', type=float, default=0.1)\n"
    "args = p.parse_args()\n"
)


def run(body: str, rounds: str = "args.num_rounds", clients: str = "num_clients=args.n_clients", **kwargs) -> dict:
    source = (
        HEAD
        + body
        + (
            f"recipe = FedAvgRecipe(min_clients=2, num_rounds={rounds}, train_script='client.py',"
            " train_args=f'--lr {args.lr}')\n"
            f"recipe.execute(SimEnv({clients}))\n"
        )
    )
    return api.import_source(source, **kwargs)


def budget(config: dict, field: str) -> dict:
    return config["fixed_budget"][field]


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (
            "def split_data(n):\n    return [f'site-{i + 1}' for i in range(n)]\n"
            "clients = [name for name in split_data(args.n_clients)]\n",
            "a comprehension at line 12 is not evaluated statically",
        ),
        ("clients = [f'site-{i}' for i in ['a', 'b']]\n", "a comprehension at line 11 is not evaluated statically"),
        ("clients = sorted(['a', 'b'])\n", "sorted() at line 11 is not evaluated statically"),
    ],
)
def test_a_client_list_from_a_builtin_or_a_comprehension_is_refused_statically_naming_the_line(body, what):
    """The static reading evaluates no builtin and no comprehension: a client list built by one is refused with
    the line of the call. The dry run pins such budgets (test_importer_dryrun.py::
    test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run[builtins-and-comprehensions])."""
    config = run(body, clients="clients=clients")
    entry = budget(config, "num_clients")
    assert entry["confidence"] == "unresolved" and what in entry["reason"]
    assert any(what in e["message"] for e in config["admission_errors"])


def test_value_from_two_options_pins_both_and_the_runner_rejects_either_in_run_args():
    config = run("", rounds="args.num_rounds * args.epochs")
    entry = budget(config, "num_rounds")
    assert (entry["value"], entry["confidence"], entry["depends_on"]) == (8, "pinned", ["--num_rounds", "--epochs"])
    assert entry["flag"] is None and entry["flags"] == ["--num_rounds", "--epochs"]
    pins = api.fixed_budget_args(config)
    assert pins == ["--n_clients", "3", "--num_rounds", "4", "--epochs", "2"]
    assert api.fixed_budget_options(config) == ["--n_clients", "--num_rounds", "--epochs"]
    assert "--epochs" not in [s["flag"] for s in config["search_space"]["suggested"]]
    flags = api.cli_flags(config)

    def argv(run_args):
        return trial_argv.build_trial_argv(
            "python",
            "job.py",
            budget_args=pins,
            base_args=[],
            flag_groups=flags["groups"],
            name_flag=None,
            trial_name=None,
            workspace="/w",
            run_args=run_args,
        )

    assert argv(["--lr", "0.5"])[-2:] == ["--lr", "0.5"]
    with pytest.raises(TrialError) as rejected:
        argv(["--epochs", "3"])
    assert rejected.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"


def test_value_chosen_by_a_branch_depends_on_the_branch_option():
    body = "if args.fast:\n    rounds = 2\nelse:\n    rounds = args.num_rounds\n"
    slow = run(body, rounds="rounds")
    entry = budget(slow, "num_rounds")
    assert (entry["value"], entry["confidence"], entry["depends_on"]) == (4, "pinned", ["--num_rounds", "--fast"])
    assert "--fast" in api.fixed_budget_options(slow), "off switches have no argument; the runner must reject them"
    assert "--fast" not in api.fixed_budget_args(slow)
    fast = run(body, rounds="rounds", base_args=["--fast"])
    assert (budget(fast, "num_rounds")["value"], budget(fast, "num_rounds")["depends_on"]) == (2, ["--fast"])
    assert api.fixed_budget_args(fast)[-1:] == ["--fast"]


def test_recipe_built_in_a_branch_depends_on_the_branch_option():
    source = HEAD + (
        "from nvflare.app_opt.pt.recipes.scaffold import ScaffoldRecipe\n"
        "if args.fast:\n    r = ScaffoldRecipe(min_clients=2, num_rounds=3, train_script='c.py')\n"
        "else:\n    r = FedAvgRecipe(min_clients=2, num_rounds=3, train_script='c.py')\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source)
    assert budget(config, "num_rounds")["depends_on"] == ["--fast"]
    assert budget(config, "num_rounds")["confidence"] == "pinned"


@pytest.mark.parametrize(
    ("body", "clients", "what"),
    [
        (
            "clients = []\nfor i in [0, 1, 2, 3][: args.n_clients]:\n    clients.append(f'site-{i}')\n",
            "clients=clients",
            ".append() at line 13",
        ),
        (
            "clients = ['site-0']\nalias = clients\nalias.extend(['site-1', 'site-2'])\n",
            "clients=clients",
            ".extend() at line 13",
        ),
        (
            "def add(sites, n):\n    for i in [0, 1, 2, 3][:n]:\n        sites.append(i)\nclients = []\nadd(clients, args.n_clients)\n",
            "clients=clients",
            ".append() at line 13",
        ),
        ("cfg = {'n': 1}\ncfg['n'] = args.n_clients\n", "num_clients=cfg['n']", "the item set at line 12"),
        (
            "clients = ['a', 'b']\nenv = SimEnv(clients=clients)\nclients.append('c')\n"
            "FedAvgRecipe(min_clients=2, num_rounds=2, train_script='c.py').execute(env)\n",
            None,
            ".append() at line 13",
        ),
    ],
)
def test_a_budget_from_a_container_changed_in_place_is_refused_statically_naming_the_line(body, clients, what):
    """The static reading does not follow in-place changes (a list filled in a loop, an aliased list extended, an
    item set, a list changed after the env holds it): the budget is refused with the line of the change. The dry
    run pins such budgets (test_importer_dryrun.py::test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run[filled-in-a-loop])."""
    config = api.import_source(HEAD + body) if clients is None else run(body, clients=clients)
    entry = budget(config, "num_clients")
    assert entry["confidence"] == "unresolved"
    assert f"{what} changes a container in place" in entry["reason"]
    assert any(f"{what} changes a container in place" in e["message"] for e in config["admission_errors"])


@pytest.mark.parametrize(
    ("body", "rounds", "clients", "field", "call"),
    [
        ("plan = {'rounds': args.num_rounds}\n", "plan.get('rounds', 2)", None, "num_rounds", ".get() at line 12"),
        ("", "f'{args.num_rounds}'.strip()", None, "num_rounds", ".strip() at line 11"),
        (
            "names = ','.join(['site-0', 'site-1', 'site-2'][: args.n_clients]).split(',')\n",
            "args.num_rounds",
            "clients=names",
            "num_clients",
            ".join() at line 11",
        ),
    ],
)
def test_a_budget_from_a_data_method_is_refused_statically_naming_the_line(body, rounds, clients, field, call):
    """The static reading does not evaluate methods of str, list or dict values: a budget that depends on one is
    refused with the line of the call. The dry run pins such budgets (test_importer_dryrun.py::
    test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run[data-methods])."""
    config = run(body, rounds=rounds, **({"clients": clients} if clients else {}))
    entry = budget(config, field)
    what = f"{call} is not evaluated statically"
    assert entry["confidence"] == "unresolved" and what in entry["reason"]
    assert any(what in e["message"] for e in config["admission_errors"])


def test_an_option_changed_under_a_condition_the_importer_cannot_resolve_is_unresolved():
    entry = budget(run("if os.environ.get('QUICK'):\n    args.num_rounds = 1\n"), "num_rounds")
    assert entry["confidence"] == "unresolved" and "condition at line" in entry["reason"]


@pytest.mark.parametrize(
    ("rounds", "words"),
    [
        ("int(os.environ.get('ROUNDS', '3'))", ["environment variable ROUNDS"]),
        ("int(os.environ['ROUNDS'])", ["environment variable ROUNDS"]),
        ("len(open('rounds.txt').read())", ["open()", "reads files"]),
        ("json.load(open('cfg.json'))['rounds']", ["json.load", "reads files"]),
        ("len(os.listdir('/data'))", ["os.listdir", "reads files"]),
        ("random.randint(2, 5)", ["random.randint", "random numbers"]),
        ("int(time.time()) % 5 + 1", ["time.time", "clock"]),
        ("count_rounds(args.epochs)", ["rounds_lib.count_rounds", "cannot evaluate"]),
    ],
)
def test_run_time_inputs_stay_unresolved_and_the_refusal_names_them(rounds, words):
    config = run("from rounds_lib import count_rounds\n", rounds=rounds)
    entry = budget(config, "num_rounds")
    assert entry["confidence"] == "unresolved"
    [error] = [e for e in config["admission_errors"] if "num_rounds" in e["message"]]
    for word in words:
        assert word in error["message"], error["message"]


def test_omitted_budget_uses_the_recipe_default_from_the_installed_nvflare():
    config = api.import_source(
        HEAD + "FedAvgRecipe(min_clients=2, train_script='c.py').execute(SimEnv(num_clients=2))\n"
    )
    assert budget(config, "num_rounds") == {
        "value": 2,
        "confidence": "medium",
        "flag": None,
        "depends_on": [],
        "source": "FedAvgRecipe default",
        "note": "recipe default, nvflare 2.9.0",
    }
    assert config["admission_errors"] == []


@pytest.mark.parametrize(
    ("call", "words"),
    [
        ("FedAvgRecipe(train_script='c.py')", ["FedAvgRecipe requires min_clients=", "nvflare 2.9.0"]),
        ("XGBBaggingRecipe(name='x', min_clients=2)", ["default num_rounds is None", "pass num_rounds= explicitly"]),
        ("CollabRecipe(job_name='c', min_clients=2)", ["reads num_rounds from its server= object"]),
        ("MyRecipe(min_clients=2)", ["MyRecipe gets no num_rounds=; pass it explicitly"]),
    ],
)
def test_missing_budget_without_a_usable_default_names_the_fix(call, words):
    source = (
        "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
        "from nvflare.app_opt.xgboost.recipes import XGBBaggingRecipe\nfrom nvflare.collab.recipe import CollabRecipe\n"
        f"from my_lib import MyRecipe\n{call}.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source)
    reasons = " | ".join(e["message"] for e in config["admission_errors"])
    for word in words:
        assert word in reasons


def test_local_subclass_inherits_defaults_unless_it_defines_init_then_it_is_refused():
    def rounds(body):
        source = (
            f"from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
            f"class Mine(FedAvgRecipe):\n{body}\n"
            "Mine(min_clients=2, train_script='c.py').execute(SimEnv(num_clients=2))\n"
        )
        return budget(api.import_source(source), "num_rounds")

    assert rounds("    pass")["value"] == 2
    # a subclass with its own __init__ is not read statically (its dry run records what it passes): refused, named
    for body in (
        "    def __init__(self, **kw):\n        super().__init__(num_rounds=9, **kw)",
        "    def __init__(self, rounds=4, **kw):\n        super().__init__(num_rounds=rounds, **kw)",
        "    def __init__(self, **kw):\n        super().__init__(**kw)",
    ):
        own = rounds(body)
        assert own["confidence"] == "unresolved" and "Mine (built at job.py line" in own["reason"], body
        assert "is the job's own class" in own["reason"]


def test_nested_budget_objects_named_by_the_recipe_table():
    source = (
        "import argparse\nfrom nvflare.app_common.ccwf.ccwf_job import SwarmServerConfig\n"
        "from nvflare.app_opt.pt.recipes.swarm import BaseSwarmLearningRecipe\nfrom nvflare.recipe import SimEnv\n"
        "p = argparse.ArgumentParser()\np.add_argument('--rounds', type=int, default=6)\na = p.parse_args()\n"
        "BaseSwarmLearningRecipe(name='s', server_config=SwarmServerConfig(num_rounds=a.rounds), client_config=None,"
        " min_clients=2).execute(SimEnv(num_clients=2))\n"
    )
    entry = budget(api.import_source(source), "num_rounds")
    assert (entry["value"], entry["flag"]) == (6, "--rounds")
    assert entry["source"] == "BaseSwarmLearningRecipe(server_config=SwarmServerConfig(num_rounds=...))"


def test_fedjob_sites_added_in_a_loop_over_a_derived_list_are_refused_statically_naming_the_line():
    """A FedJob's sites from a list a builtin builds: refused with the line (the dry run records the sites the
    job was given: test_importer_dryrun.py::test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run[fedjob-loop])."""
    source = (
        "import argparse, os\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
        "from nvflare.job_config.api import FedJob\nfrom nvflare.job_config.script_runner import ScriptRunner\n"
        "p = argparse.ArgumentParser()\np.add_argument('--n_clients', type=int, default=3)\na = p.parse_args()\n"
        "def split_data(n):\n    return [f'site-{i + 1}' for i in range(n)]\n"
        "clients = [name for name in split_data(a.n_clients)]\n"
        "job = FedJob(name='j')\njob.to_server(FedAvg(num_clients=len(clients), num_rounds=2))\n"
        "for site in clients:\n    job.to(ScriptRunner(script='client.py'), site)\n"
        "job.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/tmp/w'))\n"
    )
    config = api.import_source(source, base_args=["--n_clients", "4"])
    for field in ("num_clients", "min_clients"):
        assert budget(config, field)["confidence"] == "unresolved"
        assert "a comprehension at line 9 is not evaluated statically" in budget(config, field)["reason"]
    assert budget(config, "min_clients")["depends_on"] == ["--n_clients"]
    assert len(config["admission_errors"]) == 2
