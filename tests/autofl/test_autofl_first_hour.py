"""What a new user hit in their first hour with Auto-FL (issue 14), and NVFLARE 2.9 FedJob isolation (issue 7)."""

import json
import subprocess
from pathlib import Path

import pytest
from autofl_core.common import cli
from autofl_core.importer import api
from autofl_core.importer.objective import direction_warning

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
JOBS = REPO / "tests" / "fixtures" / "jobs"
LEDGER = REPO / "tests" / "fixtures" / "autofl_ledgers" / "continue.tsv"  # metric_name accuracy


def run_script(python_exe: str, script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python_exe, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True, timeout=120
    )


# ---- --base-args values that start with "-" -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["job.py", "--base-args", "--num_rounds=5"], ["job.py", "--base-args=--num_rounds=5"]),
        (["--base-args", "-r5", "--format", "yaml"], ["--base-args=-r5", "--format", "yaml"]),
        (["--base-args=--lr 0.1"], ["--base-args=--lr 0.1"]),
        (["--base-args", ""], ["--base-args="]),
        (["--base-args"], ["--base-args"]),
        (["--", "--base-args", "-x"], ["--", "--base-args", "-x"]),
        (["--run-args", "--lr 1", "--base-args", "-n3"], ["--run-args=--lr 1", "--base-args=-n3"]),
    ],
)
def test_attach_values_keeps_argument_strings_together(argv, expected):
    assert cli.attach_values(argv, ("--base-args", "--run-args")) == expected


@pytest.mark.parametrize("base_args", ["--num_rounds=5", "-r5", "-r 5", "--rounds 5"])
def test_importer_cli_accepts_base_args_that_start_with_a_dash(python_exe, base_args):
    proc = run_script(python_exe, "job_importer.py", JOBS / "short_aliases" / "job.py", "--base-args", base_args)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fixed_budget"]["num_rounds"]["value"] == 5


# ---- summary.allowed: only options that reach the job ------------------------------------------------------------
def test_allowed_lists_only_options_that_reach_the_job():
    config = api.import_job(JOBS / "unused_options" / "job.py")
    assert config["summary"]["allowed"] == ["--lr", "--aggregation_weight"]
    assert [s["flag"] for s in config["search_space"]["suggested"]] == ["--lr", "--aggregation_weight"]
    parsed = {f["option_strings"][0] for f in config["argparse"]["flags"]}
    assert {"--momentum", "--dropout", "--verbose"} <= parsed, "parsed, but unused / rejected by client.py / printed"


def test_forwarded_options_are_unclassified_when_the_client_script_cannot_be_read():
    """Their flow into the data, the split or the metric cannot be read: `suggest` leaves them alone."""
    source = (JOBS / "unused_options" / "job.py").read_text()
    config = api.import_source(source)  # no read_file: client.py is unknown
    assert config["summary"]["allowed"] == ["--aggregation_weight"]
    assert set(config["data_shaping"]["unclassified"]) == {"--lr", "--momentum"}


def test_forwarded_options_do_not_count_for_a_client_without_argparse():
    source = (JOBS / "unused_options" / "job.py").read_text()
    client = "import nvflare.client as flare\nflare.init()\n"
    allowed = api.import_source(source, read_file={"client.py": client}.get)["summary"]["allowed"]
    assert allowed == ["--aggregation_weight"]


# ---- argparse inside a class -------------------------------------------------------------------------------------
CLASS_PARSER = """import argparse
from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe
from nvflare.recipe import SimEnv


class Config:
    def __init__(self):
        parser = argparse.ArgumentParser()
        parser.add_argument("--n_clients", type=int, default=2)
        parser.add_argument("--num_rounds", type=int, default=3)
        self.args = parser.parse_args()


cfg = Config()
recipe = FedAvgRecipe(min_clients=cfg.args.n_clients, num_rounds=cfg.args.num_rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=cfg.args.n_clients))
"""


def test_argparse_inside_a_class_gets_an_accurate_reason():
    config = api.import_source(CLASS_PARSER)
    [error] = config["admission_errors"]
    assert error["code"] == "AUTOFL_EMPTY_FIXED_BUDGET"
    assert "inside class Config (line 6)" in error["message"] and "does not follow classes" in error["message"]
    assert "pass them as literals or argparse values" not in error["message"]
    assert config["argparse"]["class_parsers"] == [{"class": "Config", "line": 6}]
    reason = config["fixed_budget"]["num_rounds"]["reason"]
    assert "instance of class Config" in reason and "does not follow classes" in reason


# ---- --mode against an obvious metric name -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("metric", "mode", "warns"),
    [
        ("accuracy", "min", True),
        ("val_auc", "min", True),
        ("accuracy", "max", False),
        ("loss", "min", False),
        ("val_loss", "max", True),
        ("top1_error", "min", False),
        ("neg_loss", "max", False),
        ("score", "min", False),
        (None, "min", False),
        ("accuracy", None, False),
    ],
)
def test_direction_warning_rule(metric, mode, warns):
    warning = direction_warning(metric, mode)
    assert (warning is not None) == warns
    if warning:
        assert "\n" not in warning and f"'{metric}'" in warning


