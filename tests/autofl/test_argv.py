"""Trial argv building: budget once, duplicates dropped, conflicts rejected in every spelling."""

import hashlib
from pathlib import Path

import pytest
from autofl_core.trial.argv import TrialError, build_trial_argv, injected_job_name

GROUPS = [["--num_rounds", "-r"], ["--n_clients", "-n"], ["--name"], ["--lr"], ["--local_steps"], ["--num_workers"]]
BUDGET = ["--num_rounds", "3", "--n_clients", "2"]
WS = Path("/work/example")


def build(base=(), run=(), name_flag="--name", trial="cand-1", budget=BUDGET, groups=GROUPS):
    return build_trial_argv(
        "/usr/bin/python3",
        WS / "job.py",
        budget_args=list(budget),
        base_args=list(base),
        flag_groups=groups,
        name_flag=name_flag,
        trial_name=trial,
        workspace=WS,
        run_args=list(run),
    )


def test_order_is_python_job_budget_base_name_run_args():
    argv = build(base=["--local_steps", "7"], run=["--lr", "0.2"])
    name = "autofl_" + hashlib.sha256(str(WS).encode()).hexdigest()[:12] + "_cand-1"
    assert argv == [
        "/usr/bin/python3",
        str(WS / "job.py"),
        *BUDGET,
        "--local_steps",
        "7",
        "--name",
        name,
        "--lr",
        "0.2",
    ]
    assert injected_job_name(WS, "cand-1") == name


def test_no_name_flag_means_no_injection():
    assert build(name_flag=None, trial=None) == ["/usr/bin/python3", str(WS / "job.py"), *BUDGET]


@pytest.mark.parametrize(
    "base",
    [
        ["--num_rounds", "3"],
        ["--num_rounds=3"],
        ["-r", "3"],
        ["-r3"],
        ["-r=3"],
        ["--num_r", "3"],
        ["--num_rounds", "3", "--n_clients=2"],
    ],
)
def test_identical_budget_duplicates_in_base_args_are_dropped(base):
    argv = build(base=[*base, "--lr", "0.5"])
    assert argv.count("--num_rounds") == 1 and argv.count("--n_clients") == 1
    assert argv[2:6] == BUDGET
    assert "-r" not in argv and "-r3" not in argv and "--num_r" not in argv
    assert argv[-4:-2] == ["--lr", "0.5"]


@pytest.mark.parametrize(
    "base",
    [
        ["--num_rounds", "5"],
        ["--num_rounds=5"],
        ["-r", "5"],
        ["-r5"],
        ["-r=5"],
        ["--num_ro", "5"],
        ["--num_ro=5"],
        ["-n", "4"],
        ["--n_c=4"],
    ],
)
def test_conflicting_budget_in_base_args_is_rejected(base):
    with pytest.raises(TrialError) as info:
        build(base=base)
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"


@pytest.mark.parametrize("run", [["--num_rounds", "3"], ["-r", "9"], ["--num_r=9"], ["-n4"], ["--n_clients", "2"]])
def test_run_args_may_never_touch_the_budget(run):
    with pytest.raises(TrialError) as info:
        build(run=run)
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"


def test_a_single_dash_option_written_with_its_value_is_read_as_argparse_reads_it():
    """`-lr=-0.1` (the importer's spelling of a value starting with `-`) sets -lr, as argparse reads it."""
    groups = [["--num_rounds"], ["-lr"], ["-l"]]
    argv = build(budget=["--num_rounds", "3", "-lr=-0.1"], base=["-lr", "-0.1", "-l", "2"], groups=groups)
    assert argv[2:5] == ["--num_rounds", "3", "-lr=-0.1"] and argv[5:7] == ["-l", "2"]
    with pytest.raises(TrialError) as info:
        build(budget=["--num_rounds", "3", "-lr=-0.1"], run=["-lr=0.5"], groups=groups)
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"


def test_ambiguous_abbreviation_is_rejected_not_guessed():
    with pytest.raises(TrialError) as info:
        build(run=["--num", "3"])  # --num_rounds or --num_workers
    assert "ambiguous" in str(info.value)


def test_non_budget_options_and_values_pass_through_unchanged():
    run = ["--lr", "-0.5", "--local_steps=4", "--unknown-flag", "x", "--", "--num_rounds", "9"]
    argv = build(run=run)
    assert argv[-len(run) :] == run


def test_negative_number_values_are_not_mistaken_for_flags():
    argv = build(base=["--lr", "-1e-3"])
    assert "-1e-3" in argv


def test_budget_given_twice_is_rejected():
    with pytest.raises(TrialError) as info:
        build(budget=["--num_rounds", "3", "-r", "3"])
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"


def test_runner_owned_name_flag_cannot_be_set_by_args():
    with pytest.raises(TrialError) as info:
        build(run=["--name", "mine"])
    assert info.value.code == "AUTOFL_RESERVED_ARGUMENT"


@pytest.mark.parametrize("trial", ["", "../x", "a b", "-lead", "x" * 65])
def test_invalid_trial_names_are_rejected(trial):
    with pytest.raises(TrialError):
        build(trial=trial)


def test_budget_flag_unknown_to_the_job_still_guards_its_spelling():
    argv = build(groups=[["--lr"]], base=["--num_rounds", "3"])
    assert argv.count("--num_rounds") == 1
    with pytest.raises(TrialError):
        build(groups=[["--lr"]], base=["--num_rounds", "4"])


SWITCH_GROUPS = [["--num_rounds"], ["--cross_site_eval", "--no-cross_site_eval"], ["--verbose", "-v"], ["--lr"]]


def build_switch(budget, base=(), run=()):
    return build_trial_argv(
        "py",
        "job.py",
        budget_args=budget,
        base_args=list(base),
        flag_groups=SWITCH_GROUPS,
        name_flag=None,
        trial_name=None,
        workspace=WS,
        run_args=list(run),
        switch_flags=["--cross_site_eval", "--no-cross_site_eval", "--verbose"],
    )


def test_switch_budget_options_take_no_value_and_negations_conflict():
    budget = ["--cross_site_eval", "--num_rounds", "3"]
    assert build_switch(budget, base=["--cross_site_eval", "data.csv"]) == ["py", "job.py", *budget, "data.csv"]
    assert build_switch(budget, base=["--cross"]) == ["py", "job.py", *budget]  # abbreviation, same setting
    with pytest.raises(TrialError) as info:
        build_switch(budget, base=["--no-cross_site_eval"])
    assert info.value.code == "AUTOFL_BUDGET_ARGUMENT_CONFLICT"
    with pytest.raises(TrialError):
        build_switch(budget, run=["--no-cross"])


def test_short_switches_are_not_read_as_attached_values():
    assert build_switch(["--num_rounds", "3"], run=["-v", "--lr", "1"])[-3:] == ["-v", "--lr", "1"]
