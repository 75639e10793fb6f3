"""Builders for hand-made evidence trees that mimic what NVFLARE 2.9 writes (SimEnv workspace, POC workspace).

Used by the evidence, read-only audit and malformed-input tests. Layouts follow the spec's "Evidence inputs"
section and a real nvflare 2.9 SimEnv run (server/, site-N/, simulate_job/, startup/, local/).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TS = "2026-06-02 11:03:10,120"
JOB_UUID = "5f2a9c1e-3b4d-4e6f-8a7b-1c2d3e4f5a6b"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def log_line(logger: str, level: str, message: str, fl_ctx: str = "") -> str:
    ctx = f" - {fl_ctx}" if fl_ctx else ""
    return f"{TS} - {logger} - {level}{ctx} - {message}"


def json_record(logger: str, level: str, message: str, fl_ctx: str = "") -> str:
    return json.dumps(
        {
            "asctime": TS,
            "name": logger,
            "fullName": f"nvflare.x.{logger}",
            "levelname": level,
            "fl_ctx": fl_ctx,
            "message": message,
        }
    )


def build_simenv(root: Path, job: str = "hello-numpy", sites: int = 2, *, nan: bool = False) -> Path:
    """<root>/<job>/{server,site-N}/... with logs, error logs, log.json, metrics and a model file."""
    base = root / job
    server_ctx = "[identity=simulator_server, run=simulate_job, wf=controller]"
    write(
        base / "server" / "log.txt",
        "\n".join(
            [
                log_line("SimulatorRunner", "INFO", "Create the Simulator Server."),
                log_line("FedAvg", "INFO", "Round 0 started.", server_ctx),
                log_line("ServerRunner", "ERROR", "peer=site-1, peer_rc=EXECUTION_EXCEPTION", server_ctx),
            ]
        )
        + "\n",
    )
    write(base / "server" / "log_fl.txt", log_line("FedAvg", "INFO", "Round 0 started.", server_ctx) + "\n")
    write(
        base / "server" / "error_log.txt",
        log_line("ServerRunner", "ERROR", "peer=site-1, peer_rc=EXECUTION_EXCEPTION", server_ctx) + "\n",
    )
    write(base / "server" / "log.json", json_record("FedAvg", "INFO", "Round 0 started.", server_ctx) + "\n")
    sim = base / "server" / "simulate_job"
    write(sim / "meta.json", json.dumps({"name": job, "min_clients": sites, "job_folder_name": job}))
    write(sim / "models" / "server.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'}\x00\x00\x00")
    value = "NaN" if nan else "0.915"
    write(
        sim / "metrics" / "metrics_summary.json",
        '{"schema_version": "1", "status": "metrics_reported", "final_round": 2, '
        f'"final_aggregated_metrics": [{{"name": "accuracy", "value": {value}}}], '
        '"key_metric": {"name": "accuracy", "mode": "max"}}',
    )
    rounds = [
        {
            "round": r,
            "aggregated_metrics": [{"name": "accuracy", "value": 0.3 * (r + 1)}],
            "sites": [
                {"name": f"site-{i}", "metrics": [{"name": "accuracy", "value": 0.3}]} for i in range(1, sites + 1)
            ],
            "skipped_metrics": [],
        }
        for r in range(3)
    ]
    write(sim / "metrics" / "round_metrics.jsonl", "\n".join(json.dumps(r) for r in rounds) + "\n")
    for index in range(1, sites + 1):
        site = base / f"site-{index}"
        write(site / "log.txt", log_line("ClientRunner", "INFO", f"site-{index} started") + "\n")
        write(site / "error_log.txt", "")
        write(site / "log.json", json_record("ClientRunner", "INFO", f"site-{index} started") + "\n")
        (site / "startup").mkdir(parents=True, exist_ok=True)
        write(site / "local" / "log_config.json", '{"version": 1}')
    (base / "startup").mkdir(exist_ok=True)
    return base


def build_poc(
    root: Path,
    *,
    job_id: str = JOB_UUID,
    past_jobs: int = 30,
    kit_files: int = 40,
    transfer_files: int = 40,
    credentials: bool = True,
) -> Path:
    """<poc>/example_project/prod_00/{server,site-1,hospital-a,admin@nvidia.com}/..., many past jobs."""
    prod = root / "example_project" / "prod_00"
    participants = ["server", "site-1", "hospital-a"]
    for name in participants:
        part = prod / name
        kit = part / "startup"
        write(kit / ("fed_server.json" if name == "server" else "fed_client.json"), '{"servers": []}')
        if credentials:
            write(kit / f"{'server' if name == 'server' else 'client'}.key", "-----BEGIN PRIVATE KEY-----\nX\n")
            write(kit / "rootCA.pem", "-----BEGIN CERTIFICATE-----\nX\n")
            write(kit / "signature.json", '{"sig": "x"}')
        for i in range(kit_files):
            write(kit / f"extra_{i}.json", "{}")
        write(part / "local" / "resources.json.default", "{}")
        write(part / "log.txt", log_line("Process", "INFO", f"{name} process running") + "\n")
        for j in range(past_jobs):
            past = part / f"00000000-0000-4000-8000-{j:012d}"
            write(past / "log.txt", log_line("ClientRunner", "INFO", f"past job {j} finished fine") + "\n")
            write(past / "error_log.txt", "")
        job = part / job_id
        write(
            job / "log.txt",
            "\n".join(
                [
                    log_line("ClientRunner", "INFO", "got task train"),
                    "Traceback (most recent call last):",
                    '  File "custom/client.py", line 12, in train',
                    "ZeroDivisionError: division by zero",
                ]
            )
            + "\n",
        )
    admin = prod / "admin@nvidia.com"
    write(admin / "startup" / "fed_admin.json", '{"admin": {}}')
    if credentials:
        write(admin / "startup" / "client.key", "-----BEGIN PRIVATE KEY-----\nX\n")
    for i in range(transfer_files):
        write(admin / "transfer" / f"blob_{i}.txt", log_line("Transfer", "INFO", f"chunk {i}") + "\n")
    write(root / "poc_console.log", log_line("poc", "INFO", "POC started") + "\n")
    if credentials:
        write(root / ".netrc", "machine example.com login x password y\n")
        write(root / "api_token.txt", "abc\n")
        write(root / "credentials.json", "{}")
        write(root / "id_rsa", "KEY\n")
    return prod


def set_mtimes(paths: list[Path], start: int = 1_700_000_000) -> None:
    """Give files distinct, increasing modification times (later in the list = newer)."""
    for offset, path in enumerate(paths):
        os.utime(path, (start + offset, start + offset))
