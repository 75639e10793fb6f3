"""Attacks on session 10's diagnose rules: the runtime-mode hints (catalog `mode_hints`) and the startup-kit and
trust rows being loose on a TLS failure the job's own code met (catalog `nvflare_connections_only`,
`tracebacks.job_own_calls`).

Promises guarded: NVFLARE's own TLS failure stays the kit's whatever the platform's file layout (a Windows or lib64
standard library, grpc's compiled frames) and whoever catches it; a download's chained traceback (urllib3 ->
requests -> the job's call) is the job's code, not the kit; a line that a simulation's own libraries print is no
hint of a deployed system.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
DEPLOYED = (
    "2026-01-01 10:00:05,000 - ClientRunner - ERROR - [identity=site-1, "
    "run=8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11] - Exception in task execution"
)
TB = "Traceback (most recent call last):"
CLIENT = '  File "/opt/site-1/8c4f6a38/app_site-1/custom/client.py", line 41, in main'
EXPIRED = (
    "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "certificate has expired (_ssl.c:1007)"
)
DURING = "During handling of the above exception, another exception occurred:"
CAUSE = "The above exception was the direct cause of the following exception:"
POOL = (
    "HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: "
    "/bert-base-uncased/resolve/main/config.json (Caused by SSLError(SSLCertVerificationError(1, "
    "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1007)')))"
)


def report(texts):
    lines = [Line("evidence.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=[Source("evidence.txt", "log", None, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG))


def nvflare_handshake(site_packages: str, stdlib: str, sep: str = "/") -> list[str]:
    """NVFLARE's gRPC driver failing the TLS handshake in the standard library's ssl module."""
    driver = sep.join([site_packages, "nvflare", "fuel", "f3", "drivers", "grpc_driver.py"])
    return [
        f'  File "{driver}", line 210, in connect',
        "    self.conn.connect()",
        f'  File "{stdlib}{sep}ssl.py", line 1342, in do_handshake',
        "    self._sslobj.do_handshake()",
    ]


LINUX = nvflare_handshake("/usr/local/lib/python3.10/dist-packages", "/usr/lib/python3.10")


def kit_verdict(frames):
    done = report([DEPLOYED, TB, *frames, EXPIRED])
    return done["matched_pattern"], done["confidence"]


# -- NVFLARE's own TLS failures stay the kit's ------------------------------------------------------------------


@pytest.mark.parametrize(
    "frames",
    [
        nvflare_handshake(
            r"C:\Users\bob\miniconda3\envs\fl\Lib\site-packages", r"C:\Users\bob\miniconda3\envs\fl\Lib", "\\"
        ),
        nvflare_handshake(r"C:\Program Files\Python311\Lib\site-packages", r"C:\Program Files\Python311\Lib", "\\"),
        nvflare_handshake("/home/u/.venv/lib64/python3.9/site-packages", "/usr/lib64/python3.9"),
    ],
    ids=["windows-conda", "windows-python.org", "fedora-lib64"],
)
def test_nvflare_tls_failure_through_another_standard_library_layout_stays_the_kit(frames):
    """The standard library of Windows (`...\\Lib\\ssl.py`) or Fedora/RHEL (`/usr/lib64/python3.9/ssl.py`) is not
    the job's code: the handshake below NVFLARE's driver is NVFLARE's, as it is with `/usr/lib/python3.10`."""
    assert kit_verdict(frames) == kit_verdict(LINUX)
    assert kit_verdict(frames)[0] == "STARTUP_KIT_EXPIRED"


def test_nvflare_tls_failure_through_grpc_compiled_frames_stays_the_kit():
    """NVFLARE's aio gRPC driver fails in grpc's Cython code, whose frames name a relative `.pyx.pxi` source."""
    frames = [
        '  File "/usr/local/lib/python3.10/dist-packages/nvflare/fuel/f3/drivers/aio_grpc_driver.py", line 380, '
        "in _start_connection",
        "    await stub.Stream(self._gen())",
        '  File "src/python/grpcio/grpc/_cython/_cygrpc/aio/call.pyx.pxi", line 155, '
        "in grpc._cython.cygrpc._AioCall._raise_for_status",
    ]
    assert kit_verdict(frames) == kit_verdict(LINUX)


