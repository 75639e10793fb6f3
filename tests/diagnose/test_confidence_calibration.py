"""Confidence calibration: a diagnosis is `high` only when the evidence carries it.

Promises guarded:
- a frame is the job's own only where the evidence shows it (NVFLARE's app custom folder, a job run folder, job.py,
  a script the evidence names); a library from PYTHONPATH, a PEX, a zipapp or any other folder is not, and a row
  that needs the job's code stays below high when no frame is surely the job's;
- a certificate failure on a web download's line (curl, wget, urllib) or in the job's own download is not NVFLARE's
  connection: alone it makes the startup-kit row at most low;
- one catalog regex hit on one bare line (no traceback, no second line, no NVFLARE message template) is at most
  medium, whatever the row; so is a known job whose evidence is all another run's;
- a UUID job id hints a running system only in the shapes NVFLARE prints it (`job_id=<uuid>` is a tracker's).

The layouts are NVFLARE's own (the simulator's simulate_job/app_<site>/custom, a POC site's <job id>/app_<site>/custom);
the download failures' shapes come from public reports (kubeflow/trainer#2970, PathologyDataScience/BCSS#13); the
paths and messages here are written for the test.
"""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match.jobframes import job_frame, named_scripts
from nvfdiag.match.tracebacks import find_tracebacks
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TB = "Traceback (most recent call last):"
SIM_CUSTOM = "/tmp/nvflare/simulation/mnist/site-1/simulate_job/app_site-1/custom"
POC_CUSTOM = "/tmp/nvflare/poc/example_project/prod_00/site-1/3f2a6b1e-0c4d-4f7a-9b2e-5d8c1a0f6e21/app_site-1/custom"
DEPLOYED = (
    "2026-01-01 10:00:05,000 - ClientRunner - ERROR - [identity=site-1, "
    "run=8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11] - Exception in task execution"
)
FNF = "FileNotFoundError: [Errno 2] No such file or directory: '/data/site-1/train.csv'"
VALUE = "ValueError: operands could not be broadcast together with shapes (3,) (4,)"


