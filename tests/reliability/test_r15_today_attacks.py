"""Attacks on three importer changes: locating variables left alone by the environment run, a static refusal no run
settles folded beside the run's record, and `merge_flags` reading data values' flags only.

The promises under attack: a job is admitted only with its training budget (num_clients, min_clients, num_rounds)
and objective pinned, and what the import's dry run records is what a trial runs (the dry run sees what a trial's
environment holds that the runner's does not: a private temp folder, the attempt number); a budget that a trial's
run still changes is caught by the run-time check of what ran; a refusal no run settles is never lost or turned
into an admission; an option that moves a budget value is named in its `depends_on`, so a candidate changing it is
refused. Never a traceback; every refusal is one line.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun, moves, recorded
from autofl_core.trial.execute import CRASH, TrialSpec
from runner_support import run_trial_settled

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def _job(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    return folder / "job.py"


def _fixed(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


def _one_line_each(config: dict) -> None:
    for error in config["admission_errors"]:
        assert error["message"] and "\n" not in error["message"] and "Traceback" not in error["message"], error


# --- 1. the dry run's environment is a trial's: private temp folder, attempt number --------------------------------

ROUNDS_JOB = """import os
import tempfile

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

{line}
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
# Each line gives 4 rounds in every trial (a trial always has a private TMPDIR in a folder named autofl-..., and its
# attempt number), 2 where the runner's environment is what the run sees. The static reading leaves each unresolved (a run
# settles it), so the dry run's record is the admitted budget.
TRIAL_ONLY = {
    "temp folder is set": 'rounds = 4 if "TMPDIR" in os.environ else 2',
    "temp folder by tempfile": 'rounds = 4 if "autofl-" in tempfile.gettempdir() else 2',
    "temp folder by name": 'rounds = 4 if "TMP" in os.environ else 2',
    "attempt is set": 'rounds = 4 if "AUTOFL_TRIAL_ATTEMPT" in os.environ else 2',
}


@sealed
@pytest.mark.parametrize("case", list(TRIAL_ONLY), ids=lambda c: c.replace(" ", "-"))
def test_a_budget_read_from_what_only_a_trial_s_environment_holds_is_admitted_as_a_trial_runs_it(
    tmp_path, private_cache, monkeypatch, case
):
    """Before: the dry run saw the runner's environment (no TMPDIR here, no attempt number) and admitted 2 rounds
    for a job every trial runs with 4."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    config = api.import_job(_job(tmp_path / "job", ROUNDS_JOB.format(line=TRIAL_ONLY[case])), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_rounds": 4, "min_clients": 2, "num_clients": 2}


def _record(**extra) -> recorded.DryRunRecord:
    raw = {
        "status": "recorded",
        "entry": "recipe.execute",
        "recipe": ["nvflare.app_common.np.recipes.NumpyFedAvgRecipe"],
        "budget": {
            "num_rounds": {"value": 5, "source": "recipe.num_rounds"},
            "min_clients": {"value": 2, "source": "recipe.min_clients"},
            "num_clients": {"value": 2, "source": "SimEnv.num_clients"},
        },
    }
    return recorded.parse({**raw, **extra})


def test_each_trial_s_own_temp_folder_is_perturbed_and_the_machine_s_locating_variables_are_not():
    """A trial's TMPDIR is another folder every trial: a budget that reads its value is not pinned by one run."""
    names = ["PATH", "HOME", "PYTHONPATH", "TMPDIR", "TEMP", "TMP", "CUDA_VISIBLE_DEVICES"]
    asked = []

    def run_env(env):
        asked.append(sorted(env))
        return _record(env_read=names)

    moves.moving_env(_record(env_read=names), run_env, dryrun.FIXED_ENV)
    assert asked[0] == ["CUDA_VISIBLE_DEVICES", "TEMP", "TMP", "TMPDIR"], asked


# A job can always tell its dry run from a trial (its temp folder's path names the dry run): the budget it then
# runs is caught by the run-time check of what ran, the last line of defence.
TELLS_THE_DRY_RUN = """    args = define_parser()
    if "autofl-dryrun-" not in tempfile.gettempdir():
        args.num_rounds = 5
"""


