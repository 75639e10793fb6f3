"""What a dry-run record says, and which options a perturbation tries (pure: hand-written records, no NVFLARE)."""

import dataclasses
import json
import os

import pytest
from autofl_core.importer import budget, dryrun_config, moves, recorded, run_reasons

FEDAVG = "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"


def record(**extra) -> recorded.DryRunRecord:
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
    parsed = recorded.parse(base)
    assert parsed.status == base["status"], parsed.reason
    return parsed


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
    reason = run_reasons.raise_reason(recorded.parse(raised))
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

    assert moves.moving_options(baseline, ["--x"], run_many) == moves.Moved()
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
    assert moved.by["num_clients"] == ["--n_clients"]
    assert moved.by["objective"] == ["--fast"]  # it changes the class that runs: found by the single runs


def test_run_args_the_perturbation_tried_need_no_run():
    baseline = record(parsers=[{"actions": ACTIONS}])
    tried = moves.tried_options(baseline)
    assert moves.covered_by(tried, ["--lr", "0.5", "--fast"])
    assert not moves.covered_by(tried, ["--l", "0.5"])  # an abbreviation: run it
    assert not moves.covered_by(tried, ["--ids", "1", "2"])  # never perturbed


def test_an_option_no_perturbation_changes_is_not_counted_as_tried():
    """A switch the base arguments already set, a lone choice and a string option holding a number are never
    perturbed, so an argument-only candidate setting one gets a dry run of its own."""
    store = {"action": "_StoreAction", "nargs": None}
    actions = [
        {"option_strings": ["--fast"], "dest": "fast", "action": "_StoreTrueAction", "default": False, "value": True},
        {**store, "option_strings": ["--algo"], "dest": "algo", "choices": ["a"], "default": "a", "value": "a"},
        {**store, "option_strings": ["--rounds"], "dest": "rounds", "type": "str", "default": 5, "value": 5},
        {**store, "option_strings": ["--lr"], "dest": "lr", "type": "float", "default": 0.1, "value": 0.1},
    ]
    tried = moves.tried_options(record(parsers=[{"actions": actions}]))
    assert tried == ["--lr"]
    assert not moves.covered_by(tried, ["--rounds", "50"])


def test_what_a_candidate_run_changes_is_named():
    assert dryrun_config.changes(record(), record()) == []
    assert dryrun_config.changes(record(), record(clients=["a"])) == ["num_clients 4 -> 1"]
    raised = recorded.parse(
        {"status": "raised", "exception": "KeyError", "message": "'x'", "where": {"line": 3, "text": "t"}}
    )
    assert "no longer reaches NVFLARE" in dryrun_config.changes(record(), raised)[0]


def test_an_option_whose_perturbed_value_shows_up_in_what_nvflare_builds_reaches_the_job():
    baseline = record(recipe_attrs={"train_args": "--lr 0.1 --seed 3"})
    after = record(recipe_attrs={"train_args": "--lr 0.0137 --seed 3"})
    extra = {"--lr": ["--lr", "0.0137"], "--n_clients": ["--n_clients", "7"], "--fast": ["--fast"]}
    assert moves.reaching(baseline, after, extra) == ["--lr"]  # 7 is nowhere; a flag has no value to match
    assert moves.reaching(baseline, record(recipe_attrs={"train_args": "--lr 0.01370"}), extra) == []
    assert moves.reaching(baseline, recorded.parse({"status": "raised"}), extra) == []


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
    out = api.fold_run(api.read_source(source), ran, moves.Moved(), lambda _script: config["trust"])
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


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ({"status": "recorded", "entry": "export_job", "configs": {}}, "recorded"),
        (
            {"status": "raised", "exception": "KeyError", "message": "x", "where": {"file": "job.py", "line": 3}},
            "raised",
        ),
        ({"status": "exited", "code": 2, "parser_error": "job.py: error: bad"}, "exited"),
        ({"status": "no_run", "recipe": None}, "no_run"),
        ({"status": "sandbox_failed", "reason": "the dry run wrote no record"}, "sandbox_failed"),
        ({"status": "timeout", "reason": "the dry runs took over 60 s"}, "timeout"),
    ],
)
def test_each_status_the_boot_or_the_sandbox_writes_parses_to_a_typed_record(raw, status):
    parsed = recorded.parse(raw)
    assert parsed.status == status and isinstance(parsed, recorded.DryRunRecord)
    assert dataclasses.is_dataclass(parsed)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.status = "recorded"  # type: ignore[misc]
    assert dryrun_config.summary(parsed)["status"] == status
    if status == "raised":
        assert parsed.where == recorded.Where("job.py", 3, "")
    if status == "exited":
        assert parsed.code == 2 and "job.py: error: bad" in run_reasons.stop_reason(parsed)


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        ([1, 2], "not a JSON object"),
        ({}, "unknown status None"),
        ({"status": "kept"}, "unknown status 'kept'"),
        ({"status": "recorded"}, "names no entry point"),
        ({"status": "recorded", "entry": "simulator_run", "clients": "site-1,site-2"}, "clients is str"),
        ({"status": "recorded", "entry": "deploy", "env": ["PocEnv"]}, "env is list"),
        (
            {"status": "recorded", "entry": "deploy", "parsers": [{"actions": [{"dest": "x"}]}]},
            "without dest or action",
        ),
        ({"status": "raised", "where": {"line": "12"}}, "line is str"),
        ({"status": "exited", "code": True}, "code is bool"),
    ],
)
def test_a_malformed_or_partial_record_is_a_record_whose_status_says_so(raw, what):
    parsed = recorded.parse(raw)
    assert parsed.status == "malformed" and what in parsed.reason, parsed.reason
    summary = dryrun_config.summary(parsed)
    assert summary == {"status": "malformed", "stubbed": [], "reason": parsed.reason}
    from autofl_core.importer import api

    out = api.fold_run(
        api.read_source(HELPER_JOB), parsed, moves.Moved(), lambda _s: {}
    )  # nothing reads a missing key later
    assert out["import"]["dry_run"]["status"] == "malformed"
    assert dryrun_config.changes(record(), parsed) == ["job.py no longer reaches NVFLARE with them (malformed)"]