def run(texts, mode="simulation"):
    lines = [Line("evidence.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=[Source("evidence.txt", "log", None, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG, mode=mode))


def traceback(paths, last):
    out = [TB]
    for path in paths:
        out += [f'  File "{path}", line 12, in load', "    return reader(path)"]
    return out + [last]


# -- which frames are the job's own -------------------------------------------------------------------------------

LIBRARIES_OUTSIDE_SITE_PACKAGES = {
    "pythonpath": "/opt/mylibs/pandas/io/parsers/readers.py",
    "pex": "/root/.pex/installed_wheels/5c1e/pandas-2.1.0-cp310-cp310-linux_x86_64.whl/pandas/io/parsers/readers.py",
    "zipapp": "/srv/trainer.pyz/pandas/io/parsers/readers.py",
    "conda-env": "/data/envs/fl/pkgs/pandas/io/parsers/readers.py",
    "pip-target": "/app/deps/pandas/io/parsers/readers.py",
    "editable": "/home/ml/src/pandas/pandas/io/parsers/readers.py",
}


@pytest.mark.parametrize("path", LIBRARIES_OUTSIDE_SITE_PACKAGES.values(), ids=LIBRARIES_OUTSIDE_SITE_PACKAGES)
@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_a_library_outside_site_packages_alone_is_not_surely_the_job(path, mode):
    """No frame the evidence shows is the job's: the rows that need the job's code stay below high."""
    for last in (FNF, VALUE):
        done = run(traceback([path], last), mode)
        assert done["confidence"] != "high", (path, last, done["matched_pattern"])


@pytest.mark.parametrize("custom", [SIM_CUSTOM, POC_CUSTOM])
@pytest.mark.parametrize("path", LIBRARIES_OUTSIDE_SITE_PACKAGES.values(), ids=LIBRARIES_OUTSIDE_SITE_PACKAGES)
def test_the_job_calling_such_a_library_from_its_custom_folder_is_the_job(custom, path):
    """The client script in NVFLARE's app custom folder made the call: the job's code, as sure as before."""
    done = run(traceback([f"{custom}/client.py", path], FNF))
    assert (done["matched_pattern"], done["confidence"]) == ("DATA_PATH_NOT_FOUND", "high")


def test_a_script_the_evidence_names_is_the_job():
    """`python train.py` run by the user: its frames are the job's; without the command line they are unsure."""
    frames = traceback(["/home/ml/fl/train.py", "/opt/mylibs/numpy/core/_methods.py"], VALUE)
    named = run(["$ python3 -u train.py --epochs 2", *frames])
    unnamed = run(frames)
    assert (named["matched_pattern"], named["confidence"]) == ("USER_CODE_EXCEPTION", "high")
    assert (unnamed["matched_pattern"], unnamed["confidence"]) == ("USER_CODE_EXCEPTION", "medium")


def test_the_report_points_at_the_jobs_call_into_such_a_library():
    """The detail names the job's own frame (client.py:12), not the PYTHONPATH library's."""
    done = run(traceback([f"{SIM_CUSTOM}/client.py", LIBRARIES_OUTSIDE_SITE_PACKAGES["pythonpath"]], VALUE))
    assert "ValueError in client.py:12 (load)" in done["likely_cause"], done["likely_cause"]
    alone = run(traceback([LIBRARIES_OUTSIDE_SITE_PACKAGES["pythonpath"]], VALUE))
    assert "ValueError in readers.py:12 (load)" in alone["likely_cause"], alone["likely_cause"]


def test_job_frame_is_the_deepest_frame_in_the_jobs_own_files():
    texts = traceback([f"{SIM_CUSTOM}/client.py", f"{SIM_CUSTOM}/net.py", "/opt/mylibs/torch/nn/module.py"], VALUE)
    lines = [Line("a", None, i, t) for i, t in enumerate(texts)]
    block = find_tracebacks(lines)[0]
    assert job_frame(block, frozenset())[0] == f"{SIM_CUSTOM}/net.py"
    other = [Line("a", None, i, t) for i, t in enumerate(traceback(["/srv/a/run.py", "/srv/a/lib.py"], VALUE))]
    assert job_frame(find_tracebacks(other)[0], frozenset()) is None
    assert job_frame(find_tracebacks(other)[0], frozenset({"run.py"}))[0] == "/srv/a/run.py"


@pytest.mark.parametrize("key", ["pex", "zipapp"])
def test_a_module_inside_an_archive_is_third_party_code_named_by_its_package(key):
    """A PEX or a zipapp holds libraries: a traceback ending there with no job frame is third-party code (not a
    missing traceback, not the job's code)."""
    lines = [Line("a", None, i, t) for i, t in enumerate(traceback([LIBRARIES_OUTSIDE_SITE_PACKAGES[key]], VALUE))]
    block = find_tracebacks(lines)[0]
    assert (block.user_frame, block.third_party) == (None, "pandas")
    done = run([t.text for t in lines] + ["job status: FINISHED:EXECUTION_EXCEPTION"])
    assert "CLIENT_TRACEBACK_MISSING" not in done["findings"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$ python3 -u custom/client.py --epochs 2", {"client.py"}),
        ("python train.py", {"train.py"}),
        ('recipe = FedAvgRecipe(train_script="src/cifar10_fl.py", num_rounds=2)', {"cifar10_fl.py"}),
        ("ScriptRunner(script='client.py', script_args='--lr 0.1')", {"client.py"}),
        ("python -m nvflare.private.fed.app.simulator.simulator job", set()),
        ("pip install -r requirements.txt", set()),
    ],
)
def test_named_scripts_are_the_python_files_a_command_or_a_script_argument_runs(text, expected):
    assert named_scripts([text]) == expected


# -- a certificate failure that is not NVFLARE's connection ---------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        ["curl: (60) SSL certificate problem: certificate has expired"],
        [
            "ERROR: cannot verify files.example.org's certificate, issued by 'CN=R3,O=Let's Encrypt':",
            "  Issued certificate has expired.",
        ],
        [
            "urllib.error.URLError: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "certificate has expired (_ssl.c:1007)>"
        ],
    ],
    ids=["curl", "wget", "urllib"],
)
@pytest.mark.parametrize("context", [[], [DEPLOYED]], ids=["alone", "deployed"])
def test_a_web_download_certificate_line_is_at_most_a_low_kit_diagnosis(lines, context):
    done = run(context + lines, mode="auto")
    assert done["matched_pattern"] in ("STARTUP_KIT_EXPIRED", "UNKNOWN")
    assert done["confidence"] == "low", done["matched_pattern"]


