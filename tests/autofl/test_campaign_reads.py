"""The open campaign's cached reads are keyed on the files they read: a write by anyone (this process through
`atomic`, or another writer behind its back) is seen by the next read, and no caller drops a cache by hand."""

import json
import os

import pytest
from runner_support import initialized_standin, run_inproc

pytestmark = pytest.mark.slow


@pytest.fixture
def campaign(tmp_path):
    from autofl_core.runner.open_campaign import Campaign

    workspace = initialized_standin(tmp_path, "--max-candidates", "5")
    done = run_inproc(workspace, "prepare", "--name", "lr-a", "--hypothesis", "try lr-a")
    assert done.code == 0, done.stderr
    return Campaign.open(str(workspace / "job.py"))


def test_an_unchanged_campaign_is_read_once(campaign, monkeypatch):
    from autofl_core.runner.store import manifests

    first = campaign.manifests()
    monkeypatch.setattr(manifests, "all_manifests", lambda paths: pytest.fail("read again though unchanged"))
    assert campaign.manifests() is first
    assert campaign.rows() is campaign.rows() and campaign.best() is campaign.best()


def test_a_write_behind_the_campaigns_back_is_read(campaign):
    """Plain writes (not through `atomic`, same size, mtime put back): the file's identity or ctime still differs."""
    [prepared] = campaign.manifests()
    path = campaign.paths.manifest("lr-a")
    before = os.stat(path)
    text = path.read_text().replace('"status": "prepared"', '"status": "running" ')  # same length
    assert len(text) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert prepared.status == "prepared" and campaign.manifests()[0].status == "running"
    rows = campaign.rows()
    with open(campaign.paths.results, "a", encoding="utf-8") as handle:
        handle.write(campaign.paths.results.read_text().splitlines()[1] + "\n")
    assert len(campaign.rows()) == len(rows) + 1


def test_an_atomic_write_is_read_and_a_new_candidate_folder_is_seen(campaign, tmp_path):
    from autofl_core.common import atomic
    from autofl_core.runner.store import manifests

    [prepared] = campaign.manifests()
    manifests.write(campaign.paths, prepared.replace(status="abandoned"))
    assert campaign.manifest_of("lr-a").status == "abandoned"
    other = campaign.paths.candidate_dir("lr-b") / "candidate_manifest.json"
    atomic.write_text(other, json.dumps(prepared.replace(candidate_id="lr-b", status="prepared").to_json()))
    assert [m.candidate_id for m in campaign.manifests()] == ["lr-a", "lr-b"]
    assert {m.candidate_id for m in campaign.pending()} == {"lr-b"}