def test_the_cache_stores_the_boot_s_json_and_gives_back_the_same_record(tmp_path, monkeypatch):
    from autofl_core.importer import dryrun

    monkeypatch.setattr(dryrun.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(dryrun, "_MEMO", {})
    raw = {
        "status": "recorded",
        "entry": "simulator_run",
        "clients": ["site-1", "site-2"],
        "recipe": [FEDAVG],
        "recipe_attrs": {"num_rounds": 3, "min_clients": 2},
        "parsers": [{"allow_abbrev": False, "actions": ACTIONS}],
        "env_read": ["DATA_DIR"],
        "root_variable": "/tmp/x/simulator",
        "seconds": 0.4,
    }
    assert dryrun._store("k" * 64, raw) == recorded.parse(raw)
    monkeypatch.setattr(dryrun, "_MEMO", {})  # read back from the file, not the memo
    kept = json.loads((tmp_path / f"autofl-dryrun-{os.getuid()}" / f"{'k' * 64}.json").read_text())
    assert kept == {**raw, dryrun.READ_MARKS: {}}  # the boot's JSON and the hashes of the data files it read (none)
    again = dryrun._cached("k" * 64)
    assert again == recorded.parse(raw)
    assert again.parsers[0].actions[0].name == "--n_clients"
    assert again.env_read == ("DATA_DIR",)


def test_a_fedjob_simulation_given_n_clients_records_that_many_clients():
    ran = record(clients=[], n_clients=3, recipe=None, configs={})
    assert recorded.budget(ran)["num_clients"] == {
        "value": 3,
        "source": "dry run: the n_clients simulator_run was given",
    }
    named = record(clients=["a", "b"], n_clients=None)
    assert recorded.budget(named)["num_clients"]["value"] == 2


def test_an_environment_variable_that_moves_the_budget_is_found_by_one_run():
    baseline = record(env_read=["DATA_DIR", "NVFLARE_SIMULATOR_WORKSPACE_ROOT", "ROUNDS"])
    asked = []

    def run_env(env):
        asked.append(env)
        rounds = int(env.get("ROUNDS", 5))
        server = {
            "workflows": [{"path": "x.FedAvg", "args": {"num_rounds": rounds, "num_clients": 3}}],
            "components": [{"path": "x.IntimeModelSelector", "args": {"key_metric": "auc"}}],
        }
        return record(configs={"j/app/config/config_fed_server.json": server})

    moved = moves.moving_env(baseline, run_env, ("NVFLARE_SIMULATOR_WORKSPACE_ROOT",))
    assert moved == {"num_rounds": ["DATA_DIR", "ROUNDS"]}
    assert len(asked) == 1 and "NVFLARE_SIMULATOR_WORKSPACE_ROOT" not in asked[0]
    assert len(set(asked[0].values())) == 2, "each variable gets its own value"
    assert moves.moving_env(record(), run_env) == {}, "a job that reads no variable needs no run"
    stopped = moves.moving_env(baseline, lambda env: recorded.parse({"status": "raised"}))
    assert stopped["num_rounds"] and stopped["objective"], "a run the environment stops pins nothing"


HELPER_JOB = """import argparse
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

def build(make):
    return make()

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--rounds", type=int, default=4)
args = parser.parse_args()
runs = [
    NumpyFedAvgRecipe(name="h", model=[0.0], min_clients=args.n_clients, num_rounds=args.rounds,
                      train_script="client.py").execute(SimEnv(num_clients=args.n_clients))
    for _ in range(1)
]
"""


def helper_record(**extra) -> recorded.DryRunRecord:
    actions = [
        {"option_strings": ["--n_clients"], "dest": "n_clients", "action": "_StoreAction", "type": "int", "value": 2},
        {"option_strings": ["--rounds"], "dest": "rounds", "action": "_StoreAction", "type": "int", "value": 4},
    ]
    fields = {
        "clients": ["site-1", "site-2"],
        "recipe_attrs": {"num_rounds": 4, "min_clients": 2, "train_script": "client.py", "key_metric": "auc"},
        "configs": {},
        "parsers": [{"actions": actions}],
    }
    return record(**{**fields, **extra})


def trust_of(script: str | None) -> dict:
    """A stand-in for the import's trust reading of the client script the run names."""
    return {"train_script": script, "allowed_edit_paths": [script]}


def test_a_recorded_job_the_reading_cannot_follow_at_all_is_admitted_with_its_budget_pinned():
    from autofl_core.importer import api

    static = api.import_source(HELPER_JOB)
    assert static["admission_errors"], "precondition: the reading refuses a recipe run in a comprehension"
    assert static["argparse"]["flags"], "precondition: it does see the options"
    moved = moves.Moved({"num_clients": ["--n_clients"], "min_clients": ["--n_clients"], "num_rounds": ["--rounds"]})
    out = api.fold_run(api.read_source(HELPER_JOB), helper_record(), moved, trust_of)
    assert out["admission_errors"] == []
    assert {k: (v["value"], v["depends_on"]) for k, v in out["fixed_budget"].items() if k in budget.FIELDS} == {
        "num_clients": (2, ["--n_clients"]),
        "min_clients": (2, ["--n_clients"]),
        "num_rounds": (4, ["--rounds"]),
    }
    assert out["job"]["nvflare_class"] == FEDAVG and out["trust"] == trust_of("client.py")
    assert out["objective"]["job_key_metric"] == "auc", "the recorded key metric"


def test_a_recorded_budget_an_environment_variable_moves_is_refused_naming_it():
    from autofl_core.importer import api

    moved = moves.Moved({"num_clients": ["--n_clients"], "min_clients": ["--n_clients"]})
    env_moved = {"num_rounds": ["ROUNDS"]}
    out = api.fold_run(
        api.read_source(HELPER_JOB),
        helper_record(env_read=["ROUNDS"]),
        moved,
        trust_of,
        env_moved=env_moved,
    )
    assert out["admission_errors"], "one run cannot pin a budget the environment decides"
    assert out["fixed_budget"]["num_rounds"]["value"] is None
    assert "environment variable ROUNDS" in out["admission_errors"][0]["message"]


def test_a_recorded_max_is_nvflare_s_implicit_default_unless_the_reading_saw_it_written():
    """A recipe holds `key_metric_mode="max"` whether job.py wrote it or not: a lower-is-better key metric with a
    max the reading never saw written is the direction conflict, as if read statically."""
    from autofl_core.importer import api

    ran = helper_record(
        recipe_attrs={"num_rounds": 4, "min_clients": 2, "key_metric": "loss", "key_metric_mode": "max"}
    )
    moved = moves.Moved({"num_clients": ["--n_clients"], "min_clients": ["--n_clients"], "num_rounds": ["--rounds"]})
    out = api.fold_run(api.read_source(HELPER_JOB), ran, moved, trust_of)
    assert out["objective"]["mode_contract_source"] == "core_default"
    assert [e["code"] for e in out["admission_errors"]] == ["AUTOFL_METRIC_DIRECTION_CONFLICT"]
    written = (
        "from nvflare.app_common.np.recipes import NumpyFedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
        "r = NumpyFedAvgRecipe(name='n', model=[0.0], min_clients=2, num_rounds=4, train_script='client.py', "
        "key_metric='loss', key_metric_mode='max')\nr.execute(SimEnv(num_clients=2))\n"
    )
    readable = api.import_source(written)
    assert readable["admission_errors"] == [], "precondition: an explicit max the reading sees is no conflict"
    out = api.fold_run(api.read_source(written), ran, moves.Moved(), trust_of)
    assert out["admission_errors"] == [] and out["objective"]["mode"] == "max"


def test_a_fedjob_folder_under_each_session_s_own_root_is_the_same_folder():
    """A cached baseline names the sandbox root of the session that made it; a perturbed run of another session
    names its own: the same folder under the root variable is no change (an option moving it would be pinned)."""
    one = record(
        recipe=None, workspace="/tmp/autofl-dryrun-a/simulator/job", root_variable="/tmp/autofl-dryrun-a/simulator"
    )
    two = record(
        recipe=None, workspace="/tmp/autofl-dryrun-b/simulator/job", root_variable="/tmp/autofl-dryrun-b/simulator"
    )
    assert moves.signature(one)["workspace"] == "$NVFLARE_SIMULATOR_WORKSPACE_ROOT/job"
    assert dryrun_config.changes(one, two) == []
    elsewhere = record(recipe=None, workspace="/tmp/elsewhere/job", root_variable="/tmp/autofl-dryrun-b/simulator")
    assert dryrun_config.changes(one, elsewhere) == [
        "workspace $NVFLARE_SIMULATOR_WORKSPACE_ROOT/job -> /tmp/elsewhere/job"
    ]


def test_the_real_parser_s_actions_keep_their_const_and_a_custom_action_its_arity():
    """An optional value's const reaches the config (the runner's parser reads a bare `--level` as it), and an
    action class argparse does not ship stays `custom` with the arity the run recorded."""
    action = {"dest": "level", "type": "int", "default": 1, "choices": None, "required": False, "value": 1}
    actions = [
        {**action, "option_strings": ["--level"], "action": "_StoreAction", "nargs": "?", "const": 9},
        {**action, "option_strings": ["--fast"], "dest": "fast", "action": "Toggle", "nargs": 0, "const": None},
    ]
    config = {"argparse": {"flags": [], "allow_abbrev": True}}
    dryrun_config.real_parser(config, record(parsers=[{"actions": actions}]))
    level, fast = config["argparse"]["flags"]
    assert (level["action"], level["nargs"], level["const"], level["takes_value"]) == ("store", "?", 9, True)
    assert (fast["action"], fast["nargs"], fast["takes_value"]) == ("custom", 0, False) and "const" not in fast


def test_an_option_that_makes_job_py_only_export_is_kept_fixed():
    """`--fast` here makes job.py export the job and return (it trains nothing): the entry point the run reached
    changes, so the option is kept fixed like one that changes the class that runs."""
    baseline = record(parsers=[{"actions": ACTIONS}])

    def run_many(batch):
        return [record(entry="export_job" if "--fast" in args else "simulator_run") for args in batch]

    assert moves.moving_options(baseline, [], run_many).by["objective"] == ["--fast"]
    assert "entry simulator_run -> export_job" in dryrun_config.changes(baseline, record(entry="export_job"))


def test_options_past_the_single_runs_are_kept_fixed_when_the_all_perturbed_run_raises():
    """Past MAX_SINGLE_RUNS an option was never run alone, so it was never shown not to move the budget."""
    many = [{**ACTIONS[1], "option_strings": [f"--o{i}"], "dest": f"o{i}"} for i in range(moves.MAX_SINGLE_RUNS + 2)]
    baseline = record(parsers=[{"actions": many}])
    seen = []

    def run_many(batch):
        seen.extend(batch)
        raised = {"status": "raised", "exception": "ValueError", "message": "all at once"}
        return [recorded.parse(raised) if len(batch) == 1 and len(args) > 2 else record() for args in batch]

    moved = moves.moving_options(baseline, [], run_many)
    assert moved.by["objective"] == [f"--o{moves.MAX_SINGLE_RUNS}", f"--o{moves.MAX_SINGLE_RUNS + 1}"]
    assert len(seen) == 1 + moves.MAX_SINGLE_RUNS


def test_an_option_that_moves_a_field_and_the_objective_is_named_once_in_its_depends_on():
    config = {"fixed_budget": {"num_rounds": {"value": 3, "confidence": "high", "depends_on": ["--num_rounds"]}}}
    dryrun_config.pinned_too(config, moves.Moved({"num_rounds": ["--mode"], "objective": ["--mode", "--metric"]}))
    entry = config["fixed_budget"]["num_rounds"]
    assert entry["depends_on"] == ["--num_rounds", "--mode", "--metric"]
    assert entry["confidence"] == "pinned"


@pytest.mark.parametrize("value", [12, ["a", "b"], {"k": "v"}, True, "text\nwith\x00control"])
def test_the_job_s_own_words_of_any_json_type_are_read_as_text_not_refused(value):
    """A record comes from job.py's process: an exception's name or message (or a reason) of another JSON type is
    that value's text, and the record keeps its status; a reason quoting it stays one printable line."""
    raw = {"status": "raised", "exception": value, "message": value, "reason": value}
    parsed = recorded.parse(raw)
    assert parsed.status == "raised"
    assert parsed.exception == parsed.message == parsed.reason == str(value)
    reason = run_reasons.raise_reason(parsed)
    assert reason.isprintable() and "\n" not in reason
    assert recorded.parse({"status": "raised"}).message == "", "a missing message is empty text"


def test_every_field_of_a_record_is_read_by_its_annotation():
    """`parse` reads each field by its annotation: a field whose annotation has no reader would fail every run."""
    missing = [f.name for f in dataclasses.fields(recorded.DryRunRecord)[1:] if f.type not in recorded.READERS]
    assert missing == []
    full = recorded.parse({"status": "recorded", "entry": "simulator_run", "env": {"class": "SimEnv"}, "code": 0})
    assert (full.entry, full.env, full.code) == ("simulator_run", recorded.Env("SimEnv", {}), 0)


def raised_at(exception: str, message: str, nvflare: dict | None = None) -> recorded.DryRunRecord:
    where = {"file": "job.py", "line": 3, "text": "from x import y"}
    return recorded.parse(
        {
            "status": "raised",
            "exception": exception,
            "message": message,
            "where": where,
            **({"nvflare": nvflare} if nvflare else {}),
        }
    )


def test_a_module_this_interpreter_lacks_is_told_to_install_not_another_version():
    """A module NVFLARE's own code imports and this interpreter lacks: install it. A name job.py's own line asks
    of NVFLARE, which it does not have: another version's API, whatever is installed."""
    lacking = raised_at("ModuleNotFoundError", "No module named 'torchvision'", {"file": "nvflare/a.py", "line": 9})
    inside = raised_at("ImportError", "cannot import name 'B' from 'nvflare.c'", {"file": "nvflare/c.py", "line": 2})
    other = raised_at("ImportError", "cannot import name 'FedAvg' from 'nvflare' (/site/nvflare/__init__.py)")
    renamed = raised_at("ModuleNotFoundError", "No module named 'nvflare.fox'")
    assert run_reasons.other_version(lacking) is run_reasons.other_version(inside) is None
    assert "has no nvflare.FedAvg: job.py was written for another NVFLARE version" in run_reasons.other_version(other)
    assert "has no nvflare.fox: job.py was written" in run_reasons.other_version(renamed)
    for run, install in ((lacking, True), (other, False)):
        config = {"admission_errors": [{"code": "X", "message": "fixed_budget.num_rounds is unresolved"}]}
        message = dryrun_config.settle(config, [], run)["admission_errors"][0]["message"]
        assert ("this interpreter cannot import it: install what is missing" in message) is install, message


def test_a_type_error_is_another_version_s_only_for_an_nvflare_call_s_arguments():
    def typed(message: str, callee: str | None, stubbed: tuple = ()) -> recorded.DryRunRecord:
        where = {"file": "job.py", "line": 7, "text": "recipe = R("}
        data = {"status": "raised", "exception": "TypeError", "message": message, "where": where, "callee": callee}
        return recorded.parse({**data, "stubbed": list(stubbed)})

    unexpected = "R.__init__() got an unexpected keyword argument 'initial_model'"
    assert "has no nvflare.r.R.__init__() taking these arguments" in run_reasons.other_version(
        typed(unexpected, "nvflare.r.R.__init__", ("torch",))
    )
    assert run_reasons.other_version(typed(unexpected, None)) is None  # the job's own callable
    assert run_reasons.other_version(typed("unsupported operand type(s)", "nvflare.r.R.__init__")) is None
    missing = "R.__init__() missing 1 required positional argument: 'model'"
    assert run_reasons.other_version(typed(missing, "nvflare.r.R.__init__")) is not None
    assert run_reasons.other_version(typed(missing, "nvflare.r.R.__init__", ("helpers",))) is None  # `R(*stand_in)`
