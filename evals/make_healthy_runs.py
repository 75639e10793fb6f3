"""Capture healthy real NVFLARE 2.9 runs with many interleavings, for the zero-false-positive check (R6).

Usage:
    python evals/make_healthy_runs.py [--variant NAME ...] [--out DIR] [--timeout SECONDS]

Each variant runs the NumPy FedAvg job of examples/hello-numpy (its client.py, a job.py written here) under
real NVFLARE with a different shape, so site records interleave differently in every file:
    sites6     6 clients, in-process
    external4  4 clients, each client script in its own process (its output streamed into the site log)
    verbose3   3 clients, verbose logging (DEBUG records of every component, fl_ctx in every line)
and keeps `job_stdout.txt` (stdout + stderr of python job.py) and `log.txt` / `error_log.txt` of every
participant under `<out>/<variant>/` (default tests/fixtures/healthy_runs), with machine paths replaced by
placeholders (evals/make_real_fixtures.py). log.json is not kept (same records as log.txt; small fixtures).
Only sites6 and external4 are committed (about 300 KB); verbose3 writes 2.6 MB, so
tests/diagnose/test_healthy_real_logs.py runs it live (integration) into a temporary folder instead.
A run takes 15-40 s on 2 cores. Exit 0 when every variant succeeded, 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_real_fixtures as real  # noqa: E402  (same folder: run_job, placeholders, scrub, _swap_in)

REPO = HERE.parent
DEFAULT_OUT = REPO / "tests" / "fixtures" / "healthy_runs"
VARIANTS = {  # name -> (clients, launch_external_process, log_config)
    "sites6": (6, False, None),
    "external4": (4, True, None),
    "verbose3": (3, False, "verbose"),
}
COMMITTED = ["sites6", "external4"]  # the default: the variants kept in tests/fixtures/healthy_runs
KEPT = ("log.txt", "error_log.txt")
JOB_PY = '''"""NumPy FedAvg, {clients} clients (healthy-run fixture variant {name}; written by evals/make_healthy_runs.py)."""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--workspace", required=True)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="{name}", model=[0.0] * 9, min_clients={clients}, num_rounds=2, train_script="client.py",
    train_args="--lr 0.05 --local_steps 5", key_metric="accuracy", launch_external_process={external},
)
env = SimEnv(num_clients={clients}, workspace_root=args.workspace, log_config={log_config!r})
run = recipe.execute(env)
print("Result can be found in :", run.get_result())
print("Job Status is:", run.get_status())
'''


def build_variant(name: str, out_root: Path, timeout: float) -> str | None:
    """Run one variant and swap its fixture folder in; return an error message or None."""
    clients, external, log_config = VARIANTS[name]
    with tempfile.TemporaryDirectory(prefix="nvf-healthy-") as tmp:
        job, sim_root, home = Path(tmp) / "job", os.path.join(tmp, "sim"), os.path.join(tmp, "home")
        os.makedirs(home)
        job.mkdir()
        shutil.copy(REPO / "examples" / "hello-numpy" / "client.py", job / "client.py")
        (job / "job.py").write_text(
            JOB_PY.format(name=name, clients=clients, external=external, log_config=log_config), encoding="utf-8"
        )
        print(f"[{name}] running {clients} clients ...", file=sys.stderr)
        code, output = real.run_job(job, sim_root, home, timeout)
        if code != 0:
            return f"{name}: exit code {code}: {output[-300:]}"
        pairs = [(str(job), "/tmp/nvflare/job"), *real.placeholders(sim_root, home)]
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_root))
        try:
            (staging / "job_stdout.txt").write_text(real.scrub(output, pairs), encoding="utf-8")
            for site_dir in sorted(p for p in (Path(sim_root) / name).iterdir() if p.is_dir()):
                for log in (site_dir / k for k in KEPT if (site_dir / k).is_file()):
                    target = staging / site_dir.name / log.name
                    target.parent.mkdir(exist_ok=True)
                    target.write_text(
                        real.scrub(log.read_text(encoding="utf-8", errors="replace"), pairs), encoding="utf-8"
                    )
            real._swap_in(staging, out_root / name)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    print(f"[{name}] fixture written to {out_root / name}", file=sys.stderr)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="variant to run (repeatable)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixture root (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default: %(default)s)")
    args = parser.parse_args(argv)
    return real.build_all("variants", args.variant or COMMITTED, build_variant, args.out, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
