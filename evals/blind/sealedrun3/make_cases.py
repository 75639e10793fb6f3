"""Rebuild the evidence files of the sealedrun3 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun3/make_cases.py [--case NAME ...] [--timeout-scale X]

Same way of working as evals/blind/sealedrun/make_cases.py (whose bounded runner and evidence writer it uses): each
case copies `jobs/<case>/` (with `jobs/common_job.py` as job.py when the case has none) to a temporary folder and
runs `python job.py --name <job> --workspace <sim root> ...` (one neutral job name, so no path in the evidence names
the case; a case whose folder is a job folder runs `nvflare simulator <folder> -w <sim root>/<job> -n 2 -t 2`) with
the sanitized environment and path placeholders of evals/make_real_fixtures.py; afterwards the run and every process
naming the temporary folder are killed. It keeps what the case's `keep` names: `stdout.txt` and, from
the SimEnv workspace, log.txt and error_log.txt of the server and each site (`*` for all, or `<site>/<file>`),
written under `files/<case>/`. Exit 0 when every case ended as expected (fail, success or timeout), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from make_real_fixtures import child_env, placeholders, write_case  # noqa: E402


def _first_half():
    spec = importlib.util.spec_from_file_location("sealedrun_make_cases", HERE.parent / "sealedrun" / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


first_half = _first_half()
JOBS = HERE / "jobs"
OUT = HERE / "files"
JOB_PLACEHOLDER = "/home/user/fl-jobs"
JOB_NAME = "fedavg-numpy"


@dataclass(frozen=True)
class Run:
    """One case's run: job.py arguments, what the user hands over, the wall-clock budget and how the run must end
    (fail, success or timeout)."""

    args: tuple[str, ...] = ()
    keep: tuple[str, ...] = ("stdout.txt",)
    timeout: float = 180.0
    expect: str = "fail"
    simulator: bool = False  # the case folder is a job folder run with `nvflare simulator`, not a job.py


CASES = {
    "client-params-not-dict": Run(),
    "client-metric-name-mismatch": Run(keep=("stdout.txt", "*"), expect="success"),
    "client-returns-received-weights": Run(expect="success"),
    "recipe-initial-ckpt-missing-at-runtime": Run(keep=("*",)),
    "recipe-stop-cond-no-spaces": Run(),
    "server-event-handler-raises": Run(expect="success"),
    "server-input-filter-raises": Run(keep=("server/log.txt", "server/error_log.txt")),
    "client-exits-when-converged": Run(keep=("stdout.txt", "*")),
    "eval-argmax-axis-on-1d-probs": Run(keep=("*",)),
    "site2-raw-units-math-overflow": Run(keep=("stdout.txt", "*")),
    "external-site1-single-class-assert": Run(("--external",)),
    "lr-decay-inverted-nan-late-round": Run(
        ("--num_rounds", "6", "--train_args", "--lr_decay 10"), ("stdout.txt", "*")
    ),
    "client-receive-without-init": Run(),
    "simenv-min-clients-above-sites": Run(("--min_clients", "3"), expect="success"),
    "client-final-round-lazy-import": Run(),
    "job-folder-fedavg-min-clients-arg": Run(keep=("stdout.txt", "*"), simulator=True),
}


def build(name: str, scale: float) -> str | None:
    """Run one case and swap its evidence folder in; an error message when the run did not end as expected."""
    run = CASES[name]
    with tempfile.TemporaryDirectory(prefix="nvf-sealedrun3-") as tmp_name:
        tmp = Path(tmp_name)
        job, sim_root, home = tmp / "jobs" / JOB_NAME, tmp / "sim", tmp / "home"
        shutil.copytree(JOBS / name, job, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if not run.simulator and not (job / "job.py").exists():
            shutil.copy(JOBS / "common_job.py", job / "job.py")
        home.mkdir()
        if run.simulator:
            nvflare = str(Path(sys.executable).parent / "nvflare")
            argv = [nvflare, "simulator", str(job), "-w", str(sim_root / JOB_NAME), "-n", "2", "-t", "2", *run.args]
        else:
            argv = [sys.executable, "job.py", "--name", JOB_NAME, "--workspace", str(sim_root), *run.args]
        print(f"[{name}] running ...", file=sys.stderr)
        env = child_env(str(sim_root), str(home))
        code, output = first_half.run_bounded(argv, job, env, run.timeout * scale, tmp)
        ended = "timeout" if code is None else ("success" if code == 0 else "fail")
        if run.expect != ended:
            return f"{name}: expected {run.expect}, the run ended in {ended} (exit code {code})"
        pairs = [(str(tmp / "jobs"), JOB_PLACEHOLDER), *placeholders(str(sim_root), str(home))]
        write_case(OUT, name, lambda staging: first_half._write(staging, output, sim_root / JOB_NAME, run.keep, pairs))
    print(f"[{name}] {ended} (exit code {code})", file=sys.stderr)
    return None


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
