"""Rebuild the POC cases of the sealedrun2 blind half on a local NVFLARE 2.9 POC system.

Usage:
    python evals/blind/sealedrun2/make_poc_cases.py

Same way of working as evals/blind/sealedrun/make_poc_cases.py (whose POC helpers it uses): in a temporary folder it
prepares a POC project (server, site-1, site-2, admin) on free ports, starts it, and then:
    poc-min-clients-above-sites  submits jobs/poc-min-clients-above-sites (exported by its job.py with min_clients=3,
                                 under a neutral job name) and keeps the `job submit` and bounded `job wait` envelopes
                                 and the server's log.txt lines of that job Every nvflare command is bounded; afterwards
`poc stop` runs and every process naming the temporary folder is killed. Paths are replaced by placeholders
(/tmp/nvflare/poc for the POC workspace). Exit 0 when all were built, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from make_real_fixtures import child_env, placeholders, scrub, write_case  # noqa: E402


def _first_half():
    path = HERE.parent / "sealedrun" / "make_poc_cases.py"
    spec = importlib.util.spec_from_file_location("sealedrun_make_poc_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


first_half = _first_half()
JOBS = HERE / "jobs"
OUT = HERE / "files"
JOB_NAME = "fedavg-numpy"


def submit(env, cwd, tmp, kit, case, wait: float) -> tuple[str, str, str]:
    """Export jobs/<case>, submit it and wait; (job id, submit output, wait output)."""
    src, exports = tmp / "src" / case / JOB_NAME, tmp / "exports" / case
    shutil.copytree(JOBS / case, src)
    subprocess.run(
        [sys.executable, "job.py", "--name", JOB_NAME, "--export_dir", str(exports)],
        cwd=src,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    nvflare = first_half.nvflare
    submitted = nvflare(
        env, cwd, "--format", "json", "job", "submit", "-j", str(exports / JOB_NAME), "--startup-kit", kit
    )
    try:
        job_id = json.loads(submitted)["data"]["job_id"]
    except (ValueError, KeyError, TypeError):
        return "", submitted, ""
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
    return job_id, submitted, waited


def start_poc(env, cwd, tmp) -> tuple[Path, str] | None:
    """Prepare and start a POC system on free ports; (prod folder, admin kit) once both sites are up."""
    import nvflare as package

    project = yaml.safe_load((Path(package.__file__).parent / "lighter" / "dummy_project.yml").read_text())
    fed_port, admin_port = first_half.free_ports(2)
    for participant in project["participants"]:
        if participant["type"] == "server":
            participant.update(name="server", default_host="localhost", fed_learn_port=fed_port, admin_port=admin_port)
    (tmp / "project.yml").write_text(yaml.safe_dump(project, sort_keys=False))
    first_half.nvflare(env, cwd, "poc", "prepare", "-i", str(tmp / "project.yml"), "--force")
    prod = tmp / "poc" / "example_project" / "prod_00"
    kit = str(prod / "admin@nvidia.com")
    first_half.nvflare(env, cwd, "poc", "start", "--no-wait", timeout=120)
    for _ in range(40):
        status = first_half.nvflare(env, cwd, "--format", "json", "system", "status", "--startup-kit", kit, timeout=60)
        if '"site-1"' in status and '"site-2"' in status:
            return prod, kit
        time.sleep(3)
    return None


def build(tmp: Path) -> list[str]:
    home, cwd = tmp / "home", tmp / "cli"
    for folder in (home, cwd):
        folder.mkdir()
    env = {**child_env(str(tmp), str(home)), "NVFLARE_POC_WORKSPACE": str(tmp / "poc")}
    started = start_poc(env, cwd, tmp)
    if started is None:
        return ["the POC system did not come up with both sites"]
    prod, kit = started
    pairs = [
        (str(tmp / "poc"), "/tmp/nvflare/poc"),
        (str(tmp / "exports" / "poc-min-clients-above-sites"), "/home/user/fl-jobs/export"),
        (str(tmp / "src" / "poc-min-clients-above-sites"), "/home/user/fl-jobs"),
        *placeholders(str(tmp), str(home)),
    ]
    case = "poc-min-clients-above-sites"
    job_id, submitted, waited = submit(env, cwd, tmp, kit, case, 90)
    if not job_id:
        return [f"{case}: the job was not accepted: {submitted.strip()}"]
    first_half.nvflare(env, cwd, "--format", "json", "job", "abort", job_id, "--force", "--startup-kit", kit)
    log = prod / "server" / "log.txt"
    lines = first_half.job_lines(log, job_id) if log.exists() else ""
    texts = {"job_submit.json": submitted, "job_wait.json": waited, "server_log.txt": lines}
    write_case(OUT, case, lambda staging: _write(staging, texts, pairs))
    return []


def _write(staging: Path, texts: dict[str, str], pairs: list[tuple[str, str]]) -> None:
    for name, text in texts.items():
        if text:
            (staging / name).write_text(scrub(text, pairs), encoding="utf-8")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nvf-sealedpoc2-") as name:
        tmp = Path(name)
        try:
            errors = build(tmp)
        finally:
            env = {**child_env(name, name), "NVFLARE_POC_WORKSPACE": str(tmp / "poc")}
            first_half.nvflare(env, tmp, "poc", "stop", "--no-wait", timeout=60)
            first_half.kill_all(tmp)
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
