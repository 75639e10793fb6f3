"""What a dry-run record says, and which options a perturbation tries (pure: hand-written records, no NVFLARE)."""

from autofl_core.importer import dryrun_config, moves, recorded

FEDAVG = "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"


def record(**extra) -> dict:
    server = {
        "workflows": [
            {"path": "nvflare.app_common.workflows.fedavg.FedAvg", "args": {"num_rounds": 5, "num_clients": 3}}
        ],
        "components": [{"path": "x.IntimeModelSelector", "args": {"key_metric": "auc"}}],
    }
    base = {
        "status": "recorded",
        "entry": "simulator_run",
        "clients": ["site-1", "site-2", "site-3", "site-4"],
        "recipe": [FEDAVG, "nvflare.recipe.fedavg.FedAvgRecipe"],
        "recipe_attrs": {},
        "configs": {"j/app/config/config_fed_server.json": server, "j/meta.json": {"min_clients": 1}},
    }
    base.update(extra)
    return base


def values(found: dict) -> dict:
    return {k: v["value"] for k, v in found.items()}


def test_the_budget_is_what_nvflare_was_asked_to_run():
    assert values(recorded.budget(record())) == {"num_rounds": 5, "min_clients": 3, "num_clients": 4}
    assert recorded.family(record()) == "training"
    assert recorded.key_metric(record()) == ("auc", None)


def test_rounds_held_by_a_client_component_and_minimum_clients_from_meta():
    swarm_client = {"components": [{"path": "x.SwarmClientController", "args": {"num_rounds": 7}}]}
    configs = {"j/app/config/config_fed_client.json": swarm_client, "j/meta.json": {"min_clients": 2}}
    found = recorded.budget(record(configs=configs, recipe=None))
    assert values(found) == {"num_rounds": 7, "min_clients": 2, "num_clients": 4}


def test_deployments_decide_the_clients_and_poc_has_its_own_count():
    exported = recorded.budget(record(entry="export_job"))
    assert exported["num_clients"].get("not_applicable") is True
    poc = recorded.budget(record(entry="deploy", env={"class": "PocEnv", "attrs": {"num_clients": 2}}))
    assert poc["num_clients"]["value"] == 2


def test_two_different_round_counts_are_not_one_budget():
    server = {"workflows": [{"path": "a.A", "args": {"num_rounds": 2}}, {"path": "b.B", "args": {"num_rounds": 3}}]}
    found = recorded.budget(record(configs={"j/app/config/config_fed_server.json": server}))
    assert found["num_rounds"]["value"] is None and "several num_rounds" in found["num_rounds"]["reason"]


def test_families_of_jobs_without_a_recipe():
    stats = {"workflows": [{"path": "nvflare.app_common.workflows.statistics_controller.StatisticsController"}]}
    assert recorded.family(record(recipe=None, configs={"s/config_fed_server.json": stats})) == "statistics"
    ccwf = {"workflows": [{"path": "nvflare.app_common.ccwf.swarm_server_ctl.SwarmServerController"}]}
    assert recorded.family(record(recipe=None, configs={"s/config_fed_server.json": ccwf})) == "nested"


def test_a_raise_names_the_job_line_and_the_nvflare_line():
    raised = {
        "status": "raised",
        "exception": "ValueError",
        "message": "bad",
        "where": {"file": "job.py", "line": 12, "text": "recipe = R()"},
        "nvflare": {"file": "nvflare/recipe/fedavg.py", "line": 356},
    }
    reason = recorded.raise_reason(raised)
    assert "job.py line 12 (recipe = R())" in reason and "nvflare/recipe/fedavg.py line 356" in reason


ACTIONS = [
    {
        "option_strings": ["--n_clients"],
        "dest": "n_clients",
        "action": "_StoreAction",
        "type": "int",
        "default": 2,
        "choices": None,
        "nargs": None,
        "value": 2,
    },
    {
        "option_strings": ["--lr"],
        "dest": "lr",
        "action": "_StoreAction",
        "type": "float",
        "default": 0.1,
        "choices": None,
        "nargs": None,
        "value": 0.1,
    },
    {
        "option_strings": ["--fast"],
        "dest": "fast",
        "action": "_StoreTrueAction",
        "type": None,
        "default": False,
        "choices": None,
        "nargs": 0,
        "value": False,
    },
    {
        "option_strings": ["--algo"],
        "dest": "algo",
        "action": "_StoreAction",
        "type": "str",
        "default": "a",
        "choices": ["a", "b"],
        "nargs": None,
        "value": "a",
    },
    {
        "option_strings": ["--ids"],
        "dest": "ids",
        "action": "_StoreAction",
        "type": "int",
        "default": [],
        "choices": None,
        "nargs": "+",
        "value": [],
    },
]


