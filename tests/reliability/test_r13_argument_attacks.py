"""Attacks on the real argparse parser that `--base-args` and a candidate's run arguments go through.

The promises under attack: nothing printed by argparse, no traceback or SystemExit reaching the user (one line,
a documented exit code), nothing changed on disk on a refusal, and a candidate never moving the fixed budget,
whatever a hostile candidate writes, whatever odd option a job.py declares, and whatever a hand-edited
autofl.yaml records in `argparse.flags`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from autofl_core.importer import api, dryrun, runner_view
from autofl_core.runner import runargs
from autofl_core.runner.outcome import CampaignError
from runner_support import initialized_standin, run_cli, run_inproc, standin_workspace, tree_digest


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """One initialized stand-in campaign; each test works on a copy."""
    return initialized_standin(tmp_path_factory.mktemp("r13"))


LOCK = (".nvflare/autofl/campaign.lock",)  # the runner's lock records who held it last


def copy_of(campaign: Path, tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(campaign, workspace, symlinks=True)
    return workspace


def edit_config(workspace: Path, edit) -> None:
    """Hand-edit autofl.yaml as a user (or a careless tool) would."""
    path = workspace / "autofl.yaml"
    config = yaml.safe_load(path.read_text())
    edit(config)
    path.write_text(yaml.safe_dump(config))


def edit_flags(workspace: Path, edit) -> None:
    edit_config(workspace, lambda config: edit(config["argparse"]["flags"]))


# --- a hand-edited autofl.yaml: odd flag records are one line, never a traceback ----------------------------------

ODD_RECORDS = {
    "non-string option": lambda flags: flags[3].update(option_strings=[5]),
    "option strings missing": lambda flags: flags[3].pop("option_strings"),
    "option strings a string": lambda flags: flags[3].update(option_strings="--lr"),
    "dest null": lambda flags: flags[3].update(dest=None),
    "dest missing": lambda flags: flags[3].pop("dest"),
    "takes_value missing": lambda flags: flags[3].pop("takes_value"),
    "record a string": lambda flags: flags.__setitem__(3, "--lr"),
    "record null": lambda flags: flags.__setitem__(3, None),
}
ODD_SECTIONS = {
    "flags a mapping": lambda config: config["argparse"].update(flags={"--lr": {}}),
    "fromfile a number": lambda config: config["argparse"].update(fromfile_prefix_chars=5),
    "budget flag a list": lambda config: config["fixed_budget"]["num_rounds"].update(flag=["--num_rounds"]),
    "budget depends_on a number": lambda config: config["fixed_budget"]["num_rounds"].update(depends_on=5),
    "budget entry a string": lambda config: config["fixed_budget"].update(num_rounds="3"),
    "comparison args a list": lambda config: config["fixed_budget"].update(comparison_args=["--lr"]),
    "mutable args a string": lambda config: config.setdefault("schema", {}).update(mutable_args="lr"),
}
ODD_EDITS = {
    **{name: lambda config, edit=edit: edit(config["argparse"]["flags"]) for name, edit in ODD_RECORDS.items()},
    **ODD_SECTIONS,
}


@pytest.mark.parametrize("edit", list(ODD_EDITS.values()), ids=list(ODD_EDITS))
def test_an_odd_record_in_autofl_yaml_is_one_line_and_changes_nothing(campaign, tmp_path, edit):
    workspace = copy_of(campaign, tmp_path)
    edit_config(workspace, edit)
    before = tree_digest(workspace)
    done = run_inproc(workspace, "prepare", "--name", "c1", "--hypothesis", "h", "--run-args", "--lr 0.2")
    assert done.code == 2, done
    assert "autofl.yaml: " in done.stderr and "restore autofl.yaml" in done.stderr, done.stderr
    assert "\n" not in done.stderr
    assert tree_digest(workspace) == before


def test_an_odd_flag_record_reaches_the_cli_user_as_one_line_without_a_traceback(campaign, tmp_path):
    workspace = copy_of(campaign, tmp_path)
    edit_flags(workspace, ODD_RECORDS["non-string option"])
    done = run_cli(workspace, "prepare", "--name", "c1", "--hypothesis", "h", "--run-args", "--lr 0.2", timeout=120)
    assert done.code == 2 and done.envelope is None
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_huge_nargs_in_autofl_yaml_is_a_refusal_of_the_run_args_not_a_memory_error(campaign, tmp_path):
    workspace = copy_of(campaign, tmp_path)
    edit_flags(workspace, lambda flags: flags[3].update(nargs=10**9))
    before = tree_digest(workspace)
    done = run_inproc(workspace, "prepare", "--name", "c1", "--hypothesis", "h", "--run-args", "--lr 0.2")
    assert (done.code, done.stderr) == (
        2,
        "run args rejected by job.py's parser: unrecognized arguments: --lr 0.2; fix --run-args",
    )
    assert tree_digest(workspace) == before


def test_a_positional_recorded_without_option_strings_parses(campaign, tmp_path):
    """The dry run records a positional as argparse holds it: no option strings, its dest naming it."""
    record = {"option_strings": [], "dest": "workdir", "action": "store", "nargs": "?", "takes_value": True}
    config = {"argparse": {"flags": [record, {"option_strings": ["--lr"], "dest": "lr", "takes_value": True}]}}
    assert runner_view.parse_job_args(config, ["here", "--lr", "0.2"]) == ({"workdir": "here", "--lr": "0.2"}, [])
    assert runner_view.canonical_option(config, "--lr=1") == ("--lr", "1", None)
    workspace = copy_of(campaign, tmp_path)
    edit_flags(workspace, lambda flags: flags.append(record))
    done = run_inproc(workspace, "prepare", "--name", "c1", "--hypothesis", "h", "--run-args", "--lr 0.2")
    assert done.code == 0, done.stderr


# --- nargs no argparse could build a pattern for ----------------------------------------------------------------


def test_a_huge_nargs_in_a_config_record_is_a_refusal_not_a_memory_error():
    config = {
        "argparse": {"flags": [{"option_strings": ["--tags"], "dest": "tags", "takes_value": True, "nargs": 10**9}]}
    }
    started = time.monotonic()
    values, errors = runner_view.parse_job_args(config, ["--tags", "a"])
    assert errors and values == {}
    assert runner_view.canonical_option(config, "--tags=a") == ("--tags", "a", None)
    assert time.monotonic() - started < 5


def test_a_huge_nargs_in_job_py_is_read_without_a_memory_error(tmp_path):
    workspace = standin_workspace(tmp_path)
    job = workspace / "job.py"
    job.write_text(
        job.read_text().replace(
            '    parser.add_argument("--use_bonus"',
            '    parser.add_argument("--tags", nargs=10**9)\n    parser.add_argument("--use_bonus"',
        )
    )
    started = time.monotonic()
    config = api.import_job(job, base_args=["--tags", "a"])
    assert time.monotonic() - started < 10
    assert any("--tags" in e for e in config["argparse"]["base_args_errors"]), config["argparse"]
    assert {k: config["fixed_budget"][k]["value"] for k in api.FIELDS} == {
        "num_clients": 2,
        "min_clients": 2,
        "num_rounds": 3,
    }


POSITIONAL_JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("workdir", nargs="?", default=".")
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--num_rounds", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="x", model=[0.0], min_clients=args.n_clients, num_rounds=args.num_rounds, train_script="client.py",
    train_args=f"--lr {args.lr}",
)
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_job_with_a_positional_parses_run_args_after_its_dry_run_records(tmp_path):
    """The dry run records argparse's own actions: a positional's option strings are empty."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "job.py").write_text(POSITIONAL_JOB)
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert [f["option_strings"] for f in config["argparse"]["flags"]][0] == []
    assert api.parse_job_args(config, ["--lr", "0.2"]) == ({"--lr": 0.2}, [])
    assert api.canonical_option(config, "--num_r=4") == ("--num_rounds", "4", None)
    assert runner_view.fixed_budget_args(config) == ["--n_clients", "2", "--num_rounds", "3"]
    with pytest.raises(CampaignError, match="fixed-budget option --num_rounds"):
        runargs.candidate_args(config, "--num_r=4")


