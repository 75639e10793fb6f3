"""The dry-run boot's runs of one job go side by side in one sandbox, so they share SimEnv's workspace: a file
NVFLARE writes there before it runs the job (the simulator's default policy, written unless one is there) is never
written nor read by a dry run, so one run never reads what another has half written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from autofl_core.importer import dryrun, recorded
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"

pytestmark = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")

JOB = """
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="policy", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
env = SimEnv(num_clients=2)
local = os.path.join(env.workspace_root, "policy", "local")
os.makedirs(local, exist_ok=True)
with open(os.path.join(local, "resources.json.default"), "w", encoding="utf-8") as handle:
    handle.write('{"format_version": ')  # what a run beside this one leaves while it writes the file
recipe.execute(env)
"""


def test_a_half_written_simulator_policy_file_does_not_fail_the_run(tmp_path):
    (tmp_path / "job.py").write_text(JOB, encoding="utf-8")
    shutil.copy(CLIENT, tmp_path / "client.py")
    record = dry_run(tmp_path / "job.py", [])
    assert (record.status, record.exception, record.message) == ("recorded", "", "")
    assert recorded.budget(record)["num_rounds"]["value"] == 3
