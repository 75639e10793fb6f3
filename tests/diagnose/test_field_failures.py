"""Failures as users meet them in the field (catalog rules below_nvflare, transfer_progress, host_capacity,
packaging_reported, exit_minus_9): gRPC, TLS and cell messaging errors NVFLARE passes on, transfer progress in its
wordings, host capacity however it is said, packaging however reported, -9 in every release's wording."""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()


def log(level, message, logger="Communicator", ts="2026-06-02 11:03:10,123"):
    return f"{ts} - {logger} - {level} - {message}"


def ev(*blocks):
    lines, sources = [], []
    for source, site, texts in blocks:
        sources.append(Source(source, "log", site, "complete", 100))
        lines += [Line(source, site, i + 1, text) for i, text in enumerate(texts)]
    return Evidence(sources=sources, lines=lines)


def run(texts, mode="production", site="site-1", source="log.txt"):
    return validated(diagnose(ev((source, site, texts)), CATALOG, mode=mode))


GRPC_UNAVAILABLE = [
    log("INFO", "CLIENT: connection done: <_InactiveRpcError of RPC that terminated with:", "GrpcDriver"),
    "\tstatus = StatusCode.UNAVAILABLE",
    '\tdetails = "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.5:8002: Failed to connect '
    'to remote host: Connection refused"',
    '\tdebug_error_string = "UNKNOWN:Error received from peer  {grpc_message:"failed to connect to all addresses", '
    'grpc_status:14, created_time:"2026-06-02T11:03:10.1+00:00"}"',
    ">",
]

