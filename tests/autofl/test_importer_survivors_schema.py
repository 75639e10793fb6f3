"""mutation_schema.yaml rules one by one, and what each schema section does to an imported job.

Each rule is checked with its exact message: the message is what the user reads (through
AUTOFL_INVALID_MUTATION_SCHEMA) to fix the file. Mutation testing (`make mutate`, docs/mutation.md) found these
rules passing unchecked: `metric_extraction_order`, `optimization_metric`, positive-number budget keys and the
unknown-key messages.
"""

from __future__ import annotations

import pytest
from autofl_core.importer import api
from autofl_core.importer.schema import BUDGET_KEYS, parse_schema_text, schema_section, validate_schema

ALLOWED_BUDGET = ", ".join(sorted(BUDGET_KEYS))
ALLOWED_OBJECTIVE = "metric_extraction_order, metric_source, mode, optimization_metric, requested_metric"

JOB = (
    "import argparse\nfrom nvflare.recipe import SimEnv\nfrom nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--num_rounds', type=int, default=3)\n"
    "parser.add_argument('--n_clients', type=int, default=2)\nparser.add_argument('--lr', type=float, default=0.1)\n"
    "parser.add_argument('--fast', action=argparse.BooleanOptionalAction, default=False)\n"
    "parser.add_argument('--cache', action='store_true')\nparser.add_argument('--no_eval', action='store_false')\n"
    "args = parser.parse_args()\n"
    "r = FedAvgRecipe(min_clients=args.n_clients, num_rounds=args.num_rounds, key_metric='accuracy', lr=args.lr)\n"
    "r.execute(SimEnv(num_clients=args.n_clients))\n"
)


def imported(schema: str, **kwargs) -> dict:
    return api.import_source(JOB, schema_text=schema, **kwargs)


@pytest.mark.parametrize(
    ("objective", "errors"),
    [
        (
            {"metric_extraction_order": []},
            ["objective.metric_extraction_order must be a non-empty list of metric names"],
        ),
        (
            {"metric_extraction_order": "loss"},
            ["objective.metric_extraction_order must be a non-empty list of metric names"],
        ),
        (
            {"metric_extraction_order": ["loss", ""]},
            ["objective.metric_extraction_order must be a non-empty list of metric names"],
        ),
        (
            {"metric_extraction_order": ["loss", 3]},
            ["objective.metric_extraction_order must be a non-empty list of metric names"],
        ),
        ({"metric_extraction_order": ["val_loss", "loss"]}, []),
        ({"optimization_metric": " "}, ["objective.optimization_metric must be a non-empty string"]),
        ({"optimization_metric": 5}, ["objective.optimization_metric must be a non-empty string"]),
        ({"requested_metric": ""}, ["objective.requested_metric must be a non-empty string"]),
        ({"metric_source": None}, ["objective.metric_source must be a non-empty string"]),
        ({"optimization_metric": "auc", "requested_metric": "auc", "metric_source": "tb"}, []),
        ({"mode": "maximize"}, ["objective.mode must be 'min' or 'max'"]),
        ({"mode": "min"}, []),
        ({"goal": 1, "aim": 2}, [f"objective: unknown key(s) aim, goal (allowed: {ALLOWED_OBJECTIVE})"]),
        ("loss", ["objective must be a mapping"]),
    ],
)
def test_objective_rules(objective, errors):
    assert validate_schema({"objective": objective}) == errors


@pytest.mark.parametrize(
    ("budget", "errors"),
    [
        ({"run_timeout_seconds": 0}, ["default_candidate_budget.run_timeout_seconds must be a positive number"]),
        ({"run_timeout_seconds": -1.5}, ["default_candidate_budget.run_timeout_seconds must be a positive number"]),
        ({"alpha": "0.5"}, ["default_candidate_budget.alpha must be a positive number"]),
        ({"alpha": float("inf")}, ["default_candidate_budget.alpha must be a positive number"]),
        (
            {"simulator_no_progress_timeout_seconds": True},
            ["default_candidate_budget.simulator_no_progress_timeout_seconds must be a positive number"],
        ),
        ({"alpha": 0.5, "run_timeout_seconds": 60, "simulator_no_progress_timeout_seconds": 1.5}, []),
        ({"num_rounds": 0}, ["default_candidate_budget.num_rounds must be a positive integer"]),
        ({"batch_size": 2.0}, ["default_candidate_budget.batch_size must be a positive integer"]),
        ({"n_clients": True}, ["default_candidate_budget.n_clients must be a positive integer"]),
        ({"seed": 1.5}, ["default_candidate_budget.seed must be a int"]),
        ({"seed": True}, ["default_candidate_budget.seed must be a int"]),
        ({"seed": 0, "model_arch": "cnn", "aggregator": "mean", "cross_site_eval": False}, []),
        ({"model_arch": 3}, ["default_candidate_budget.model_arch must be a str"]),
        ({"cross_site_eval": 1}, ["default_candidate_budget.cross_site_eval must be a bool"]),
        ({"rounds": 3}, [f"default_candidate_budget: unknown key(s) rounds (allowed: {ALLOWED_BUDGET})"]),
    ],
)
def test_default_candidate_budget_rules(budget, errors):
    assert validate_schema({"comparison_budget_args": {"default_candidate_budget": budget}}) == errors


