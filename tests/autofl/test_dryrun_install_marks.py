"""A dry run's kept record belongs to the NVFLARE install it ran against: the boot records the size and time of
NVFLARE's package file and installed METADATA (`installed`), and a record whose files changed (another NVFLARE
installed in the same interpreter) is run again, never served from the cache folder."""

from __future__ import annotations

import json
import os
import tempfile

import nvflare
import pytest
from autofl_core.importer import api, dryrun, recorded

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

JOB = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="m", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})
    return tmp_path / "tmp"


def _mark(path) -> str:
    info = os.stat(path)
    return f"{info.st_size}:{info.st_mtime_ns}:{os.path.abspath(path)}"


def test_a_record_is_of_its_install_while_the_files_hold_their_size_and_time(tmp_path):
    held = tmp_path / "METADATA"
    held.write_text("Version: 2.9.0\n")
    record = recorded.DryRunRecord("recorded", entry="Recipe.execute", installed=(_mark(held),))
    assert dryrun._same_install(record)
    os.utime(held, ns=(1, 1))
    assert not dryrun._same_install(record), "another install's time"
    held.unlink()
    assert not dryrun._same_install(record), "the old install's METADATA is gone"
    assert not dryrun._same_install(recorded.DryRunRecord("recorded", entry="x", installed=("no marks here",)))
    assert dryrun._same_install(recorded.DryRunRecord("recorded", entry="x")), "a record without marks: key only"


@needs_sandbox
def test_a_kept_record_of_another_nvflare_install_is_run_again(tmp_path, private_cache):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "client.py").write_text("print('trains')\n")
    (folder / "job.py").write_text(JOB)
    config = api.import_job(folder / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded" and config["admission_errors"] == []
    kept = [p for p in (private_cache / f"autofl-dryrun-{os.getuid()}").glob("*.json")]
    assert kept, "the recorded run is kept"
    raw = json.loads(kept[0].read_text())
    assert _mark(nvflare.__file__) in raw["installed"], raw.get("installed")
    assert any(m.endswith("METADATA") for m in raw["installed"]), "the install's metadata is marked"
    key = kept[0].stem
    dryrun._MEMO.clear()
    assert dryrun._cached(key) is not None, "the same install: served from the cache folder"
    size, _, path = raw["installed"][0].split(":", 2)
    raw["installed"][0] = f"{size}:1:{path}"  # as another install of NVFLARE leaves its package file
    kept[0].write_text(json.dumps(raw))
    dryrun._MEMO.clear()
    assert dryrun._cached(key) is None, "another install: the record is not served"
