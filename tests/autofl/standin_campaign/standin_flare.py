"""A fake of the two NVFLARE classes job.py uses: writes NVFLARE 2.9's SimEnv artifact layout without NVFLARE.

The server log carries what NVFLARE's own server log shows about the budget that ran: one `Client: New client
site-N@127.0.0.1 joined. Sent token.  Total clients: N` line per client (ClientManager), one `Round N started.`
banner per round (FedAvg) and `Aggregated i/N results`; metrics_summary.json carries `final_round`.
Sites print their last-round value below the aggregate (as real sites differ from the server's weighted
aggregate); round_metrics.jsonl (with each site's value around the aggregate) and metrics_summary.json carry the
aggregate, the score the ledger records.
The final global model is persisted where NPModelPersistor puts it (`server/simulate_job/models/server.npy`):
one value, client.py's `evaluate`; the reported metric adds client.py's `REPORTED_BONUS` (a candidate that
inflates what it reports), and `PERSIST_MODEL = False` persists no model.
A client.py that sets `ROUND_SECONDS` makes every round last that long (a trial that can be stopped mid-run).
"""

import json
import os
import runpy
import shlex
import struct
import time
from pathlib import Path


class SimEnv:
    def __init__(self, num_clients=2, workspace_root=None):
        self.num_clients = num_clients
        self.workspace_root = workspace_root


class _Run:
    def __init__(self, folder):
        self.folder = folder

    def get_result(self):
        return str(self.folder)

    def get_status(self):
        return "FINISHED:COMPLETED"


class NumpyFedAvgRecipe:
    def __init__(self, name, min_clients, num_rounds, train_script, train_args="", key_metric="accuracy"):
        self.name, self.min_clients, self.num_rounds = name, min_clients, num_rounds
        self.train_script, self.train_args, self.key_metric = train_script, train_args, key_metric

    def execute(self, env):
        root = Path(
            os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT") or env.workspace_root or "/tmp/nvflare/simulation"
        )
        job = root / self.name
        sites = [f"site-{i + 1}" for i in range(env.num_clients)]
        for folder in ["server", *sites]:
            (job / folder).mkdir(parents=True, exist_ok=True)
        client = runpy.run_path(self.train_script)
        quality = client["evaluate"](shlex.split(self.train_args))  # what the final global model is worth
        score = round(quality + client.get("REPORTED_BONUS", 0.0), 6)  # what the sites report about it
        eval_size = client.get("EVAL_SIZE")  # set: the sites report their evaluation-set size, as NVFLARE examples do
        server_log = job / "server" / "log.txt"
        for index, site in enumerate(sites):  # NVFLARE's ClientManager logs every registration like this
            _say(f"Client: New client {site}@127.0.0.1 joined. Sent token.  Total clients: {index + 1}", server_log)
        _say("Start FedAvg.", server_log)
        for rnd in range(self.num_rounds):
            _say(f"Round {rnd} started.", server_log)
            for index, site in enumerate(sites):
                _say(
                    f"site={site} round={rnd} {self.key_metric}={score - 0.01 * (self.num_rounds - rnd):.4f}",
                    job / site / "log.txt",
                )
                if eval_size:
                    _say(
                        f"Accuracy of the network on the {eval_size} test images: {int(score * 100)} %",
                        job / site / "log.txt",
                    )
                _say(f"Aggregated {index + 1}/{len(sites)} results", server_log)
            _record_round(job, rnd, self.key_metric, round(score - 0.01 * (self.num_rounds - 1 - rnd), 6), sites)
            time.sleep(client.get("ROUND_SECONDS", 0))  # set in client.py: a slow round (pruning tests)
        _say("Finished FedAvg.", server_log)
        metrics = job / "server" / "simulate_job" / "metrics"
        metrics.mkdir(parents=True, exist_ok=True)
        summary = {
            "schema_version": "1",
            "status": "metrics_reported",
            "final_round": self.num_rounds - 1,
            "final_aggregated_metrics": [{"name": self.key_metric, "value": score}],
            "job_name": self.name,
        }
        (metrics / "metrics_summary.json").write_text(json.dumps(summary, indent=2))
        if client.get("PERSIST_MODEL", True):  # NPModelPersistor's file in NVFLARE 2.9's layout
            _save_npy(job / "server" / "simulate_job" / "models" / "server.npy", [quality])
        return _Run(job)


def _save_npy(path, values):
    """A 1-D float64 array in NumPy's .npy format (version 1.0), written without NumPy."""
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({len(values)},), }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = struct.pack(f"<{len(values)}d", *values)
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data)


def _record_round(job, rnd, metric, value, sites):
    """NVFLARE 2.9's MetricsArtifactWriter appends one record per aggregated round (the last one is the score):
    each site's value spreads evenly around the aggregate (site-1 highest, 0.02 apart), equal weights."""
    metrics = job / "server" / "simulate_job" / "metrics"
    metrics.mkdir(parents=True, exist_ok=True)
    middle = (len(sites) - 1) / 2
    record = {
        "round": rnd,
        "aggregated_metrics": [{"name": metric, "value": value}],
        "sites": [
            {"name": site, "metrics": [{"name": metric, "value": round(value + 0.02 * (middle - i), 6)}], "weight": 1.0}
            for i, site in enumerate(sites)
        ],
        "skipped_metrics": [],
    }
    with open(metrics / "round_metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _say(line, log):
    print(line, flush=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
