"""Attacks on h13atk's fixes (issue 33): how the dry run follows job.py after its run
(`dryrun_boot/processes.exit_as_python`, the audit hook on processes, forked children) and the refusals of combined
short flags in `trial/argv.py`.

The promises under attack: the number of runs a dry run admits is the number `python job.py` runs; a job that runs
once is not refused for what it does after its run; a run argument argparse does not read as a budget option is
accepted, and one it does read as one is refused.
"""

from __future__ import annotations

import argparse

import pytest
from autofl_core.importer import admission, api, dryrun, run_reasons
from autofl_core.trial.argv import TrialError, build_trial_argv
from runner_support import dry_run
from test_dryrun_runs import _codes, _job

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

# --- 1. a second run the dry run read as one ----------------------------------------------------------------------

SPAWNED = (
    "import multiprocessing\nimport runpy\nhelpers.launch(recipe, ENV)\n"
    "if __name__ == '__main__':\n"
    "    p = multiprocessing.get_context('METHOD').Process(target=runpy.run_path, args=('again.py',))\n"
    "    p.start()\n    p.join()"
)
SECOND_RUNS = {  # case: job.py's code after the recipe is built; `python job.py` runs the recipe twice
    "a process started with multiprocessing's spawn method after the run": SPAWNED.replace("METHOD", "spawn"),
    "a process started with multiprocessing's forkserver method after the run": SPAWNED.replace("METHOD", "forkserver"),
    "a child forked before job.py's own run running the recipe": (
        "import os\npid = os.fork()\nif pid == 0:\n    helpers.launch(recipe, ENV)\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nhelpers.launch(recipe, ENV)"
    ),
    "a child forked before the run running the recipe later, not waited for": (
        "import os\nimport time\nif os.fork() == 0:\n    time.sleep(1)\n    helpers.launch(recipe, ENV)\n"
        "    os._exit(0)\nhelpers.launch(recipe, ENV)"
    ),
    "job.py replacing atexit's runner and registering a second run": (
        "import atexit\natexit._run_exitfuncs = lambda: None\natexit.register(helpers.launch, recipe, ENV)\n"
        "helpers.launch(recipe, ENV)"
    ),
    "job.py replacing threading.enumerate and running again in a thread": (
        "import threading\nimport time\n\n\ndef later():\n    time.sleep(0.3)\n    helpers.launch(recipe, ENV)\n\n\n"
        "threading.enumerate = lambda: []\nthreading.Thread(target=later).start()\nhelpers.launch(recipe, ENV)"
    ),
    "a thread class saying it is a daemon while Python joins it": (
        "import threading\nimport time\n\n\nclass Quiet(threading.Thread):\n"
        "    daemon = property(lambda self: True, lambda self, value: None)\n\n\n"
        "def later():\n    time.sleep(0.3)\n    helpers.launch(recipe, ENV)\n\n\n"
        "Quiet(target=later).start()\nhelpers.launch(recipe, ENV)"
    ),
    "a threading.Timer running the recipe again": (
        "import threading\nthreading.Timer(0.2, helpers.launch, (recipe, ENV)).start()\nhelpers.launch(recipe, ENV)"
    ),
    "a weakref.finalize running the recipe again": (
        "import weakref\n\n\nclass Box:\n    pass\n\n\nBOX = Box()\n"
        "weakref.finalize(BOX, helpers.launch, recipe, ENV)\nhelpers.launch(recipe, ENV)"
    ),
    "a daemon thread running the recipe again while main sleeps": (
        "import threading\nimport time\nhelpers.launch(recipe, ENV)\n"
        "threading.Thread(target=helpers.launch, args=(recipe, ENV), daemon=True).start()\ntime.sleep(1)"
    ),
    "os.execv of job.py itself after the run": (
        "import os\nimport sys\nhelpers.launch(recipe, ENV)\nif not os.environ.get('AGAIN'):\n"
        "    os.environ['AGAIN'] = '1'\n    os.execv(sys.executable, [sys.executable, 'job.py'])"
    ),
    "a process pool running the recipe before job.py's own run": (
        "from concurrent.futures import ProcessPoolExecutor\n\n\ndef train():\n    helpers.launch(recipe, ENV)\n\n\n"
        "with ProcessPoolExecutor(1) as pool:\n    pool.submit(train).exception()\nhelpers.launch(recipe, ENV)"
    ),
    "sys.excepthook running the recipe again after a raise": (
        "import sys\nsys.excepthook = lambda *info: helpers.launch(recipe, ENV)\nhelpers.launch(recipe, ENV)\n"
        "raise RuntimeError('after the run')"
    ),
}


@needs_sandbox
@pytest.mark.parametrize("case", list(SECOND_RUNS), ids=lambda c: c.replace(" ", "-"))
def test_a_second_run_after_h13atk_s_fixes_is_never_read_as_one(tmp_path, private_cache, case):
    path = _job(tmp_path / "job", SECOND_RUNS[case])
    (path.parent / "again.py").write_text("import runpy\nrunpy.run_path('job.py', run_name='__main__')\n")
    record = dry_run(path, [])
    assert record.status == "recorded" and run_reasons.runs(record) != "once", record.after
    config = api.import_job(path, dry_run=True)
    assert _codes(config) == [admission.SEVERAL_RUNS], config["admission_errors"]


# --- 2. a job that runs once, refused for what it does after its run ----------------------------------------------

