"""Attacks on session 14's importer changes (issue 33): a FedJob workflow that is not NVFLARE's is not read by its
arguments (`recipes.keeps_nvflare_arguments`), and a budget read from the job's own files is pinned by the dry run
(`dryrun_boot/file_reads.py`, `dryrun_config._unpinned`).

The promises under attack: a workflow's arguments are read as NVFLARE's only when NVFLARE's code takes them; a
budget the static reading calls "reads files at run time" is admitted only when every file the run read lies in the
job's folder and in the dry run's cache key, so another machine, another day or another file gives another record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun

needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
READS_FILES = "reads files at run time"

# --- 1. a FedJob workflow named like NVFLARE's ----------------------------------------------------------------------

FEDJOB = """import os

IMPORTS

from nvflare import FedJob
from nvflare.job_config.script_runner import ScriptRunner

job = FedJob(name="wf")
job.to_server(FedAvg(num_clients=2, num_rounds=4))
for i in range(2):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/nvflare/wf"))
"""
NVFLARE_FEDAVG = "from nvflare.app_common.workflows.fedavg import FedAvg"


def _fedjob(folder: Path, imports: str, modules: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(FEDJOB.replace("IMPORTS", imports), encoding="utf-8")
    (folder / "client.py").write_text("import nvflare.client as flare\n", encoding="utf-8")
    for name, text in (modules or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "job.py"


def _refused_rounds(config: dict) -> str:
    found = [e["message"] for e in config["admission_errors"] if "fixed_budget.num_rounds" in e["message"]]
    return found[0] if found else ""


def test_a_local_subclass_of_another_package_s_fedavg_is_not_read_as_nvflare_s(tmp_path):
    """Hole: the job's own `FedAvg(Base)` without an `__init__` of its own, whose base is another package's class
    named FedAvg, was matched to NVFLARE's FedAvg by the base's name and admitted 2/2/4."""
    imports = "from other_workflows import FedAvg as Base\n\n\nclass FedAvg(Base):\n    pass\n"
    message = _refused_rounds(api.import_job(_fedjob(tmp_path, imports)))
    assert "not NVFLARE's" in message, message


def test_a_local_subclass_of_a_subclass_with_its_own_init_is_not_read_as_nvflare_s(tmp_path):
    """Two levels: the outer class keeps its base's `__init__`, and that base (the job's own) has its own."""
    imports = (
        f"{NVFLARE_FEDAVG} as Base\n\n\nclass Doubling(Base):\n    def __init__(self, num_clients, num_rounds):\n"
        "        super().__init__(num_clients=num_clients, num_rounds=2 * num_rounds)\n\n\n"
        "class FedAvg(Doubling):\n    pass\n"
    )
    assert "not NVFLARE's" in _refused_rounds(api.import_job(_fedjob(tmp_path, imports)))


DOUBLE = "def _double(self, num_clients, num_rounds):\n    Base.__init__(self, num_clients=num_clients, num_rounds=2 * num_rounds)\n\n\n"
OWN_CONSTRUCTORS = {  # the job's own FedAvg over NVFLARE's, whose constructor is not NVFLARE's: 8 rounds run, not 4
    "__init__ assigned": f"{NVFLARE_FEDAVG} as Base\n\n\n{DOUBLE}class FedAvg(Base):\n    __init__ = _double\n",
    "__new__ returning NVFLARE's": f"{NVFLARE_FEDAVG} as Base\n\n\nclass FedAvg(Base):\n"
    "    def __new__(cls, num_clients, num_rounds):\n        return Base(num_clients=num_clients, num_rounds=2 * num_rounds)\n",
    "a mixin's __init__ first": "from other_mixins import Doubling\n"
    f"{NVFLARE_FEDAVG} as Base\n\n\nclass FedAvg(Doubling, Base):\n    pass\n",
    "a class decorator": f"from other_mixins import doubling\n{NVFLARE_FEDAVG} as Base\n\n\n@doubling\n"
    "class FedAvg(Base):\n    pass\n",
    "a metaclass": f"from other_mixins import Doubling\n{NVFLARE_FEDAVG} as Base\n\n\n"
    "class FedAvg(Base, metaclass=Doubling):\n    pass\n",
    "a base not read": f"{NVFLARE_FEDAVG} as Base\n\n\nclass FedAvg(Base.with_rounds_doubled(), Base):\n    pass\n",
}


@pytest.mark.parametrize("case", list(OWN_CONSTRUCTORS))
def test_a_local_workflow_whose_constructor_is_not_nvflare_s_is_not_read_by_its_arguments(tmp_path, case):
    """Hole: only a `def __init__` in the class body counted as the job's own constructor; each of these builds
    the workflow otherwise and was admitted 2/2/4."""
    message = _refused_rounds(api.import_job(_fedjob(tmp_path, OWN_CONSTRUCTORS[case])))
    assert "not NVFLARE's" in message, message


@pytest.mark.parametrize(
    "imports",
    [
        f"{NVFLARE_FEDAVG} as Base\n\n\nclass FedAvg(Base):\n    pass\n",  # aliased NVFLARE base, no own __init__
        f"{NVFLARE_FEDAVG} as FedAvg\n",  # NVFLARE's class under its own name through an alias
    ],
)
def test_nvflare_s_fedavg_through_an_alias_or_a_plain_subclass_is_read_by_its_arguments(tmp_path, imports):
    config = api.import_job(_fedjob(tmp_path, imports))
    assert config["admission_errors"] == []
    assert {k: config["fixed_budget"][k]["value"] for k in api.FIELDS} == {
        "num_clients": 2,
        "min_clients": 2,
        "num_rounds": 4,
    }


def test_an_aliased_nvflare_base_under_a_local_class_with_its_own_init_is_refused(tmp_path):
    imports = (
        f"{NVFLARE_FEDAVG} as Base\n\n\nclass FedAvg(Base):\n    def __init__(self, num_clients, num_rounds):\n"
        "        super().__init__(num_clients=num_clients, num_rounds=num_rounds + 1)\n"
    )
    assert "the job's own class" in _refused_rounds(api.import_job(_fedjob(tmp_path, imports)))


STAND_IN_BASES = {  # `settingslib` is absent: its BaseSettings is a stand-in; installed, it sets `clients` from
    # the arguments (or the environment), as pydantic's settings do
    "a class default": "class S(BaseSettings):\n    clients: int = 3\n\n\nn = S(clients=2).clients\n",
    "set before the base's __init__": "class S(BaseSettings):\n    def __init__(self, **kw):\n"
    "        self.clients = 3\n        super().__init__(**kw)\n\n\nn = S(clients=2).clients\n",
}


@needs_sandbox
@pytest.mark.parametrize("case", list(STAND_IN_BASES))
def test_a_count_a_stand_in_base_would_set_is_never_admitted_as_recorded(tmp_path, private_cache, case):
    """Hole: a value the job's class derived from a stand-in held before (or without) the stand-in's own __init__
    was recorded as the budget (3 clients), though the installed base sets it from the arguments (2)."""
    reader = (
        "from settingslib import BaseSettings\n\n\n" + STAND_IN_BASES[case] + "sites = [f's{i}' for i in range(n)]\n"
    )
    config = api.import_job(_job(tmp_path / "job", reader), dry_run=True)
    assert config["import"]["dry_run"]["stubbed"] == ["settingslib"]
    assert config["admission_errors"] != [], _clients(config)


# --- 2. a budget read from files: what the dry run pins -------------------------------------------------------------

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


def _job(folder: Path, reader: str, sites: list[str] = ("site-1", "site-2", "site-3")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "client.py").write_text("print('trains')\n", encoding="utf-8")
    (folder / "sites.json").write_text(json.dumps({"sites": list(sites)}), encoding="utf-8")
    (folder / "job.py").write_text(HEAD + reader + TAIL, encoding="utf-8")
    return folder / "job.py"


def _sites_file(path: Path, sites: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sites": sites}), encoding="utf-8")
    return path


def _clients(config: dict) -> object:
    return config["fixed_budget"]["num_clients"]["value"]


def _refused_for_files(config: dict) -> bool:
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    return any(READS_FILES in e["message"] for e in config["admission_errors"])


@needs_sandbox
def test_a_file_outside_the_job_s_folder_named_like_code_is_an_input(tmp_path, private_cache):
    """Hole: a read of `/elsewhere/sites.py` (or `.txt` named `.pth`) was left out as module code, so a site list
    outside the job's folder pinned the budget."""
    outside = _sites_file(tmp_path / "shared" / "sites.py", ["site-1", "site-2"])
    reader = f'with open({str(outside)!r}) as f:\n    sites = json.load(f)["sites"]\n'
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))


