"""A trial that NVFLARE's simulator stalls by itself runs once more; a crash of the job's own code does not.

The stand-in candidate prints the simulator's line on its first attempt only (the runner tells the child which
attempt it is in AUTOFL_TRIAL_ATTEMPT), so the retry is exercised through the real runner and trial sandbox.
"""

from __future__ import annotations

import json

import pytest
from runner_support import initialized_standin, ledger_rows, run_inproc, source_dir

RESET = "Communication error with client site-1: [Errno 104] Connection reset by peer"
EOF_DEATH = "Communication error with client site-1: "

FIRST_ATTEMPT_STALLS = """
import os as _os, time as _time
if _os.environ.get("AUTOFL_TRIAL_ATTEMPT") == "1":
    print("2026-12-05 18:01:33,760 - SimulatorClientRunner - ERROR - {line}", flush=True)
    _time.sleep(120)
BONUS = 0.05
"""


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--uncapped")


def candidate(ws, name: str, line: str) -> None:
    assert run_inproc(ws, "prepare", "--name", name, "--hypothesis", "better").code == 0
    client = source_dir(ws, name) / "client.py"
    client.write_text(client.read_text() + FIRST_ATTEMPT_STALLS.format(line=line))


def test_a_trial_the_simulator_stalled_by_itself_runs_again_and_counts_once(ws):
    candidate(ws, "lucky", RESET)
    done = run_inproc(ws, "evaluate")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep", done.envelope
    run_dir = ws / "autofl_runs" / "lucky"
    trial = json.loads((run_dir / "trial.json").read_text())
    assert trial["retried_after"] == f"simulator stall: server log shows {RESET!r}"
    assert RESET in (run_dir / "run.attempt-1.log").read_text()
    assert RESET not in (run_dir / "run.log").read_text()
    assert [row["status"] for row in ledger_rows(ws) if row["name"] == "lucky"] == ["keep"]


def test_a_worker_that_died_of_the_jobs_code_is_not_run_again(ws):
    candidate(ws, "dies", EOF_DEATH)
    done = run_inproc(ws, "evaluate")
    assert done.code == 1 and done.envelope["candidate_status"] == "crash", done.envelope
    run_dir = ws / "autofl_runs" / "dies"
    assert json.loads((run_dir / "trial.json").read_text())["retried_after"] is None
    assert not (run_dir / "run.attempt-1.log").exists()