BELOW_NVFLARE = {
    "grpc unavailable (multi-line, INFO header)": (GRPC_UNAVAILABLE, "PEER_GONE_OR_TIMEOUT"),
    "grpc deadline": (
        [
            "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:",
            "\tstatus = StatusCode.DEADLINE_EXCEEDED",
            '\tdetails = "Deadline Exceeded"',
        ],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "errno 111": (["ConnectionRefusedError: [Errno 111] Connection refused"], "PEER_GONE_OR_TIMEOUT"),
    "no route": (["OSError: [Errno 113] No route to host"], "PEER_GONE_OR_TIMEOUT"),
    "task_check 2.9": (
        [
            log(
                "ERROR",
                "[identity=site-1, run=r1] - failed task_check with server: COMMUNICATION_ERROR",
                "ClientRunner",
            )
        ],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "task_check 2.4": (
        [log("ERROR", "[identity=site-1, run=r1] - failed task_check: COMMUNICATION_ERROR", "ClientRunner")],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "result upload timeout": (
        [log("ERROR", "failed to send task result: timeout", "ClientRunManager")],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "result upload retry": (
        [log("ERROR", "[identity=site-1] - failed to send task result to server - will try again", "ClientRunner")],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "get_task 2.4": (
        [log("WARNING", "Failed to get_task from example_project server. Will try it again.")],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "stalled stream": (
        [log("ERROR", "TxTask(T12) ACK made no progress for 60.0 seconds", "ByteStreamer")],
        "PEER_GONE_OR_TIMEOUT",
    ),
    "dns": (["socket.gaierror: [Errno -2] Name or service not known"], "INFRASTRUCTURE_DEPLOYMENT_FAILURE"),
    "dns via grpc": (
        [
            "\tstatus = StatusCode.UNAVAILABLE",
            '\tdetails = "DNS resolution failed for flare-server:8002: C-ares status is not ARES_SUCCESS"',
        ],
        "INFRASTRUCTURE_DEPLOYMENT_FAILURE",
    ),
    "name resolution": (
        [log("ERROR", "cannot connect: [Errno -3] Temporary failure in name resolution")],
        "INFRASTRUCTURE_DEPLOYMENT_FAILURE",
    ),
    "tls to a clear port": (
        [
            "E1201 10:00:00.123456 4242 ssl_transport_security.cc:1468] Handshake failed with fatal error "
            "SSL_ERROR_SSL: error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER"
        ],
        "AUTH_FAILURE",
    ),
    "python wrong version": (
        ["ssl.SSLError: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1002)"],
        "AUTH_FAILURE",
    ),
    "local issuer": (
        [
            "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get "
            "local issuer certificate (_ssl.c:1006)"
        ],
        "AUTH_FAILURE",
    ),
    "unknown ca": (
        ["ssl.SSLError: [SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca (_ssl.c:2580)"],
        "AUTH_FAILURE",
    ),
    "bad certificate alert": (["[SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert bad certificate"], "AUTH_FAILURE"),
    "host name": (["Peer name flare-server is not in peer certificate"], "AUTH_FAILURE"),
    "self signed": (["certificate verify failed: self-signed certificate in certificate chain"], "AUTH_FAILURE"),
    "expired alert": (
        ["ssl.SSLError: [SSL: SSLV3_ALERT_CERTIFICATE_EXPIRED] sslv3 alert certificate expired"],
        "STARTUP_KIT_EXPIRED",
    ),
    "expired verify": (
        ["[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)"],
        "STARTUP_KIT_EXPIRED",
    ),
}


@pytest.mark.parametrize("name", sorted(BELOW_NVFLARE))
def test_failures_below_nvflare_map_to_the_row_their_rule_gives(name):
    texts, row = BELOW_NVFLARE[name]
    report = run(texts)
    assert report["matched_pattern"] == row, (name, report["other_candidates"])
    assert report["recovery_category"] == CATALOG.row(row).recovery_category


@pytest.mark.parametrize("name", ["grpc unavailable (multi-line, INFO header)", "tls to a clear port", "expired alert"])
def test_tls_and_grpc_errors_say_the_system_is_deployed(name):
    report = run(BELOW_NVFLARE[name][0], mode="auto", site=None)
    assert report["runtime_mode"] == "production", report["mode_reason"]


# ---- transfer progress: evidence, not phrasing ----

UPLOAD_TIMEOUT = log("ERROR", "[identity=site-1, run=r1] - failed to send task result: timeout", "ClientRunManager")
DONE = "ArrayDownloadable - INFO - object has been downloaded to all 2 receivers - clear cache"


def at(clock: str, rest: str) -> str:
    return f"2026-06-02 {clock},000 - {rest}"


def test_a_result_upload_that_times_out_while_its_download_completes_later_is_transfer_progress():
    report = run([at("11:00:00", DONE), UPLOAD_TIMEOUT, at("11:09:00", DONE)])
    assert report["matched_pattern"] == "TRANSFER_PROGRESS_TIMEOUT"
    assert (
        "superseded by TRANSFER_PROGRESS_TIMEOUT"
        in {c["pattern"]: c["reason"] for c in report["other_candidates"]}["PEER_GONE_OR_TIMEOUT"]
    )


def test_transfers_that_completed_before_the_timeout_are_the_healthy_rounds_not_progress():
    earlier = [at(f"10:{m:02d}:00", DONE) for m in range(0, 50, 10)]
    assert run(earlier + [UPLOAD_TIMEOUT])["matched_pattern"] == "PEER_GONE_OR_TIMEOUT"
    timeout = at("11:05:00", "ScatterAndGather - WARNING - task train timed out waiting for site-2")
    assert run(earlier + [timeout], site="server")["matched_pattern"] == "ROUND_TIMEOUT"


@pytest.mark.parametrize(
    "progress",
    [
        "_Transaction - INFO - [server] download tx T82e1a126 done: status=finished elapsed=612.40s size=4096.0MB",
        "function - INFO - [client] download ref=9f5d4caf done: elapsed=611.02s size=4096.0MB (4294967296 bytes)",
        "ObjectDownloader - INFO - transfer completed: site-1 downloaded model.safetensors (8589934592 bytes)",
    ],
)
def test_a_completion_logged_after_the_timeout_is_progress_in_each_wording(progress):
    timeout = at("11:05:00", "ScatterAndGather - WARNING - task train timed out waiting for site-1")
    assert run([timeout, at("11:06:00", progress)], site="server")["matched_pattern"] == "TRANSFER_PROGRESS_TIMEOUT"


def test_in_flight_progress_counts_before_the_timeout_and_debug_lines_count():
    flight = at(
        "11:04:00", "Cell - DEBUG - req_id='r7': remote processing still has transfer progress; continue waiting"
    )
    timeout = at("11:05:00", "ScatterAndGather - WARNING - task train timed out waiting for site-1")
    assert run([flight, timeout], site="server")["matched_pattern"] == "TRANSFER_PROGRESS_TIMEOUT"


def test_later_is_decided_across_sources_by_timestamp():
    timeout = at("11:05:00", "ScatterAndGather - WARNING - task train timed out waiting for site-1")
    for clock, expected in (("11:07:00", "TRANSFER_PROGRESS_TIMEOUT"), ("11:01:00", "ROUND_TIMEOUT")):
        evidence = ev(("server/log.txt", "server", [timeout]), ("site-1/log.txt", "site-1", [at(clock, DONE)]))
        assert validated(diagnose(evidence, CATALOG, mode="production"))["matched_pattern"] == expected, clock


def test_a_stream_that_makes_no_progress_is_not_transfer_progress():
    stalled = log("ERROR", "TxTask(T12) ACK made no progress for 60.0 seconds", "ByteStreamer")
    assert run([at("10:00:00", DONE), stalled])["matched_pattern"] == "PEER_GONE_OR_TIMEOUT"


# ---- host capacity, however it is said ----

USER_TB = [
    "Traceback (most recent call last):",
    '  File "/ws/site-1/simulate_job/app_site-1/custom/client.py", line 42, in main',
    '    model.to("cuda")',
]

CAPACITY = {
    "no cuda gpus in user code": (USER_TB + ["RuntimeError: No CUDA GPUs are available"], "no_gpu"),
    "driver too old": (
        USER_TB + ["RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update"],
        "old_driver",
    ),
    "driver insufficient": (
        ["RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"],
        "old_driver",
    ),
    "lightning devices=2 on one gpu": (
        [
            "lightning.fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [0, 1]",
            " But your machine only has: [0]",
        ],
        "too_many_devices",
    ),
    "cpu-only checkpoint": (
        [
            "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
            "If you are running on a CPU-only machine, please use torch.load with map_location"
        ],
        "no_gpu",
    ),
    "device ordinal": (["RuntimeError: CUDA error: invalid device ordinal"], "no_gpu"),
    "docker without gpu runtime": (
        ['docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'],
        "no_gpu",
    ),
    "kubernetes": (
        ["Warning  FailedScheduling  0/3 nodes are available: 3 Insufficient nvidia.com/gpu."],
        "too_many_devices",
    ),
    "resource manager": (["ValueError: num_of_gpus specified (2) exceeds available GPUs: 1."], "resource_spec"),
    "scheduler (INFO)": (
        [
            log(
                "INFO",
                "[identity=server] - Job 5f0c can't be scheduled: not enough sites have enough resources "
                "(ok sites 0 < min sites 2)",
                "DefaultJobScheduler",
            )
        ],
        "resource_spec",
    ),
}


@pytest.mark.parametrize("name", sorted(CAPACITY))
def test_host_capacity_however_it_is_said(name):
    texts, variant = CAPACITY[name]
    report = run(texts, mode="production" if "scheduler" in name or "kubernetes" in name else "simulation")
    assert report["matched_pattern"] == "RESOURCE_EXCEEDS_HOST_CAPACITY", (name, report["other_candidates"])
    cause = next(v.cause for v in CATALOG.row("RESOURCE_EXCEEDS_HOST_CAPACITY").variants if v.id == variant)
    assert cause in report["likely_cause"]


def test_host_capacity_is_distinct_from_cuda_oom_and_from_user_code():
    oom = run(USER_TB + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"], mode="simulation")
    assert oom["matched_pattern"] == "CUDA_OOM"
    other = run(USER_TB + ["ValueError: expected 3 channels, got 1"], mode="simulation")
    assert other["matched_pattern"] == "USER_CODE_EXCEPTION"
    no_gpu = run(CAPACITY["no cuda gpus in user code"][0], mode="simulation")
    assert "USER_CODE_EXCEPTION" in {c["pattern"] for c in no_gpu["other_candidates"]}


# ---- packaging, whoever reports it ----

PACKAGING = {
    "nvflare validator": ["ValueError: App 'app_site-2' in deploy_map doesn't exist for job hello-pt"],
    "admin console": [
        "Failed to submit job hello-pt: job validation failed: App 'app_site-2' in deploy_map doesn't exist"
    ],
    "user: deploy_map names a missing folder": [
        "meta.json deploy_map lists app_site-2 for site-2, but there is no app_site-2 folder in the job"
    ],
    "user: app missing from job folder": ["The app app_site-2 is missing from the job folder that I submitted"],
    "user: app folder does not exist": ["The app folder app_server doesn't exist although it is in meta.json"],
}


@pytest.mark.parametrize("name", sorted(PACKAGING))
def test_packaging_however_reported(name):
    report = run(PACKAGING[name], mode="production", site=None)
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR", (name, report["other_candidates"])


def test_a_sound_deploy_map_is_not_a_packaging_error():
    lines = [
        "job meta 5f0c: deploy_map.app=['@ALL']",
        log("INFO", "deploy_map of job hello-pt: {'app': ['@ALL']}", "JobRunner"),
    ]
    assert run(lines, site=None)["matched_pattern"] == "UNKNOWN"


# ---- exit -9 in each release's wording ----


@pytest.mark.parametrize(
    "line",
    [
        log("INFO", "run (5f0c): child worker process finished with RC -9", "ClientExecutor"),  # 2.4 - 2.9
        log("INFO", "Job: 5f0c child process exit with return code -9", "ServerEngine"),
        log("INFO", "return_code from process.exitcode: -9", "SimulatorRunner"),  # simulator, 2.4 - 2.9
        log("INFO", "process run_status: -9", "SimulatorRunner"),
        log("ERROR", "Subprocess died for client site-1, exit code: -9", "SimulatorRunner"),
        "./startup/sub_start.sh: line 31:  4242 Killed                  python3 -u -m nvflare.private.fed.app.client"
        ".client_train -m /ws/site-1 -s fed_client.json",
    ],
)
def test_exit_minus_9_in_every_wording(line):
    assert run([line], mode="simulation")["matched_pattern"] == "PROCESS_EXIT_NEG9"


# ---- the keyword prefilter stays sound on every field line above ----


def test_keyword_prefilter_never_hides_a_field_line():
    texts = [t for texts, _ in BELOW_NVFLARE.values() for t in texts]
    texts += [t for texts, _ in CAPACITY.values() for t in texts] + [t for ts in PACKAGING.values() for t in ts]
    texts += [DONE, UPLOAD_TIMEOUT]
    for text in texts:
        for row in CATALOG.rows:
            for sig in row.signals:
                if sig.regex.search(text):
                    assert sig.may_match(text.lower()), (row.id, sig.regex.pattern, text)


def test_an_after_partner_signal_needs_a_partner_row():
    document = {
        "fallback": {"next_action": "x"},
        "mode_hints": {},
        "follow_up_templates": {},
        "patterns": [
            {
                "id": "A",
                "title": "a",
                "modes": ["production"],
                "priority": 1,
                "recovery_category": "UNKNOWN",
                "next_action": "x",
                "signals": [{"regex": "done", "keywords": ["done"], "after_partner": True}],
            }
        ],
    }
    with pytest.raises(cat.CatalogError, match="after_partner"):
        cat.parse_catalog(document)


@pytest.mark.parametrize(
    "hiccup",
    [
        [log("WARNING", "Failed to get_task from server. Will try it again.", "FederatedClient")],
        GRPC_UNAVAILABLE,
        [at("11:05:00", "ScatterAndGather - WARNING - task train timed out waiting for site-1"), at("11:06:00", DONE)],
    ],
    ids=["get_task", "grpc unavailable", "timeout with a later completion"],
)
def test_a_completed_job_that_logged_a_liveness_hiccup_is_not_diagnosed_as_failed(hiccup):
    failed = validated(diagnose(ev(("log.txt", "site-1", hiccup)), CATALOG, mode="production"))
    assert failed["matched_pattern"] in ("PEER_GONE_OR_TIMEOUT", "TRANSFER_PROGRESS_TIMEOUT")
    evidence = ev(("log.txt", "site-1", hiccup))
    report = validated(diagnose(evidence, CATALOG, mode="production", job_status="FINISHED:COMPLETED"))
    assert report["matched_pattern"] == "UNKNOWN" and "FINISHED:COMPLETED" in report["likely_cause"]
    assert f"recovered from the transient {failed['matched_pattern']}" in report["likely_cause"]
    reasons = {c["pattern"]: c["reason"] for c in report["other_candidates"]}
    assert reasons[failed["matched_pattern"]].startswith("transient: the job still finished FINISHED:COMPLETED")
