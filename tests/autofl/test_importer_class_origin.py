"""A FedJob's workflow named like NVFLARE's is read as NVFLARE's only when it comes from NVFLARE: a workflow of
another package (or the job's own with its own `__init__`) decides in its code what its `num_rounds=` and
`num_clients=` mean, so the static reading refuses its budget naming the line, and the dry run records it (or, when
the class's module is absent and stood in, records nothing the importer may admit). Recipes stay recognised by
name, as the spec's recipe pattern says."""

from __future__ import annotations

from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun

CLIENT = "import nvflare.client as flare\n"
FEDJOB = """import os

from WORKFLOW import FedAvg

from nvflare import FedJob
from nvflare.job_config.script_runner import ScriptRunner

job = FedJob(name="wf")
job.to_server(FedAvg(num_clients=2, num_rounds=4))
for i in range(2):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/nvflare/wf"))
"""
NVFLARE_FEDAVG = "nvflare.app_common.workflows.fedavg"
DOUBLING = f"""from {NVFLARE_FEDAVG} import FedAvg as _FedAvg


class FedAvg(_FedAvg):
    def __init__(self, num_clients: int, num_rounds: int):
        super().__init__(num_clients=num_clients, num_rounds=2 * num_rounds)
"""


def _job(folder: Path, source: str, modules: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    (folder / "client.py").write_text(CLIENT, encoding="utf-8")
    for name, text in (modules or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "job.py"


def _budget(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


def _unresolved(config: dict) -> dict[str, str]:
    errors = [e["message"] for e in config["admission_errors"] if e["code"] == "AUTOFL_UNRESOLVED_SAFETY_FIELD"]
    return {m.partition(" is unresolved")[0]: m for m in errors}


def test_nvflare_s_own_workflow_is_read_by_its_arguments(tmp_path):
    config = api.import_job(_job(tmp_path, FEDJOB.replace("WORKFLOW", NVFLARE_FEDAVG)))
    assert config["admission_errors"] == []
    assert _budget(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 4}


@pytest.mark.parametrize(
    ("module", "whose"),
    [
        ("my_workflows", "my_workflows.FedAvg of another package"),  # absent here: not the job's folder
        ("workflows.local", "workflows.local.FedAvg of another package"),
    ],
)
def test_a_workflow_named_like_nvflare_s_from_another_package_is_refused_statically(tmp_path, module, whose):
    """Before: read as NVFLARE's FedAvg by its name and admitted 2/2/4, whatever the class does with num_rounds."""
    config = api.import_job(_job(tmp_path, FEDJOB.replace("WORKFLOW", module)))
    unresolved = _unresolved(config)
    assert set(unresolved) >= {"fixed_budget.num_rounds", "fixed_budget.min_clients"}
    assert (
        f"the workflow FedAvg (built at job.py line 9) is {whose}, not NVFLARE's"
        in unresolved["fixed_budget.num_rounds"]
    )


def test_the_job_s_own_workflow_with_its_own_init_is_refused_statically(tmp_path):
    """The module beside job.py doubles the rounds it is given: 8 rounds run, never the 4 job.py passes."""
    path = _job(tmp_path, FEDJOB.replace("WORKFLOW", "my_workflows"), {"my_workflows.py": DOUBLING})
    unresolved = _unresolved(api.import_job(path))
    assert "is the job's own class (my_workflows.FedAvg), not NVFLARE's" in unresolved["fixed_budget.num_rounds"]


needs_sandbox = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(dryrun.tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})


@needs_sandbox
def test_the_dry_run_admits_the_rounds_the_job_s_own_workflow_runs(tmp_path, private_cache):
    path = _job(tmp_path / "job", FEDJOB.replace("WORKFLOW", "my_workflows"), {"my_workflows.py": DOUBLING})
    config = api.import_job(path, dry_run=True)
    assert config["admission_errors"] == []
    assert _budget(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 8}


@needs_sandbox
def test_a_workflow_whose_module_is_absent_is_never_admitted_by_its_arguments(tmp_path, private_cache):
    """Before: the dry run stood in `my_workflows`, recorded no rounds and 1 client waited for, and the importer
    admitted the static 2/2/4 read from the stand-in's arguments."""
    config = api.import_job(_job(tmp_path / "job", FEDJOB.replace("WORKFLOW", "my_workflows")), dry_run=True)
    assert config["import"]["dry_run"]["stubbed"] == ["my_workflows"]
    unresolved = _unresolved(config)
    assert "my_workflows.FedAvg of another package, not NVFLARE's" in unresolved["fixed_budget.num_rounds"]
