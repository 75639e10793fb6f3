"""argparse by data flow, --base-args overrides, and the runner's cli_flags / fixed_budget_args views."""

from pathlib import Path

import pytest
from autofl_core.importer import api

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jobs"


def imported(case: str, **kwargs) -> dict:
    return api.import_job(FIXTURES / case / "job.py", **kwargs)


def flag(config: dict, option: str) -> dict:
    return next(f for f in config["argparse"]["flags"] if option in f["option_strings"])


def recipe_arg(config: dict, name: str) -> dict:
    return config["recipe_args"][name]


def test_hello_world_define_parser_is_followed():
    config = imported("hello_numpy")
    assert config["argparse"]["parsed"] is True
    assert recipe_arg(config, "num_rounds") == {"value": 3, "confidence": "high", "flags": ["--num_rounds"]}
    assert recipe_arg(config, "train_args")["value"] == "--lr 0.05 --local_steps 5"
    assert recipe_arg(config, "train_args")["confidence"] == "medium"
    assert config["admission_errors"] == []


def test_namespace_under_another_name_through_helpers_and_parameters():
    config = imported("namespace_not_args")
    assert recipe_arg(config, "num_rounds")["value"] == 7
    assert recipe_arg(config, "min_clients")["value"] == 4
    assert recipe_arg(config, "train_args")["value"] == "--lr 0.2"
    assert config["fixed_budget"]["num_clients"]["flag"] == "--sites"
    assert api.fixed_budget_args(config) == ["--sites", "4", "--rounds", "7"]


def test_namespace_passed_to_main_with_dest_set_defaults_and_typed_string_default():
    config = imported("main_args_param", base_args=["--clients", "3"])
    assert config["fixed_budget"]["num_clients"] == {
        "confidence": "high",
        "flag": "--clients",
        "source": "SimEnv(num_clients=...)",
        "value": 3,
        "depends_on": ["--clients"],
    }
    assert config["fixed_budget"]["num_rounds"]["value"] == 4
    assert config["objective"]["job_key_metric"] == "accuracy"
    assert config["cli_flags"]["allow_abbrev"] is False


def test_namespace_read_through_vars_by_key():
    config = imported("vars_namespace", base_args=["--rounds", "8"])
    rounds = config["fixed_budget"]["num_rounds"]
    assert (rounds["value"], rounds["confidence"], rounds["flag"]) == (8, "high", "--rounds")
    assert config["fixed_budget"]["num_clients"]["value"] == 3
    assert recipe_arg(config, "train_args")["value"] == "--lr 0.1"
    assert config["admission_errors"] == []


def test_parse_known_args_tolerates_unknown_base_args():
    config = imported("parse_known_args", base_args=["--num_rounds", "9", "--unknown", "x"])
    assert config["fixed_budget"]["num_rounds"]["value"] == 9
    assert config["argparse"]["base_args_errors"] == []
    assert config["admission_errors"] == []


def test_parse_args_rejects_unknown_base_args():
    config = imported("hello_numpy", base_args=["--nope", "1"])
    codes = [e["code"] for e in config["admission_errors"]]
    assert codes == ["AUTOFL_INVALID_BASE_ARGS"]
    assert "unrecognized arguments: --nope 1" in config["admission_errors"][0]["message"]


@pytest.mark.parametrize(
    ("base_args", "rounds", "lr"),
    [
        (["-r", "7"], 7, 0.05),
        (["-r7"], 7, 0.05),
        (["--num_rounds=8"], 8, 0.05),
        (["--rounds", "6", "-l", "0.5"], 6, 0.5),
        (["--num_r", "5"], 5, 0.05),
        (["--lr=0.25", "--num_rounds", "4", "--num_rounds", "2"], 2, 0.25),
    ],
)
def test_short_aliases_equals_form_and_abbreviations(base_args, rounds, lr):
    config = imported("short_aliases", base_args=base_args)
    assert config["fixed_budget"]["num_rounds"]["value"] == rounds
    assert recipe_arg(config, "train_args")["value"] == f"--lr {lr}"
    assert config["admission_errors"] == []


def test_ambiguous_abbreviation_is_an_error():
    config = imported("short_aliases", base_args=["--n", "3"])
    assert config["argparse"]["base_args_errors"] == [
        "ambiguous option: --n could match --n_clients, --num_rounds, --name"
    ]


