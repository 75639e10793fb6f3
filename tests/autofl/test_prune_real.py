"""Pruning on a real NVFLARE 2.9 simulation: examples/hello-numpy with a 6-round budget, a candidate whose
learning rate has the wrong sign (gradient ascent: its loss diverges and its accuracy stays near 0.33 while the
baseline's climbs past 0.75) is stopped mid-run, its whole process tree ends, and its rows, report and plot say
it was pruned."""

import json
import re
import shutil
from pathlib import Path

import pytest
from autofl_core.campaign import prune
from runner_support import REPO, ledger_rows, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EXAMPLE = REPO / "examples" / "hello-numpy"
ROUNDS = 6


def six_round_example(tmp_path):
    workspace = tmp_path / "hello-numpy"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    job = workspace / "job.py"
    text = job.read_text()
    old = 'parser.add_argument("--num_rounds", type=int, default=3)'
    assert old in text
    job.write_text(text.replace(old, f'parser.add_argument("--num_rounds", type=int, default={ROUNDS})'))
    return workspace


def processes_naming(workspace):
    """Pids of live processes whose command line names the workspace (a job, a client, a simulator)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(workspace) in command:
            found.append(int(entry.name))
    return found


def test_a_diverging_candidate_is_pruned_mid_run_on_real_nvflare(tmp_path, matplotlib_plot):
    workspace = six_round_example(tmp_path)
    done = run_cli(workspace, "initialize", "--prune", "--max-candidates", "3", timeout=600)
    assert done.code == 0, done.stderr[-3000:]
    baseline = ledger_rows(workspace)[0]
    assert baseline["status"] == "baseline" and baseline["score"] == pytest.approx(0.80625, abs=0.02)
    done = run_cli(workspace, "prepare", "--name", "lr-ascent", "--hypothesis", "sign-flipped lr", timeout=120)
    assert done.code == 0, done.stderr

    done = run_cli(workspace, "evaluate", "--run-args", "--lr -0.05", timeout=600)
    assert done.code == 0, done.stderr[-3000:]
    assert done.envelope["candidate_status"] == "discard"
    row = ledger_rows(workspace)[-1]
    assert row["name"] == "lr-ascent" and row["status"] == "discard" and row["score"] is None
    match = re.fullmatch(
        r"pruned at round (\d) of 6: ([0-9.]+) vs best ([0-9.]+), margin ([0-9.]+)", row["failure_reason"]
    )
    assert match, row["failure_reason"]
    stopped, value, best, margin = int(match.group(1)), *(float(group) for group in match.groups()[1:])
    assert 3 <= stopped < ROUNDS and value < 0.4 and best > 0.7 and best - value > margin
    assert 0 < row["runtime_seconds"] < baseline["runtime_seconds"]  # stopped early, its compute counted

    trial = json.loads((workspace / "autofl_runs" / "lr-ascent" / "trial.json").read_text())
    assert trial["outcome"] == "pruned" and trial["survivors"] == []
    run_log = (workspace / "autofl_runs" / "lr-ascent" / "run.log").read_text()
    assert f"round={ROUNDS - 1}" not in run_log  # the last round never started
    assert not (workspace / ".nvflare" / "autofl" / "running_trial.json").exists()
    records = sorted(workspace.glob("autofl_runs/lr-ascent/simulation/**/round_metrics.jsonl"))
    assert records and len(records[0].read_text().splitlines()) >= stopped  # the partial run was kept as evidence
    manifest = json.loads((workspace / ".nvflare/autofl/candidates/lr-ascent/candidate_manifest.json").read_text())
    assert manifest["status"] == "discard" and manifest["result"]["failure_reason"] == row["failure_reason"]
    assert processes_naming(workspace) == []  # no process of the trial tree outlived the action

    report = (workspace / "autofl_report.md").read_text()
    assert row["failure_reason"] in report and prune.NO_FINAL_MODEL in report
    state = json.loads((workspace / ".nvflare" / "autofl" / "campaign_state.json").read_text())
    assert state["candidate_attempts"] == 1 and "was pruned" in state["agent_instruction"]
    assert (workspace / "progress.png").is_file()