def test_budget_section_shapes():
    assert validate_schema({"comparison_budget_args": []}) == ["comparison_budget_args must be a mapping"]
    assert validate_schema({"comparison_budget_args": {"default_candidate_budget": [], "extra": 1}}) == [
        "comparison_budget_args: unknown key(s) extra (allowed: default_candidate_budget, fixed_within_campaign)",
        "comparison_budget_args.default_candidate_budget must be a mapping",
    ]
    assert validate_schema({"comparison_budget_args": {"fixed_within_campaign": ["seed", ""]}}) == [
        "comparison_budget_args.fixed_within_campaign must be a list of argument names"
    ]
    assert validate_schema({"comparison_budget_args": {"fixed_within_campaign": "seed"}}) == [
        "comparison_budget_args.fixed_within_campaign must be a list of argument names"
    ]


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        ({"type": "int", "min": 1, "max": 8}, []),
        ({"type": "float", "min": 0.5, "max": 0.1}, ["mutable_args.lr: min is greater than max"]),
        ({"type": "str", "min": 1}, ["mutable_args.lr.min must be a finite number on an int/float argument"]),
        ({"type": "float", "max": "1"}, ["mutable_args.lr.max must be a finite number on an int/float argument"]),
        ({"type": "complex"}, ["mutable_args.lr.type must be one of int, float, bool, str"]),
        ({"type": "int", "step": 2}, ["mutable_args.lr: unknown key(s) step (allowed: choices, max, min, type)"]),
        ({"type": "int", "choices": [1, 2.5]}, ["mutable_args.lr.choices must be a non-empty list of int values"]),
        ({"type": "float", "choices": [1, 2.5]}, []),
        ({"type": "bool", "choices": []}, ["mutable_args.lr.choices must be a non-empty list of bool values"]),
        ({"type": "str", "choices": ["a", "b"]}, []),
        (0.1, ["mutable_args.lr must be a mapping with a type"]),
    ],
)
def test_mutable_arg_rules(spec, errors):
    assert validate_schema({"mutable_args": {"lr": spec}}) == errors


def test_top_level_rules():
    assert validate_schema(None) == []
    assert validate_schema([1]) == ["the top level must be a mapping"]
    assert validate_schema({"objectives": {}, "budget": 1}) == [
        "mutation_schema.yaml: unknown key(s) budget, objectives (allowed: comparison_budget_args, mutable_args, "
        "objective, preferred_targets)"
    ]
    assert validate_schema({"mutable_args": ["lr"]}) == ["mutable_args must be a mapping of argument name to bounds"]
    assert validate_schema({"mutable_args": {"": {"type": "int"}}}) == [
        "mutable_args: argument name '' must be a non-empty string"
    ]
    assert validate_schema({"preferred_targets": ["../x.py"]}) == [
        "preferred_targets: '../x.py' must be a relative path inside the workspace"
    ]
    assert validate_schema({"preferred_targets": "x.py"}) == ["preferred_targets must be a list of relative file paths"]


def test_an_argument_both_mutable_and_fixed_is_named():
    data = {
        "mutable_args": {"lr": {"type": "float"}, "seed": {"type": "int"}, "bs": {"type": "int"}},
        "comparison_budget_args": {
            "default_candidate_budget": {"batch_size": 4, "seed": 1},
            "fixed_within_campaign": ["lr"],
        },
    }
    assert validate_schema(data) == [
        "argument(s) lr, seed are both mutable_args and fixed_within_campaign or default_candidate_budget; a "
        "candidate cannot change a fixed argument"
    ]


def test_invalid_yaml_names_its_line():
    assert parse_schema_text("objective:\n  mode: max\n  bad: [1,\n") == (
        None,
        ["mutation_schema.yaml is not valid YAML at line 4"],
    )


def test_schema_section_bridges_requested_and_optimization_metrics_once_each():
    data = {"objective": {"requested_metric": "auc", "optimization_metric": "val_auc", "mode": "max"}}
    section = schema_section(data, [], True)
    assert section["bridged_metrics"] == ["auc", "val_auc"]
    assert section["objective"] == {"mode": "max", "optimization_metric": "val_auc", "requested_metric": "auc"}
    assert schema_section({"objective": {"requested_metric": "auc", "optimization_metric": "auc"}}, [], True)[
        "bridged_metrics"
    ] == ["auc"]
    assert schema_section({"objective": {"optimization_metric": "val_auc"}}, [], True)["bridged_metrics"] == ["val_auc"]
    assert schema_section(data, ["an error"], True)["bridged_metrics"] == []


