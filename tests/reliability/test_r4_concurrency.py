"""R4: one lifecycle action owns a workspace. Five actions started together: exactly one proceeds, the others
exit 2 "already in use" (10 rounds, no corruption); a stale lock never blocks; readers (`campaign_guard.py`,
the state file) never see a half-written file while an evaluate writes."""

import fcntl
import json
import subprocess
import sys
import threading

import pytest
from runner_support import (
    RUNNER,
    SCRIPTS,
    initialized_standin,
    ledger_rows,
    run_cli,
    run_inproc,
    source_dir,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--uncapped")


ROUNDS = 10  # each round races five evaluates for the lock (the spec's R4 is one such start; 10 give confidence)


def slow_candidate(workspace, name, seconds):
    assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "h").code == 0
    client = source_dir(workspace, name) / "client.py"
    client.write_text(client.read_text() + f"\nimport time\ntime.sleep({seconds})\nBONUS = {len(name) / 1000}\n")


def evaluate_five_at_once(workspace):
    procs = [
        subprocess.Popen(
            [sys.executable, str(RUNNER), "evaluate", str(workspace / "job.py")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    return [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]


def test_second_action_while_the_lock_is_held_exits_2_and_a_released_lock_never_blocks(ws):
    lock = ws / ".nvflare/autofl/campaign.lock"
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        done = run_cli(ws, "status")
    assert done.code == 2 and "already in use" in done.stderr
    assert lock.exists() and run_cli(ws, "status").code == 0  # the file stays; only a held flock blocks


@pytest.mark.timeout(600)  # 10 rounds of five real runner processes: about a minute alone, longer beside other workers
def test_five_concurrent_evaluates_exactly_one_proceeds_ten_rounds(ws):
    for round_index in range(ROUNDS):
        name = f"slow-{round_index:02d}"
        slow_candidate(ws, name, 1.5)
        results = evaluate_five_at_once(ws)
        winners = [r for r in results if r[0] == 0]
        assert len(winners) == 1, [(code, err[-200:]) for code, _, err in results]
        for code, out, err in results:
            if code != 0:
                assert code == 2 and out == "" and ("already in use" in err or "no pending candidate" in err), err
        names = [row["name"] for row in ledger_rows(ws)]
        assert names.count(name) == 1 and len(names) == round_index + 2
    state = json.loads((ws / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["candidate_attempts"] == ROUNDS


def test_readers_never_see_a_half_written_file(ws):
    stop = threading.Event()
    problems = []

    def read_continuously():
        guard = SCRIPTS / "campaign_guard.py"
        while not stop.is_set():
            done = subprocess.run([sys.executable, str(guard), str(ws / "results.tsv")], capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(done.stderr)
            for name in (".nvflare/autofl/campaign_state.json", ".nvflare/autofl/campaign.json", "autofl_report.json"):
                try:
                    json.loads((ws / name).read_text())
                except ValueError as error:
                    problems.append(f"{name}: {error}")

    reader = threading.Thread(target=read_continuously)
    reader.start()
    try:
        for index in range(6):
            slow_candidate(ws, f"c{index}", 0.2)
            assert run_cli(ws, "evaluate").code == 0
    finally:
        stop.set()
        reader.join(timeout=60)
    assert problems == []
