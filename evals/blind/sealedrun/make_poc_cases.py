"""Rebuild the POC cases of the sealedrun blind half on a local NVFLARE 2.9 POC system.

Usage:
    python evals/blind/sealedrun/make_poc_cases.py

In a temporary folder it prepares a POC project (server, site-1, site-2, admin) on free ports, then:
    poc-port-in-use         starts the server while another process listens on its fed_learn_port; keeps the
                            `poc start` output and the server's log.txt
    poc-lr-schedule-round1  starts the system, submits jobs/poc-lr-schedule-round1 (exported by its job.py) and
                            keeps the `job wait` envelope and site-1's log.txt of that job
    poc-gpu-resource-spec   submits jobs/poc-gpu-resource-spec with a resource_spec asking site-1 for two GPUs and
                            keeps the `job wait` envelope (bounded wait) and the server's log.txt lines of that job
Every nvflare command is bounded; afterwards `poc stop` runs and every process naming the temporary folder is
killed. Paths are replaced by placeholders (/tmp/nvflare/poc for the POC workspace). Exit 0 when all were built.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))
from make_cases import JOBS, OUT, processes_naming  # noqa: E402
from make_real_fixtures import child_env, placeholders, scrub, write_case  # noqa: E402

NVFLARE = str(Path(sys.executable).parent / "nvflare")
GPU_SPEC = {"site-1": {"num_of_gpus": 2, "mem_per_gpu_in_GiB": 8}}


def free_ports(count: int) -> list[int]:
    probes = [socket.socket() for _ in range(count)]
    for probe in probes:
        probe.bind(("127.0.0.1", 0))
    ports = [probe.getsockname()[1] for probe in probes]
    for probe in probes:
        probe.close()
    return ports


def nvflare(env: dict[str, str], cwd: Path, *args: str, timeout: float = 120) -> str:
    """Combined output of one bounded nvflare command ("" plus a note on timeout)."""
    try:
        done = subprocess.run(
            [NVFLARE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return f"(nvflare {' '.join(args[:3])} did not return within {timeout:.0f} s)\n"
    return done.stdout + done.stderr


def job_lines(log: Path, job_id: str) -> str:
    """The lines of a server log that name the job (and the traceback lines that follow them)."""
    kept, keep = [], False
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line[:4].isdigit():
            keep = job_id in line
        if keep:
            kept.append(line)
    return "\n".join(kept) + "\n"


def submit(env, cwd, tmp, kit, name, wait: float, edit=None) -> tuple[str, str]:
    """Export jobs/<name>, optionally edit its meta.json, submit it and wait; (job id, wait output)."""
    src, exports = tmp / "src" / name, tmp / "exports"
    shutil.copytree(JOBS / name, src)
    subprocess.run(
        [sys.executable, "job.py", "--name", name, "--export_dir", str(exports)],
        cwd=src,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    if edit:
        meta = exports / name / "meta.json"
        meta.write_text(json.dumps(edit(json.loads(meta.read_text())), indent=2))
    out = nvflare(env, cwd, "--format", "json", "job", "submit", "-j", str(exports / name), "--startup-kit", kit)
    job_id = json.loads(out)["data"]["job_id"]
    waited = nvflare(
        env,
        cwd,
        "--format",
        "json",
        "job",
        "wait",
        job_id,
        "--timeout",
        str(int(wait)),
        "--startup-kit",
        kit,
        timeout=wait + 60,
    )
    return job_id, waited


def build(tmp: Path) -> list[str]:
    poc, home, cwd = tmp / "poc", tmp / "home", tmp / "cli"
    for folder in (home, cwd):
        folder.mkdir()
    env = {**child_env(str(tmp), str(home)), "NVFLARE_POC_WORKSPACE": str(poc)}
    import nvflare as package

    project = yaml.safe_load((Path(package.__file__).parent / "lighter" / "dummy_project.yml").read_text())
    fed_port, admin_port = free_ports(2)
    for participant in project["participants"]:
        if participant["type"] == "server":
            participant.update(name="server", default_host="localhost", fed_learn_port=fed_port, admin_port=admin_port)
    (tmp / "project.yml").write_text(yaml.safe_dump(project, sort_keys=False))
    print(nvflare(env, cwd, "poc", "prepare", "-i", str(tmp / "project.yml"), "--force"), file=sys.stderr)
    prod = poc / "example_project" / "prod_00"
    kit = str(prod / "admin@nvidia.com")
    pairs = [
        (str(poc), "/tmp/nvflare/poc"),
        (str(tmp / "exports"), "/home/user/fl-jobs/export"),
        (str(tmp / "src"), "/home/user/fl-jobs"),
        *placeholders(str(tmp), str(home)),
    ]
    errors = []

    blocker = socket.socket()
    blocker.bind(("0.0.0.0", fed_port))
    blocker.listen()
    started = nvflare(env, cwd, "poc", "start", "-p", "server", "--timeout", "30", timeout=90)
    time.sleep(15)
    server_log = (
        (prod / "server" / "log.txt").read_text(encoding="utf-8", errors="replace")
        if (prod / "server" / "log.txt").exists()
        else ""
    )
    nvflare(env, cwd, "poc", "stop", "--no-wait", timeout=60)
    kill_all(tmp)
    blocker.close()
    for marker in prod.rglob("shutdown.fl"):  # left by the stop above; a participant finding it exits at start
        marker.unlink()

    def port_case(staging: Path) -> None:
        (staging / "poc_start.txt").write_text(scrub(started, pairs), encoding="utf-8")
        (staging / "server_log.txt").write_text(scrub(server_log, pairs), encoding="utf-8")

    write_case(OUT, "poc-port-in-use", port_case)

    nvflare(env, cwd, "poc", "start", "--no-wait", timeout=120)
    for _ in range(40):
        status = nvflare(env, cwd, "--format", "json", "system", "status", "--startup-kit", kit, timeout=60)
        if '"site-1"' in status and '"site-2"' in status:
            break
        time.sleep(3)
    else:
        errors.append("the POC system did not come up with both sites")
        return errors
    job_id, waited = submit(env, cwd, tmp, kit, "poc-lr-schedule-round1", 240)
    site_log = prod / "site-1" / job_id / "log.txt"

    def round1_case(staging: Path) -> None:
        (staging / "job_wait.json").write_text(scrub(waited, pairs), encoding="utf-8")
        text = site_log.read_text(encoding="utf-8", errors="replace") if site_log.exists() else ""
        (staging / "site-1_log.txt").write_text(scrub(text, pairs), encoding="utf-8")

    write_case(OUT, "poc-lr-schedule-round1", round1_case)
    job_id, waited = submit(
        env, cwd, tmp, kit, "poc-gpu-resource-spec", 60, edit=lambda meta: {**meta, "resource_spec": GPU_SPEC}
    )
    nvflare(env, cwd, "--format", "json", "job", "abort", job_id, "--force", "--startup-kit", kit, timeout=60)
    lines = job_lines(prod / "server" / "log.txt", job_id)

    def gpu_case(staging: Path) -> None:
        (staging / "job_wait.json").write_text(scrub(waited, pairs), encoding="utf-8")
        (staging / "server_log.txt").write_text(scrub(lines, pairs), encoding="utf-8")

    write_case(OUT, "poc-gpu-resource-spec", gpu_case)
    return errors


def started_in(tmp: Path) -> list[int]:
    """Processes naming `tmp` on their command line or running in a folder under it."""
    found = set(processes_naming(tmp))
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(tmp)):
                    found.add(int(entry))
            except OSError:
                continue
    return sorted(found)


def kill_all(tmp: Path) -> None:
    for _ in range(2):
        for pid in started_in(tmp):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        time.sleep(1)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nvf-sealedpoc-") as name:
        tmp = Path(name)
        try:
            errors = build(tmp)
        finally:
            env = {**child_env(name, name), "NVFLARE_POC_WORKSPACE": str(tmp / "poc")}
            nvflare(env, tmp, "poc", "stop", "--no-wait", timeout=60)
            kill_all(tmp)
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