@sealed
@pytest.mark.integration
def test_rounds_a_job_runs_only_outside_its_dry_run_are_caught_by_the_check_of_what_ran(tmp_path, private_cache):
    workspace = tmp_path / "ws"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("autofl_runs", ".nvflare", "__pycache__"))
    job = workspace / "job.py"
    text = job.read_text(encoding="utf-8")
    assert text.count("    args = define_parser()\n") == 1
    job.write_text(
        "import tempfile\n" + text.replace("    args = define_parser()\n", TELLS_THE_DRY_RUN), encoding="utf-8"
    )
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_rounds": 3, "min_clients": 2, "num_clients": 2}  # what the dry run saw
    short = Path(tempfile.mkdtemp(prefix="r15-", dir="/tmp"))
    try:
        result = run_trial_settled(
            TrialSpec(
                python=sys.executable,
                job_path=job,
                workspace=workspace,
                run_dir=tmp_path / "run",
                trial_name="tells",
                metric_order=["accuracy"],
                budget_args=["--num_rounds", "3", "--n_clients", "2"],
                num_rounds=3,
                num_clients=2,
                min_clients=2,
                stage_files={},
                temp_parent=short,
                timeout=240.0,
                parent_env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
            )
        )
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert result.outcome == CRASH, (result.outcome, result.failure_reason)
    assert result.failure_reason.startswith("budget violated: 5 rounds ran, the fixed budget is 3"), result


# --- 2. a static refusal no run settles, beside what the run recorded -----------------------------------------------

HIDDEN_ROUNDS = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "hidden_rounds"


def _with_schema(tmp_path: Path, source: Path | str, schema: str) -> Path:
    if isinstance(source, Path):
        shutil.copytree(source, tmp_path / "job")
        job = tmp_path / "job" / "job.py"
    else:
        job = _job(tmp_path / "job", source)
    (job.parent / "mutation_schema.yaml").write_text(schema, encoding="utf-8")
    return job


@sealed
def test_a_schema_budget_the_run_does_not_use_is_refused_after_the_fold(tmp_path, private_cache):
    """The schema fixes 5 rounds and passes --num_rounds 5; the run asks NVFLARE for 7 (a helper of another module
    sets the attribute; the reading refuses the namespace given to it). Before: the mismatch was only checked
    against the reading, and the job was admitted with 7 rounds though the schema fixes 5."""
    job = _with_schema(
        tmp_path, HIDDEN_ROUNDS, "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n"
    )
    static = api.import_job(job)["fixed_budget"]["num_rounds"]
    assert "given to tune() at line 21" in static["reason"], "precondition: the reading does not follow tune()"
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 7
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_SCHEMA_BUDGET_MISMATCH"], config[
        "admission_errors"
    ]
    message = config["admission_errors"][0]["message"]
    assert "num_rounds: 5" in message and "num_rounds=7" in message and "--num_rounds" in message, message
    _one_line_each(config)


