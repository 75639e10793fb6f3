"""Fast stand-in for an NVFLARE SimEnv job: writes the simulator artifact layout without NVFLARE.

It mimics what a real 2.9 SimEnv run leaves under NVFLARE_SIMULATOR_WORKSPACE_ROOT
(`<root>/<name>/server/log.txt`, `site-N/log.txt`,
`server/simulate_job/metrics/metrics_summary.json`) and prints the same banner lines, so the
trial mechanics can be tested in well under a second. `--mode` selects a behaviour to test.

`--curve 0.5,0.7,...` also appends one NVFLARE 2.9 round record per round (`round_metrics.jsonl`, the server's
aggregated accuracy of that round) with these values, so a test controls the per-round curve.

Run: python job.py [--name N] [--num_rounds 3] [--n_clients 2] [--lr 0.1] [--mode ok] [--dump FILE] [--curve V,V,..]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

MODES = (
    "ok",
    "nometric",
    "crash",
    "hang_after_round",
    "hang_silent",
    "grandchild",
    "stall",
    "sandbox",
    "partial",
    "nan",
    "no_result",
    "two_results",
    "print_outside",
    "ambiguous",
    "flood",
    "sandbox_hang",
    "leak",
    "fill_disk",
    "fork_bomb",
)
FLOOD_MIB = 25  # per part: one huge line, then many ordinary lines (about 50 MB of output in all)


def parse():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, default="standin")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", "-r", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--dump", type=str, default="", help="write the environment seen by the job here (JSON)")
    parser.add_argument("--round_seconds", type=float, default=0.02)
    parser.add_argument("--curve", type=str, default="", help="comma-separated per-round aggregated accuracy")
    return parser.parse_args()


def say(line, *logs):
    print(line, flush=True)
    for log in logs:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def score(lr):
    return round(0.95 - abs(lr - 0.1), 6)


def main():
    args = parse()
    if args.dump:
        Path(args.dump).write_text(json.dumps(dict(os.environ), sort_keys=True))
    root = Path(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/nvflare/simulation"))
    if args.mode == "hang_silent":
        time.sleep(300)
    if args.mode in ("leak", "fill_disk", "fork_bomb"):
        consume(args.mode)
    if args.mode in ("sandbox", "sandbox_hang"):
        say("Traceback (most recent call last):")
        say('  File "socket.py", line 1, in bind')
        say("PermissionError: [Errno 1] Operation not permitted")
        if args.mode == "sandbox":
            sys.exit(1)
    job = root / args.name
    if args.mode == "no_result":
        job = Path(os.environ.get("TMPDIR", "/tmp")) / f"standin-outside-{os.getpid()}"
    sites = [f"site-{i + 1}" for i in range(args.n_clients)]
    for folder in ["server", *sites]:
        (job / folder).mkdir(parents=True, exist_ok=True)
    if args.mode in ("two_results", "ambiguous"):
        (root / f"{args.name}-other" / "server").mkdir(parents=True, exist_ok=True)
    server_log = job / "server" / "log.txt"
    say("Start FedAvg.", server_log)
    for rnd in range(args.num_rounds):
        say(f"Round {rnd} started.", server_log)
        if args.mode == "stall" and rnd == 1:
            say("SimulatorClientRunner - ERROR - run_client_thread error: lost child", server_log)
            time.sleep(300)
        for index, site in enumerate(sites):
            value = "nan" if args.mode == "nan" else f"{score(args.lr) - 0.01 * (args.num_rounds - rnd):.4f}"
            metric = "quality" if args.mode == "nometric" else "accuracy"
            say(f"site={site} round={rnd} {metric}={value}", job / site / "log.txt")
            say(f"Aggregated {index + 1}/{len(sites)} results", server_log)
            if args.mode == "partial" and rnd == 1:
                while True:
                    say("heartbeat: waiting for the remaining clients", server_log)
                    time.sleep(0.5)
        if args.curve:
            write_round(job, rnd, args.curve)
        if args.mode in ("hang_after_round", "sandbox_hang") and rnd == 1:
            time.sleep(300)
        time.sleep(args.round_seconds)
    say("Finished FedAvg.", server_log)
    if args.mode == "crash":
        say("RuntimeError: client training failed on purpose")
        sys.exit(3)
    if args.mode == "grandchild":
        subprocess.Popen(["setsid", "sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if os.fork() == 0:  # double fork + setsid: a fully detached grandchild
            os.setsid()
            if os.fork() == 0:
                time.sleep(300)
            os._exit(0)
    if args.mode == "flood":
        flood()
        print("final accuracy=0.5", flush=True)  # no summary: the score must come from the 50 MB run.log
    else:
        write_summary(job, args)
    shown = "/somewhere/else/standin" if args.mode in ("print_outside", "ambiguous") else str(job)
    print("Result can be found in :", shown, flush=True)


def consume(mode):
    """Grow without end: memory (touched pages), the private TMPDIR, or processes (every one forks again)."""
    say(f"Round 0 started. consuming: {mode}")
    if mode == "leak":
        kept = []
        while True:
            kept.append(b"\x01" * (16 * 1024 * 1024))  # written, so resident
            time.sleep(0.01)
    if mode == "fill_disk":
        with open(Path(os.environ.get("TMPDIR", "/tmp")) / "filler.bin", "wb") as handle:
            chunk = b"\x02" * (4 * 1024 * 1024)
            while True:
                try:
                    handle.write(chunk)
                    handle.flush()
                except OSError:
                    time.sleep(0.1)
    while True:  # fork bomb: parent and children fork on; a refused fork only slows them
        try:
            os.fork()
        except OSError:
            time.sleep(0.05)


def flood():
    """Print FLOOD_MIB MiB as one line, then FLOOD_MIB MiB of 1 KiB lines (some look like result paths)."""
    out = sys.stdout.buffer
    for _ in range(FLOOD_MIB * 16):
        out.write(b"x" * 65536)
    out.write(b"\n")
    filler = b"y" * 1023 + b"\n"
    for index in range(FLOOD_MIB * 1024):
        out.write(f"Result can be found in : /elsewhere/{index}\n".encode() if index % 64 == 0 else filler)
    out.flush()


def write_round(job, rnd, curve):
    values = [float(value) for value in curve.split(",")]
    metrics_dir = job / "server" / "simulate_job" / "metrics"
    metrics_dir.mkdir(parents=True, exist_ok=True)
    record = {"round": rnd, "aggregated_metrics": [{"name": "accuracy", "value": values[min(rnd, len(values) - 1)]}]}
    with open(metrics_dir / "round_metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def write_summary(job, args):
    metrics_dir = job / "server" / "simulate_job" / "metrics"
    metrics_dir.mkdir(parents=True, exist_ok=True)
    name = "quality" if args.mode == "nometric" else "accuracy"
    value = float("nan") if args.mode == "nan" else score(args.lr)
    summary = {
        "schema_version": "1",
        "status": "metrics_reported",
        "final_round": args.num_rounds - 1,
        "final_aggregated_metrics": [{"name": name, "value": value}],
        "job_name": args.name,
    }
    (metrics_dir / "metrics_summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