def test_abbreviation_refused_when_parser_disallows_it():
    config = imported("main_args_param", base_args=["--num", "5"])
    assert config["admission_errors"][0]["code"] == "AUTOFL_INVALID_BASE_ARGS"


def test_cli_flags_groups_aliases_long_first():
    flags = api.cli_flags(imported("short_aliases"))
    assert flags["groups"] == [["--n_clients", "-n"], ["--num_rounds", "--rounds", "-r"], ["--lr", "-l"], ["--name"]]
    assert flags["long_flags"] == ["--n_clients", "--num_rounds", "--rounds", "--lr", "--name"]
    assert flags["name_flag"] == "--name"
    assert flags["takes_value"]["-r"] is True


def test_boolean_optional_and_store_true():
    config = imported("boolean_optional")
    flags = api.cli_flags(config)
    assert ["--early-stop", "--no-early-stop"] in flags["groups"]
    assert flags["takes_value"] == {
        "--early-stop": False,
        "--n_clients": True,
        "--no-early-stop": False,
        "--num_rounds": True,
        "--verbose": False,
    }
    assert flags["name_flag"] is None
    assert recipe_arg(config, "stop_cond")["value"] == "accuracy >= 0.95"
    assert config["objective"]["mode_contract_source"] == "stop_cond"
    off = imported("boolean_optional", base_args=["--no-early-stop", "--verbose"])
    assert recipe_arg(off, "stop_cond")["value"] is None
    assert off["objective"]["mode_contract_source"] == "core_default"
    assert flag(off, "--verbose")["value"] is True


def test_choices_are_recorded_and_enforced():
    config = imported("choices")
    assert flag(config, "--optimizer")["choices"] == ["sgd", "adam"]
    suggested = {s["flag"]: s for s in config["search_space"]["suggested"]}
    assert suggested["--optimizer"]["choices"] == ["sgd", "adam"]
    assert suggested["--local_epochs"] == {
        "choices": [1, 2, 4],
        "default": 1,
        "dest": "local_epochs",
        "flag": "--local_epochs",
        "type": "int",
    }
    bad = imported("choices", base_args=["--optimizer", "rmsprop"])
    assert "argument --optimizer: invalid choice: 'rmsprop'" in bad["admission_errors"][0]["message"]
    typed = imported("choices", base_args=["--local_epochs", "two"])
    assert "argument --local_epochs: invalid int value: 'two'" in typed["admission_errors"][0]["message"]


def test_required_flag_from_base_args_resolves():
    missing = imported("required_flag")
    assert missing["fixed_budget"]["num_rounds"]["confidence"] == "unresolved"
    [error] = missing["admission_errors"]
    assert error["code"] == "AUTOFL_UNRESOLVED_SAFETY_FIELD"
    assert "--num_rounds is required" in error["message"] and "--base-args" in error["message"]
    given = imported("required_flag", base_args=["--num_rounds", "4"])
    assert given["fixed_budget"]["num_rounds"]["value"] == 4
    assert given["admission_errors"] == []


@pytest.mark.parametrize(
    ("base_args", "cls", "rounds", "extra"),
    [
        ([], "FedAvgRecipe", 3, {}),
        (["--algo", "fedprox", "--mu", "0.1"], "FedProxRecipe", 3, {"fedprox_mu": 0.1}),
        (["--algo=scaffold", "--num_rounds", "4"], "ScaffoldRecipe", 8, {}),
    ],
)
def test_branch_selection_follows_base_args(base_args, cls, rounds, extra):
    config = imported("branch_selection", base_args=base_args)
    assert config["job"]["class"] == cls
    assert config["job"]["run_call"] == "execute"
    assert config["fixed_budget"]["num_rounds"]["value"] == rounds
    for name, value in extra.items():
        assert recipe_arg(config, name)["value"] == value
    assert config["admission_errors"] == []


RAISING_ELSE = """
import argparse
from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe
from nvflare.app_opt.pt.recipes.fedopt import FedOptRecipe
from nvflare.recipe import SimEnv
parser = argparse.ArgumentParser()
parser.add_argument("--algo", default="fedavg")
parser.add_argument("--rounds", "-r", type=int, default=5)
args = parser.parse_args()
if args.algo == "fedopt":
    recipe = FedOptRecipe(name="opt", min_clients=2, num_rounds=args.rounds * 2, train_script="client.py")
elif args.algo in ("fedavg", "avg"):
    recipe = FedAvgRecipe(name="avg", min_clients=2, num_rounds=args.rounds, train_script="client.py")
else:
    raise ValueError(f"unknown --algo {args.algo}")
recipe.execute(SimEnv(num_clients=2))
"""