def test_nvflare_failure_the_job_caught_and_raised_again_stays_the_kit():
    """The inner traceback is NVFLARE's handshake; the job's client script caught it and raised its own error with
    the same words: one chained failure, with NVFLARE frames below the job's call."""
    outer = [TB, CLIENT, '    raise RuntimeError(f"FL client could not start: {e}") from e']
    done = report(
        [
            DEPLOYED,
            TB,
            *LINUX,
            "ssl.SSLError: handshake failed",
            "",
            CAUSE,
            "",
            *outer,
            "RuntimeError: FL client could not start: certificate has expired",
        ]
    )
    assert done["matched_pattern"] == "STARTUP_KIT_EXPIRED", (done["matched_pattern"], done["other_candidates"])


@pytest.mark.parametrize(
    "frames",
    [
        [  # the FLARE API session opened from job.py
            '  File "/home/alice/fl/job.py", line 30, in main',
            "    sess = new_secure_session('admin@nvidia.com', startup_kit)",
            '  File "/usr/local/lib/python3.10/dist-packages/nvflare/fuel/flare_api/flare_api.py", line 80, in __init__',
            "    self.api = AdminAPI(",
            *LINUX[2:],
        ],
        [  # the nvflare CLI's console script
            '  File "/usr/local/bin/nvflare", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/usr/local/lib/python3.10/dist-packages/nvflare/cli.py", line 190, in main',
            "    handler(prog_args)",
            *LINUX,
        ],
    ],
    ids=["flare-api-from-job.py", "nvflare-cli"],
)
def test_nvflare_frames_below_a_user_or_console_frame_keep_the_kit(frames):
    assert kit_verdict(frames)[0] == "STARTUP_KIT_EXPIRED"


# -- the job's own download stays the job's ---------------------------------------------------------------------


def test_a_chained_download_failure_is_the_job_code_not_the_kit():
    """urllib3's handshake, requests' retry and the job's call print three tracebacks joined by Python's chain
    sentences: the first two hold no frame of the job, yet they are the same download."""
    chain = [
        TB,
        '  File "/usr/local/lib/python3.10/dist-packages/urllib3/connectionpool.py", line 703, in urlopen',
        "    httplib_response = self._make_request(",
        '  File "/usr/lib/python3.10/ssl.py", line 1342, in do_handshake',
        "    self._sslobj.do_handshake()",
        EXPIRED,
        "",
        DURING,
        "",
        TB,
        '  File "/usr/local/lib/python3.10/dist-packages/requests/adapters.py", line 486, in send',
        "    resp = conn.urlopen(",
        '  File "/usr/local/lib/python3.10/dist-packages/urllib3/util/retry.py", line 592, in increment',
        "    raise MaxRetryError(_pool, url, error or ResponseError(cause))",
        "urllib3.exceptions.MaxRetryError: " + POOL,
        "",
        DURING,
        "",
        TB,
        CLIENT,
        '    model = AutoModel.from_pretrained("bert-base-uncased")',
        '  File "/usr/local/lib/python3.10/dist-packages/requests/adapters.py", line 517, in send',
        "    raise SSLError(e, request=request)",
        "requests.exceptions.SSLError: " + POOL,
    ]
    done = report([DEPLOYED, *chain])
    assert done["runtime_mode"] == "production"
    assert done["matched_pattern"] == "USER_CODE_EXCEPTION", (done["matched_pattern"], done["confidence"])
    assert "STARTUP_KIT_EXPIRED" in [c["pattern"] for c in done["other_candidates"]]


RUNNER = [
    '  File "/usr/local/lib/python3.10/dist-packages/nvflare/app_common/executors/task_script_runner.py", line 95, '
    "in run",
    '    runpy.run_path(self.script_full_path, run_name="__main__")',
    '  File "<frozen runpy>", line 291, in run_path',
]


CHECKOUT = [line.replace("/usr/local/lib/python3.10/dist-packages/", "/home/bob/NVFlare/") for line in RUNNER]


@pytest.mark.parametrize("above", [[], RUNNER, CHECKOUT], ids=["script", "in-process-runner", "nvflare-checkout"])
def test_a_chained_download_under_nvflare_s_script_runner_is_the_job_code(above):
    """NVFLARE's in-process runner (task_script_runner, installed or from a source checkout) is above the client
    script's frame: not below it, so the download chain stays the job's."""
    inner = [TB, '  File "/usr/local/lib/python3.10/dist-packages/urllib3/connectionpool.py", line 703, in urlopen']
    outer = [TB, *above, CLIENT, '    hf_hub_download("bert-base-uncased", "config.json")']
    outer += ['  File "/usr/local/lib/python3.10/dist-packages/requests/adapters.py", line 517, in send']
    done = report([DEPLOYED, *inner, EXPIRED, "", DURING, "", *outer, "requests.exceptions.SSLError: " + POOL])
    assert done["matched_pattern"] == "USER_CODE_EXCEPTION", (done["matched_pattern"], done["confidence"])


