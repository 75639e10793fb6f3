"""What closing session 14's importer holes (h15xf) keeps: the dry run's reads of a job's own files still pin a
budget (an import's bytecode cache, a folder `os.makedirs` creates, a job file written and not read, a file NVFLARE
reads inside the job's folder), and a data file the run read keys its kept record by content within a bound.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

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
OWN_LIST = 'with open("sites.json") as f:\n    sites = json.load(f)["sites"]\n'


def _job(folder: Path, reader: str, modules: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "client.py").write_text("print('trains')\n", encoding="utf-8")
    (folder / "sites.json").write_text(json.dumps({"sites": ["site-1", "site-2", "site-3"]}), encoding="utf-8")
    (folder / "job.py").write_text(HEAD + reader + TAIL, encoding="utf-8")
    for name, text in (modules or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "job.py"


def _admitted_clients(config: dict) -> object:
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    return config["fixed_budget"]["num_clients"]["value"]


OWN_READS = {  # each reads the site list from the job's own file (a budget the static reading leaves to the run)
    "an own module imported (its bytecode cache written)": ("import helpers\n" + OWN_LIST, {"helpers.py": "X = 1\n"}),
    "a helper of its own reading it": (
        "import helpers\n\nsites = helpers.sites()\n",
        {
            "helpers.py": (
                "import json\n\n\ndef sites():\n    with open('sites.json') as f:\n        return json.load(f)['sites']\n"
            )
        },
    ),
    "a folder elsewhere made with os.makedirs": ("os.makedirs(OUT, exist_ok=True)\n" + OWN_LIST, {}),
    "a job file written, not read": ('Path("log.txt").write_text("started")\n' + OWN_LIST, {}),
    "NVFLARE's helper reading a file of the job": (
        "from nvflare.lighter.utils import load_yaml\nsites = load_yaml('sites.json')['sites']\n",
        {},
    ),
}


@needs_sandbox
@pytest.mark.parametrize("case", list(OWN_READS))
def test_a_budget_read_from_the_job_s_own_files_stays_pinned(tmp_path, private_cache, case):
    reader, modules = OWN_READS[case]
    reader = reader.replace("OUT", repr(str(private_cache / "elsewhere" / "out")))  # writable in the sandbox
    assert _admitted_clients(api.import_job(_job(tmp_path / "job", reader, modules), dry_run=True)) == 3


DATA_LIST = 'sites = Path("sites.csv").read_text().split()\n'


@needs_sandbox
def test_an_unchanged_data_file_the_run_read_serves_the_kept_record(tmp_path, private_cache, monkeypatch):
    path = _job(tmp_path / "job", DATA_LIST)
    (path.parent / "sites.csv").write_text("aa\nbb\ncc\n", encoding="utf-8")
    assert _admitted_clients(api.import_job(path, dry_run=True)) == 3
    dryrun._MEMO.clear()  # the next command

    def no_boot(self):
        raise AssertionError("the sandbox started for a warm import")

    monkeypatch.setattr(dryrun.Session, "start", no_boot)
    assert _admitted_clients(api.import_job(path, dry_run=True)) == 3


@needs_sandbox
def test_a_data_file_past_the_bound_is_never_kept_in_the_cache_folder(tmp_path, private_cache, monkeypatch):
    monkeypatch.setattr(dryrun, "MAX_READ_BYTES", 4)
    path = _job(tmp_path / "job", DATA_LIST)
    (path.parent / "sites.csv").write_text("aa\nbb\ncc\n", encoding="utf-8")  # 9 bytes: not hashed
    assert _admitted_clients(api.import_job(path, dry_run=True)) == 3
    assert list(dryrun._cache_dir().glob("*.json")) == []
    dryrun._MEMO.clear()  # the next command runs it again and sees the change
    (path.parent / "sites.csv").write_text("aaaaa\nbb\n", encoding="utf-8")
    assert _admitted_clients(api.import_job(path, dry_run=True)) == 2