RUNS_ONCE = {  # case: job.py's code after the recipe is built; `python job.py` runs the recipe once and ends
    "a thread pool never shut down (its idle workers end at Python's exit)": (
        "from concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor(2)\n"
        "helpers.launch(recipe, ENV)\nPOOL.submit(print, 'done')"
    ),
    "os._exit(0) right after the run": "import os\nhelpers.launch(recipe, ENV)\nos._exit(0)",
    "a daemon thread printing while main ends": (
        "import threading\nimport time\nhelpers.launch(recipe, ENV)\n"
        "threading.Thread(target=lambda: time.sleep(30), daemon=True).start()"
    ),
    "a logging queue listener stopped at exit": (
        "import atexit\nimport logging.handlers\nimport queue\nQ = queue.Queue()\n"
        "LISTENER = logging.handlers.QueueListener(Q, logging.StreamHandler())\nLISTENER.start()\n"
        "atexit.register(LISTENER.stop)\nhelpers.launch(recipe, ENV)"
    ),
}


@needs_sandbox
@pytest.mark.parametrize("case", list(RUNS_ONCE), ids=lambda c: c.replace(" ", "-"))
def test_a_job_that_runs_once_is_admitted_whatever_it_leaves_for_python_s_exit(tmp_path, private_cache, case):
    record = dry_run(_job(tmp_path / "job", RUNS_ONCE[case]), [])
    assert run_reasons.runs(record) == "once", record.after


# --- 3. combined short flags: argparse's reading decides -----------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", "--num_rounds", type=int, default=2)
    parser.add_argument("--num-clients", type=int, default=2)
    parser.add_argument("-v", action="store_true")
    parser.add_argument("-x", type=int, default=0)
    return parser


GROUPS = [["--num_rounds", "-n"], ["--num-clients"], ["-v"], ["-x"]]
BUDGET = ["--num_rounds", "3", "--num-clients", "2"]


def _build(run: list[str]) -> list[str]:
    return build_trial_argv(
        "py", "job.py", budget_args=BUDGET, base_args=[], flag_groups=GROUPS, name_flag=None, trial_name=None,
        workspace="/w", run_args=run, switch_flags=["-v"],
    )  # fmt: skip


LEGIT = {  # argparse reads each without touching a budget option
    "a switch given twice in one token": ["-vv"],
    "a switch combined with another option's short form and value": ["-vx5"],
    "a switch combined with another option, the value apart": ["-vx", "5"],
}


@pytest.mark.parametrize("case", list(LEGIT), ids=lambda c: c.replace(" ", "-"))
def test_combined_short_flags_argparse_reads_as_other_options_are_accepted(case):
    parsed = vars(_parser().parse_args(BUDGET + LEGIT[case]))
    assert (parsed["num_rounds"], parsed["num_clients"]) == (3, 2), "precondition: no budget option read"
    assert _build(LEGIT[case]) == ["py", "job.py", *BUDGET, *LEGIT[case]]


BUDGET_SPELLINGS = {  # argparse reads each as a budget option
    "an abbreviated long option with =": ["--num_rou=5"],
    "a short option with =": ["-n=5"],
    "a short option with its value attached": ["-n5"],
    "a switch twice then the budget's short option": ["-vvn5"],
    "a switch then the budget's short option, the value apart": ["-vn", "5"],
}


@pytest.mark.parametrize("case", list(BUDGET_SPELLINGS), ids=lambda c: c.replace(" ", "-"))
def test_every_spelling_argparse_reads_as_a_budget_option_is_refused(case):
    parsed = vars(_parser().parse_args(BUDGET + BUDGET_SPELLINGS[case]))
    assert parsed["num_rounds"] != 3, "precondition: argparse reads a budget change"
    with pytest.raises(TrialError):
        _build(BUDGET_SPELLINGS[case])


def test_a_budget_switch_combined_with_another_switch_is_refused():
    parser = argparse.ArgumentParser()
    parser.add_argument("-g", action="store_true")
    parser.add_argument("-v", action="store_true")
    assert vars(parser.parse_args(["-vg"]))["g"], "precondition: argparse reads the budget's switch"
    with pytest.raises(TrialError) as info:
        build_trial_argv(
            "py", "job.py", budget_args=["-g"], base_args=[], flag_groups=[["-g"], ["-v"]], name_flag=None,
            trial_name=None, workspace="/w", run_args=["-vg"], switch_flags=["-g", "-v"],
        )  # fmt: skip
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT", info.value


# --- 4. nothing left behind: a process job.py starts, a file it writes ---------------------------------------------


@needs_sandbox
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_detached_process_job_py_starts_does_not_outlive_the_dry_run(tmp_path, private_cache, when):
    from live_processes import running

    lingering = tmp_path / "lingering.py"
    lingering.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    start = f"import subprocess\nsubprocess.Popen([sys.executable, '-I', {str(lingering)!r}], start_new_session=True)\n"
    run = "helpers.launch(recipe, ENV)\n"
    after = "import sys\n" + (start + run if when == "before" else run + start)
    path = _job(tmp_path / "job", after)
    record = dry_run(path, [])
    assert record.status == "recorded", record
    assert running(lingering) == [], "a process job.py started is still alive after the dry run"


@needs_sandbox
def test_a_file_job_py_writes_outside_the_sandbox_is_not_there_after_the_dry_run(tmp_path, private_cache):
    outside = tmp_path / "outside" / "written.txt"
    outside.parent.mkdir()
    after = f"open({str(outside)!r}, 'w').write('x')\nhelpers.launch(recipe, ENV)"
    path = _job(tmp_path / "job", after)
    dry_run(path, [])
    assert not outside.exists() and sorted(p.name for p in path.parent.iterdir()) == [
        "client.py",
        "helpers.py",
        "job.py",
    ]