# --- a value job.py's parser reads as an option -----------------------------------------------------------------

OPTIONAL_VALUES = (
    '    parser.add_argument("--opt", nargs="?", const="c", default="d")\n'
    '    parser.add_argument("--tags", nargs="*", default=[])\n'
    '    parser.add_argument("--use_bonus"'
)


@pytest.fixture(scope="module")
def optional_values_config(tmp_path_factory) -> dict:
    """The stand-in job with two options whose value is optional (`nargs='?'`, `nargs='*'`), read statically."""
    workspace = standin_workspace(tmp_path_factory.mktemp("optional"))
    job = workspace / "job.py"
    job.write_text(job.read_text().replace('    parser.add_argument("--use_bonus"', OPTIONAL_VALUES))
    config = api.import_job(job)
    assert config["admission_errors"] == [] and runner_view.fixed_budget_args(config) == [
        "--n_clients",
        "2",
        "--num_rounds",
        "3",
    ]
    return config


@pytest.mark.parametrize(
    ("run_args", "moved"),
    [
        ("--opt=-r5", "--num_rounds"),  # passed on as `--opt -r5`: --opt takes no value, -r5 sets the rounds
        ("--opt=--num_rounds=5", "--num_rounds"),
        ("--tags=-r5", "--num_rounds"),
        ("--tags --n_clients=3", "--n_clients"),  # the token after --tags is its value for the run-args check
        ("--lr 0.2 --tags --name=x", "--name"),  # the runner-owned name
    ],
)
def test_a_value_the_job_reads_as_an_option_never_moves_the_budget(optional_values_config, run_args, moved):
    with pytest.raises(CampaignError, match=f"sets {moved}"):
        runargs.candidate_args(optional_values_config, run_args)


