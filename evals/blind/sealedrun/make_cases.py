"""Rebuild the evidence files of the sealedrun blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun/make_cases.py [--case NAME ...] [--timeout-scale X]

Each case copies `jobs/<case>/` (with `jobs/common_job.py` as job.py when the case has none) to a temporary folder
and runs `python job.py --name <case> --workspace <sim root> ...` with the sanitized environment and the path
placeholders of evals/make_real_fixtures.py. Afterwards job.py and every process naming the temporary folder are
killed (the simulator starts its workers in sessions of their own). It keeps what a user would hand over, as far as
the case's `keep` names it: `stdout.txt` and, from the SimEnv workspace, log.txt and error_log.txt of the server and
each site (no startup kits, models or code), written under `files/<case>/`. A run that outlives its budget is killed
and kept as it stood (a case whose `expect` is "timeout" is one the user stopped). Exit 0 when every case ended as
expected, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from make_real_fixtures import child_env, placeholders, scrub, write_case  # noqa: E402

JOBS = HERE / "jobs"
OUT = HERE / "files"
KEEP = ("log.txt", "error_log.txt")
JOB_PLACEHOLDER = "/home/user/fl-jobs"


@dataclass(frozen=True)
class Run:
    """One case's run: job.py arguments, what the user hands over (stdout.txt, and workspace logs as
    `<site>/<file>`, `*` for all), the wall-clock budget and how the run must end (fail or timeout)."""

    args: tuple[str, ...] = ()
    keep: tuple[str, ...] = ("stdout.txt",)
    timeout: float = 180.0
    expect: str = "fail"


CASES = {
    "init-site-split-keyerror": Run(),
    "train-feature-count-mismatch": Run(keep=("*",)),
    "eval-empty-validation-split": Run(
        ("--train_args", "--val_fraction 0.0"), keep=("stdout.txt", "site-1/error_log.txt")
    ),
    "data-mount-missing": Run(),
    "data-env-var-unset": Run(keep=("*",)),
    "data-csv-header": Run(),
    "client-memory-error": Run(),
    "client-killed-sigkill": Run(("--external",), keep=("stdout.txt", "*")),
    "client-too-slow-killed": Run(
        ("--train_args", "--local_steps 50000000"), ("stdout.txt", "*"), timeout=75.0, expect="timeout"
    ),
    "client-forgets-send": Run(timeout=120.0),
    "aggregate-mismatched-shapes": Run(keep=("stdout.txt", "server/log.txt")),
    "recipe-train-script-missing": Run(),
    "client-args-unknown-flag": Run(timeout=120.0),
    "server-custom-aggregator-raises": Run(keep=("server/log.txt", "server/error_log.txt")),
    "custom-component-missing-module": Run(),
}


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, root: Path) -> tuple[int | None, str]:
    """Run `argv`; on timeout kill it and every process naming `root`. (exit code or None on timeout, output)."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: proc.stdout.read(4096), b"")), daemon=True)
    reader.start()
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    for pid in [proc.pid, *processes_naming(root)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    reader.join(timeout=10)
    return code, b"".join(chunks).decode("utf-8", errors="replace")


def processes_naming(root: Path) -> list[int]:
    """Live processes whose command line contains `root` (the simulator and its workers of this run)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if str(root).encode() in cmdline:
                found.append(int(entry))
    return found


def build(name: str, scale: float) -> str | None:
    """Run one case and swap its evidence folder in; an error message when the run did not end as expected."""
    run = CASES[name]
    with tempfile.TemporaryDirectory(prefix="nvf-sealedrun-") as tmp_name:
        tmp = Path(tmp_name)
        job, sim_root, home = tmp / "jobs" / name, tmp / "sim", tmp / "home"
        shutil.copytree(JOBS / name, job, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if not (job / "job.py").exists():
            shutil.copy(JOBS / "common_job.py", job / "job.py")
        home.mkdir()
        argv = [sys.executable, "job.py", "--name", name, "--workspace", str(sim_root), *run.args]
        print(f"[{name}] running ...", file=sys.stderr)
        env = child_env(str(sim_root), str(home))
        code, output = run_bounded(argv, job, env, run.timeout * scale, tmp)
        ended = "timeout" if code is None else ("success" if code == 0 else "fail")
        if run.expect != ended:
            return f"{name}: expected {run.expect}, the run ended in {ended} (exit code {code})"
        pairs = [(str(tmp / "jobs"), JOB_PLACEHOLDER), *placeholders(str(sim_root), str(home))]
        write_case(OUT, name, lambda staging: _write(staging, output, sim_root / name, run.keep, pairs))
    print(f"[{name}] {ended} (exit code {code})", file=sys.stderr)
    return None


def _write(staging: Path, output: str, job_dir: Path, keep: tuple[str, ...], pairs: list[tuple[str, str]]) -> None:
    if "stdout.txt" in keep:
        (staging / "stdout.txt").write_text(scrub(output, pairs), encoding="utf-8")
    if not job_dir.is_dir():
        return
    for site in sorted(
        p for p in job_dir.iterdir() if p.is_dir() and (p.name == "server" or p.name.startswith("site-"))
    ):
        for file in KEEP:
            wanted = "*" in keep or f"{site.name}/{file}" in keep
            if wanted and (site / file).is_file() and (site / file).stat().st_size:
                target = staging / "workspace" / job_dir.name / site.name / file
                target.parent.mkdir(parents=True, exist_ok=True)
                text = (site / file).read_text(encoding="utf-8", errors="replace")
                target.write_text(scrub(text, pairs), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="case to rebuild (repeatable)")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every budget (a busy machine)")
    args = parser.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    errors = [msg for name in args.case or CASES if (msg := build(name, args.timeout_scale))]
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
