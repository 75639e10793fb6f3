"""What must hold after any fault: the campaign recovers and ends with the candidate counted exactly once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from runner_support import ledger_rows, manifest, run_cli, run_inproc, set_bonus, source_dir

CANDIDATE = "cand"


def prepare_keep_candidate(workspace: Path) -> None:
    """A candidate that will be kept: a better score and a new module (so the trust contract grows)."""
    assert run_inproc(workspace, "prepare", "--name", CANDIDATE, "--hypothesis", "bonus via a module").code == 0
    folder = source_dir(workspace, CANDIDATE)
    (folder / "extra_mod.py").write_text("EXTRA = 0.02\n")
    set_bonus(folder, 0.02)


def trial_processes(workspace: Path) -> list[int]:
    """Live processes of any trial of this workspace (they carry a trial token and the workspace in argv)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if b"AUTOFL_TRIAL_TOKEN=" in environ and str(workspace).encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(entry))
    return found


def assert_recovers_and_completes(workspace: Path) -> None:
    """`status` repairs the campaign; a still-pending candidate can be evaluated; it is counted exactly once."""
    status = run_cli(workspace, "status")
    assert status.code == 0, status.stderr
    assert trial_processes(workspace) == []
    meta_dir = workspace / ".nvflare" / "autofl"
    assert not (meta_dir / "running_trial.json").exists() and not (meta_dir / "finalize.json").exists()
    for path in meta_dir.rglob("*.json"):
        json.loads(path.read_text())  # every JSON document parses (the schemas are checked by run_cli)
    best = json.loads((meta_dir / "snapshots" / "best" / "snapshot.json").read_text())
    rows = [r for r in ledger_rows(workspace) if r["name"] == CANDIDATE]
    record = manifest(workspace, CANDIDATE)
    if record["status"] == "prepared":
        assert rows == [] and status.envelope["next_action"] == "edit_candidate"
        assert _workspace_matches(workspace, best)
        again = run_cli(workspace, "evaluate")
        assert again.code == 0 and again.envelope["candidate_status"] == "keep", again.stderr
        best = json.loads((meta_dir / "snapshots" / "best" / "snapshot.json").read_text())
        rows = [r for r in ledger_rows(workspace) if r["name"] == CANDIDATE]
    assert [r["status"] for r in rows] == ["keep"]  # never lost, never duplicated
    assert manifest(workspace, CANDIDATE)["status"] == "keep"
    assert _workspace_matches(workspace, best) and best["candidate"] == CANDIDATE
    meta = json.loads((meta_dir / "campaign.json").read_text())
    assert meta["best_candidate"] == CANDIDATE and meta["best_source_sha256"] == best["source_sha256"]
    assert "extra_mod.py" in (workspace / "autofl.yaml").read_text()
    assert run_cli(workspace, "status").code == 0  # and no stale lock ever blocks


def _workspace_matches(workspace: Path, best: dict) -> bool:
    import hashlib

    return all(
        (workspace / rel).exists() and hashlib.sha256((workspace / rel).read_bytes()).hexdigest() == sha
        for rel, sha in best["files"].items()
    )