def test_optional_values_that_are_values_are_still_accepted(optional_values_config):
    assert runargs.candidate_args(optional_values_config, "--opt=x --tags=-1 --lr 0.2") == [
        ("--opt", "x"),
        ("--tags", "-1"),
        ("--lr", "0.2"),
    ]


# --- a value that is exactly `--` -----------------------------------------------------------------------------


@pytest.mark.parametrize("given", [["--run-args=--"], ["--run-args", "--"]], ids=["attached", "separate"])
def test_run_args_that_are_only_the_separator_are_one_line(campaign, tmp_path, given):
    """argparse drops a value that is exactly `--` (the option's value becomes a list): never a traceback."""
    workspace = copy_of(campaign, tmp_path)
    before = tree_digest(workspace, skip=LOCK)
    done = run_cli(workspace, "prepare", "--name", "c1", "--hypothesis", "h", *given, timeout=120)
    assert (done.code, done.stderr) == (
        2,
        "Auto-FL prepare failed: run arg '--' is not an option; candidates set options such as --lr 0.1\n",
    )
    assert tree_digest(workspace, skip=LOCK) == before


def test_base_args_that_are_only_the_separator_are_one_line(tmp_path):
    workspace = standin_workspace(tmp_path)
    importer = Path(runargs.__file__).resolve().parents[2] / "job_importer.py"
    done = subprocess.run(
        [sys.executable, str(importer), str(workspace / "job.py"), "--base-args=--"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AUTOFL_IMPORT_DRY_RUN": "0"},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("job_importer: not admissible: AUTOFL_INVALID_BASE_ARGS: --base-args: ")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


# --- an option whose arity the reading cannot see, beside a positional the budget depends on ----------------------

CUSTOM_ACTION_JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


class Toggle(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)


parser = argparse.ArgumentParser()
parser.add_argument("num_rounds", type=int, nargs="?", default=3)
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--fast", action=Toggle)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="x", model=[0.0], min_clients=args.n_clients, num_rounds=args.num_rounds, train_script="client.py",
    train_args=f"--lr {args.lr}",
)
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


def test_a_custom_action_s_value_never_reaches_a_positional_the_budget_depends_on(tmp_path):
    """`--fast 5` with a zero-arity custom action gives job.py `num_rounds 5`; the static reading cannot see the
    arity (the dry run's re-import at evaluate can), so a value for such an option is refused."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "job.py").write_text(CUSTOM_ACTION_JOB)
    config = api.import_job(tmp_path / "job.py")
    assert config["admission_errors"] == [] and config["fixed_budget"]["num_rounds"]["flag"] == "num_rounds"
    with pytest.raises(CampaignError, match="--fast uses a custom argparse action"):
        runargs.candidate_args(config, "--fast=5")
    assert runargs.candidate_args(config, "--lr 0.2") == [("--lr", "0.2")]


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_custom_action_recorded_by_the_dry_run_keeps_its_arity(tmp_path):
    """The real parser knows `--fast` takes no value: the config keeps it a `custom` action of arity 0 (it was
    read as a `store` that takes a value), so `--fast 5`, which job.py reads as the positional `num_rounds 5`, is
    refused before it trains."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "job.py").write_text(CUSTOM_ACTION_JOB)
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded" and config["admission_errors"] == []
    fast = next(f for f in config["argparse"]["flags"] if f["dest"] == "fast")
    assert (fast["action"], fast["takes_value"], fast["nargs"]) == ("custom", False, 0)
    for given in ("--fast=5", "--fast 5"):
        with pytest.raises(CampaignError):
            runargs.candidate_args(config, given)
    assert runargs.candidate_args(config, "--fast --lr 0.2") == [("--fast", None), ("--lr", "0.2")]


SHARED_DEST_JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=3)
parser.add_argument("--rounds", dest="num_rounds", type=int, default=3)
parser.add_argument("--n_clients", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="x", model=[0.0], min_clients=args.n_clients, num_rounds=args.num_rounds, train_script="client.py",
    train_args=f"--lr {args.lr}",
)
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


