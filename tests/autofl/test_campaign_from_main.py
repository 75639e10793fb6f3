"""A campaign written by the runner of an earlier main (tests/fixtures/autofl_campaign_main: initialize, a keep, a
discard, a literature event, an abandoned and a prepared candidate) still opens, reads and continues."""

import shutil
import sys
from pathlib import Path

import pytest
from runner_support import REPO, ledger_rows, manifest, run_inproc

pytestmark = pytest.mark.slow
FIXTURE = REPO / "tests" / "fixtures" / "autofl_campaign_main"
WRITTEN_AT, WRITTEN_WITH = "/tmp/core_fixture_ws", "/work/wt/core/.venv/bin/python"


@pytest.fixture
def ws(tmp_path) -> Path:
    """The fixture copied, its recorded workspace and interpreter paths pointed at this copy and this Python."""
    workspace = tmp_path / "ws"
    shutil.copytree(FIXTURE, workspace)
    for path in workspace.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".tsv", ".yaml"):
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(WRITTEN_AT, str(workspace)).replace(WRITTEN_WITH, sys.executable))
    return workspace


def test_the_campaign_of_an_earlier_main_opens_and_reads_as_written(ws):
    from autofl_core.runner.open_campaign import Campaign

    campaign = Campaign.open(str(ws / "job.py"))
    assert [(r.status, r.name) for r in campaign.rows()] == [
        ("baseline", "baseline"),
        ("keep", "bonus-up"),
        ("discard", "lr-low"),
        ("literature", "lit-0001"),
    ]
    statuses = {m.candidate_id: m.status for m in campaign.manifests()}
    assert statuses == {"bonus-up": "keep", "lr-low": "discard", "dropped": "abandoned", "pending-one": "prepared"}
    assert campaign.best().candidate == "bonus-up" and campaign.best_row().name == "bonus-up"
    assert campaign.settings.max_candidates == 8 and campaign.settings.base_args == ()


def test_the_campaign_of_an_earlier_main_continues(ws):
    before = (ws / "results.tsv").read_bytes()
    done = run_inproc(ws, "status")
    assert done.code == 0, done.stderr
    assert done.envelope["candidate_attempts"] == 2 and done.envelope["remaining_candidates"] == 6
    done = run_inproc(ws, "evaluate")
    assert done.code == 0, done.stderr
    assert done.envelope["candidate_status"] in ("keep", "discard")
    assert (ws / "results.tsv").read_bytes().startswith(before)  # appended, the earlier rows byte for byte
    assert [r["name"] for r in ledger_rows(ws)][-1] == "pending-one"
    assert manifest(ws, "pending-one")["status"] == done.envelope["candidate_status"]


def test_typed_settings_give_back_the_json_they_were_read_from(ws):
    """campaign.json's settings round-trip through the typed record unchanged, an earlier campaign lacking a
    setting included (read as its default, not written back); a missing required one is one clear error."""
    import json

    from autofl_core.runner.outcome import CampaignError
    from autofl_core.runner.settings import CampaignSettings

    document = json.loads((ws / ".nvflare/autofl/campaign.json").read_text())["settings"]
    assert CampaignSettings.from_json(document).to_json() == document
    older = {key: value for key, value in document.items() if key not in ("allow_network", "noise_sigmas")}
    typed = CampaignSettings.from_json(dict(older, newer_setting=1))
    assert typed.allow_network is False and typed.noise_sigmas == 0.0
    assert typed.to_json() == dict(older, newer_setting=1)
    with pytest.raises(CampaignError, match="lack metric; restore campaign.json"):
        CampaignSettings.from_json({key: value for key, value in document.items() if key != "metric"})