@needs_sandbox
def test_a_file_outside_opened_for_reading_and_writing_is_an_input(tmp_path, private_cache):
    """Hole: `open(path, "r+")` was taken for a write and not noted, though the job reads the site list from it (a
    file in the temporary folder, which the sandbox leaves writable)."""
    outside = _sites_file(private_cache / "shared" / "sites.json", ["site-1", "site-2"])
    reader = f'with open({str(outside)!r}, "r+") as f:\n    sites = json.load(f)["sites"]\n'
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))


@needs_sandbox
def test_a_file_outside_read_by_open_in_an_expression_is_not_pinned(tmp_path, private_cache):
    """Hole: the static reading said `open()` "reads a file at run time", words the dry run did not take for a
    file read, so the run settled the site count whatever file it came from."""
    outside = _sites_file(tmp_path / "shared" / "sites.json", ["site-1", "site-2"])
    reader = f"sites = open({str(outside)!r}).read().split()\n"  # three words: the run records 3 clients
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))


@needs_sandbox
@pytest.mark.parametrize(
    "reader",
    [
        "sites = json.load(open('sites.json'))['sites'] if os.path.exists(ROOT + '/site-2') else ['a']\n",
        "sites = json.load(open('sites.json'))['sites'] if Path(ROOT, 'site-2').is_dir() else ['a']\n",
    ],
    ids=["os.path.exists", "Path.is_dir"],
)
def test_site_folders_outside_tested_for_existence_are_not_pinned(tmp_path, private_cache, reader):
    """Hole: `os.stat` (behind `os.path.exists`, `Path.is_dir`) raises no audit event, so a site list decided by
    which folders exist on this machine was admitted as if only the job's files had decided it."""
    for site in ("site-1", "site-2"):
        (tmp_path / "data" / site).mkdir(parents=True)
    path = _job(tmp_path / "job", reader.replace("ROOT", repr(str(tmp_path / "data"))))
    assert _refused_for_files(api.import_job(path, dry_run=True))


