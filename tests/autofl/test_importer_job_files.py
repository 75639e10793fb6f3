"""A budget job.py reads from a file of its own folder (a site list in JSON, a folder of per-site data files) is
pinned by the dry run: the run notes every file and folder the job's code reads before NVFLARE runs
(`dryrun_boot/file_reads.py`), the dry run's cache key holds the job folder's files, and a candidate may not change
a file outside the trust contract's allowed_edit_paths. A file read outside the job's folder is not pinned: the
budget stays refused, as the static reading refuses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun

pytestmark = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

HEAD = """import json
import os
from pathlib import Path

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

"""
TAIL = """
recipe = NumpyFedAvgRecipe(name="f", model=[0.0], min_clients=len(sites), num_rounds=2, train_script="client.py")
recipe.execute(SimEnv(clients=sites))
"""
READERS = {
    "json.load of open()": 'with open("sites.json") as f:\n    sites = json.load(f)["sites"]\n',
    "pathlib read_text": 'sites = json.loads((Path(__file__).parent / "sites.json").read_text())["sites"]\n',
    "a folder listed": 'sites = sorted(n.split(".")[0] for n in os.listdir("data") if n.endswith(".csv"))\n',
}


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(dryrun.tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})


def _job(folder: Path, reader: str, sites: list[str]) -> Path:
    (folder / "data").mkdir(parents=True)
    (folder / "client.py").write_text("print('trains')\n", encoding="utf-8")
    (folder / "sites.json").write_text(json.dumps({"sites": sites}), encoding="utf-8")
    for site in sites:
        (folder / "data" / f"{site}.csv").write_text("x\n1\n", encoding="utf-8")
    (folder / "job.py").write_text(HEAD + reader + TAIL, encoding="utf-8")
    return folder / "job.py"


def _budget(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_budget_read_from_the_job_s_own_files_is_admitted_as_recorded(tmp_path, private_cache, reader):
    """Before: refused ("reads files at run time") although the run recorded 3 clients."""
    path = _job(tmp_path / "job", READERS[reader], ["site-1", "site-2", "site-3"])
    assert api.import_job(path)["admission_errors"] != [], "precondition: the static reading refuses"
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _budget(config) == {"num_clients": 3, "min_clients": 3, "num_rounds": 2}


def test_the_job_s_file_is_part_of_what_the_record_is_kept_by(tmp_path, private_cache):
    """Another site list in the same job folder gives another record (the cache key holds the file)."""
    path = _job(tmp_path / "job", READERS["json.load of open()"], ["site-1", "site-2", "site-3"])
    assert _budget(api.import_job(path, dry_run=True))["num_clients"] == 3
    (path.parent / "sites.json").write_text(json.dumps({"sites": ["a", "b", "c", "d"]}), encoding="utf-8")
    assert _budget(api.import_job(path, dry_run=True)) == {"num_clients": 4, "min_clients": 4, "num_rounds": 2}


def test_a_budget_read_from_a_file_outside_the_job_s_folder_stays_refused(tmp_path, private_cache):
    outside = tmp_path / "shared" / "sites.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"sites": ["site-1", "site-2"]}), encoding="utf-8")
    reader = f'with open({str(outside)!r}) as f:\n    sites = json.load(f)["sites"]\n'
    config = api.import_job(_job(tmp_path / "job", reader, ["x"]), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    messages = " ".join(e["message"] for e in config["admission_errors"])
    assert "fixed_budget.num_clients is unresolved" in messages and "reads files at run time" in messages


def test_a_file_the_job_reads_besides_one_outside_its_folder_pins_nothing(tmp_path, private_cache):
    """One read outside the folder (a data set the job looks at before building the recipe) keeps the refusal,
    even when the site list itself is the job's own file: which read decided the budget is not known."""
    outside = tmp_path / "dataset.txt"
    outside.write_text("rows\n", encoding="utf-8")
    reader = READERS["json.load of open()"] + f"rows = Path({str(outside)!r}).read_text()\n"
    config = api.import_job(_job(tmp_path / "job", reader, ["site-1", "site-2"]), dry_run=True)
    assert any("reads files at run time" in e["message"] for e in config["admission_errors"])
