"""Attacks on session 13's importer changes (issue 33): the dry run going on after job.py's first run (h13run),
another NVFLARE version's API (h13usf), and pinned values and run arguments in `=` and combined spellings (h13fix).

The promises under attack: the number of runs a dry run admits is the number `python job.py` runs (a second run
through any way job.py goes on is seen, never read as "once"); a candidate's run arguments never change a budget
option in any spelling argparse accepts.
"""

from __future__ import annotations

import argparse

import pytest
from autofl_core.importer import admission, api, dryrun, run_reasons
from autofl_core.trial.argv import TrialError, build_trial_argv
from runner_support import dry_run
from test_dryrun_runs import _codes, _job

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

# --- 1. a second run the boot's stop at a run does not see ------------------------------------------------------

SECOND_RUNS = {  # case: job.py's code after the recipe is built; `python job.py` runs the recipe twice
    "an atexit handler running the recipe again after job.py returns": (
        "import atexit\natexit.register(helpers.launch, recipe, ENV)\nhelpers.launch(recipe, ENV)"
    ),
    "a thread running the recipe again after job.py's main code returns": (
        "import threading\nimport time\n\n\ndef later():\n    time.sleep(0.3)\n    helpers.launch(recipe, ENV)\n\n\n"
        "threading.Thread(target=later).start()\nhelpers.launch(recipe, ENV)"
    ),
    "a thread running the recipe twice": (
        "import threading\n\n\ndef twice():\n    helpers.launch(recipe, ENV)\n    helpers.launch(recipe, ENV)\n\n\n"
        "threading.Thread(target=twice).start()"
    ),
    "a forked child running the recipe again": (
        "import os\nhelpers.launch(recipe, ENV)\nif os.fork() == 0:\n    helpers.launch(recipe, ENV)\nelse:\n"
        "    os.wait()"
    ),
    "a process started after the run (a second training it may run is not seen)": (
        "import subprocess\nimport sys\nhelpers.launch(recipe, ENV)\nsubprocess.run([sys.executable, '-c', 'print(2)'])"
    ),
    "job.py catching whatever its second run raises": (
        "helpers.launch(recipe, ENV)\ntry:\n    helpers.launch(recipe, ENV)\nexcept BaseException:\n    pass"
    ),
}


@needs_sandbox
@pytest.mark.parametrize("case", list(SECOND_RUNS), ids=lambda c: c.replace(" ", "-"))
def test_a_second_run_however_job_py_goes_on_is_never_read_as_one(tmp_path, private_cache, case):
    """Before: the record said job.py ended after one run (the forked run ended before atexit handlers and
    non-daemon threads ran; a caught stop at the second run read as a normal end), and the import was admitted."""
    path = _job(tmp_path / "job", SECOND_RUNS[case])
    record = dry_run(path, [])
    assert record.status == "recorded" and run_reasons.runs(record) != "once", record.after
    config = api.import_job(path, dry_run=True)
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]


@needs_sandbox
def test_a_second_fedjob_run_after_the_recipe_s_is_seen(tmp_path, private_cache):
    after = (
        "helpers.launch(recipe, ENV)\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
        "from nvflare.job_config.api import FedJob\njob = FedJob(name='second')\n"
        "job.to_server(FedAvg(num_clients=2, num_rounds=7))\njob.simulator_run('/tmp/second', n_clients=2)"
    )
    record = dry_run(_job(tmp_path / "job", after), [])
    assert (record.after.how, run_reasons.runs(record)) == ("again", "twice"), record.after


@needs_sandbox
def test_an_atexit_handler_that_only_prints_keeps_the_single_run(tmp_path, private_cache):
    after = "import atexit\natexit.register(print, 'bye')\nhelpers.launch(recipe, ENV)"
    record = dry_run(_job(tmp_path / "job", after), [])
    assert run_reasons.runs(record) == "once", record.after


# --- 5. run arguments setting a budget option in a spelling argparse accepts ---------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("-r", "--num_rounds", type=int, default=2)
    parser.add_argument("-num_clients", type=int, default=2)
    parser.add_argument("-v", action="store_true")
    parser.add_argument("--lr", type=float, default=0.1)
    return parser