def _job_parses(job: Path, argv: list[str]):
    """The namespace job.py's own parser (its code up to `parse_args()`, run as written) makes of `argv`."""
    scope: dict = {}
    exec(job.read_text().split("args = parser.parse_args()")[0], scope)
    return scope["parser"].parse_args(argv)


def test_an_option_sharing_the_dest_of_a_budget_option_is_a_budget_option_too(tmp_path):
    """`--num_rounds` and `--rounds` write one attribute: the budget names the first declared (whose default
    argparse gives it) and pins it; every option sharing the dest is refused under any spelling (`--rounds 5`
    after the pin would run 5 rounds), and the pinned arguments give job.py the default budget."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "job.py").write_text(SHARED_DEST_JOB)
    config = api.import_job(tmp_path / "job.py")
    assert config["fixed_budget"]["num_rounds"]["flag"] == "--num_rounds"
    pinned = runner_view.fixed_budget_args(config)
    assert pinned == ["--n_clients", "2", "--num_rounds", "3"]
    assert {"--num_rounds", "--rounds"} <= set(runner_view.fixed_budget_options(config))
    for given in ("--num_rounds 5", "--num_r=5", "--rounds 5", "--rounds=5", "--ro 5"):
        with pytest.raises(CampaignError, match="fixed-budget option --(num_)?rounds"):
            runargs.candidate_args(config, given)
    assert _job_parses(tmp_path / "job.py", pinned).num_rounds == 3


@pytest.mark.parametrize("dry_run", [False, True], ids=["static", "dry-run"])
def test_options_sharing_a_dest_with_different_defaults_get_the_first_declared_default(tmp_path, dry_run):
    """argparse gives a shared dest the default of the first option declared for it (3 here, not `--rounds`'
    5): the static reading and the dry run both read 3, name `--num_rounds`, and pin what job.py runs."""
    if dry_run and not dryrun.available():
        pytest.skip("this host cannot seal a dry run (no namespaces)")
    (tmp_path / "client.py").write_text("print('trains')\n")
    job = SHARED_DEST_JOB.replace(
        '"--rounds", dest="num_rounds", type=int, default=3', '"--rounds", dest="num_rounds", type=int, default=5'
    )
    assert "default=5" in job
    (tmp_path / "job.py").write_text(job)
    assert _job_parses(tmp_path / "job.py", []).num_rounds == 3
    config = api.import_job(tmp_path / "job.py", dry_run=dry_run)
    assert config["admission_errors"] == [], config["admission_errors"]
    if dry_run:
        assert config["import"]["dry_run"]["status"] == "recorded"
    rounds = config["fixed_budget"]["num_rounds"]
    assert (rounds["value"], rounds["flag"]) == (3, "--num_rounds"), rounds
    pinned = runner_view.fixed_budget_args(config)
    assert _job_parses(tmp_path / "job.py", pinned).num_rounds == 3
    assert {"--num_rounds", "--rounds"} <= set(runner_view.fixed_budget_options(config))
    with pytest.raises(CampaignError, match="fixed-budget option --rounds"):
        runargs.candidate_args(config, "--rounds 5")


def test_the_schema_bounds_of_a_shared_dest_hold_for_every_option_writing_it(tmp_path):
    """mutation_schema.yaml names dests; `--lr` and `--learning_rate` both write `lr`, so both are mutable within
    the same bounds (neither refused as "not in mutable_args", neither escaping the max)."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    job = SHARED_DEST_JOB.replace(
        'parser.add_argument("--lr", type=float, default=0.1)',
        'parser.add_argument("--lr", type=float, default=0.1)\n'
        'parser.add_argument("--learning_rate", dest="lr", type=float, default=0.1)',
    )
    assert "--learning_rate" in job
    (tmp_path / "job.py").write_text(job)
    (tmp_path / "mutation_schema.yaml").write_text("mutable_args:\n  lr: {type: float, min: 0.01, max: 0.3}\n")
    config = api.import_job(tmp_path / "job.py")
    assert config["admission_errors"] == [], config["admission_errors"]
    for option in ("--lr", "--learning_rate"):
        assert [tuple(arg) for arg in runargs.candidate_args(config, f"{option} 0.2")] == [(option, "0.2")]
        with pytest.raises(CampaignError, match="above mutation_schema.yaml max 0.3"):
            runargs.candidate_args(config, f"{option} 0.5")