@needs_sandbox
def test_a_budget_read_from_the_host_s_proc_files_is_not_pinned(tmp_path, private_cache):
    """Hole: reads under /proc, /sys and /dev were left out, so a site count taken from this machine's processors
    was admitted as if the job's own file had decided it."""
    reader = (
        'cpus = Path("/proc/cpuinfo").read_text().count("processor")\n'
        'sites = [f"site-{i + 1}" for i in range(min(cpus, 3))]\n'
    )
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))


@needs_sandbox
@pytest.mark.parametrize("folder", [".git", "venv", "__pycache__"])
def test_a_site_list_in_a_folder_the_cache_key_skips_is_not_pinned(tmp_path, private_cache, folder):
    """Hole: a file under a folder the dry run's cache key skips (`run_reasons.KEYLESS_FOLDERS`) was pinned; changing it
    kept the first record (3 clients) while job.py runs with 4."""
    path = _job(tmp_path / "job", f'with open("{folder}/sites.json") as f:\n    sites = json.load(f)["sites"]\n')
    listed = _sites_file(path.parent / folder / "sites.json", ["site-1", "site-2", "site-3"])
    first = api.import_job(path, dry_run=True)
    _sites_file(listed, ["a", "b", "c", "d"])
    second = api.import_job(path, dry_run=True)
    assert _refused_for_files(first) and _refused_for_files(second), (_clients(first), _clients(second))


@needs_sandbox
def test_a_data_file_changed_in_place_with_its_time_kept_gives_another_record(tmp_path, private_cache):
    """Hole: a data file (not a text suffix) was keyed by size and modification time only; a site list of the same
    size with its time put back kept the stale record. The record keeps the hash of each data file its run read."""
    path = _job(tmp_path / "job", 'sites = Path("sites.csv").read_text().split()\n')
    listed = path.parent / "sites.csv"
    listed.write_text("aa\nbb\ncc\n", encoding="utf-8")
    stamp = listed.stat()
    assert _clients(api.import_job(path, dry_run=True)) == 3
    listed.write_text("aaaaa\nbb\n", encoding="utf-8")  # same size (9 bytes), 2 sites
    os.utime(listed, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert _clients(api.import_job(path, dry_run=True)) == 2


@needs_sandbox
def test_a_file_outside_read_through_an_nvflare_helper_is_an_input(tmp_path, private_cache):
    """Hole: a read NVFLARE's code made for the job (a helper job.py calls, here nvflare.lighter.utils.load_yaml) was
    not the job's, so a site list outside the job's folder read through it pinned the budget."""
    outside = _sites_file(tmp_path / "shared" / "sites.yml", ["site-1", "site-2"])
    reader = OWN_LIST + f'from nvflare.lighter.utils import load_yaml\nsites = load_yaml({str(outside)!r})["sites"]\n'
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))