def test_optimization_metric_is_a_bridge_for_the_campaign():
    config = imported("objective:\n  optimization_metric: val_loss\n  mode: min\n", metric="val_loss")
    assert config["admission_errors"] == []
    objective = config["objective"]
    assert (objective["metric"], objective["mode"], objective["mode_contract_source"], objective["bridged"]) == (
        "val_loss",
        "min",
        "mutation_schema",
        True,
    )
    assert objective["metric_invariants"]["definition"] == (
        "'val_loss' as reported by the client code to NVFLARE (bridged by mutation_schema.yaml, not the job's key "
        "metric)"
    )
    assert objective["metric_invariants"]["scale_units_direction"] == (
        "val_loss: min (lower is better; from mutation_schema); same scale and units every trial"
    )


def test_metric_extraction_order_and_metric_source_come_from_the_schema():
    config = imported("objective:\n  metric_extraction_order: [val_acc, accuracy]\n  metric_source: tensorboard\n")
    assert config["objective"]["metric_extraction_order"] == ["val_acc", "accuracy"]
    assert config["objective"]["metric_source"] == "tensorboard"
    plain = imported("objective:\n  mode: max\n")["objective"]
    assert (plain["metric_extraction_order"], plain["metric_source"], plain["schema_mode"]) == (
        ["accuracy"],
        "auto",
        "max",
    )


def test_an_invalid_schema_is_an_admission_error_with_each_message():
    config = imported("objective:\n  metric_extraction_order: []\n  goal: 1\n")
    assert config["admission_errors"] == [
        {
            "code": "AUTOFL_INVALID_MUTATION_SCHEMA",
            "message": f"mutation_schema.yaml: objective: unknown key(s) goal (allowed: {ALLOWED_OBJECTIVE}); fix the "
            "schema file or remove it",
        },
        {
            "code": "AUTOFL_INVALID_MUTATION_SCHEMA",
            "message": "mutation_schema.yaml: objective.metric_extraction_order must be a non-empty list of metric "
            "names; fix the schema file or remove it",
        },
    ]
    assert config["objective"]["metric_extraction_order"] == ["accuracy"]  # the invalid schema is not applied


def test_schema_mode_against_the_job_key_metric_is_a_direction_conflict():
    config = imported("objective:\n  mode: min\n")
    assert config["admission_errors"] == [
        {
            "code": "AUTOFL_METRIC_DIRECTION_CONFLICT",
            "message": "mutation_schema.yaml objective.mode=min would override job.py's direction for its key metric "
            "'accuracy' (max from core_default); remove objective.mode from the schema or change "
            "key_metric_mode in job.py",
        }
    ]


def test_requested_metric_from_the_schema_is_the_campaign_metric():
    config = imported("objective:\n  requested_metric: val_f1\n")
    assert config["objective"]["requested_metric"] == "val_f1"
    assert (config["objective"]["metric"], config["objective"]["mode"]) == ("val_f1", "max")
    assert config["admission_errors"] == []


def test_undeclared_metric_is_refused_with_the_fix():
    config = api.import_source(JOB, metric="val_f1")
    assert config["objective"]["mode_contract_source"] == "undeclared"
    assert config["admission_errors"] == [
        {
            "code": "AUTOFL_METRIC_NOT_DECLARED",
            "message": "requested metric 'val_f1' is not the job key metric 'accuracy' and mutation_schema.yaml does not "
            "bridge it; use --metric accuracy, or declare objective.requested_metric: val_f1 (with its mode) "
            "in mutation_schema.yaml",
        }
    ]