FROMFILE_LIST_JOB = SHARED_DEST_JOB.replace(
    "argparse.ArgumentParser()", 'argparse.ArgumentParser(fromfile_prefix_chars="@")'
).replace("parser.parse_args()", 'parser.parse_args(["@extra.txt"])')


def test_a_fixed_list_that_reads_a_file_of_arguments_leaves_the_budget_unread(tmp_path):
    """job.py parses `["@extra.txt"]`: argparse would read the file (here `--num_rounds 7`), the reading never
    does, so the defaults (3 rounds) are not what the job runs: the budget is unresolved, not 3."""
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "extra.txt").write_text("--num_rounds\n7\n")
    (tmp_path / "job.py").write_text(FROMFILE_LIST_JOB)
    config = api.import_job(tmp_path / "job.py")
    assert config["fixed_budget"]["num_rounds"]["value"] is None
    assert "reads arguments from a file" in config["fixed_budget"]["num_rounds"]["reason"]
    assert config["admission_errors"]


def test_options_sharing_a_dest_outside_the_budget_are_accepted_under_either_name(tmp_path):
    (tmp_path / "client.py").write_text("print('trains')\n")
    job = SHARED_DEST_JOB.replace(
        'parser.add_argument("--lr", type=float, default=0.1)',
        'parser.add_argument("--lr", type=float, default=0.1)\n'
        'parser.add_argument("--learning_rate", dest="lr", type=float, default=0.1)',
    )
    (tmp_path / "job.py").write_text(job)
    config = api.import_job(tmp_path / "job.py")
    assert runargs.candidate_args(config, "--lr 0.2") == [("--lr", "0.2")]
    assert runargs.candidate_args(config, "--learning_rate 0.2") == [("--learning_rate", "0.2")]


@pytest.mark.parametrize(
    "base_args",
    [["--x\n--num_rounds", "5"], ["--n\nx"], ["--n_clients", "2", "--bogus\r"], ["--name\x1b[2J"]],
    ids=["unrecognized", "ambiguous", "carriage-return", "escape"],
)
def test_a_refusal_quoting_a_token_with_control_characters_stays_one_line(tmp_path, base_args):
    config = api.import_job(standin_workspace(tmp_path) / "job.py", base_args=base_args)
    messages = [e["message"] for e in config["admission_errors"]] + config["argparse"]["base_args_errors"]
    assert messages
    assert all(m.isprintable() for m in messages), messages