@needs_sandbox
@pytest.mark.parametrize(
    "reader",
    [
        "import subprocess\nsites = json.loads(subprocess.check_output(['cat', PATH]))['sites']\n",
        "r, w = os.pipe()\nif os.fork() == 0:\n    os.write(w, open(PATH, 'rb').read())\n    os._exit(0)\n"
        "os.close(w)\nos.wait()\nsites = json.loads(os.read(r, 4096))['sites']\n",
    ],
    ids=["a program", "a forked child"],
)
def test_a_file_outside_read_by_another_process_is_not_pinned(tmp_path, private_cache, reader):
    """Hole: a process the job's code starts reads what the audit hook never sees; the site list it passed back
    was admitted as if only the job's own file had been read."""
    outside = _sites_file(tmp_path / "shared" / "sites.json", ["site-1", "site-2"])
    path = _job(tmp_path / "job", OWN_LIST + reader.replace("PATH", repr(str(outside))))
    assert _refused_for_files(api.import_job(path, dry_run=True))


@needs_sandbox
def test_a_file_outside_read_in_the_job_s_own_helper_is_not_pinned(tmp_path, private_cache):
    """Hole: a budget from the job's own helper is 'an external call' to the static reading, which the run settled
    whatever files it read (outside the job's folder here)."""
    outside = _sites_file(tmp_path / "shared" / "sites.json", ["site-1", "site-2"])
    path = _job(tmp_path / "job", "import helpers\n\nsites = helpers.sites()\n")
    helper = (
        f"import json\n\n\ndef sites():\n    with open({str(outside)!r}) as f:\n        return json.load(f)['sites']\n"
    )
    (path.parent / "helpers.py").write_text(helper, encoding="utf-8")
    config = api.import_job(path, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["admission_errors"] != []


# --- limits that hold -----------------------------------------------------------------------------------------------


@needs_sandbox
def test_a_symlink_in_the_job_s_folder_to_a_file_outside_is_an_input(tmp_path, private_cache):
    outside = _sites_file(tmp_path / "shared" / "sites.json", ["site-1", "site-2"])
    path = _job(tmp_path / "job", 'with open("linked.json") as f:\n    sites = json.load(f)["sites"]\n')
    (path.parent / "linked.json").symlink_to(outside)
    assert _refused_for_files(api.import_job(path, dry_run=True))


@needs_sandbox
def test_a_path_that_leaves_the_job_s_folder_and_comes_back_is_the_job_s_file(tmp_path, private_cache):
    path = _job(tmp_path / "job", 'with open("../job/sites.json") as f:\n    sites = json.load(f)["sites"]\n')
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == [] and _clients(config) == 3


@needs_sandbox
@pytest.mark.parametrize(
    "reader",
    [
        "fd = os.open(PATH, os.O_RDONLY)\nsites = json.loads(os.read(fd, 4096))['sites']\n",
        "import io\nwith io.FileIO(PATH) as f:\n    sites = json.loads(f.read())['sites']\n",
        "import threading\nbox = []\nt = threading.Thread(target=lambda: box.append(open(PATH).read()))\n"
        "t.start()\nt.join()\nsites = json.loads(box[0])['sites']\n",
    ],
    ids=["os.open", "io.FileIO", "a thread"],
)
def test_a_file_outside_read_by_a_lower_level_call_is_an_input(tmp_path, private_cache, reader):
    outside = _sites_file(tmp_path / "shared" / "sites.json", ["site-1", "site-2"])
    path = _job(tmp_path / "job", OWN_LIST + reader.replace("PATH", repr(str(outside))))
    assert _refused_for_files(api.import_job(path, dry_run=True))


@needs_sandbox
def test_a_job_file_rewritten_from_randomness_before_it_is_read_is_not_pinned(tmp_path, private_cache):
    """Hole: job.py wrote its site list from random numbers, then read it: the random count was admitted."""
    reader = (
        "import random\nn = random.randint(2, 4)\n"
        'Path("sites.json").write_text(json.dumps({"sites": [f"s{i}" for i in range(n)]}))\n' + OWN_LIST
    )
    assert _refused_for_files(api.import_job(_job(tmp_path / "job", reader), dry_run=True))
