"""Mode from what only a deployed system writes; older releases' wordings (2.0, 2.3) select their rows."""

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()


def run(texts, source="log.txt", site=None, **kw):
    lines = [Line(source, site, i + 1, t) for i, t in enumerate(texts)]
    evidence = Evidence(sources=[Source(source, "log", site, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG, **kw))


@pytest.mark.parametrize(
    "line",
    [
        "2022-03-01 10:00:00,000 - FederatedServer - INFO - starting secure server at example.test:8002",
        "2022-03-01 10:00:00,000 - FedAdminServer - INFO - Starting Admin Server on Port 8003",
        "2022-03-01 10:00:00,000 - ProcessExecutor - INFO - process started: job 7",
        "2022-03-01 10:00:00,000 - ClientRunner - INFO - [run=3, peer=server]: got task",
    ],
)
def test_what_only_a_deployed_system_writes_decides_production(line):
    assert run([line])["runtime_mode"] == "production"


def test_a_simulator_log_stays_a_simulation():
    texts = [
        "2024-01-01 10:00:00,000 - SimulatorServer - INFO - starting insecure server",
        "2024-01-01 10:00:00,000 - FederatedClient - INFO - [identity=site-1, run=simulate_job] - ok",
    ]
    assert run(texts)["runtime_mode"] == "simulation"


def test_a_system_panic_reason_of_2_0_selects_the_config_row():
    line = (
        "2022-03-01 10:00:05,000 - ServerRunner - ERROR - [run=1]: Aborting current RUN due to FATAL_SYSTEM_ERROR "
        "received: expect model to be torch.nn.Module but got <class 'dict'>"
    )
    report = run([line])
    assert report["matched_pattern"] == "CONFIG_FILE_VALIDATION_ERROR"
    assert report["signals"][0]["match_basis"]["kind"] == "nvflare_template"


def test_a_startup_kit_that_fails_its_signature_check_is_an_auth_failure():
    texts = ["The following files are not secure content.", "fed_server.json", "start fl because of no pid.fl"]
    report = run(texts)
    assert report["matched_pattern"] == "AUTH_FAILURE" and report["runtime_mode"] == "production"
