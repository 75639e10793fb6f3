"""Attacks on the typed dry-run record, its cache and the one fold.

The promises under attack: a cached record is served only for the files that made it (data files included) and a
run that stopped short of NVFLARE is run again by the next command; a record planted or edited in the cache folder
is run again or parses to `malformed`, never a traceback; a job that reads hostile environment variables, a
controller whose properties raise, or odd `simulator_run` arguments end in one clear line or a refusal, and the
budget is never admitted wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    """A cache folder and memo of this test's own."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})
    return tmp_path / "tmp"


def _job(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    return folder / "job.py"


def _fixed(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


# --- the cache key sees data files; a run that stopped short is run again -----------------------------------------


def test_adding_or_removing_a_data_file_changes_the_key(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    before = dryrun.job_digest(job.parent, None, [], "python"), dryrun.folder_digest(job.parent)
    (job.parent / "data").mkdir()
    sample = job.parent / "data" / "train.npy"
    sample.write_bytes(b"\x93NUMPY" + b"\0" * 64)
    added = dryrun.job_digest(job.parent, None, [], "python"), dryrun.folder_digest(job.parent)
    assert None not in before + added
    assert added[0] != before[0] and added[1] != before[1]
    sample.write_bytes(b"\x93NUMPY" + b"\0" * 65)  # prepared again: another size
    resized = dryrun.job_digest(job.parent, None, [], "python")
    assert resized != added[0]
    os.utime(sample, ns=(1, 1))  # the same size, another modification time
    assert dryrun.job_digest(job.parent, None, [], "python") != resized
    sample.unlink()
    assert dryrun.job_digest(job.parent, None, [], "python") != added[0]


def test_a_data_file_is_stat_only_and_a_fifo_or_symlinked_data_file_is_never_cached(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    fifo = job.parent / "data.json"
    os.mkfifo(fifo)  # reading it would block the import forever
    assert dryrun.job_digest(job.parent, None, [], "python") is None
    fifo.unlink()
    outside = tmp_path / "dataset.bin"
    outside.write_bytes(b"x")
    (job.parent / "train.bin").symlink_to(outside)  # its target can change with nothing here changing
    assert dryrun.job_digest(job.parent, None, [], "python") is None


def test_many_data_files_stay_cacheable_up_to_their_own_limit(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    data = job.parent / "images"
    data.mkdir()
    for index in range(dryrun.MAX_HASHED_FILES + 10):  # more data files than text files are hashed
        (data / f"{index:05d}.png").write_bytes(b"p")
    assert dryrun.job_digest(job.parent, None, [], "python") is not None
    for index in range(dryrun.MAX_STATED_FILES):
        (data / f"x{index:05d}.png").write_bytes(b"p")
    assert dryrun.job_digest(job.parent, None, [], "python") is None


NEEDS_DATA = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "train.npy")):
    raise FileNotFoundError("Missing prepared data files: run prepare_data.py first")
recipe = NumpyFedAvgRecipe(name="d", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_preparing_the_data_after_a_refusal_is_seen_by_the_next_import(tmp_path, private_cache):
    job = _job(tmp_path / "job", NEEDS_DATA)
    assert dryrun.dry_run(job, []).status == "raised"
    (job.parent / "data").mkdir()
    (job.parent / "data" / "train.npy").write_bytes(b"\x93NUMPY")
    assert dryrun.dry_run(job, []).status == "recorded"
    shutil.rmtree(job.parent / "data")  # deleting the data again is not served the stale "recorded"
    assert dryrun.dry_run(job, []).status == "raised"


@sealed
def test_a_raised_run_is_never_kept_in_the_cache_folder_and_runs_again_next_command(tmp_path, private_cache):
    job = _job(tmp_path / "job", "import nvflare\nraise RuntimeError('no GPU here')\n")
    with dryrun.Session(job) as session:
        assert session.run([]).status == "raised" and session.count == 1
        assert session.run([]).status == "raised" and session.count == 1  # the same answer within one command
    cache = dryrun._cache_dir()
    assert list(cache.glob("*.json")) == []
    dryrun._MEMO.clear()  # the next command
    with dryrun.Session(job) as session:
        assert session.run([]).status == "raised" and session.count == 1  # ran again


@sealed
def test_a_recorded_run_is_kept_and_served_without_a_run(tmp_path, private_cache):
    job = _job(tmp_path / "job", NEEDS_DATA.replace("if not", "if False and not"))
    assert dryrun.dry_run(job, []).status == "recorded"
    assert len(list(dryrun._cache_dir().glob("*.json"))) == 1
    dryrun._MEMO.clear()
    with dryrun.Session(job) as session:
        assert session.run([]).status == "recorded" and session.count == 0


def test_a_raised_record_left_in_the_cache_folder_by_an_older_version_is_run_again(tmp_path, private_cache):
    job = _job(tmp_path / "job", "import nvflare\n")
    key = dryrun.job_digest(job.parent, None, [], "python")
    stale = {"status": "raised", "exception": "FileNotFoundError", "message": "Missing prepared data files"}
    (dryrun._cache_dir() / f"{key}.json").write_text(json.dumps(stale))
    assert dryrun._cached(key) is None


def test_the_campaign_s_folder_digest_moves_with_data_and_ignores_the_campaign_s_own_files(tmp_path):
    """`contract.run_args_known_unmoving` skips a run only while the folder is the one the import's perturbed
    runs ran over: new data is another folder (a run is made), the campaign's own files are not."""
    job = _job(tmp_path / "job", "import nvflare\n")
    before = dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"}))
    (job.parent / "autofl_runs" / "t1").mkdir(parents=True)
    (job.parent / "autofl_runs" / "t1" / "model.pt").write_bytes(b"w")
    (job.parent / ".nvflare").mkdir()
    (job.parent / ".nvflare" / "state.bin").write_bytes(b"s")
    assert dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"})) == before
    (job.parent / "train.csv").write_text("a,b\n")
    assert dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"})) != before