@pytest.mark.parametrize(
    ("base_args", "cls", "rounds"),
    [([], "FedAvgRecipe", 5), (["--algo=avg"], "FedAvgRecipe", 5), (["--algo", "fedopt", "-r3"], "FedOptRecipe", 6)],
)
def test_elif_chain_with_membership_test_and_short_alias(base_args, cls, rounds):
    config = api.import_source(RAISING_ELSE, base_args=base_args)
    assert (config["job"]["class"], config["fixed_budget"]["num_rounds"]["value"]) == (cls, rounds)


def test_branch_that_raises_names_the_line_and_the_fix():
    config = api.import_source(RAISING_ELSE, base_args=["--algo", "nope"])
    [error] = config["admission_errors"]
    assert error["code"] == "AUTOFL_UNSUPPORTED_JOB"
    assert "`raise` at line 15" in error["message"] and "--base-args" in error["message"]


def test_branch_on_store_true_selects_export():
    config = imported("branch_selection", base_args=["--export"])
    assert config["job"]["run_call"] == "export"


def test_fixed_budget_args_each_flag_once():
    assert api.fixed_budget_args(imported("hello_numpy")) == ["--n_clients", "2", "--num_rounds", "3"]
    assert api.fixed_budget_args(imported("hello_numpy", base_args=["--n_clients", "4"])) == [
        "--n_clients",
        "4",
        "--num_rounds",
        "3",
    ]
    derived = imported("branch_selection", base_args=["--algo", "scaffold"])
    # num_rounds=2 * args.num_rounds inside `if args.algo ...`, SimEnv inside `else:` of `if args.export`: every
    # option that decides a budget value is pinned (--export stays off, which needs no argument).
    assert api.fixed_budget_args(derived) == ["--n_clients", "2", "--algo", "scaffold", "--num_rounds", "3"]
    assert api.fixed_budget_options(derived) == ["--n_clients", "--export", "--algo", "--num_rounds"]
    assert api.fixed_budget_args(imported("pt_cyclic")) == []


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("-r", ("--num_rounds", None, None)),
        ("-r7", ("--num_rounds", "7", None)),
        ("--rounds=4", ("--num_rounds", "4", None)),
        ("--num_r", ("--num_rounds", None, None)),
        ("-n", ("--n_clients", None, None)),
        ("--lr", ("--lr", None, None)),
        ("--n", (None, None, "ambiguous option: --n could match --n_clients, --num_rounds, --name")),
        ("--epochs", (None, None, "unrecognized argument --epochs")),
    ],
)
def test_canonical_option_uses_argparse_rules(token, expected):
    assert api.canonical_option(imported("short_aliases"), token) == expected


def test_canonical_option_respects_allow_abbrev_false():
    assert api.canonical_option(imported("main_args_param"), "--num")[0] is None
    assert api.canonical_option(imported("main_args_param"), "--clients")[0] == "--clients"


def test_parse_job_args_validates_types_and_choices():
    config = imported("choices")
    assert api.parse_job_args(config, ["--optimizer", "adam", "--local_epochs=2"]) == (
        {"--optimizer": "adam", "--local_epochs": 2},
        [],
    )
    assert api.parse_job_args(config, ["--local_epochs", "3"])[1] == [
        "argument --local_epochs: invalid choice: 3 (choose from 1, 2, 4)"
    ]
    assert api.parse_job_args(config, ["--x", "1"], known_only=True) == ({}, [])