UNREAD_ROUNDS = """import math

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="u", model=[0.0], min_clients=2, num_rounds=math.isqrt(25), train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_a_schema_budget_the_run_confirms_is_no_refusal(tmp_path, private_cache):
    """The reading cannot evaluate the rounds (math.isqrt), so it found a mismatch with the schema's 5; the run asks
    NVFLARE for 5. Before: that mismatch was kept beside the run's 5 rounds, a refusal that told the user to add a
    --num_rounds option the job does not need."""
    job = _with_schema(
        tmp_path, UNREAD_ROUNDS, "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n"
    )
    static = api.import_job(job)
    assert "AUTOFL_SCHEMA_BUDGET_MISMATCH" in [e["code"] for e in static["admission_errors"]], "precondition"
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_rounds": 5, "min_clients": 2, "num_clients": 2}


@sealed
def test_a_schema_budget_the_run_contradicts_without_an_option_is_refused_naming_the_run_s_value(
    tmp_path, private_cache
):
    job = _with_schema(
        tmp_path, UNREAD_ROUNDS, "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 4\n"
    )
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_SCHEMA_BUDGET_MISMATCH"], config[
        "admission_errors"
    ]
    message = config["admission_errors"][0]["message"]
    assert "num_rounds=5" in message and "has no --num_rounds option" in message, message
    _one_line_each(config)


@sealed
def test_a_budget_argument_conflict_stays_beside_the_run_s_budget(tmp_path, private_cache):
    """--base-args sets --num_rounds 3, the schema fixes 5: the run (which gets both) records 5; the conflict is a
    refusal no run settles and stays, alone."""
    job = _with_schema(
        tmp_path, HIDDEN_ROUNDS, "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 7\n"
    )
    config = api.import_job(job, dry_run=True, base_args=["--num_rounds", "3"])
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_BUDGET_ARGUMENT_CONFLICT"], config[
        "admission_errors"
    ]
    assert "--num_rounds" in config["admission_errors"][0]["message"]
    _one_line_each(config)


DIRECTION_AND_UNREAD = """import math

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(
    name="d", model=[0.0], min_clients=2, num_rounds=math.isqrt(9), train_script="client.py", key_metric="val_loss"
)
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
@pytest.mark.parametrize(
    "schema, code",
    [
        ("", "AUTOFL_METRIC_DIRECTION_CONFLICT"),  # val_loss with NVFLARE's implicit max
        ("comparison_budget_args: [1, 2]\n", "AUTOFL_INVALID_MUTATION_SCHEMA"),
    ],
    ids=["direction", "invalid-schema"],
)
def test_a_refusal_no_run_settles_stays_and_what_the_run_settled_goes(tmp_path, private_cache, schema, code):
    job = _with_schema(tmp_path, DIRECTION_AND_UNREAD, schema)
    static = api.import_job(job)
    assert "AUTOFL_UNRESOLVED_SAFETY_FIELD" in [e["code"] for e in static["admission_errors"]], "precondition"
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    codes = [e["code"] for e in config["admission_errors"]]
    assert code in codes and "AUTOFL_UNRESOLVED_SAFETY_FIELD" not in codes, config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3
    _one_line_each(config)


# --- 3. an option's influence on the budget is never lost from `depends_on` (the reading alone) --------------------

STATIC_HEAD = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=2)
p.add_argument("--big", action="store_true")
args = p.parse_args()
"""
STATIC_TAIL = """recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
# Each job runs 3 rounds as imported and 5 (or another count) with --big: the option not taken still decides.
SKIPPED_BRANCH = {
    "reassigned": "rounds = 3\nif args.big:\n    rounds = 5\n",
    "added to": "rounds = 3\nif args.big:\n    rounds += 2\n",
    "item set": "cfg = {'r': 3}\nif args.big:\n    cfg['r'] = 5\nrounds = cfg['r']\n",
    "namespace attribute": "args.n = 3\nif args.big:\n    args.n = 5\nrounds = args.n\n",
    "setattr": "args.n = 3\nif args.big:\n    setattr(args, 'n', 5)\nrounds = args.n\n",
    "elif": "rounds = 3\nif args.n > 9:\n    rounds = 1\nelif args.big:\n    rounds = 5\n",
}


@pytest.mark.parametrize("case", list(SKIPPED_BRANCH), ids=lambda c: c.replace(" ", "-"))
def test_a_budget_an_untaken_branch_would_change_depends_on_its_option(case):
    """Before: a branch not taken left no trace, so num_rounds read as 3 depending on nothing (high), and a
    candidate passing --big ran 5 rounds with nothing refusing it before it trained."""
    config = api.import_source(STATIC_HEAD + SKIPPED_BRANCH[case] + STATIC_TAIL)
    assert config["admission_errors"] == [], config["admission_errors"]
    entry = config["fixed_budget"]["num_rounds"]
    assert entry["value"] == 3 and "--big" in entry["depends_on"], entry
    assert "--big" in api.fixed_budget_options(config)
    assert "--big" not in [s["flag"] for s in config["search_space"]["suggested"]]


FEDJOB_HEAD = """import argparse
import os

from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

p = argparse.ArgumentParser()
p.add_argument("--big", action="store_true")
args = p.parse_args()
job = FedJob(name="j", min_clients=2)
job.to(FedAvg(num_clients=2, num_rounds=3), "server")
"""
FEDJOB_TAIL = 'job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/x"))\n'
SKIPPED_SITE = {
    "site sent to": (
        "job.to(ScriptRunner(script='client.py'), 'site-1')\njob.to(ScriptRunner(script='client.py'), 'site-2')\n"
        "if args.big:\n    job.to(ScriptRunner(script='client.py'), 'site-3')\n"
    ),
    "site list appended to": (
        "sites = ['site-1', 'site-2']\nif args.big:\n    sites.append('site-3')\n"
        "for s in sites:\n    job.to(ScriptRunner(script='client.py'), s)\n"
    ),
}


