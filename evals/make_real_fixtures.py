"""Regenerate the real NVFLARE 2.9 fixtures used by the diagnose evals.

Usage:
    python evals/make_real_fixtures.py [--case NAME ...] [--out DIR] [--timeout SECONDS]

For each case it runs the example's `python job.py` (argv list, no shell) in a throw-away simulation root,
with a sanitized environment (PATH, LANG, a temporary HOME, NVFLARE_SIMULATOR_WORKSPACE_ROOT and the same
root passed as `--workspace` so SimEnv prints no override warning), and writes under `<out>/<case>/`:

    stdout.txt                          combined stdout+stderr of `python job.py`
    workspace/<job_name>/server/{log.txt,log_fl.txt,error_log.txt,log.json}
    workspace/<job_name>/server/simulate_job/{meta.json,metrics/*,cross_site_val/*}
    workspace/<job_name>/site-N/{log.txt,log_fl.txt,error_log.txt,log.json}

Nothing else is copied: no startup/ kits or key material, no models/, no app code. Machine-specific paths in
the copied text are replaced by stable placeholders (see `placeholders`), so a rerun changes only
timestamps, ids (task ids, ports, pids), timings and the interleaving of the two simulated sites' threads
(which site reports its failure first); the set of files and the failure evidence stay the same. Each case folder is built beside the target and swapped in
with os.replace, so an interrupted run never leaves a half-written case. The process group of every run is
killed afterwards, so no simulator process outlives the script.

Cases (default: all): healthy (examples/hello-numpy), import-error, user-code-exception, bad-recipe-arg
(examples/failing/*). A run takes ~10-20 s on 2 cores. The extra case `inspect-source` runs no simulation: it
saves the JSON envelope of `nvflare agent inspect source <job folder> --format json` for examples/hello-numpy
(`healthy.json`), for a copy whose client.py hard-codes an absolute data path (`absolute_path.json`), and, with
`--redact off`, for a copy whose only flagged literal is a "/" separator (`separator_redact_off.json`).

Rejection cases (REJECTION_CASES, jobs in evals/diagnose/jobs/, see its README): NVFLARE itself rejects the job
(a bad recipe argument type, inconsistent or fractional SimEnv clients, FedJob n_clients with to(), an exported
job whose deploy_map names a missing app, run with `nvflare simulator`, an invalid local/resources.json, SimEnv's
num_clients after set_per_site_config), the client cannot find a relative data path under the simulator or one
site's per-site data folder (shown under /home/user/fl-project, with the job's inspect source envelope), or a
client that sends back part of the model fails in round 1. Each runs from a copy of its folder in a temporary
directory (a job without client.py gets stub_client.py), paths shown as /work/jobs/<case>. `poc-not-prepared`
saves the JSON envelope of `nvflare --format json poc start` in an empty POC workspace (`poc_start.json`).

Exit 0 when every case produced its fixture, 2 on bad usage, 1 when a run timed out or the expected outcome
(healthy succeeds, failing jobs fail) did not happen.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "evals" / "diagnose" / "files" / "real"
SIM_ROOT_PLACEHOLDER = "/tmp/nvflare/simulation"

# case -> (example folder, job name, should the run succeed?)
CASES = {
    "healthy": ("examples/hello-numpy", "hello-numpy", True),
    "import-error": ("examples/failing/import-error", "import-error", False),
    "user-code-exception": ("examples/failing/user-code-exception", "user-code-exception", False),
    "bad-recipe-arg": ("examples/failing/bad-recipe-arg", "bad-recipe-arg", False),
}
LOG_FILES = ("log.txt", "log_fl.txt", "error_log.txt", "log.json")
SIM_JOB_FILES = ("meta.json",)
SIM_JOB_DIRS = ("metrics", "cross_site_val")
JOBS = REPO / "evals" / "diagnose" / "jobs"
JOB_PLACEHOLDER = "/work/jobs"
EXPORT_PLACEHOLDER = "/work/export"
POC_CASE = "poc-not-prepared"


@dataclass(frozen=True)
class RejectionCase:
    """A job that NVFLARE rejects, run from a temporary copy of `folder` (issue 13's real fixtures)."""

    folder: Path
    job_name: str
    args: tuple[str, ...] = ()
    resources: str | None = None  # written to <sim_root>/<job_name>/local/resources.json before the run
    export_then_simulate: bool = False  # job.py --export_dir DIR, then `nvflare simulator DIR/<job_name>`
    shown_at: str | None = None  # the job copy is shown at this path, and job.py's literal of it points at the copy
    inspect: bool = False  # also save `nvflare agent inspect source <job> --format json` as inspect_source.json


REJECTION_CASES = {
    "bad-recipe-arg-type": RejectionCase(JOBS / "bad-recipe-arg-type", "bad-recipe-arg-type"),
    "simenv-inconsistent-clients": RejectionCase(JOBS / "simenv-inconsistent-clients", "simenv-inconsistent-clients"),
    "simenv-fractional-clients": RejectionCase(JOBS / "simenv-fractional-clients", "simenv-fractional-clients"),
    "fedjob-n-clients-with-to": RejectionCase(JOBS / "fedjob-n-clients-with-to", "fedjob-n-clients-with-to"),
    "deploy-map-mismatch": RejectionCase(
        JOBS / "deploy-map-mismatch", "deploy-map-mismatch", export_then_simulate=True
    ),
    "invalid-resources-file": RejectionCase(
        REPO / "examples" / "hello-numpy",
        "invalid-resources-file",
        ("--name", "invalid-resources-file"),
        resources='["format_version", 2]\n',
    ),
    "relative-data-path": RejectionCase(JOBS / "relative-data-path", "relative-data-path"),
    "partial-model-send": RejectionCase(JOBS / "partial-model-send", "partial-model-send"),
    "simenv-per-site-config": RejectionCase(JOBS / "simenv-per-site-config", "simenv-per-site-config"),
    "per-site-data-path": RejectionCase(
        JOBS / "per-site-data-path", "per-site-data-path", shown_at="/home/user/fl-project", inspect=True
    ),
}
INSPECT_CASE = "inspect-source"
INSPECT_PLACEHOLDER = "/tmp/nvflare/jobs/hello-numpy"
ABSOLUTE_PATH_LINE = 'DATA_FILE = "/home/alice/fl-data/site-1/train.csv"  # only valid on one machine\n'
SEPARATOR_LINE = 'PATH_SEPARATOR = "/"  # joins path parts; NVFLARE still flags it as ABSOLUTE_DATA_PATH\n'


def placeholders(sim_root: str, home: str) -> list[tuple[str, str]]:
    """Path -> placeholder pairs, longest path first so nested paths are replaced before their parents."""
    pairs = {
        sim_root: SIM_ROOT_PLACEHOLDER,
        home: "/tmp/nvflare/home",
        str(REPO): "/repo",
        sys.prefix: "/repo/.venv",
        os.path.realpath(sys.prefix): "/repo/.venv",  # a symlinked venv shows its real path in child tracebacks
        sys.base_prefix: "/opt/python",
    }
    return sorted(pairs.items(), key=lambda kv: len(kv[0]), reverse=True)


def scrub(text: str, pairs: list[tuple[str, str]]) -> str:
    """Replace every machine-specific path in `text` by its placeholder."""
    for path, placeholder in pairs:
        if path:
            text = text.replace(path, placeholder)
    return text


def child_env(sim_root: str, home: str) -> dict[str, str]:
    """A minimal environment: nothing from the caller's environment leaks into the run or the fixture."""
    return {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "NVFLARE_SIMULATOR_WORKSPACE_ROOT": sim_root,
    }


def run_job(
    example: Path, sim_root: str, home: str, timeout: float, args: tuple[str, ...] = ()
) -> tuple[int | None, str]:
    """Run `python job.py` in its own process group; return (exit code or None on timeout, combined output)."""
    return run_argv(
        [sys.executable, "job.py", "--workspace", sim_root, *args], example, child_env(sim_root, home), timeout
    )


def run_argv(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run `argv` in its own process group; return (exit code or None on timeout, combined output)."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        code = None
    _kill_group(proc.pid)
    return code, out.decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def fixture_files(job_dir: Path) -> list[Path]:
    """Relative paths of the files a fixture keeps from a SimEnv job workspace (logs, meta, metrics)."""
    keep: list[Path] = []
    for site_dir in sorted(p for p in job_dir.iterdir() if p.is_dir()):
        if site_dir.name != "server" and not site_dir.name.startswith("site-"):
            continue
        keep += [site_dir / name for name in LOG_FILES if (site_dir / name).is_file()]
        sim_job = site_dir / "simulate_job"
        if site_dir.name == "server" and sim_job.is_dir():
            keep += [sim_job / name for name in SIM_JOB_FILES if (sim_job / name).is_file()]
            for sub in SIM_JOB_DIRS:
                if (sim_job / sub).is_dir():
                    keep += sorted(p for p in (sim_job / sub).iterdir() if p.is_file() and not p.is_symlink())
    return [p.relative_to(job_dir) for p in keep if not p.is_symlink()]


def inspect_source(job: Path, home: str, timeout: float, extra: tuple[str, ...] = ()) -> str | None:
    """stdout of `nvflare agent inspect source <job> --format json` (read-only, static), or None on failure."""
    argv = [
        str(Path(sys.executable).parent / "nvflare"),
        "agent",
        "inspect",
        "source",
        str(job),
        "--format",
        "json",
        *extra,
    ]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            timeout=timeout,
            env=child_env(home, home),
            stdin=subprocess.DEVNULL,
            cwd=home,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", errors="replace") if proc.returncode == 0 else None


def build_inspect_case(out_root: Path, timeout: float) -> str | None:
    """Save real `agent inspect source` envelopes: hello-numpy as is, and with a hard-coded absolute data path."""
    with tempfile.TemporaryDirectory(prefix="nvf-inspect-") as tmp:
        home, job = os.path.join(tmp, "home"), Path(tmp) / "hello-numpy"
        os.makedirs(home)
        shutil.copytree(REPO / "examples" / "hello-numpy", job)
        outputs = {"healthy.json": inspect_source(job, home, timeout)}
        client = job / "client.py"
        original = client.read_text(encoding="utf-8")
        client.write_text(ABSOLUTE_PATH_LINE + original, encoding="utf-8")
        outputs["absolute_path.json"] = inspect_source(job, home, timeout)
        client.write_text(SEPARATOR_LINE + original, encoding="utf-8")
        outputs["separator_redact_off.json"] = inspect_source(job, home, timeout, ("--redact", "off"))
        if None in outputs.values():
            return f"{INSPECT_CASE}: nvflare agent inspect source failed"
        pairs = [(str(job), INSPECT_PLACEHOLDER), *placeholders(tmp, home)]

        def write(staging: Path) -> None:
            for name, text in outputs.items():
                (staging / name).write_text(scrub(text, pairs), encoding="utf-8")

        write_case(out_root, INSPECT_CASE, write)
    print(f"[{INSPECT_CASE}] fixture written to {out_root / INSPECT_CASE}", file=sys.stderr)
    return None


def _nvflare() -> str:
    return str(Path(sys.executable).parent / "nvflare")


def run_rejection(case: RejectionCase, tmp: Path, sim_root: str, home: str, timeout: float) -> tuple[int | None, str]:
    """Copy the job, prepare what the case needs, run it; (exit code or None on timeout, output of the failing step)."""
    job = tmp / "jobs" / case.job_name
    shutil.copytree(case.folder, job, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not (job / "client.py").exists():
        shutil.copy(JOBS / "stub_client.py", job / "client.py")
    if case.inspect:
        inspected = inspect_source(job, home, timeout)
        (tmp / "inspect_source.json").write_text(inspected or "", encoding="utf-8")
    if case.shown_at:
        script = job / "job.py"
        script.write_text(script.read_text(encoding="utf-8").replace(case.shown_at, str(job)), encoding="utf-8")
    if case.resources is not None:
        local = Path(sim_root) / case.job_name / "local"
        local.mkdir(parents=True)
        (local / "resources.json").write_text(case.resources, encoding="utf-8")
    env = child_env(sim_root, home)
    if not case.export_then_simulate:
        return run_job(job, sim_root, home, timeout, case.args)
    code, output = run_argv([sys.executable, "job.py", "--export_dir", str(tmp / "export")], job, env, timeout)
    if code != 0:
        return 0 if code is not None else None, output  # the export itself must work: reported as an unexpected outcome
    argv = [
        _nvflare(),
        "simulator",
        str(tmp / "export" / case.job_name),
        "-w",
        os.path.join(sim_root, case.job_name),
        "-n",
        "2",
        "-t",
        "2",
    ]
    return run_argv(argv, job, env, timeout)


def build_rejection_case(name: str, out_root: Path, timeout: float) -> str | None:
    """Run one rejection case and swap its fixture folder in; return an error message or None."""
    case = REJECTION_CASES[name]
    with tempfile.TemporaryDirectory(prefix="nvf-fixture-") as tmp_name:
        tmp = Path(tmp_name)
        sim_root, home = str(tmp / "sim"), str(tmp / "home")
        os.makedirs(home)
        print(f"[{name}] running {case.folder.relative_to(REPO)} ...", file=sys.stderr)
        code, output = run_rejection(case, tmp, sim_root, home, timeout)
        if code is None:
            return f"{name}: timed out after {timeout:.0f} s"
        if code == 0:
            return f"{name}: expected NVFLARE to reject the job, but it exited with code 0"
        pairs = [
            *([(str(tmp / "jobs" / case.job_name), case.shown_at)] if case.shown_at else []),
            (str(tmp / "jobs"), JOB_PLACEHOLDER),
            (str(tmp / "export"), EXPORT_PLACEHOLDER),
            *placeholders(sim_root, home),
        ]
        inspected = (tmp / "inspect_source.json").read_text(encoding="utf-8") if case.inspect else None
        if case.inspect and not inspected:
            return f"{name}: nvflare agent inspect source failed"

        def write(staging: Path) -> None:
            _write_fixture(staging, output, Path(sim_root) / case.job_name, pairs)
            if inspected:
                (staging / "inspect_source.json").write_text(scrub(inspected, pairs), encoding="utf-8")
            if case.export_then_simulate:
                _write_job_configs(staging, tmp / "export" / case.job_name, pairs)

        write_case(out_root, name, write)
    print(f"[{name}] exit code {code}; fixture written to {out_root / name}", file=sys.stderr)
    return None


def _write_job_configs(staging: Path, job: Path, pairs: list[tuple[str, str]]) -> None:
    """The exported job folder's meta.json and app config files (no code) under `job/<name>/`."""
    for path in sorted(job.rglob("*.json")):
        rel = path.relative_to(job)
        if rel.name == "meta.json" or rel.parent.name == "config":
            target = staging / "job" / job.name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(scrub(path.read_text(encoding="utf-8"), pairs), encoding="utf-8")


def build_poc_case(out_root: Path, timeout: float) -> str | None:
    """Save the envelope of `nvflare --format json poc start` in an empty POC workspace (no prepare first)."""
    with tempfile.TemporaryDirectory(prefix="nvf-poc-") as tmp:
        home, poc = os.path.join(tmp, "home"), os.path.join(tmp, "poc")
        os.makedirs(home)
        env = dict(child_env(tmp, home), NVFLARE_POC_WORKSPACE=poc)
        code, output = run_argv([_nvflare(), "--format", "json", "poc", "start"], Path(tmp), env, timeout)
        if code is None or '"status": "error"' not in output:
            return f"{POC_CASE}: expected an error envelope from nvflare poc start, got exit code {code}"
        pairs = [(poc, "/tmp/nvflare/poc"), *placeholders(tmp, home)]
        write_case(
            out_root,
            POC_CASE,
            lambda staging: (staging / "poc_start.json").write_text(scrub(output, pairs), encoding="utf-8"),
        )
    print(f"[{POC_CASE}] fixture written to {out_root / POC_CASE}", file=sys.stderr)
    return None


def build_case(case: str, out_root: Path, timeout: float) -> str | None:
    """Run one case and swap its fixture folder in; return an error message or None."""
    if case == INSPECT_CASE:
        return build_inspect_case(out_root, timeout)
    if case == POC_CASE:
        return build_poc_case(out_root, timeout)
    if case in REJECTION_CASES:
        return build_rejection_case(case, out_root, timeout)
    example_rel, job_name, should_succeed = CASES[case]
    with tempfile.TemporaryDirectory(prefix="nvf-fixture-") as tmp:
        sim_root, home = os.path.join(tmp, "sim"), os.path.join(tmp, "home")
        os.makedirs(home)
        print(f"[{case}] running {example_rel}/job.py ...", file=sys.stderr)
        code, output = run_job(REPO / example_rel, sim_root, home, timeout)
        if code is None:
            return f"{case}: timed out after {timeout:.0f} s"
        if (code == 0) != should_succeed:
            return f"{case}: expected {'success' if should_succeed else 'failure'}, got exit code {code}"
        write_case(
            out_root,
            case,
            lambda staging: _write_fixture(staging, output, Path(sim_root) / job_name, placeholders(sim_root, home)),
        )
    print(f"[{case}] exit code {code}; fixture written to {out_root / case}", file=sys.stderr)
    return None


def _write_fixture(staging: Path, output: str, job_dir: Path, pairs: list[tuple[str, str]]) -> None:
    """Write stdout.txt and the kept workspace files (scrubbed) into `staging`."""
    (staging / "stdout.txt").write_text(scrub(output, pairs), encoding="utf-8")
    if not job_dir.is_dir():
        return
    for rel in fixture_files(job_dir):
        target = staging / "workspace" / job_dir.name / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (job_dir / rel).read_text(encoding="utf-8", errors="replace")
        target.write_text(scrub(text, pairs), encoding="utf-8")


def write_case(out_root: Path, case: str, write) -> None:
    """Let `write(staging)` fill a fresh folder beside the target, then swap it in (removed again on any error)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{case}-", dir=out_root))
    try:
        write(staging)
        _swap_in(staging, out_root / case)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap_in(staging: Path, final: Path) -> None:
    """Replace `final` by `staging` (the old folder is moved aside first, then removed)."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(staging, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--case",
        action="append",
        choices=sorted([*CASES, INSPECT_CASE, *REJECTION_CASES, POC_CASE]),
        help="case to regenerate (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixture root (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default: %(default)s)")
    args = parser.parse_args(argv)
    return build_all(
        "cases", args.case or [*CASES, INSPECT_CASE, *REJECTION_CASES, POC_CASE], build_case, args.out, args.timeout
    )


def build_all(label: str, names: list[str], build, out: Path, timeout: float) -> int:
    """Run `build(name, out, timeout)` (an error message or None) for each name; print the errors and a JSON
    summary; exit code 0 (all built), 1 (some failed) or 2 (`out` not writable)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        errors = [msg for name in names if (msg := build(name, out, timeout))]
    except OSError as exc:
        print(f"error: cannot write fixtures under {out}: {exc}; choose a writable --out", file=sys.stderr)
        return 2
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    print(json.dumps({label: names, "errors": errors, "out": str(out)}, sort_keys=True))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
