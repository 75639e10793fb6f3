"""A TLS failure the job's own code met (a dataset or model download in the client script) is the job's I/O, not
NVFLARE's connections: the startup-kit and trust rows (catalog `nvflare_connections_only`) are loose on such a
traceback, so they never win at high confidence over the user code's exception. The same failure under NVFLARE's
own frames stays theirs."""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
DEPLOYED = "2026-01-01 10:00:05,000 - ClientRunner - ERROR - [identity=site-1, run=8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11] - Exception in task execution"
CLIENT = '  File "/opt/site-1/8c4f6a38/app_site-1/custom/client.py", line 41, in main'
URLLIB = [
    '  File "/usr/local/lib/python3.10/dist-packages/torchvision/datasets/utils.py", line 22, in _urlretrieve',
    "    with urllib.request.urlopen(request) as response:",
    '  File "/usr/lib/python3.10/urllib/request.py", line 1351, in do_open',
    "    raise URLError(err)",
]
EXPIRED = (
    "urllib.error.URLError: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "certificate has expired (_ssl.c:1007)>"
)
UNTRUSTED = EXPIRED.replace("certificate has expired", "unable to get local issuer certificate")
NVFLARE_GRPC = [
    '  File "/usr/local/lib/python3.10/dist-packages/nvflare/fuel/f3/drivers/grpc_driver.py", line 210, in connect',
    "    self.conn.connect()",
    '  File "/usr/lib/python3.10/ssl.py", line 1342, in do_handshake',
    "    self._sslobj.do_handshake()",
]
SSL_EXPIRED = "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1007)"


def report(texts):
    lines = [Line("evidence.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=[Source("evidence.txt", "log", None, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG))


def traceback(frames, error):
    return [DEPLOYED, "Traceback (most recent call last):", *frames, error]


@pytest.mark.parametrize("error, row", [(EXPIRED, "STARTUP_KIT_EXPIRED"), (UNTRUSTED, "AUTH_FAILURE")])
def test_a_download_in_the_client_script_failing_tls_is_the_job_code_not_the_kit(error, row):
    done = report(traceback([CLIENT, "    train = CIFAR10(root='/tmp/data', download=True)", *URLLIB], error))
    assert done["runtime_mode"] == "production"
    assert done["matched_pattern"] == "USER_CODE_EXCEPTION", (done["matched_pattern"], done["confidence"])
    assert row in [c["pattern"] for c in done["other_candidates"]]


def test_without_the_job_frame_the_expiry_stays_the_kit():
    """The same line with no traceback (a participant's own log line) keeps its row."""
    done = report([DEPLOYED, "2026-01-01 10:00:06,000 - Cell - ERROR - " + SSL_EXPIRED])
    assert done["matched_pattern"] == "STARTUP_KIT_EXPIRED"


def test_nvflare_frames_below_the_job_frame_keep_the_expiry_nvflares():
    """The job called NVFLARE (its client API, a recipe's environment) and NVFLARE's connection failed."""
    done = report(traceback([CLIENT, "    flare.init()", *NVFLARE_GRPC], SSL_EXPIRED))
    alone = report(traceback(NVFLARE_GRPC, SSL_EXPIRED))
    assert done["matched_pattern"] == alone["matched_pattern"] == "STARTUP_KIT_EXPIRED", done["other_candidates"]
    assert done["confidence"] == alone["confidence"]