def test_the_job_s_download_that_nvflare_s_executor_wrapped_is_the_job_code():
    """NVFLARE's executor caught the client script's failed download and raised its own error from it: NVFLARE's
    frames are above the job's in the one stack the chain reads as."""
    inner = [TB, CLIENT, "    urllib3.request('GET', url)", *LINUX[2:]]
    outer = [
        TB,
        '  File "/usr/local/lib/python3.10/dist-packages/nvflare/app_common/executors/client_api_executor.py", '
        "line 306, in execute",
        "    ) from e",
    ]
    done = report([DEPLOYED, *inner, EXPIRED, "", CAUSE, "", *outer, "RuntimeError: task execution failed"])
    assert done["matched_pattern"] == "USER_CODE_EXCEPTION", (done["matched_pattern"], done["confidence"])


def test_a_traceback_after_an_unrelated_one_is_not_its_chain():
    """Two failures one after the other (no chain sentence between them): NVFLARE's handshake stays the kit's even
    when the job's own download fails right after it."""
    download = [TB, CLIENT, "    urllib.request.urlopen(url)", "urllib.error.URLError: <urlopen error timed out>"]
    done = report([DEPLOYED, TB, *LINUX, EXPIRED, *download])
    assert done["matched_pattern"] == "STARTUP_KIT_EXPIRED"


# -- the runtime mode: what a simulation's own libraries print is no hint of a deployed system ------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SIMULATION = (FIXTURES / "healthy_real" / "job_stdout.txt").read_text().splitlines()  # a real 2.9 simulation
SIM_CLIENT = '  File "/tmp/nvflare/simulation/bert/site-1/simulate_job/app_site-1/custom/client.py", line 20, in main'
VERIFY = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate"


def in_simulation(failure):
    """The failure printed amid the real simulation's output."""
    return report(SIMULATION[:60] + failure + SIMULATION[60:])


def download(client_frame, error):
    return [
        TB,
        client_frame,
        '    model = AutoModel.from_pretrained("bert-base-uncased")',
        '  File "/usr/local/lib/python3.10/dist-packages/huggingface_hub/utils/_http.py", line 93, in send',
        "    return super().send(request, *args, **kwargs)",
        error,
    ]


@pytest.mark.parametrize(
    "error",
    [
        "requests.exceptions.SSLError: " + POOL.replace("certificate has expired", "unable to get local issuer"),
        f"httpx.ConnectError: {VERIFY} (_ssl.c:1000)",
        "ssl.SSLError: [SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert protocol version (_ssl.c:1007)",
    ],
    ids=["requests", "httpx", "tls-alert"],
)
def test_a_model_download_failing_tls_in_a_simulation_keeps_the_simulation(error):
    """The client script's model download failed its certificate (a proxy, a stale CA bundle): the job's own call,
    not a link between participants, so the simulator's own lines decide the mode."""
    done = in_simulation(download(SIM_CLIENT, error))
    assert done["runtime_mode"] == "simulation", done["mode_reason"]
    assert done["matched_pattern"] == "USER_CODE_EXCEPTION"


def test_a_model_hub_warning_about_a_certificate_outside_a_traceback_is_no_deployment_hint():
    """huggingface_hub's retry warning names the web host at port 443 it could not verify."""
    warning = (
        f"'(MaxRetryError(\"{POOL}\"), '(Request ID: 4f1c)')' thrown while requesting HEAD https://huggingface.co/x"
    )
    done = in_simulation([warning, "RuntimeError: the training loop stopped: loss is nan"])
    assert done["runtime_mode"] == "simulation", done["mode_reason"]


def test_a_certificate_failure_of_nvflare_or_its_overseer_is_still_a_deployment_hint():
    """The limits of the two rules above: NVFLARE's own handshake in a traceback, and the 2.1-2.3 overseer reached
    through requests at its HTTPS port 8443, say a deployed system."""
    overseer = EXPIRED.replace(
        "ssl.SSLCertVerificationError",
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='overseer.example.com', port=8443)",
    )
    for lines in ([TB, *LINUX, EXPIRED], [overseer]):
        done = report(lines + ["RuntimeError: the training loop stopped: loss is nan"])
        assert done["runtime_mode"] == "production", (lines[-1], done["mode_reason"])