def test_custom_type_flags_keep_raw_strings_with_medium_confidence():
    source = (
        "import argparse\nfrom nvflare.recipe import SimEnv\nfrom x import FedAvgRecipe\n"
        "def str2bool(v):\n    return v.lower() in ('yes', 'true')\n"
        "p = argparse.ArgumentParser()\np.add_argument('--amp', type=str2bool, default='no')\n"
        "p.add_argument('--opt', choices=5, default='sgd')\n"
        "a = p.parse_args()\n"
        "FedAvgRecipe(min_clients=2, num_rounds=2, train_args=f'--amp {a.amp}').execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source, base_args=["--amp", "true"])
    assert config["admission_errors"] == []
    assert config["recipe_args"]["train_args"] == {
        "confidence": "medium",
        "expr": "f'--amp {a.amp}'",
        "flags": ["--amp"],
        "value": "--amp true",
    }
    assert "choices" not in flag(config, "--opt")


@pytest.mark.parametrize(
    "call, recorded",
    [
        ("argparse.ArgumentParser(description=__doc__)", None),
        ('argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars="@")', "@"),
        ('argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars="@+")', "@+"),
        ("argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars=None)", None),
        ('argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars=os.environ.get("P", "@"))', "unknown"),
    ],
)
def test_fromfile_prefix_chars_are_recorded_and_at_file_base_args_refused(tmp_path, call, recorded):
    from autofl_core.importer import argparse_flow, runner_view

    source = (FIXTURES / "hello_numpy" / "job.py").read_text()
    assert "argparse.ArgumentParser(description=__doc__)" in source
    job = tmp_path / "job.py"
    job.write_text(
        source.replace("argparse.ArgumentParser(description=__doc__)", call, 1).replace(
            "import argparse", "import argparse\nimport os", 1
        )
    )
    config = api.import_job(job)
    chars = config["argparse"]["fromfile_prefix_chars"]
    assert chars == (argparse_flow.UNKNOWN_FROMFILE if recorded == "unknown" else recorded)
    assert runner_view.fromfile_arguments(config, ["--lr", "@more.txt", "+x", "-0.1", "./data"]) == (
        [] if chars is None else [t for t in ("@more.txt", "+x") if t[0] in chars]
    )
    refused = api.import_job(job, base_args=["--workspace", "@more.txt"])
    codes = [e["code"] for e in refused["admission_errors"] if "fromfile_prefix_chars" in e["message"]]
    assert codes == ([] if chars is None else ["AUTOFL_INVALID_BASE_ARGS"])


ALIAS_AFTER_EARLY_PARSE = """import argparse
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

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
    train_args=f"--lr {args.lr} --warmup {args.num_rounds}",
)
recipe.execute(SimEnv(num_clients=args.n_clients))
"""
ALIAS_CLIENT = (
    "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float)\n"
    "parser.add_argument('--warmup', type=int)\nparser.parse_args()\n"
)


def test_an_option_sharing_the_budget_option_s_dest_is_never_suggested():
    """`-r` writes num_rounds, which --num_rounds pins: the runner refuses it, so it is not offered for tuning even
    where its value reaches the job."""
    files = {"client.py": ALIAS_CLIENT}
    config = api.import_source(ALIAS_AFTER_EARLY_PARSE, read_file=files.get)
    assert config["admission_errors"] == []
    assert config["fixed_budget"]["num_rounds"]["flag"] == "--num_rounds"
    assert "-r" in api.fixed_budget_options(config)  # the runner refuses a candidate that sets it
    assert [s["flag"] for s in config["search_space"]["suggested"]] == ["--lr"]
    assert config["summary"]["allowed"] == ["--lr"]


SHARED_DEST_REQUIRED = """import argparse
from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=3)
parser.add_argument("--rounds", type=int, dest="num_rounds", required=REQUIRED)
args = parser.parse_args()
FedAvgRecipe(min_clients=2, num_rounds=args.num_rounds, train_script="client.py").execute(SimEnv(num_clients=2))
"""


@pytest.mark.parametrize("required", [False, True])
def test_a_shared_dest_is_the_first_option_s_unless_a_later_one_is_required(required):
    """argparse gives the dest the first declared option's default (3, not the later option's None); a later
    option sharing it that is required and not given makes job.py exit, so the budget is unread."""
    config = api.import_source(SHARED_DEST_REQUIRED.replace("REQUIRED", str(required)))
    rounds = config["fixed_budget"]["num_rounds"]
    if required:
        assert rounds["value"] is None and "--rounds is required" in rounds["reason"], rounds
        assert config["admission_errors"]
    else:
        assert (rounds["value"], rounds["flag"]) == (3, "--num_rounds"), rounds
        assert config["admission_errors"] == [], config["admission_errors"]
        assert {"--num_rounds", "--rounds"} <= set(api.fixed_budget_options(config))
