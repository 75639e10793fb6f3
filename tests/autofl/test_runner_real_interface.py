"""`prepare --run-args` end to end on a real NVFLARE 2.9 simulation of examples/hello-numpy (issue 22).

The reference's documented way to give a candidate its arguments: prepare records them, the state says
`evaluate_candidate`, evaluate runs them without being told again, and the envelope says what happened. The
live progress line of each real run ends with the server's aggregated metric, the value the ledger records.
"""

import re
import shutil

import pytest
from runner_support import REPO, ledger_rows, manifest, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EXAMPLE = REPO / "examples" / "hello-numpy"
PROGRESS_VALUE_RE = re.compile(r"server aggregated accuracy=([0-9.eE+-]+) \(round 3, the value the ledger records\)$")


def _last_progress_value(stderr: str, trial: str) -> float:
    lines = [line for line in stderr.splitlines() if line.startswith(f"[autofl {trial}]")]
    assert lines, stderr[-2000:]
    match = PROGRESS_VALUE_RE.search(lines[-1])
    assert match, lines[-1]
    return float(match.group(1))


def test_prepare_run_args_end_to_end_on_a_real_simulation(tmp_path):
    workspace = tmp_path / "hello"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    init = run_cli(workspace, "initialize", "--max-candidates", "1", timeout=600)
    assert init.code == 0, init.stderr[-3000:]
    baseline = ledger_rows(workspace)[0]["score"]
    assert _last_progress_value(init.stderr, "baseline") == pytest.approx(baseline, abs=5e-6)

    prepared = run_cli(
        workspace, "prepare", "--name", "lr-x2", "--hypothesis", "twice the step size", "--run-args", "--lr 0.1"
    )
    assert prepared.code == 0, prepared.stderr
    assert prepared.envelope["next_action"] == "evaluate_candidate"
    assert manifest(workspace, "lr-x2")["run_args"] == ["--lr", "0.1"]

    done = run_cli(workspace, "evaluate", timeout=600)
    assert done.code == 0, done.stderr[-3000:]
    row = ledger_rows(workspace)[-1]
    assert (row["name"], row["candidate_kind"], row["diff_summary"]) == ("lr-x2", "argument_only", "run args: --lr 0.1")
    assert row["run_command"].endswith("--lr 0.1")
    envelope = done.envelope
    assert envelope["candidate_status"] == row["status"] and envelope["score"] == row["score"]
    assert (envelope["compared_with"], envelope["compared_score"]) == ("baseline", baseline)
    assert envelope["delta"] == round(row["score"] - baseline, 6)
    best = max((baseline, "baseline"), (row["score"], "lr-x2")) if row["status"] == "keep" else (baseline, "baseline")
    assert (envelope["best_score"], envelope["best_candidate"]) == best
    assert _last_progress_value(done.stderr, "lr-x2") == pytest.approx(row["score"], abs=5e-6)
    assert envelope["next_action"] == "final_report" and envelope["final_response_allowed"] is True