def test_nvflare_own_certificate_failure_beside_a_web_download_keeps_the_kit():
    """NVFLARE's own connection evidence (its gRPC driver's handshake) is there too: the kit row stands."""
    handshake = [
        TB,
        '  File "/usr/local/lib/python3.10/dist-packages/nvflare/fuel/f3/drivers/grpc_driver.py", line 210, in connect',
        "    self.conn.connect()",
        '  File "/usr/lib/python3.10/ssl.py", line 1342, in do_handshake',
        "    self._sslobj.do_handshake()",
        "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "certificate has expired (_ssl.c:1007)",
    ]
    done = run([DEPLOYED, "curl: (60) SSL certificate problem: certificate has expired", *handshake], mode="auto")
    assert done["matched_pattern"] == "STARTUP_KIT_EXPIRED"
    assert done["confidence"] != "low"


# -- one regex hit on one bare line -----------------------------------------------------------------------------------

LONE_LINES = {
    "cuda-oom": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
    "import": "ModuleNotFoundError: No module named 'torchvision'",
    "refused": "ConnectionRefusedError: [Errno 111] Connection refused",
    "data-path": FNF,
}


@pytest.mark.parametrize("line", LONE_LINES.values(), ids=LONE_LINES)
@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_one_regex_hit_on_one_bare_line_is_at_most_medium(line, mode):
    done = run([line], mode)
    assert done["confidence"] != "high", done["matched_pattern"]


def test_the_same_line_in_a_traceback_through_the_jobs_code_can_be_high():
    """The limit of the rule above: the traceback of the job's own call corroborates the message."""
    done = run(
        traceback(
            [f"{SIM_CUSTOM}/client.py", "/usr/lib/python3/dist-packages/torch/cuda/memory.py"], LONE_LINES["cuda-oom"]
        )
    )
    assert (done["matched_pattern"], done["confidence"]) == ("CUDA_OOM", "high")


# -- a job id the job's own code prints -------------------------------------------------------------------------------

UUID = "0b7e4c7a-5d0e-4b55-9a0c-2f4f8e0e9d41"


@pytest.mark.parametrize(
    "line",
    [
        f"2026-11-30 18:08:12,581 - ServerEngine - INFO - Launch job_id: {UUID}  with job launcher",
        f"Submitted job: {UUID}",
        f"2026-11-30 18:08:12,581 - JobRunner - INFO - Job {UUID} started",
        f"notified SJ of dead-job: job_id='{UUID}'; client_name='site-1'; reason='gone'",
        f'{{"status": "ok", "data": {{"job_id": "{UUID}"}}}}',
        f"Job ID       : {UUID}",
    ],
    ids=["launch", "submitted", "job-started", "repr", "json", "stats-summary"],
)
def test_nvflares_own_job_id_lines_say_a_running_system(line):
    """The shapes NVFLARE 2.9 prints a job id in (its own source): each still hints production."""
    assert run([line, "RuntimeError: the training loop stopped"], mode="auto")["runtime_mode"] == "production"


def test_a_job_id_a_tracker_prints_as_key_value_is_no_nvflare_job():
    """`job_id=<uuid>` unquoted is not a shape NVFLARE prints (its `{job_id=}` quotes the value)."""
    done = run([f"wandb: run tracker job_id={UUID} (offline)", "RuntimeError: the training loop stopped"], mode="auto")
    assert done["runtime_mode"] == "ambiguous", done["mode_reason"]


# -- evidence of another run in the same bundle -----------------------------------------------------------------------

RUN_A = "8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11"
RUN_B = "5f0c6a2e-8d1b-4c3a-9e7f-2b4d6a8c0e13"
EARLIER_RUN_OOM = [
    f"2026-01-01 10:00:05,000 - ClientRunner - ERROR - [identity=site-1, run={RUN_B}] - Exception in task execution",
    TB,
    f'  File "/ws/site-1/{RUN_B}/app_site-1/custom/client.py", line 41, in main',
    "    x = torch.ones(10**12, device='cuda')",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    f"2026-01-02 11:00:05,000 - ClientRunner - INFO - [identity=site-1, run={RUN_A}] - finished task train",
]


def test_a_failure_of_another_run_in_the_bundle_is_not_a_confident_diagnosis_of_this_job():
    lines = [Line("site-1/log.txt", "site-1", i + 1, t) for i, t in enumerate(EARLIER_RUN_OOM)]
    evidence = Evidence(sources=[Source("site-1/log.txt", "log", "site-1", "complete", 100)], lines=lines)
    this_job = validated(diagnose(evidence, CATALOG, job_id=RUN_A))
    that_job = validated(diagnose(evidence, CATALOG, job_id=RUN_B))
    assert (this_job["matched_pattern"], this_job["confidence"]) == ("CUDA_OOM", "medium")
    assert (that_job["matched_pattern"], that_job["confidence"]) == ("CUDA_OOM", "high")
