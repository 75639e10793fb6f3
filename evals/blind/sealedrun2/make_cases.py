"""Rebuild the evidence files of the sealedrun2 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun2/make_cases.py [--case NAME ...] [--timeout-scale X]

Same way of working as evals/blind/sealedrun/make_cases.py (whose bounded runner it uses): each case copies
`jobs/<case>/` (with `jobs/common_job.py` as job.py when the case has none) to a temporary folder and runs
`python job.py --name <job> --workspace <sim root> ...` (one neutral job name, so no path in the evidence names the
case) with the sanitized environment and path placeholders of
evals/make_real_fixtures.py; afterwards job.py and every process naming the temporary folder are killed. It keeps
what the case's `keep` names: `stdout.txt` and, from the SimEnv workspace, log.txt and error_log.txt of the server
and each site (`*` for all, or `<site>/<file>`), written under `files/<case>/`. Exit 0 when every case ended as expected (fail, success or timeout), 1 otherwise.
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


@dataclass(frozen=True)
class Half:
    """A blind half's folder (its `jobs/` in, its `files/` out) and its cases."""

    folder: Path
    cases: dict[str, Run]


CASES = {
    "late-round-chunk-index": Run(("--num_rounds", "5"), keep=("stdout.txt", "*")),
    "site2-batch-size-zero": Run(keep=("*",)),
    "benign-import-traceback-then-valueerror": Run(keep=("stdout.txt", "*")),
    "client-sends-metrics-only": Run(keep=("stdout.txt", "*")),
    "client-output-filter-raises": Run(keep=("stdout.txt",)),
    "server-persistor-kwargs-lost": Run(keep=("stdout.txt", "server/log.txt", "server/error_log.txt")),
    "server-persistor-save-raises": Run(keep=("stdout.txt", "server/log.txt", "server/error_log.txt")),
    "site2-script-needs-pandas": Run(keep=("stdout.txt", "*")),
    "external-command-missing": Run(keep=("stdout.txt",), timeout=150.0, expect="success"),
    "client-sends-twice": Run(keep=("stdout.txt", "*")),
    "recipe-key-metric-mode-typo": Run(),
    "num-rounds-from-env": Run(keep=("stdout.txt", "*"), expect="success"),
    "external-ckpt-folder-missing": Run(("--external",), keep=("stdout.txt",)),
    "server-log-only-client-failed": Run(keep=("server/log.txt",)),
    "fobs-custom-class-in-params": Run(keep=("stdout.txt",)),
    "data-server-connection-refused": Run(keep=("stdout.txt",)),
}


def _argv(run: Run, job: Path, sim_root: Path) -> list[str]:
    if run.simulator:
        nvflare = str(Path(sys.executable).parent / "nvflare")
        return [nvflare, "simulator", str(job), "-w", str(sim_root / JOB_NAME), "-n", "2", "-t", "2", *run.args]
    return [sys.executable, "job.py", "--name", JOB_NAME, "--workspace", str(sim_root), *run.args]


def build(half: Half, name: str, scale: float) -> str | None:
    """Run one case and swap its evidence folder in; an error message when the run did not end as expected."""
    run = half.cases[name]
    with tempfile.TemporaryDirectory(prefix=f"nvf-{half.folder.name}-") as tmp_name:
        tmp = Path(tmp_name)
        job, sim_root, home = tmp / "jobs" / JOB_NAME, tmp / "sim", tmp / "home"
        shutil.copytree(half.folder / "jobs" / name, job, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if not run.simulator and not (job / "job.py").exists():
            shutil.copy(half.folder / "jobs" / "common_job.py", job / "job.py")
        home.mkdir()
        print(f"[{name}] running ...", file=sys.stderr)
        env = child_env(str(sim_root), str(home))
        code, output = first_half.run_bounded(_argv(run, job, sim_root), job, env, run.timeout * scale, tmp)
        ended = "timeout" if code is None else ("success" if code == 0 else "fail")
        if run.expect != ended:
            return f"{name}: expected {run.expect}, the run ended in {ended} (exit code {code})"
        pairs = [(str(tmp / "jobs"), JOB_PLACEHOLDER), *placeholders(str(sim_root), str(home))]
        keep = run.keep
        write_case(
            half.folder / "files",
            name,
            lambda staging: first_half._write(staging, output, sim_root / JOB_NAME, keep, pairs),
        )
    print(f"[{name}] {ended} (exit code {code})", file=sys.stderr)
    return None


def main(argv: list[str] | None = None, half: Half | None = None, description: str = __doc__) -> int:
    half = half or Half(HERE, CASES)
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(half.cases), help="case to rebuild (repeatable)")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every budget (a busy machine)")
    args = parser.parse_args(argv)
    (half.folder / "files").mkdir(exist_ok=True)
    errors = [msg for name in args.case or half.cases if (msg := build(half, name, args.timeout_scale))]
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
