"""OS errors are read by errno family (name, strerror as Linux or macOS prints it), not by one wording."""

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TS = "2024-05-06 07:08:09,010 - FederatedServer - ERROR - "


def run(texts, mode="production"):
    lines = [Line("server/log.txt", "server", i + 1, t) for i, t in enumerate(texts)]
    evidence = Evidence(sources=[Source("server/log.txt", "log", "server", "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG, mode=mode))


@pytest.mark.parametrize(
    ("text", "row"),
    [
        ("OSError: [Errno 99] Cannot assign requested address", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("OSError: [Errno 49] Can't assign requested address", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("bind failed: EADDRNOTAVAIL", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("OSError: [Errno 98] Address already in use", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("OSError: [Errno 28] No space left on device: '/ws/run_4/app'", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("OSError: [Errno 24] Too many open files", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("OSError: [Errno 30] Read-only file system: '/ws'", "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", "PEER_GONE_OR_TIMEOUT"),
        ("TimeoutError: [Errno 110] Connection timed out", "PEER_GONE_OR_TIMEOUT"),
        ("BrokenPipeError: [Errno 32] Broken pipe", "PEER_GONE_OR_TIMEOUT"),
        ("OSError: [Errno 113] No route to host", "PEER_GONE_OR_TIMEOUT"),
        ("OSError: [Errno 12] Cannot allocate memory", "RESOURCE_EXCEEDS_HOST_CAPACITY"),
        ("NotADirectoryError: [Errno 20] Not a directory: '/data/x.csv/train'", "DATA_PATH_NOT_FOUND"),
    ],
)
def test_each_errno_family_selects_its_row(text, row):
    assert run([TS + text])["matched_pattern"] == row


def test_permission_denied_is_a_loose_platform_signal():
    report = run([TS + "PermissionError: [Errno 13] Permission denied: '/home/app/.cache'"])
    assert report["matched_pattern"] == "INFRASTRUCTURE_DEPLOYMENT_FAILURE"
    assert report["confidence"] == "medium" and report["signals"][0]["match_basis"]["loose"] is True


def test_the_errno_inside_a_carrier_decides_and_a_chained_config_error_does_not():
    texts = [
        TS + "ValueError: failed to instantiate class: OSError: [Errno 99] Cannot assign requested address",
        TS + "nvflare.fuel.common.excepts.ConfigError: Error processing 'config_fed_server.json' in element 'x'",
    ]
    assert run(texts)["matched_pattern"] == "INFRASTRUCTURE_DEPLOYMENT_FAILURE"
