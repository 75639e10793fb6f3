"""Decision-table fixtures: one real results.tsv per row (tests/fixtures/autofl_ledgers), checked in-process and via the CLI.

These ledgers were written for this project (none of them is a copy of the reference's own eval ledgers, which
are not in the repository: those have short, tab-trimmed rows, see test_ledger.py). Their `expect_plateau`
values were derived by hand from the spec's definitions ("State: the plateau object", "Plateau" in the guard
section): best_scored_index counts retained scored rows (baseline 0, the keep 1), the literature and batch
indices are ledger rows or -1, the reset is the later of the best's row and the batch completion row.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from autofl_core.campaign import guard, guard_inputs, ledger

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "autofl_ledgers"
CASES = json.loads((FIXTURES / "cases.json").read_text())
DECISION_KEYS = ("decision", "reason", "next_action", "final_response_allowed")


def test_every_decision_table_reason_has_a_fixture():
    reasons = {case["expect"]["reason"] for case in CASES.values()}
    assert reasons == {
        "manual_stop_pending_candidate",
        "manual_stop_file",
        "pending_candidates",
        "candidate_cap_exhausted",
        "hard_repeated_crash_blocker",
        "literature_exploration_batch",
        "family_repeat_limit",
        "plateau_literature",
        "continue",
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_ledger_decision(name, tmp_path, python_exe, repo_root):
    case = CASES[name]
    results = tmp_path / "results.tsv"
    shutil.copyfile(FIXTURES / f"{name}.tsv", results)
    for stop in case["stop_files"]:
        (tmp_path / stop).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stop).write_text("")
    script = repo_root / "skills" / "nvflare-autofl" / "scripts" / "campaign_guard.py"
    done = subprocess.run(
        [python_exe, str(script), str(results), *case["args"]],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert {key: printed[key] for key in DECISION_KEYS} == case["expect"]
    assert {key: printed["plateau"][key] for key in case["expect_plateau"]} == case["expect_plateau"]

    args = case["args"]
    settings = {"mode": args[args.index("--mode") + 1] if "--mode" in args else "max"}
    if "--max-candidates" in args:
        settings["max_candidates"] = int(args[args.index("--max-candidates") + 1])
    pending = int(args[args.index("--pending-manifests") + 1]) if "--pending-manifests" in args else 0
    state = guard.compute_state(
        ledger.read_rows(results),
        settings,
        stop_files_present=guard_inputs.present_stop_files(tmp_path, None),
        pending_manifests=pending,
    )
    assert {key: state[key] for key in DECISION_KEYS} == case["expect"]
    assert {key: state["plateau"][key] for key in case["expect_plateau"]} == case["expect_plateau"]