GROUPS = [["--num_rounds", "-r"], ["-num_clients"], ["-v"], ["--lr"]]
BUDGET = ["--num_rounds", "3", "-num_clients", "2"]
SPELLINGS = {  # run arguments argparse reads as a budget option
    "a switch combined with the budget's short option and its value": ["-vr5"],
    "a switch combined with the budget's short option, the value apart": ["-vr", "5"],
    "an abbreviated single-dash long option": ["-num", "7"],
    "an abbreviated single-dash long option, longer prefix": ["-num_c", "7"],
}


@pytest.mark.parametrize("case", list(SPELLINGS), ids=lambda c: c.replace(" ", "-"))
def test_run_args_reaching_a_budget_option_in_any_argparse_spelling_are_rejected(case):
    """Before: `-vr5` (argparse reads `-v -r 5`) and `-num 7` (a prefix of the single-dash `-num_clients`) passed the
    check and changed the budget the campaign compares under."""
    argv = BUDGET + SPELLINGS[case]
    parsed = vars(_parser().parse_args(argv))
    assert (parsed["num_rounds"], parsed["num_clients"]) != (3, 2), "precondition: argparse reads a budget change"
    with pytest.raises(TrialError) as info:
        build_trial_argv(
            "py", "job.py", budget_args=BUDGET, base_args=[], flag_groups=GROUPS, name_flag=None, trial_name=None,
            workspace="/w", run_args=SPELLINGS[case], switch_flags=["-v"],
        )  # fmt: skip
    assert info.value.code in ("AUTOFL_BUDGET_ARGUMENT_CONFLICT", "AUTOFL_INVALID_TRIAL_REQUEST"), info.value


def test_a_switch_and_other_options_in_their_own_tokens_pass():
    run = ["-v", "--lr", "0.2", "--lr=-0.1"]
    argv = build_trial_argv(
        "py", "job.py", budget_args=BUDGET, base_args=[], flag_groups=GROUPS, name_flag=None, trial_name=None,
        workspace="/w", run_args=run, switch_flags=["-v"],
    )  # fmt: skip
    assert argv == ["py", "job.py", *BUDGET, *run]
    assert vars(_parser().parse_args(argv[2:]))["num_rounds"] == 3


# --- 4. the count a workflow waits for, held by the workflow but not passed to it ----------------------------------

WAITING = """import argparse

from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner


class WaitFor(FedAvg):
    def __init__(self, num_rounds=2, wait=3, **kwargs):
        super().__init__(num_rounds=num_rounds, **kwargs)
        self.num_clients = wait  # what FedAvg's rounds wait for


parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=2)
args = parser.parse_args()
job = FedJob(name="wait")
job.to_server(WaitFor(num_rounds=args.num_rounds))
for site in ("site-1", "site-2", "site-3"):
    job.to(ScriptRunner(script="client.py"), site)
job.simulator_run("/tmp/nvflare/wait")
"""


@needs_sandbox
def test_a_workflow_count_set_by_its_own_constructor_is_not_admitted_as_another(tmp_path, private_cache):
    """Hole: the workflow waits for 3 clients (WaitFor's `wait`, not an argument NVFLARE exports), and the dry run
    admitted meta.json's min_clients 1. An admitted min_clients is 3, as a copy built from the exported arguments
    holds it."""
    path = _job(tmp_path / "job", "")
    path.write_text(WAITING, encoding="utf-8")
    config = api.import_job(path, dry_run=True)
    admitted = config["admission_errors"] == []
    assert not admitted or config["fixed_budget"]["min_clients"]["value"] == 3, config["fixed_budget"]


WAITING_THROUGH_KWARGS = {  # the live workflow waits for 2; NVFLARE's export drops `wait` (no attribute holds it)
    "kwargs": WAITING.replace(  # the loaded job's constructor takes the default: it waits for 3
        "def __init__(self, num_rounds=2, wait=3, **kwargs):\n",
        'def __init__(self, num_rounds=2, **kwargs):\n        wait = kwargs.pop("wait", 3)\n',
    ).replace("WaitFor(num_rounds=args.num_rounds)", "WaitFor(num_rounds=args.num_rounds, wait=2)"),
    "a constructor that cannot be rebuilt": WAITING.replace(  # the loaded job's constructor lacks `wait`
        "num_rounds=2, wait=3, **kwargs", "wait, num_rounds=2, **kwargs"
    ).replace("WaitFor(num_rounds=args.num_rounds)", "WaitFor(2, num_rounds=args.num_rounds)"),
}


