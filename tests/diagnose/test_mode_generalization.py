"""The runtime mode on shapes the rules were not written from (catalog `mode_hints`, match/mode.py).

Each shape is a fact of how NVFLARE 2.x prints things in one mode, taken from its source and from public reports,
written here in the shape users post it (a command echo, a console line, a traceback frame, a path): the simulator's
CLI, classes and workspace; POC and provisioned startup kits, their scripts, workspaces and default ports; the admin
console; the job CLI; the job processes only a deployed participant runs. A line that both modes print, or an
address on localhost at a random port (the simulator's), says nothing: the mode stays ambiguous.
"""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

CATALOG = cat.load_catalog()
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
ERROR = ["RuntimeError: the training loop stopped: loss is nan"]


def report(texts):
    lines = [Line("evidence.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=[Source("evidence.txt", "log", None, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG))


SIMULATION = {
    "the simulator command echoed": ["$ nvflare simulator -w /tmp/ws -n 2 -t 2 jobs/fedavg"],
    "the 2.2/2.3 CLI wrapping a simulator failure": [
        "unable to handle command: simulator due to: 'run_status', please check syntax",
        "usage: nvflare simulator [-h] [-w WORKSPACE] [-n N_CLIENTS] [-c CLIENTS] [-t THREADS] job_folder",
    ],
    "simulator classes other than the runner": [
        "2024-03-02 09:11:40,120 - SimulatorClientAppRunner - ERROR - [identity=site-2]: run failed",
    ],
    "the simulator's task worker": [
        "2023-05-04 12:00:01,500 - ClientTaskWorker - INFO - ClientTaskWorker started to run"
    ],
    "the simulator runner's messages under a custom format": [
        "INFO:root:Simulate Run client: site-1 on GPU group: None",
        "INFO:root:Start the clients run simulation.",
    ],
    "a traceback through the simulator package": [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.10/site-packages/nvflare/private/fed/app/simulator/simulator_worker.py",'
        " line 241, in <module>",
    ],
    "SimEnv's default workspace": [
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/nvflare/simulation/cifar10/site-1/stats.json'",
    ],
    "a FedJob run through the simulator": [
        "Traceback (most recent call last):",
        '  File "/work/fl/fedavg_script_runner.py", line 61, in <module>',
        '    job.simulator_run("/tmp/nvflare/jobs/workdir", gpu="0")',
    ],
    "an example's simulator script": ["$ ./run_simulator.sh cifar10_fedavg 1.0 8 8"],
    "python job.py echoed": ["(venv) alice@gpu01:~/fl$ python3 job.py --n_clients 2"],
    "SimEnv's note on where its logs are": [
        "Note, get_status returns nothing here. The simulation logs can be found at /data/sim_ws/hello-pt",
    ],
}

PRODUCTION = {
    "nvflare poc commands": ["$ nvflare poc prepare -n 2", "$ nvflare poc start"],
    "the 2.2 poc flags": ["$ nvflare poc --start"],
    "a startup-kit script run": ["$ bash ./poc/site-1/startup/start.sh"],
    "an example's POC and submit scripts": ["$ ./start_fl_poc.sh", "$ bash submit_job.sh brats_fedavg"],
    "the admin console script": ["user@host:~/kits/admin@nvidia.com$ ./startup/fl_admin.sh"],
    "a provisioned workspace path": [
        '  File "/home/bob/workspace/project_a/prod_00/site-1/transfer/custom/trainer.py", line 12, in train',
    ],
    "the POC workspace": ["ERROR: cannot read /tmp/nvflare/poc/example_project/prod_00/server/local/resources.json"],
    "a kit started in the cloud": ["ubuntu@ip-172-31-1-187:~$ ls -l /var/tmp/cloud/"],
    "a kit started in the cloud, by its script": ["$ start.sh --cloud aws"],
    "a job container's workspace": ["PermissionError: [Errno 13] Permission denied: '/var/tmp/nvflare/workspace/logs'"],
    "sub_start.sh giving up": ["System is in trouble and unable to start the task!!!!!"],
    "a client waiting for its service provider": ["Waiting for SP...."],
    "an admin command completing": ["Done [47820 usecs] 2022-03-02 03:28:30.386956"],
    "check_status output": ["Engine status: stopped", "Registered clients: 2"],
    "2.0 admin commands": ["> upload_app hello-pt", "> set_run_number 1", "> deploy_app hello-pt all"],
    "the admin console losing its server": [
        "Failed to communicate with Admin Server flare.example.org on 8003: [Errno 111] Connection refused",
    ],
    "the admin prompt for a user": ["User Name: admin"],
    "POC's default admin user": ["kits/admin@nvidia.com/transfer/hello-pt: no meta.json"],
    "the admin login": ["Trying to login, please wait ...", "Login successful."],
    "the provisioning CLI": ["$ nvflare dashboard --start", "$ nvflare preflight_check -p /opt/kits/site-1"],
    "POC's default project": [
        "2023-04-02 10:00:00,000 - ClientRunner - INFO - [identity=site-1, peer=example_project]: got task 'train'",
    ],
    "the kit's root certificate": [
        "FileNotFoundError: [Errno 2] No such file or directory: 'kits/site-1/startup/rootCA.pem'"
    ],
    "a 2.0 job's run folder": [
        '  File "/home/ana/poc/site-1/run_2/app_site-1/custom/np_trainer.py", line 30, in execute'
    ],
    "a provisioning traceback": [
        '  File "/usr/lib/python3/site-packages/nvflare/lighter/provision.py", line 140, in main',
        "ModuleNotFoundError: No module named 'nvflare.lighter.impl.he'",
    ],
    "a builder a project file names": ["No module named 'nvflare.lighter.impl.custom_builder'"],
    "the job CLI": ["$ nvflare job submit -j jobs/hello-pt"],
    "the system CLI": ["$ nvflare system status"],
    "a recipe run in POC": ["    env = PocEnv(num_clients=2)"],
    "a connector to a remote server": [
        "2024-08-20 18:10:01,351 - CoreCell - INFO - site-a: created backbone external connector to grpc://fl.example.org:443",
    ],
    "the default FL port of POC and provisioning": ["Connector [CH00001 ACTIVE grpc://localhost:8002] is starting"],
    "a job id in a message": ["Job: 6f1d2e3c-0a4b-4c5d-8e9f-0123456789ab status is FINISHED:EXECUTION_EXCEPTION"],
    "a job id in a reply": ["{'job_id': 'f0a29fe6-e299-4a7a-a1f1-68de498ed08e', 'status': 'FINISHED:ABORTED'}"],
    "the 2.5+ job executor and launcher": [
        "2025-03-01 10:00:00,000 - JobExecutor - INFO - start job 6f1d2e3c on site-1",
        "2025-03-01 10:00:00,100 - ClientProcessJobLauncher - INFO - Launch the job in process",
    ],
    "the 2.1-2.3 admin API": [
        '  File "/opt/venv/lib/python3.8/site-packages/nvflare/fuel/hci/client/fl_admin_api.py", line 210'
    ],
    "a pod restarting": ["Warning  BackOff  2m (x12 over 5m)  kubelet  Back-off restarting failed container fl-client"],
    "a deployed job process": [
        '  File "/usr/local/lib/python3.8/dist-packages/nvflare/private/fed/app/client/worker_process.py", line 130,'
        " in main",
    ],
}


@pytest.mark.parametrize("name", sorted(SIMULATION))
def test_simulation_shapes_say_simulation(name):
    found = report(SIMULATION[name] + ERROR)
    assert found["runtime_mode"] == "simulation", found["mode_reason"]


@pytest.mark.parametrize("name", sorted(PRODUCTION))
def test_production_shapes_say_production(name):
    found = report(PRODUCTION[name] + ERROR)
    assert found["runtime_mode"] == "production", found["mode_reason"]


NEITHER = {
    "a local address at a random port (the simulator's own server)": [
        "2024-05-02 10:00:00,000 - CoreCell - INFO - server: created backbone internal listener for tcp://localhost:45231",
    ],
    "lines both modes print": [
        "2024-05-02 10:00:00,000 - ClientRunner - INFO - [identity=site-1]: got task from server",
        "2024-05-02 10:00:01,000 - FederatedClient - INFO - Wait for engine to be created.",
    ],
    "the job-folder CLI, used for both modes": ["$ nvflare job create -j /tmp/job -w fedavg_pt"],
    "a web address": ["Downloading https://download.pytorch.org:443/whl/cpu/torch-2.1.0.whl"],
    "a file named like a startup script outside a startup folder": ["./run_all.sh: line 3: start.sh: not found"],
    "the simulator's own admin server starting": [
        "2022-11-13 05:22:02,460 - nvflare.fuel.hci.server.hci - INFO - Starting Admin Server localhost on Port 35391",
    ],
    "a token that is a UUID": [
        "ClientManager - INFO - Client: New client site-1@ joined. Sent token: 0bfb62c9-b623-4f61-ad43-444514009a17."
    ],
}


@pytest.mark.parametrize("name", sorted(NEITHER))
def test_lines_both_modes_print_stay_ambiguous(name):
    found = report(NEITHER[name] + ERROR)
    assert found["runtime_mode"] == "ambiguous", found["mode_reason"]
    assert "MODE_AMBIGUOUS" in found["findings"]


def test_a_numbered_run_in_the_job_context_outweighs_a_job_py_frame():
    """A run number in `[identity=..., run=N]` is a 2.0/2.1 deployed job (the simulator's run is simulate_job)."""
    frame = ['  File "/home/alice/fl/job.py", line 40, in <module>']
    found = report(
        ["2022-02-01 10:00:00,000 - ClientRunner - INFO - [identity=site-1, run=3]: got task"] + frame + ERROR
    )
    assert found["runtime_mode"] == "production", found["mode_reason"]


def test_a_python_job_py_echo_is_outweighed_by_a_poc_command():
    found = report(SIMULATION["python job.py echoed"] + PRODUCTION["nvflare poc commands"] + ERROR)
    assert found["runtime_mode"] == "production", found["mode_reason"]


def test_a_simulation_in_a_container_stays_a_simulation():
    """Docker is where a process runs, not which mode: a simulator command inside it decides."""
    found = report(["$ docker run --rm -v $PWD:/ws nvflare/nvflare:2.2.1 nvflare simulator -n 2 /ws/job"] + ERROR)
    assert found["runtime_mode"] == "simulation", found["mode_reason"]
    assert report(["$ docker compose up -d"] + ERROR)["runtime_mode"] == "production"


def test_a_grpc_peer_out_of_reach_in_a_simulator_log_stays_a_simulation():
    """The 2.2/2.3 simulator's clients reach its server over gRPC on localhost: an unreachable peer is no deployment."""
    sim = [
        "2022-11-13 05:22:02,470 - SimulatorServer - INFO - starting insecure server at localhost:56057",
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:",
        "\tstatus = StatusCode.UNAVAILABLE",
    ]
    found = report(sim + ERROR)
    assert found["runtime_mode"] == "simulation", found["mode_reason"]
    assert report(sim[1:] + ERROR)["runtime_mode"] == "production"  # alone it still says a deployed system


def test_advice_naming_the_other_mode_is_no_production_evidence():
    """The HE recipe refusing SimEnv names the envs to use instead: advice, not a deployment (it also names SimEnv and
    startup kits, so the mode is simulation or, with both named, ambiguous)."""
    line = (
        "ValueError: FedAvgRecipeWithHE does not support SimEnv. Use provisioned startup kits with "
        "nvflare.lighter.impl.he.HEBuilder and run with ProdEnv or PocEnv."
    )
    assert report([line])["runtime_mode"] != "production"


def test_a_simulator_command_and_a_poc_command_conflict():
    found = report(SIMULATION["the simulator command echoed"] + PRODUCTION["nvflare poc commands"] + ERROR)
    assert found["runtime_mode"] == "ambiguous" and "conflicting" in found["mode_reason"]


def _real_lines(root) -> list[str]:
    evidence = collect_evidence([str(root)], job_id=None, **LIMITS)
    return [line.text for line in evidence.lines]


def _hinted(texts: list[str], mode: str) -> list[str]:
    found = []
    for hint in CATALOG.mode_hints[mode]:
        found += [f"{hint.reason}: {t[:120]}" for t in texts if hint.may_match(t.lower()) and hint.regex.search(t)]
    return found


@pytest.mark.parametrize("folder", ["healthy", "import-error", "user-code-exception", "relative-data-path"])
def test_real_simulation_logs_hold_no_production_hint(repo_root, folder):
    texts = _real_lines(repo_root / "evals/diagnose/files/real" / folder)
    assert texts and not _hinted(texts, "production")


@pytest.mark.parametrize("folder", ["poc-deploy-map-2.5", "poc-kill9-2.5", "poc-no-server-2.5", "poc-wrong-kit-2.5"])
def test_real_poc_logs_hold_no_simulation_hint(repo_root, folder):
    texts = _real_lines(repo_root / "evals/realworld/files/real" / folder)
    assert texts and not _hinted(texts, "simulation")


def test_a_server_named_at_the_default_fl_port_is_production():
    line = "Communicator - ERROR - Could not connect to server: fl-server.hospital.org:8002 Setting flag for stopping"
    assert report([line] + ERROR)["runtime_mode"] == "production"
    assert report(["epoch 3 step:8002 loss 0.31"] + ERROR)["runtime_mode"] == "ambiguous"


def test_a_dataset_download_failing_its_certificate_is_no_deployment():
    """torchvision and friends fetch data through urllib: an expired site certificate there says nothing of FLARE."""
    line = (
        "urllib.error.URLError: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "certificate has expired (_ssl.c:1129)>"
    )
    found = report([line])
    assert found["runtime_mode"] == "ambiguous", found["mode_reason"]
    grpc = "ssl_transport_security.cc:1495] Handshake failed with fatal error SSL_ERROR_SSL: certificate verify failed"
    assert report([grpc])["runtime_mode"] == "production"
