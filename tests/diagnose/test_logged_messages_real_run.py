"""A real NVFLARE 2.9 run that prints a message NVFLARE only logs (no raise) gets the row the reviewed mapping files
it under, because the extraction now reads error-level log calls (shared/catalog/nvflare_messages.py)."""

import json
import subprocess
import sys

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence

pytestmark = pytest.mark.integration

THREADS = "The number of threads to run can not be larger than the number of clients."
JOB = """
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="threads-job", model=[0.0] * 9, min_clients=2, num_rounds=1, train_script="client.py")
recipe.execute(SimEnv(num_clients=2, num_threads=3, workspace_root={workspace!r}))
"""


@pytest.fixture(scope="module")
def threads_run(tmp_path_factory):
    """stdout of `python job.py` whose SimEnv asks for more threads than clients (about 10 s, real simulator)."""
    folder = tmp_path_factory.mktemp("threads-job")
    (folder / "job.py").write_text(JOB.format(workspace=str(folder / "ws")))
    (folder / "client.py").write_text("import nvflare.client as flare\n")
    done = subprocess.run(
        [sys.executable, "job.py"], cwd=folder, capture_output=True, text=True, timeout=180, check=False
    )
    stdout = folder / "stdout.txt"
    stdout.write_text(done.stdout + done.stderr)
    return done.returncode, stdout


FLMODEL = "data must be a FLModel but got {}"
CONTROLLER = """
from nvflare.app_common.workflows.model_controller import ModelController


class DictController(ModelController):
    def run(self):
        self.send_model(task_name="train", data={"weights": [0.0] * 9}, targets=None)
"""
FEDJOB = """
from my_controller import DictController
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

job = FedJob(name="dict-controller", min_clients=2)
job.to_server(DictController())
for i in range(2):
    job.to(ScriptRunner(script="client.py"), f"site-{{i + 1}}")
job.simulator_run({workspace!r})
"""


@pytest.fixture(scope="module")
def controller_run(tmp_path_factory):
    """stdout of a FedJob whose custom controller sends a dict instead of an FLModel (about 20 s, real simulator)."""
    folder = tmp_path_factory.mktemp("dict-controller")
    (folder / "my_controller.py").write_text(CONTROLLER)
    (folder / "job.py").write_text(FEDJOB.format(workspace=str(folder / "ws")))
    (folder / "client.py").write_text("import nvflare.client as flare\n")
    done = subprocess.run(
        [sys.executable, "job.py"], cwd=folder, capture_output=True, text=True, timeout=240, check=False
    )
    stdout = folder / "stdout.txt"
    stdout.write_text(done.stdout + done.stderr)
    return stdout


def _diagnose(path, known):
    found = evidence.collect_evidence([str(path)], job_id=None, max_bytes=262144, max_total_bytes=4194304, max_files=10)
    return diagnose(found, known, mode="auto")


def test_the_logged_simulator_message_selects_its_row(threads_run):
    returncode, stdout = threads_run
    text = stdout.read_text()
    assert returncode == 1 and f"- ERROR - {THREADS}" in text  # NVFLARE logged it, raised only its wrapper
    assert "RuntimeError: Simulation failed with return code 1." in text
    report = _diagnose(stdout, cat.load_catalog())
    assert report["matched_pattern"] == "SIMULATION_CONFIG_ERROR" and report["confidence"] == "high"
    bases = [s["match_basis"] for s in report["signals"] if s["pattern"] == "SIMULATION_CONFIG_ERROR"]
    assert bases and bases[0]["kind"] == "nvflare_template" and THREADS in bases[0]["rule"]


def test_without_the_logged_template_the_same_run_is_unknown(threads_run, tmp_path):
    """What the mapping gave before logged messages were extracted: the run's only raise is a wrapper."""
    _, stdout = threads_run
    rendered = json.loads(cat.nvflare_messages.DEFAULT_PATH.read_text(encoding="utf-8"))
    rendered["templates"] = {
        group: [entry for entry in entries if entry[0] != THREADS] for group, entries in rendered["templates"].items()
    }
    without = tmp_path / "nvflare_messages.json"
    without.write_text(json.dumps(rendered))
    report = _diagnose(stdout, cat.load_catalog(messages_path=without))
    assert report["matched_pattern"] == "UNKNOWN"


def test_a_custom_controller_sending_a_dict_is_diagnosed_by_the_run_time_template(controller_run):
    """`data must be a FLModel` (base_model_controller.py, a SCOPE area since session 18) now names the cause; the
    row is the one the user-code traceback rule gave before, with the template as its basis."""
    text = controller_run.read_text()
    assert "TypeError: data must be a FLModel but got <class 'dict'>" in text
    report = _diagnose(controller_run, cat.load_catalog())
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION"
    rules = [s["match_basis"]["rule"] for s in report["signals"] if s["pattern"] == "USER_CODE_EXCEPTION"]
    assert any(FLMODEL in rule for rule in rules)
