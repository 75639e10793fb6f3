"""P6: a full bounded campaign (baseline + 2 candidates) on examples/hello-numpy vs 3 bare runs of the job.

Usage: python bench/demo_campaign.py [--python PY]

Times, end to end through the CLI as an agent runs it: `initialize --max-candidates 2` (with the baseline),
`suggest`, `prepare` + `evaluate --run-args` (the first seed), `prepare` + source edit + `evaluate`, against
bare runs of the same three configurations (`python job.py <budget> [args]`, own simulator roots). One untimed
bare run comes first (the first NVFLARE start after a while reads its files from disk, about 0.5 s slower:
not the runner's cost), and the three bare runs are timed both before and after the campaign, so drift of the
machine cancels out. Bar: campaign wall <= the mean of the two bare sums + 1.5 s. Prints a table and
`RESULT: PASS|FAIL`; exits 1 when the bar is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
BUDGET = ["--n_clients", "2", "--num_rounds", "3"]
SLACK = 1.5
SEED_ARGS = ["--lr", "0.1"]  # suggest's first seed for the example (checked at run time)
EDIT = (
    "    return z * FEATURE_SCALES, y\n",
    "    x = z * FEATURE_SCALES\n    x[:, :-1] = (x[:, :-1] - x[:, :-1].mean(axis=0)) / x[:, :-1].std(axis=0)\n"
    "    return x, y\n",
)


def runner(python: str, job: Path, *args: str) -> dict:
    done = subprocess.run([python, str(RUNNER), args[0], str(job), *args[1:]], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)


def campaign(python: str, workspace: Path) -> tuple[float, list[str]]:
    job = workspace / "job.py"
    started = time.perf_counter()
    runner(python, job, "initialize", "--max-candidates", "2")
    seed = runner(python, job, "suggest", "--limit", "1")["suggestions"][0]
    runner(python, job, "prepare", "--name", seed["name"], "--hypothesis", seed["hypothesis"])
    runner(python, job, "evaluate", "--run-args", " ".join(seed["run_args"]))
    prepared = runner(python, job, "prepare", "--name", "feature-scaling", "--hypothesis", "standardize features")
    client = Path(prepared["candidate_source"]) / "client.py"
    client.write_text(client.read_text().replace(*EDIT))
    final = runner(python, job, "evaluate")
    wall = time.perf_counter() - started
    assert final["reason"] == "candidate_cap_exhausted", final["reason"]
    return wall, seed["run_args"]


def bare(python: str, job: Path, args: list[str], root: Path) -> float:
    env = dict(os.environ, NVFLARE_SIMULATOR_WORKSPACE_ROOT=str(root))
    started = time.perf_counter()
    subprocess.run([python, str(job), *BUDGET, *args], cwd=job.parent, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as scratch_text:
        scratch = Path(scratch_text)
        plain = scratch / "bare"
        shutil.copytree(EXAMPLE, plain, ignore=shutil.ignore_patterns("__pycache__"))
        edited = scratch / "bare-edited"
        shutil.copytree(EXAMPLE, edited, ignore=shutil.ignore_patterns("__pycache__"))
        (edited / "client.py").write_text((edited / "client.py").read_text().replace(*EDIT))
        seed_args = SEED_ARGS

        def bare_runs(tag: str) -> list[float]:
            return [
                bare(args.python, plain / "job.py", [], scratch / f"{tag}1"),
                bare(args.python, plain / "job.py", seed_args, scratch / f"{tag}2"),
                bare(args.python, edited / "job.py", seed_args, scratch / f"{tag}3"),
            ]

        bare(args.python, plain / "job.py", [], scratch / "warm-up")
        before = bare_runs("before")
        workspace = scratch / "campaign"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        wall, used_args = campaign(args.python, workspace)
        if used_args != seed_args:
            raise SystemExit(f"suggest's first seed is now {used_args}; update SEED_ARGS in {Path(__file__).name}")
        after = bare_runs("after")
    reference = (sum(before) + sum(after)) / 2
    budget = reference + SLACK
    ok = wall <= budget
    print(f"bare runs before: {', '.join(f'{b:.2f}' for b in before)} s (sum {sum(before):.2f} s)")
    print(f"bare runs after:  {', '.join(f'{b:.2f}' for b in after)} s (sum {sum(after):.2f} s)")
    print(
        f"campaign (baseline + 2 candidates, all CLI steps): {wall:.2f} s; bar {budget:.2f} s "
        f"(mean bare sum {reference:.2f} + {SLACK} s); overhead {wall - reference:+.2f} s"
    )
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
