"""`make demo-diagnose`: run a real NVFLARE simulation that fails, then diagnose it with the skill's script.

Usage: python examples/demo_diagnose.py [--output DIR]   (default: demo_out/diagnose/ in the repository)

Steps: run examples/failing/import-error/job.py for real (its client imports a module that does not exist),
with the simulator workspace redirected into the output folder; save the job's combined output; run
skills/nvflare-diagnose-job/scripts/diagnose_job.py on that output and the workspace; print the markdown
report and the paths of every artifact.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAILING_JOB = REPO / "examples" / "failing" / "import-error"
DIAGNOSE = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"


def run_failing_job(out: Path) -> Path:
    """Run the failing job for real; return the file holding its combined stdout/stderr."""
    sim_root = out / "simulation"
    shutil.rmtree(sim_root, ignore_errors=True)
    env = dict(os.environ, NVFLARE_SIMULATOR_WORKSPACE_ROOT=str(sim_root))
    log_path = out / "job_stdout.txt"
    print(f"[demo] running a real NVFLARE simulation of {FAILING_JOB.relative_to(REPO)} ...", file=sys.stderr)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.run(
            [sys.executable, "job.py"], cwd=FAILING_JOB, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=300
        )
    print(f"[demo] job exited with code {proc.returncode} after {time.monotonic() - started:.1f} s", file=sys.stderr)
    return log_path


def diagnose(out: Path, job_output: Path) -> None:
    """Diagnose the run twice (JSON for machines, markdown for the human) and print the markdown."""
    evidence = [str(job_output), str(out / "simulation")]
    for fmt, name in (("json", "diagnosis.json"), ("markdown", "diagnosis.md")):
        result = subprocess.run(
            [sys.executable, str(DIAGNOSE), *evidence, "--format", fmt], capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            sys.exit(f"demo failed: diagnose_job.py exited {result.returncode}: {result.stderr.strip()}")
        (out / name).write_text(result.stdout, encoding="utf-8")
    print((out / "diagnosis.md").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(REPO / "demo_out" / "diagnose"), help="folder for every demo artifact")
    args = parser.parse_args(argv)
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    job_output = run_failing_job(out)
    diagnose(out, job_output)
    print("Artifacts:")
    for name in ("job_stdout.txt", "simulation", "diagnosis.json", "diagnosis.md"):
        print(f"  {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