def test_the_perturbation_moves_every_option_to_a_distinct_value():
    baseline = record(parsers=[{"actions": ACTIONS}])
    seen = []

    def run_many(batch):
        seen.extend(batch)
        return [record(parsers=[{"actions": ACTIONS}]) for _ in batch]  # nothing moves

    assert moves.moving_options(baseline, ["--x"], run_many) == {}
    assert len(seen) == 1  # one run settles it when nothing moves
    args = seen[0]
    assert args[0] == "--x" and "--ids" not in args  # lists are not perturbed
    assert args[args.index("--n_clients") + 1] not in ("2", "5", "3", "4")  # distinct from the budget values
    assert "--fast" in args and args[args.index("--algo") + 1] == "b"


def test_a_value_that_lands_in_the_budget_names_its_option_and_a_computed_one_is_settled_one_by_one():
    baseline = record(parsers=[{"actions": ACTIONS}])

    def run_many(batch):
        out = []
        for args in batch:
            clients = int(args[args.index("--n_clients") + 1]) if "--n_clients" in args else 4
            fast = "--fast" in args
            out.append(record(clients=[f"s{i}" for i in range(clients)], recipe=[FEDAVG] if not fast else ["x.Other"]))
        return out

    moved = moves.moving_options(baseline, [], run_many)
    assert moved["num_clients"] == ["--n_clients"]
    assert moved["objective"] == ["--fast"]  # it changes the class that runs: found by the single runs


def test_run_args_the_perturbation_tried_need_no_run():
    baseline = record(parsers=[{"actions": ACTIONS}])
    assert moves.covered(baseline, ["--lr", "0.5", "--fast"])
    assert not moves.covered(baseline, ["--l", "0.5"])  # an abbreviation: run it
    assert not moves.covered(baseline, ["--ids", "1", "2"])  # never perturbed


def test_what_a_candidate_run_changes_is_named():
    assert dryrun_config.changes(record(), record()) == []
    assert dryrun_config.changes(record(), record(clients=["a"])) == ["num_clients 4 -> 1"]
    raised = {"status": "raised", "exception": "KeyError", "message": "'x'", "where": {"line": 3, "text": "t"}}
    assert "no longer reaches NVFLARE" in dryrun_config.changes(record(), raised)[0]


def test_an_option_whose_perturbed_value_shows_up_in_what_nvflare_builds_reaches_the_job():
    baseline = record(recipe_attrs={"train_args": "--lr 0.1 --seed 3"})
    after = record(recipe_attrs={"train_args": "--lr 0.0137 --seed 3"})
    extra = {"--lr": ["--lr", "0.0137"], "--n_clients": ["--n_clients", "7"], "--fast": ["--fast"]}
    assert moves.reaching(baseline, after, extra) == ["--lr"]  # 7 is nowhere; a flag has no value to match
    assert moves.reaching(baseline, record(recipe_attrs={"train_args": "--lr 0.01370"}), extra) == []
    assert moves.reaching(baseline, {"status": "raised"}, extra) == []


def test_a_recorded_training_run_is_the_source_of_a_config_the_reading_admits():
    from autofl_core.importer import api

    source = (
        "from nvflare.app_common.np.recipes import NumpyFedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
        "r = NumpyFedAvgRecipe(name='n', model=[0.0], min_clients=3, num_rounds=2, train_script='c.py', "
        "key_metric='accuracy')\nr.execute(SimEnv(num_clients=4))\n"
    )
    config = api.import_source(source)
    assert config["admission_errors"] == [] and config["fixed_budget"]["num_rounds"]["value"] == 2
    ran = record(recipe=[FEDAVG], recipe_attrs={"key_metric": "loss", "key_metric_mode": "min"})
    out = dryrun_config.apply(config, ran, {}, lambda _script: config["trust"])
    assert out["admission_errors"] == []
    rounds = out["fixed_budget"]["num_rounds"]
    assert (rounds["value"], rounds["source"]) == (5, "dry run: the exported job's num_rounds")
    assert out["fixed_budget"]["num_clients"]["value"] == 4
    assert (out["objective"]["job_key_metric"], out["objective"]["mode"]) == ("loss", "min")
    assert out["import"]["dry_run"]["corrected"] == [
        "num_rounds: job.py reads as 2, but running it asks NVFLARE for 5",
        "key metric: job.py reads as accuracy, but running it asks NVFLARE for loss",
    ]
    assert out["recipe_args"]["num_rounds"]["value"] == 2, "what job.py writes is kept for the human"


def test_the_train_script_is_read_as_nvflare_exports_it_and_made_relative_to_the_job():
    client = {
        "executors": [
            {"executor": {"path": "x.ClientAPIExecutor", "args": {"task_script_path": "src/client.py"}}, "tasks": ["*"]}
        ]
    }
    fedjob = record(configs={"j/app_site-1/config/config_fed_client.json": client}, job_dir="/w/job")
    assert recorded.train_script(fedjob) == "src/client.py"
    absolute = record(recipe_attrs={"train_script": "/w/job/./client.py"}, job_dir="/w/job")
    assert recorded.train_script(absolute) == "client.py"
    outside = record(recipe_attrs={"train_script": "/elsewhere/client.py"}, job_dir="/w/job")
    assert recorded.train_script(outside) == "/elsewhere/client.py", "left absolute: the trust contract refuses it"