def test_huggingface_hub_login_output_is_no_admin_console():
    """`huggingface_hub.login(token=...)` prints `Login successful` (0.20); NVFLARE's admin client does not."""
    login = ["Your token has been saved to /root/.cache/huggingface/token", "Login successful"]
    assert (
        in_simulation(login + ["RuntimeError: the training loop stopped: loss is nan"])["runtime_mode"] == "simulation"
    )
    alone = report(login + [TB, '  File "/home/a/fl/client.py", line 3, in <module>', "RuntimeError: loss is nan"])
    assert alone["runtime_mode"] != "production", alone["mode_reason"]


@pytest.mark.parametrize(
    "extra",
    [
        ["$ kubectl logs job/hello-numpy-sim -n ml"],
        [
            "Warning  BackOff  10s (x3 over 40s)  kubelet  Back-off restarting failed container sim in pod hello-numpy-sim"
        ],
    ],
    ids=["kubectl-logs", "pod-back-off"],
)
def test_a_simulation_run_as_a_kubernetes_pod_stays_a_simulation(extra):
    """python job.py runs as a Kubernetes Job on a GPU cluster as it runs in Docker: the platform is weak evidence,
    the simulator's own lines decide (alone, the platform still says production)."""
    error = [TB, '  File "/workspace/fl/client.py", line 3, in <module>', "RuntimeError: loss is nan"]
    assert in_simulation(extra + error)["runtime_mode"] == "simulation"
    assert report(extra + error)["runtime_mode"] == "production"


def test_nvflare_tls_failure_through_grpc_installed_with_pip_target_stays_the_kit():
    """A library installed outside site-packages (pip install --target /app/deps) sits in the folder NVFLARE is
    installed in: a library there, not the job's code."""
    frames = [
        '  File "/app/deps/nvflare/fuel/f3/drivers/grpc_driver.py", line 210, in connect',
        "    self.conn.connect()",
        '  File "/app/deps/grpc/_channel.py", line 1030, in __call__',
        "    return _end_unary_response_blocking(state, call, False, None)",
    ]
    assert kit_verdict(frames) == kit_verdict(LINUX)


@pytest.mark.parametrize(
    "line",
    [
        "curl: (60) SSL certificate problem: certificate has expired",
        "  Issued certificate has expired.",
        "fatal: unable to access 'https://github.com/org/fl-data.git/': SSL certificate problem: certificate has expired",
    ],
    ids=["curl", "wget", "git"],
)
def test_a_command_line_download_failing_its_certificate_is_no_deployment_hint(line):
    """A data-preparation step fetching with curl, wget or git prints these in a simulation's output too."""
    done = in_simulation([line, "RuntimeError: the training loop stopped: loss is nan"])
    assert done["runtime_mode"] == "simulation", done["mode_reason"]


@pytest.mark.parametrize(
    "line",
    [
        "curl: (60) SSL certificate problem: certificate has expired",
        "urllib.error.URLError: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "certificate has expired (_ssl.c:1007)>",
    ],
    ids=["curl", "urllib"],
)
def test_a_failed_data_download_then_the_missing_data_is_the_data_path_not_the_kit(line):
    """A site's data step fetched its data with curl or urllib and failed its certificate, then the client script
    found no data: the web download's line is not NVFLARE's connection, so the kit row does not win at high."""
    missing = "FileNotFoundError: [Errno 2] No such file or directory: '/data/site-1/train.csv'"
    done = report([DEPLOYED, line, TB, CLIENT, "    df = pd.read_csv(args.data)", missing])
    assert done["matched_pattern"] == "DATA_PATH_NOT_FOUND", (done["matched_pattern"], done["confidence"])
    assert "STARTUP_KIT_EXPIRED" in [c["pattern"] for c in done["other_candidates"]]


def test_the_client_script_printing_its_own_tracker_job_id_keeps_the_simulation():
    tracker = "experiment tracker: job_id=0b7e4c7a-5d0e-4b55-9a0c-2f4f8e0e9d41 (offline)"
    done = in_simulation([tracker, "RuntimeError: the training loop stopped: loss is nan"])
    assert done["runtime_mode"] == "simulation", done["mode_reason"]