@pytest.mark.parametrize("script", ["campaign_guard.py", "plot_progress.py"])
def test_scripts_warn_once_when_mode_contradicts_the_metric_name(python_exe, tmp_path, script):
    extra = ["--output", tmp_path / "p.png"] if script == "plot_progress.py" else []
    warned = run_script(python_exe, script, LEDGER, "--mode", "min", *extra)
    assert warned.returncode == 0, warned.stderr
    lines = [line for line in warned.stderr.splitlines() if "warning" in line]
    assert len(lines) == 1 and "--mode min" in lines[0] and "'accuracy'" in lines[0]
    quiet = run_script(python_exe, script, LEDGER, "--mode", "max", *extra)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


# ---- FedJob.simulator_run must read NVFLARE_SIMULATOR_WORKSPACE_ROOT ----------------------------------------------
FEDJOB = (
    "import argparse, os\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.job_config.api import FedJob\nfrom nvflare.job_config.script_runner import ScriptRunner\n"
    "p = argparse.ArgumentParser()\np.add_argument('--workspace', default={default})\na = p.parse_args()\n"
    "job = FedJob(name='j')\njob.to_server(FedAvg(num_clients=2, num_rounds=2))\n"
    "job.to(ScriptRunner(script='c.py'), 'site-1')\njob.to(ScriptRunner(script='c.py'), 'site-2')\n"
    "job.simulator_run({workspace})\n"
)
READS = "os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/tmp/w')"


@pytest.mark.parametrize(
    ("default", "workspace", "base_args", "outcome"),
    [
        ("'/tmp/w'", READS, [], "reads"),
        ("'/tmp/w'", f"os.path.join({READS}, 'sim')", [], "reads"),
        ("'/tmp/w'", "os.environ['NVFLARE_SIMULATOR_WORKSPACE_ROOT']", [], "reads"),
        (READS, "a.workspace", [], "reads"),
        (READS, "a.workspace", ["--workspace", "/elsewhere"], "/elsewhere"),
        ("'/tmp/w'", "a.workspace", [], "/tmp/w"),
        ("'/tmp/w'", "'/tmp/nvflare/jobs'", [], "/tmp/nvflare/jobs"),
        ("'/tmp/w'", "workspace=os.environ.get('OTHER', '/tmp/w')", [], "refused"),
        ("'/tmp/w'", "", [], "refused"),
    ],
)
def test_fedjob_workspace_must_read_the_simulator_root_variable(default, workspace, base_args, outcome):
    """The root variable isolates a FedJob run; a resolved literal path is mapped by a sealed trial (the runner
    refuses it where trials cannot be sealed); a path the importer cannot resolve is refused."""
    from autofl_core.importer import admission

    config = api.import_source(FEDJOB.format(default=default, workspace=workspace), base_args=base_args)
    codes = [e["code"] for e in config["admission_errors"]]
    assert config["environment"]["simulator_workspace"]["reads_root_variable"] is (outcome == "reads")
    if outcome == "refused":
        assert codes == ["AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED"]
        message = config["admission_errors"][0]["message"]
    else:
        assert codes == []
        assert admission.literal_workspace(config) == (None if outcome == "reads" else outcome)
        message = admission.unisolated_message(config)  # what the runner says on a host without the sandbox
    assert "\n" not in message and "only SimEnv honours it" in message
    assert 'job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/some/path"))' in message


def test_fedjob_fixtures_and_example_both_variants():
    from autofl_core.importer import admission

    literal = api.import_job(JOBS / "fedjob_literal_workspace" / "job.py")
    assert literal["admission_errors"] == [] and admission.literal_workspace(literal) == "/tmp/nvflare/jobs/workdir"
    assert "'/tmp/nvflare/jobs/workdir'" in admission.unisolated_message(literal)
    assert api.import_job(JOBS / "fedjob_simulator" / "job.py")["admission_errors"] == []
    example = api.import_job(REPO / "examples" / "fedjob-numpy" / "job.py")
    assert example["admission_errors"] == []
    assert {f: example["fixed_budget"][f]["value"] for f in ("num_clients", "min_clients", "num_rounds")} == {
        "num_clients": 2,
        "min_clients": 2,
        "num_rounds": 3,
    }
    assert example["objective"]["job_key_metric"] == "accuracy" and example["summary"]["allowed"] == [
        "--lr",
        "--local_steps",
    ]


def test_recipes_with_simenv_need_no_workspace_check():
    config = api.import_job(REPO / "examples" / "hello-numpy" / "job.py")
    assert config["environment"]["simulator_workspace"] is None and config["admission_errors"] == []
