"""One rule per identifier (sites.py): site names, job ids, job statuses and kit ids, used by every reader."""

from __future__ import annotations

import json

import pytest
from evidence_trees import build_poc
from nvfdiag.model import Evidence
from nvfdiag.read import collect, sites, structured
from nvfdiag.read.evidence import collect_evidence

LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 400}


@pytest.mark.parametrize("name", ["server", "site-1", "hospital_a", "fl-server.example.org"])
def test_valid_site_names(name):
    assert sites.valid_site(name)


@pytest.mark.parametrize("name", ["admin@nvidia.com", "-x", "", "site 1", "a/b", "x" * 65, None, 7])
def test_invalid_site_names(name):
    assert not sites.valid_site(name)


def test_kit_ids_may_be_admin_user_names_but_sites_may_not():
    assert sites.valid_kit_id("admin@nvidia.com") and not sites.valid_site("admin@nvidia.com")
    assert not sites.valid_kit_id("../kit") and not sites.valid_kit_id("a b")


def test_job_status_rules():
    assert sites.valid_job_status("finished:execution_exception")  # typed by a user: accepted
    assert sites.nvflare_job_status("FINISHED:EXECUTION_EXCEPTION")
    assert not sites.nvflare_job_status("ok")  # what NVFLARE writes is upper case; `ok` is not a job status
    assert not sites.valid_job_status("FINISHED:EXECUTION_EXCEPTION; rm -rf /")


def test_bundle_reader_uses_the_same_site_rule(tmp_path):
    bundle = tmp_path / "bundle.json"
    bundle.write_text(
        json.dumps(
            {
                "job_id": "abc123",
                "logs": {"site-1": {"status": "permission_denied"}, "admin@nvidia.com": {"status": "missing"}},
            }
        )
    )
    ev = collect_evidence([str(bundle)], job_id=None, **LIMITS)
    assert ev.site_status == {"site-1": "permission_denied"}
    assert any("malformed site entry" in note for note in ev.not_read)


def test_cli_logs_envelope_uses_the_same_site_rule():
    ev = Evidence()
    envelope = {
        "schema_version": "1",
        "status": "ok",
        "data": {"logs": {"server": "", "admin@nvidia.com": "x"}, "sites": {}},
    }
    structured.ingest_envelope(ev, envelope, "logs.json", bytes_read=10)
    assert set(ev.site_status) == {"server"}


def test_walk_labels_admin_folders_with_no_site(tmp_path):
    build_poc(tmp_path / "poc", past_jobs=1, kit_files=1, transfer_files=2, credentials=False)
    ev = collect_evidence([str(tmp_path / "poc")], job_id=None, **LIMITS)
    transfer = [s for s in ev.sources if "/transfer/" in s.path]
    assert transfer and {s.site for s in transfer} == {None}
    assert {s.site for s in ev.sources if "/hospital-a/" in s.path} == {"hospital-a"}


def test_collect_validates_with_the_same_rules():
    assert collect.is_allowed(collect.build_argv("job_meta", "abc123", kit_id="admin@nvidia.com"))
    with pytest.raises(collect.CollectError):
        collect.collect_from_cli("bad id", runner=lambda *a, **k: None)
    with pytest.raises(collect.CollectError):
        collect.collect_from_cli("abc123", kit_id="../x", runner=lambda *a, **k: None)
