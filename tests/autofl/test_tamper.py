"""The evidence guard (runner/tamper.py): what a trial must not change is restored byte for byte, and reported."""

from __future__ import annotations

import json
import os

from autofl_core.runner.open_campaign import Campaign
from autofl_core.runner.tamper import EvidenceGuard
from runner_support import initialized_standin, tree_digest


def campaign_of(workspace):
    return Campaign.open(workspace / "job.py")


def test_changed_and_planted_campaign_files_are_restored_and_named(tmp_path):
    workspace = initialized_standin(tmp_path, "--max-candidates", "3")
    meta = workspace / ".nvflare" / "autofl"
    before = tree_digest(workspace, skip=("autofl_runs",))
    guard = EvidenceGuard.take(campaign_of(workspace), live_workspace=False)
    (workspace / "results.tsv").write_text("status\tname\nbaseline\tbaseline\t0.1\n")  # a lower baseline
    settings = json.loads((meta / "campaign.json").read_text())
    settings["settings"]["allow_network"] = True
    (meta / "campaign.json").write_text(json.dumps(settings))
    (workspace / "autofl.yaml").write_text("trust:\n  allowed_create_patterns: ['**']\n")
    snapshot_job = meta / "snapshots" / "best" / "source" / "job.py"
    snapshot_job.write_text("PLANTED = True\n")
    (meta / "snapshots" / "best" / "source" / "extra.py").write_text("x = 1\n")
    forged = meta / "candidates" / "forged" / "candidate_manifest.json"
    forged.parent.mkdir(parents=True)
    forged.write_text("{}")
    restored = guard.restore()
    assert restored == [
        ".nvflare/autofl/campaign.json",
        ".nvflare/autofl/candidates/forged/candidate_manifest.json",
        ".nvflare/autofl/snapshots/best/source/extra.py",
        ".nvflare/autofl/snapshots/best/source/job.py",
        "autofl.yaml",
        "results.tsv",
    ]
    forged.parent.rmdir()  # the guard removes planted files, not the folders they came in
    assert tree_digest(workspace, skip=("autofl_runs",)) == before
    assert guard.restore() == []  # idempotent: nothing left to restore


def test_a_symlink_put_in_place_of_the_ledger_is_replaced_by_the_ledger(tmp_path):
    workspace = initialized_standin(tmp_path, "--max-candidates", "3")
    ledger = (workspace / "results.tsv").read_bytes()
    guard = EvidenceGuard.take(campaign_of(workspace), live_workspace=False)
    outside = tmp_path / "outside.tsv"
    outside.write_text("forged")
    (workspace / "results.tsv").unlink()
    (workspace / "results.tsv").symlink_to(outside)
    assert guard.restore() == ["results.tsv"]
    assert not (workspace / "results.tsv").is_symlink() and (workspace / "results.tsv").read_bytes() == ledger
    assert outside.read_text() == "forged"  # the link's target is never written


def test_a_trial_in_the_live_workspace_leaves_no_module_or_bytecode_behind(tmp_path):
    workspace = initialized_standin(tmp_path, "--max-candidates", "3")
    cache = workspace / "__pycache__"
    cache.mkdir(exist_ok=True)
    users = cache / "client.cpython-311.pyc"
    users.write_bytes(b"the user's own bytecode")
    client = (workspace / "client.py").read_bytes()
    guard = EvidenceGuard.take(campaign_of(workspace), live_workspace=True)
    (workspace / "json.py").write_text("import sys; sys.exit('shadowed')\n")  # a shadowing module
    (workspace / "sitecustomize.pth").write_text("import os\n")
    forged = cache / "standin_flare.cpython-311.pyc"
    forged.write_bytes(b"forged bytecode")
    os.utime(users, ns=(1, 1))
    users.write_bytes(b"forged over the user's bytecode")
    (workspace / "client.py").write_text("BONUS = 1.0\n")
    restored = guard.restore()
    assert restored == ["client.py", "json.py", "sitecustomize.pth"]  # bytecode is removed, not reported:
    assert not (workspace / "json.py").exists() and not forged.exists() and not users.exists()  # Python writes it
    assert (workspace / "client.py").read_bytes() == client


def test_a_sealed_trial_is_not_charged_for_the_workspace_sources(tmp_path):
    workspace = initialized_standin(tmp_path, "--max-candidates", "3")
    guard = EvidenceGuard.take(campaign_of(workspace), live_workspace=False)
    (workspace / "helper.py").write_text("x = 1\n")  # e.g. the user working beside a sealed trial
    assert guard.restore() == [] and (workspace / "helper.py").exists()