@pytest.mark.parametrize("case", list(SKIPPED_SITE), ids=lambda c: c.replace(" ", "-"))
def test_a_site_an_untaken_branch_would_add_makes_the_client_count_depend_on_its_option(case):
    config = api.import_source(FEDJOB_HEAD + SKIPPED_SITE[case] + FEDJOB_TAIL)
    entry = config["fixed_budget"]["num_clients"]
    assert entry["value"] == 2 and "--big" in entry["depends_on"], entry


@pytest.mark.parametrize("use", ['"{}".format(p)', "p or 1", "not p", "p == p", "len(p)", "p in [1]", "bool(p)"])
def test_a_parser_or_namespace_used_as_a_value_is_no_crash_and_hides_no_option(use):
    """merge_flags reads data values' flags only: a parser's `flags` (its options, unhashable) never stand for a
    value's inputs (each of these crashed before), and the options the budget reads are still named."""
    source = STATIC_HEAD + f"text = {use}\nrounds = args.n + 1\n" + STATIC_TAIL
    config = api.import_source(source)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3
    assert config["fixed_budget"]["num_rounds"]["depends_on"] == ["--n"]


WHILE_SITES = """i = 0
while i < 2:
    job.to(ScriptRunner(script="client.py"), f"site-{i}")
    i += 1
"""


COUNTED_SITES = """count = 0
for name in os.listdir("."):
    count += 1
    job.to(ScriptRunner(script="client.py"), f"site-{count}")
"""


@pytest.mark.parametrize("loop", [WHILE_SITES, COUNTED_SITES], ids=["while", "for-over-unknown"])
def test_sites_sent_to_in_a_loop_walked_once_are_never_admitted_with_one_pass_s_count(loop):
    """A loop the reading walks once stands for any pass. Before: the names its body rebinds kept their value from
    before the loop, so job.to() named one site and num_clients read as 1 (medium), admitted though the job runs 2."""
    config = api.import_source(FEDJOB_HEAD + loop + FEDJOB_TAIL)
    entry = config["fixed_budget"]["num_clients"]
    assert entry["value"] is None and entry["confidence"] == "unresolved", entry
    assert any("num_clients" in e["message"] for e in config["admission_errors"]), config["admission_errors"]
    _one_line_each(config)


DRYRUN_FIXTURES = REPO / "tests" / "fixtures" / "jobs" / "dryrun"


@sealed
def test_a_schema_budget_the_import_could_not_pass_says_so_and_base_args_settle_it(tmp_path, private_cache):
    """The parser lives in a class the reading does not follow, so the schema's --num_rounds 5 was never passed:
    the refusal says to pass it (before: it claimed job.py ignores the option, or that it had none)."""
    job = _with_schema(
        tmp_path,
        DRYRUN_FIXTURES / "class_parser",
        "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n",
    )
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_SCHEMA_BUDGET_MISMATCH"]
    assert "could not pass --num_rounds 5" in config["admission_errors"][0]["message"], config["admission_errors"]
    _one_line_each(config)
    passed = api.import_job(job, dry_run=True, base_args=["--num_rounds", "5"])
    assert passed["admission_errors"] == [], passed["admission_errors"]
    assert passed["fixed_budget"]["num_rounds"]["value"] == 5


@sealed
@pytest.mark.parametrize(
    "schema, code",
    [
        ("objective:\n  mode: min\n", "AUTOFL_METRIC_DIRECTION_CONFLICT"),
        ("objective:\n  requested_metric: loss\n", "AUTOFL_UNRESOLVED_SAFETY_FIELD"),  # loss, with no direction
    ],
    ids=["schema-mode", "schema-metric"],
)
def test_the_schema_s_objective_holds_for_a_job_only_a_run_can_read(tmp_path, private_cache, schema, code):
    """The recipe class comes from a table (the reading cannot follow it), the run records NumpyFedAvgRecipe ranking
    by accuracy, max. Before: the reading's empty objective dropped the schema's objective section, so the job was
    admitted ranking by max accuracy though the schema says min (or asks for another metric)."""
    job = _with_schema(tmp_path, DRYRUN_FIXTURES / "picked_from_table", schema)
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert code in [e["code"] for e in config["admission_errors"]], config["admission_errors"]
    assert config["objective"]["metric"] == ("accuracy" if "mode" in schema else "loss"), config["objective"]
    _one_line_each(config)