def test_budget_schema_sets_job_options_by_their_action():
    schema = (
        "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n    run_timeout_seconds: 60\n"
        "  fixed_within_campaign: [fast, cache, no_eval, lr]\n"
    )
    config = imported(schema)
    assert config["argparse"]["schema_args"] == ["--num_rounds", "5"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 5
    assert config["unresolved"] == []  # every fixed name is an option of job.py; runner settings need none
    assert config["fixed_budget"]["comparison_args"] == {
        "cache": {"flag": "--cache", "value": False},
        "fast": {"flag": "--fast", "value": False},
        "lr": {"flag": "--lr", "value": 0.1},
        "no_eval": {"flag": "--no_eval", "value": True},
    }
    switches = (
        "comparison_budget_args:\n  default_candidate_budget:\n    aggregator: x\n    cross_site_eval: true\n"
        "    seed: 1\n"
    )
    assert imported(switches)["argparse"]["schema_args"] == []  # none of them is an option of job.py


@pytest.mark.parametrize(
    ("action", "wanted", "args"),
    [
        ("action=argparse.BooleanOptionalAction", "true", ["--cross_site_eval"]),
        ("action=argparse.BooleanOptionalAction", "false", ["--no-cross_site_eval"]),
        ("action='store_true'", "true", ["--cross_site_eval"]),
        ("action='store_true'", "false", []),
        ("action='store_false'", "false", ["--cross_site_eval"]),
        ("action='store_false'", "true", []),
    ],
)
def test_budget_schema_pins_a_switch_by_its_action(action, wanted, args):
    job = JOB.replace("'--cache', action='store_true'", f"'--cross_site_eval', {action}")
    schema = f"comparison_budget_args:\n  default_candidate_budget:\n    cross_site_eval: {wanted}\n"
    config = api.import_source(job, schema_text=schema)
    assert config["argparse"]["schema_args"] == args
    assert config["fixed_budget"]["comparison_args"]["cross_site_eval"]["value"] is (wanted == "true")


@pytest.mark.parametrize(
    ("action", "wanted", "args"),
    [
        ("action='count', default=0", "0", []),
        ("action='count', default=0", "2", ["--seed", "--seed"]),
        ("action='count', default=1", "3", ["--seed", "--seed"]),
        ("action='store_const', const=5", "5", ["--seed"]),
        ("action='store_const', const=5, default=0", "0", []),
    ],
)
def test_budget_schema_pins_a_counting_or_constant_option_as_argparse_reads_it(action, wanted, args):
    job = JOB.replace("'--cache', action='store_true'", f"'--seed', {action}")
    schema = f"comparison_budget_args:\n  default_candidate_budget:\n    seed: {wanted}\n"
    config = api.import_source(job, schema_text=schema)
    assert config["argparse"]["schema_args"] == args
    assert config["argparse"]["budget_conflicts"] == []


@pytest.mark.parametrize("action", ["action='count', default=2", "action='store_const', const=5, default=0"])
def test_a_schema_value_no_command_line_gives_a_switch_is_a_conflict(action):
    job = JOB.replace("'--cache', action='store_true'", f"'--seed', {action}")
    config = api.import_source(job, schema_text="comparison_budget_args:\n  default_candidate_budget:\n    seed: 1\n")
    assert config["argparse"]["schema_args"] == []
    message = config["argparse"]["budget_conflicts"][0]
    assert "fixes seed: 1" in message and "cannot be set to it" in message
    assert any(e["message"] == message for e in config["admission_errors"])


def test_base_args_against_the_schema_budget_is_a_conflict():
    schema = "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n"
    config = imported(schema, base_args=["--num_rounds", "7"])
    message = "--base-args sets --num_rounds 7 but mutation_schema.yaml fixes num_rounds: 5; drop it from --base-args"
    assert config["argparse"]["budget_conflicts"] == [message]
    assert {"code": "AUTOFL_BUDGET_ARGUMENT_CONFLICT", "message": message} in config["admission_errors"]
    assert imported(schema, base_args=["--num_rounds", "5"])["argparse"]["budget_conflicts"] == []


def test_schema_arguments_job_py_has_no_option_for_are_noted():
    job = JOB.replace("'--num_rounds'", "'--rounds'").replace("args.num_rounds", "args.rounds")
    schema = (
        "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n    batch_size: 8\n"
        "  fixed_within_campaign: [model_arch, run_timeout_seconds]\nmutable_args:\n  momentum: {type: float}\n"
    )
    config = api.import_source(job, schema_text=schema)
    assert config["unresolved"] == [
        {
            "field": "schema.comparison_budget_args.batch_size",
            "reason": "job.py has no --batch_size option, so the runner cannot pin it; candidates are compared with "
            "whatever job.py and its train script use",
        },
        {
            "field": "schema.comparison_budget_args.model_arch",
            "reason": "job.py has no --model_arch option, so the runner cannot pin it; candidates are compared with "
            "whatever job.py and its train script use",
        },
        {
            "field": "schema.mutable_args.momentum",
            "reason": "job.py has no --momentum option, so a candidate cannot set it as a run argument",
        },
    ]
    assert config["schema"]["budget_mismatches"] == [
        "mutation_schema.yaml fixes num_rounds: 5 but job.py uses num_rounds=3 and has no --num_rounds option to set "
        "it; add that option to job.py or change the schema"
    ]
    assert {"code": "AUTOFL_SCHEMA_BUDGET_MISMATCH", "message": config["schema"]["budget_mismatches"][0]} in config[
        "admission_errors"
    ]