@needs_sandbox
@pytest.mark.parametrize("case", list(WAITING_THROUGH_KWARGS))
def test_a_workflow_count_its_exported_arguments_do_not_give_is_never_the_live_one(tmp_path, private_cache, case):
    """The live workflow waits for 2; the loaded job's (built from the exported arguments, `wait` dropped) waits
    for 3, or cannot be built: 2 is never admitted."""
    path = _job(tmp_path / "job", "")
    path.write_text(WAITING_THROUGH_KWARGS[case], encoding="utf-8")
    config = api.import_job(path, dry_run=True)
    min_clients = config["fixed_budget"]["min_clients"]["value"]
    if case == "kwargs":
        assert config["admission_errors"] == [] and min_clients == 3, (config["admission_errors"], min_clients)
    else:
        assert config["admission_errors"] != [] and min_clients != 2, min_clients


# --- 3. a stand-in for an absent module deciding the budget --------------------------------------------------------

STAND_IN_DECIDES = {  # case: lines after the parse; with the real `cfglib` installed the job may run 9 rounds
    "a loop over a stand-in's items setting the rounds": "rounds = 2\nfor key, value in cfglib.load('t.yaml').items():\n"
    "    if key == 'num_rounds':\n        rounds = value\n",
    "a loop over a stand-in adding rounds": "rounds = 2\nfor _ in cfglib.extra_rounds():\n    rounds += 1\n",
    "a comprehension over a stand-in": "rounds = 2 + len([r for r in cfglib.extra_rounds()])\n",
    "a stand-in's path tested for existence": "import os\n\nrounds = 9 if os.path.exists(cfglib.default_path()) else 2\n",
}


def _deciding(folder, case: str):
    path = _job(folder, "recipe.execute(ENV)")
    source = path.read_text().replace("import helpers\n", "import helpers\nimport cfglib\n")
    source = source.replace("args = parser.parse_args()\n", "args = parser.parse_args()\n" + STAND_IN_DECIDES[case])
    path.write_text(source.replace("num_rounds=args.num_rounds", "num_rounds=rounds"), encoding="utf-8")
    return path


@needs_sandbox
@pytest.mark.parametrize(
    "case",
    list(STAND_IN_DECIDES),
    ids=lambda c: c.replace(" ", "-"),
)
def test_rounds_a_stand_in_decides_are_never_admitted_as_recorded(tmp_path, private_cache, case):
    """Before: a loop over a stand-in ran no pass (h13usf's `__iter__`), and the dry run's 2 rounds resolved what the
    static reading left unresolved: admitted."""
    path = _deciding(tmp_path / "job", case)
    assert api.import_job(path)["fixed_budget"]["num_rounds"]["value"] is None, "precondition: static unresolved"
    config = api.import_job(path, dry_run=True)
    assert config["fixed_budget"]["num_rounds"]["value"] is None, config["fixed_budget"]["num_rounds"]
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "fixed_budget.num_rounds is unresolved" in said and "cfglib" in said, said


@needs_sandbox
def test_a_loop_over_a_framework_s_devices_keeps_the_admission(tmp_path, private_cache):
    """As NVFLARE's tf-fedjob-algos: device set-up looping over TensorFlow's GPUs, stood in where it is absent."""
    gpus = (
        "import tensorflow as tf\n\nfor gpu in tf.config.experimental.list_physical_devices('GPU'):\n"
        "    tf.config.experimental.set_memory_growth(gpu, True)\nrecipe.execute(ENV)"
    )
    path = _job(tmp_path / "job", gpus)
    record = dry_run(path, [])
    assert "tensorflow" in record.stubbed, "precondition: TensorFlow is stood in"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3
