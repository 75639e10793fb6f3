"""The runtime mode from production shapes (catalog rule `mode`, match/mode.py): start.sh/sub_start.sh consoles,
loggers only a deployed server or client has, admin console text, Docker, TLS/gRPC, run_N folders; weak hints are
outweighed; ambiguous only when the evidence holds nothing either way (or strong hints of both modes)."""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match.mode import decide_mode
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

CATALOG = cat.load_catalog()
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
IMPORT = ["ModuleNotFoundError: No module named 'torchvision_extra'"]
JOB_PY_FRAME = [
    "Traceback (most recent call last):",
    '  File "/home/alice/fl/job.py", line 40, in <module>',
    "    run = recipe.execute(env)",
]


def report(texts, hints=()):
    lines = [Line("console.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(
        sources=[Source("console.txt", "log", None, "complete", 100)], lines=lines, mode_hints=list(hints)
    )
    return validated(diagnose(evidence, CATALOG))


PRODUCTION_SHAPES = {
    "sub_start.sh console": [
        "WORKSPACE set to /opt/flare/site-1/startup/..",
        "PYTHONPATH is /local/custom:",
        "start fl because of no pid.fl",
        "new pid 3439",
    ],
    "docker start.sh": ["Starting docker with nvflare/nvflare:2.5.2 as participant site-1"],
    "deployed client loggers": [
        "2026-06-02 11:03:10,001 - Authenticator - INFO - verified server identity 'server'",
        "2026-06-02 11:03:10,002 - FederatedClient - INFO - Successfully registered client:site-1 for project p",
    ],
    "deployed server loggers (2.4 full names)": [
        "2024-05-01 10:00:00,000 - nvflare.private.fed.server.job_runner.JobRunner - INFO - Job abc deployed",
    ],
    "admin console": [
        "User Name: admin@nvidia.com",
        "Trying to obtain server address",
        "Logged into server at flare.example.com:8003 with SSID: ebc6125d",
        'Type ? to list commands; type "? cmdName" to show usage of a command.',
        "> submit_job hello-pt",
        "Submitted job: 5b5b4a3c-2f1e-4f6e-9c1a-0e8c7d6b5a43",
    ],
    "docker command": ["$ docker compose up -d", "Error response from daemon: driver failed programming"],
    "grpc between participants": ['\tdetails = "failed to connect to all addresses; last error: UNKNOWN"'],
}


@pytest.mark.parametrize("name", sorted(PRODUCTION_SHAPES))
def test_production_shapes_say_production(name):
    found = report(PRODUCTION_SHAPES[name] + IMPORT)
    assert found["runtime_mode"] == "production", found["mode_reason"]
    assert "MODE_AMBIGUOUS" not in found["findings"]


def test_a_job_py_frame_is_outweighed_by_a_production_console():
    found = report(PRODUCTION_SHAPES["sub_start.sh console"] + JOB_PY_FRAME + IMPORT)
    assert found["runtime_mode"] == "production", found["mode_reason"]
    assert report(JOB_PY_FRAME + IMPORT)["runtime_mode"] == "simulation"  # alone it still says simulation


def test_strong_hints_of_both_modes_stay_ambiguous():
    found = report(["2026-06-02 11:03:10,001 - SimulatorRunner - INFO - starting"] + PRODUCTION_SHAPES["admin console"])
    assert found["runtime_mode"] == "ambiguous" and "conflicting" in found["mode_reason"]


def test_nothing_either_way_is_ambiguous():
    assert report(IMPORT)["runtime_mode"] == "ambiguous"


def test_an_exported_job_folder_does_not_outweigh_deployed_evidence():
    hints = [("simulation", "exported job folder layout (meta.json with app folders) in job"), ("production", "x")]
    assert decide_mode("auto", hints, {}) == ("production", "inferred from evidence layout: x")
    both = [("simulation", "SimEnv workspace layout (simulate_job folder) in w"), ("production", "x")]
    assert decide_mode("auto", both, {})[0] == "ambiguous"
    weak = CATALOG.weak_mode_reasons
    assert weak == frozenset(
        {
            "traceback from running job.py",
            "command line running job.py",
            "numbered run (run=N): a deployed system's job numbering",
            "Docker deployment in the evidence",
            "deployment platform (Kubernetes/Helm) in the evidence",
            "gRPC connection error between participants (deployed system)",
            # printable hints read on text that is not a record of NVFLARE's logger (a job can print the same id)
            "run id is a UUID (deployed job), in text that is not a record of NVFLARE's logger",
            "job id that is a UUID (a job submitted to a running system), in text that is not a record of NVFLARE's "
            "logger",
        }
    )
    text = {"simulation": ["traceback from running job.py"], "production": ["FLARE admin console session"]}
    assert decide_mode("auto", [], text, weak=weak) == (
        "production",
        "inferred from log text: FLARE admin console session",
    )


def test_run_n_workspace_folders_are_a_deployed_job(tmp_path):
    log = tmp_path / "site-1" / "run_2" / "log.txt"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(IMPORT) + "\n", encoding="utf-8")
    evidence = collect_evidence([str(tmp_path)], job_id=None, **LIMITS)
    found = validated(diagnose(evidence, CATALOG))
    assert found["runtime_mode"] == "production" and "run_N" in found["mode_reason"]
    assert {line.site for line in evidence.lines} == {"site-1"}


def test_healthy_simulation_logs_have_no_production_hint(repo_root):
    evidence = collect_evidence([str(repo_root / "evals/diagnose/files/real/healthy")], job_id=None, **LIMITS)
    assert validated(diagnose(evidence, CATALOG))["runtime_mode"] == "simulation"


def test_a_simulation_run_inside_docker_is_still_a_simulation(tmp_path):
    sim = [
        "2026-06-02 11:03:10,001 - SimulatorRunner - INFO - Create the Simulator Server.",
        "2026-06-02 11:03:10,002 - SimulatorServer - INFO - starting simulate_job",
    ] + IMPORT
    path = tmp_path / "compose.log"
    path.write_text("".join(f"trainer-1  | {text}\n" for text in sim), encoding="utf-8")
    found = validated(diagnose(collect_evidence([str(path)], job_id=None, **LIMITS), CATALOG))
    assert found["runtime_mode"] == "simulation", found["mode_reason"]
    plain = tmp_path / "plain.log"
    plain.write_text("".join(f"site-1-1  | {text}\n" for text in IMPORT * 3), encoding="utf-8")
    found = validated(diagnose(collect_evidence([str(plain)], job_id=None, **LIMITS), CATALOG))
    assert found["runtime_mode"] == "production" and "deployment line prefixes" in found["mode_reason"]