# --- a budget read through a copy of the environment --------------------------------------------------------------

# MY_ROUNDS stands for a variable a campaign passes to its trials (`simulator_env_passthrough`): the dry run never
# has it, so only a refusal keeps the budget from being what the dry run saw with it unset.
COPIED_ENV = {
    "copy": 'rounds = int(os.environ.copy().get("MY_ROUNDS", "3"))',
    "items": 'rounds = int(dict(os.environ.items()).get("MY_ROUNDS", "3"))',
    "dict": 'rounds = int(dict(os.environ).get("MY_ROUNDS", "3"))',
    "unpacked": 'rounds = int({**os.environ}.get("MY_ROUNDS", "3"))',
    "comprehension": 'rounds = 3 + len([k for k in os.environ if k == "MY_ROUNDS"])',
    "loop": 'rounds = 3\nfor k in os.environ:\n    if k == "MY_ROUNDS":\n        rounds = 5',
}


@sealed
@pytest.mark.parametrize("case", list(COPIED_ENV))
def test_a_budget_read_from_a_copy_of_the_environment_is_refused_naming_it(tmp_path, private_cache, monkeypatch, case):
    """Before: each read as a value one run settles ('the result of copy.get()', 'dict() is not evaluated', ...), so
    the dry run (without the variable, whose reads through a copy it never records) admitted 3 rounds whatever the
    trials' environment holds."""
    monkeypatch.delenv("MY_ROUNDS", raising=False)
    config = api.import_job(_job(tmp_path / "job", ROUNDS_JOB.format(line=COPIED_ENV[case])), dry_run=True)
    messages = [e["message"] for e in config["admission_errors"]]
    assert any("num_rounds" in m and "environment" in m for m in messages), (messages, _fixed(config))
    _one_line_each(config)


WRITES_TEMP = """import os
import tempfile

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

with tempfile.NamedTemporaryFile("w", delete=False) as handle:
    handle.write("x" * 4096)
rounds = 3 if os.path.getsize(handle.name) == 4096 else 9
recipe = NumpyFedAvgRecipe(name="w", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_a_job_writing_to_its_private_temp_folder_runs_and_leaves_nothing(tmp_path, private_cache):
    """The dry run's temp folder is a trial's, but on the sandbox's vanishing layer: writes work (the run records
    the 3 rounds the written file's size decides) and stay nowhere. The file is outside the job's folder, so the
    rounds the static reading leaves to the run are not pinned by it."""
    config = api.import_job(_job(tmp_path / "job", WRITES_TEMP), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["import"]["dry_run"]["budget"]["num_rounds"] == 3
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "num_rounds is unresolved" in said and "which its cache key does not hold" in said, said
    assert sorted(p.name for p in private_cache.iterdir() if not p.name.startswith("autofl-dryrun-")) == []
    assert [p.name for p in private_cache.iterdir() if p.name.startswith("autofl-dryrun-") and p.is_dir()] == [
        f"autofl-dryrun-{os.getuid()}"
    ]  # the cache folder alone: the session's folder (and its temp folder) is gone


@sealed
@pytest.mark.parametrize(
    "schema",
    [
        "objective: 5\n",
        "objective:\n  mode: 7\n  requested_metric: [1]\n  metric_extraction_order: 5\n",
        ":::\n",
        "comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: abc\n",
    ],
    ids=["objective-number", "objective-fields", "not-yaml", "budget-text"],
)
def test_a_broken_schema_beside_a_job_only_a_run_can_read_stays_a_refusal_without_a_traceback(
    tmp_path, private_cache, schema
):
    """The reading refuses the job (a recipe class from a table) and the schema; the run settles the job, folds in,
    and the schema's refusal alone stays, one line each."""
    job = _with_schema(tmp_path, DRYRUN_FIXTURES / "picked_from_table", schema)
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    codes = {e["code"] for e in config["admission_errors"]}
    assert codes == {"AUTOFL_INVALID_MUTATION_SCHEMA"}, config["admission_errors"]
    assert _fixed(config) == {"num_rounds": 4, "min_clients": 3, "num_clients": 3}
    _one_line_each(config)
