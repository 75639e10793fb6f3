"""Attacks on the importer's holes left open in session 10: an environment value matched by hash, a namespace handed
to a function the static reading does not follow, and a job's own subclass of an NVFLARE env.

The promises under attack: a budget that a user's environment or a helper of another module changes is refused
(statically: naming the line; by the dry run: naming the variables), never admitted as the value one run saw; and
the dry run records the environment that runs the job by the NVFLARE class it is, whatever job.py calls it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun
from autofl_core.runner.store import contract

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def _job(folder: Path, source: str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    for name, text in (files or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "job.py"


def _fixed(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


# --- 3. a job's own subclass of an NVFLARE env --------------------------------------------------------------------

ENV_SUBCLASS = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import PocEnv, SimEnv


class NAME(BASE):
    pass


recipe = NumpyFedAvgRecipe(name="e", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(NAME(num_clients=2))
"""
SUBCLASSES = {  # case: (class name, its NVFLARE base, the env that runs the job)
    "a SimEnv subclass": ("FastSim", "SimEnv", "SimEnv"),
    "a SimEnv subclass called PocEnv": ("PocEnv", "SimEnv", "SimEnv"),
    "a SimEnv subclass called ProdEnv": ("ProdEnv", "SimEnv", "SimEnv"),
    "a PocEnv subclass": ("LocalPoc", "PocEnv", "PocEnv"),
}


@sealed
@pytest.mark.parametrize("case", list(SUBCLASSES), ids=lambda c: c.replace(" ", "-"))
def test_the_dry_run_names_a_job_s_own_env_class_by_the_nvflare_env_it_is(tmp_path, private_cache, case):
    """The boot named an env reached through `simulator_run` by its own class name (`_env()`), one that deploys by
    the patched class. Before: a SimEnv subclass was recorded as `FastSim`, `PocEnv` or `ProdEnv` (the runner then
    took it for no simulation, and a class called PocEnv for a POC deployment) though it runs a simulation."""
    name, base, runs = SUBCLASSES[case]
    source = ENV_SUBCLASS.replace("NAME", name).replace("BASE", base)
    if name in ("PocEnv", "ProdEnv"):  # the job's class shadows NVFLARE's name
        source = source.replace("import PocEnv, SimEnv", "import SimEnv")
    config = api.import_job(_job(tmp_path / "job", source), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["job"]["env"]["class"] == runs, config["job"]["env"]
    assert config["environment"]["discovered"]["name"] == runs
    assert contract.uses_simenv(config) == (runs == "SimEnv")
    if runs == "SimEnv":
        assert _fixed(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 3}, _fixed(config)
