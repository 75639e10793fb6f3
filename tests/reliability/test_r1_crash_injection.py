"""R1: the runner killed (SIGKILL), terminated (SIGTERM) or interrupted (SIGINT) at every named instant of
evaluate and finalize — between every write — leaves a campaign that `status` repairs: ledger, JSON documents,
workspace and snapshot consistent, no trial process left, no stale lock, and the candidate counted exactly once.

The instants are explicit hooks (`autofl_core/common/faults.py`, read only when AUTOFL_FAULT_AT is set by a test).
"""

import os
import shutil

import pytest
from autofl_core.common.faults import POINTS
from recovery_checks import assert_recovers_and_completes, prepare_keep_candidate, trial_processes
from runner_support import WITHOUT_NAMESPACES, initialized_standin, run_cli

pytestmark = pytest.mark.slow
HANDLED_POINTS = (
    "evaluate:manifest_running",
    "evaluate:applied_partially",
    "trial:child_started",
    "finalize:journal_written",
    "finalize:swap_parked",
    "finalize:manifest_written",
    "finalize:ledger_appended",
    "refresh:report_json_written",
)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return initialized_standin(tmp_path_factory.mktemp("r1"), "--uncapped")


# Instants only an unsealed trial passes: a sealed trial never applies its candidate to the live workspace, so
# these run on a host where trials cannot be sealed (the candidate is applied, run in place and restored).
UNSEALED_POINTS = ("evaluate:applied_partially", "evaluate:applied")


def faulted_evaluate(campaign, tmp_path, fault):
    workspace = tmp_path / "ws"
    shutil.copytree(campaign, workspace)
    prepare_keep_candidate(workspace)
    prefix = WITHOUT_NAMESPACES if fault.rsplit(":", 1)[0] in UNSEALED_POINTS or fault in UNSEALED_POINTS else ()
    done = run_cli(workspace, "evaluate", env={**os.environ, "AUTOFL_FAULT_AT": fault}, prefix=prefix)
    return workspace, done


def test_there_are_at_least_twenty_injection_points():
    assert len(POINTS) >= 20 and len(set(POINTS)) == len(POINTS)


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_every_point_is_recovered(campaign, tmp_path, point):
    workspace, done = faulted_evaluate(campaign, tmp_path, point)
    assert done.code == -9, (point, done.code, done.stderr[-500:])
    assert_recovers_and_completes(workspace)


@pytest.mark.parametrize("signal_name, code", [("SIGTERM", 143), ("SIGINT", 130)])
@pytest.mark.parametrize("point", HANDLED_POINTS)
def test_sigterm_and_sigint_end_the_trial_and_leave_the_same_guarantees(campaign, tmp_path, point, signal_name, code):
    workspace, done = faulted_evaluate(campaign, tmp_path, f"{point}:{signal_name}")
    assert done.code == code, (point, done.code, done.stderr[-500:])
    assert done.stderr.strip().splitlines()[-1].startswith(f"Auto-FL evaluate interrupted by {signal_name}")
    assert trial_processes(workspace) == []  # the runner ended its own trial tree before exiting
    assert_recovers_and_completes(workspace)
