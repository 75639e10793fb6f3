"""Run one simulation trial of a job.py and classify it: success with a score, crash, or infrastructure retry.

Glues argv building, the allowlisted child environment, the isolated simulator root
(`<fresh temp dir>/sim`, passed as NVFLARE_SIMULATOR_WORKSPACE_ROOT, with a private
`<fresh temp dir>/tmp` as the child's TMPDIR when its path is short enough for Unix
sockets; the whole temp dir is removed afterwards), process
supervision with watchdogs and live progress, result-dir resolution and copy
(`<run_dir>/simulation/`), and metric extraction. Never imports nvflare or matplotlib.

Usage:
    result = run_trial(TrialSpec(python=sys.executable, job_path=ws / "job.py", workspace=ws,
                                 run_dir=ws / "autofl_runs" / "baseline", trial_name="baseline",
                                 metric_order=["accuracy"], budget_args=["--num_rounds", "3"]))
    result.outcome  # "success" | "crash" | "infrastructure_retry" | "pruned" (its round judge stopped it)
Raises TrialError (nothing run, nothing written) for a rejected request, including an unusable run_dir.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TextIO

from ..common import bounded, trees
from ..common import trial_limits as limits
from . import argv as argv_mod
from . import childenv, metrics, processes, resultdir, rootcause, seal, what_ran
from .argv import TrialError
from .monitor import Monitor

SUCCESS, CRASH, INFRA_RETRY, PRUNED = "success", "crash", "infrastructure_retry", "pruned"
# Unix socket paths (multiprocessing listeners under TMPDIR) must stay below ~108 bytes.
MAX_PRIVATE_TMP_CHARS = 48
SOCKET_CONTEXT = ("socket", "bind", "connect", "listen", "tcp://", "address")
SANDBOX_WINDOW = 8  # traceback lines above the error that may carry the socket context
SANDBOX_REASON = (
    "simulation denied by the host sandbox: socket permission failure (PermissionError: Operation not "
    "permitted); rerun with the human-approved execution scope"
)
ISOLATED = "isolated"
NOT_RUN = "autofl: the trial was not run"
SANDBOX_FAILED = 126  # the launcher's exit when a protection the plan requires could not be set up
NETWORK_TAIL_BYTES = 256 * 1024
NETWORK_FAILURES = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "nodename nor servname",
    "getaddrinfo failed",
)
ERROR_LINE_RE = re.compile(r"\b(\w+(?:Error|Exception)): (.{1,200})")


@dataclass
class TrialSpec:
    """Plain-data description of one trial (paths absolute; args are argv lists, never shell strings).

    budget_args/base_args/run_args, flag_groups, name_flag, switch_flags: see argv.build_trial_argv.
    metric_order: metric names to try in order (the importer's metric_extraction_order).
    expected_result_names: result-dir names the job may use without --name (e.g. its default job name).
    num_rounds, mode: only for the live progress line. timeout/no_progress_timeout: seconds, 0/None disables.
    uses_simenv: job runs a SimEnv (enables the "upgrade to nvflare>=2.9.0" diagnosis).
    token: the trial token; pass one you persisted beforehand to find an orphaned trial later.
    on_start(pid, token): called right after the child started. progress_stream: e.g. sys.stderr.
    isolate_network: no network but loopback (a network namespace); else the network is allowed.
    stage_files: None runs the trial *contained* in the live workspace (user/PID/network namespaces where they
    work); a {relative path: bytes} map runs it *sealed* on its own view of the job (see seal.py): these files
    over the live workspace, writes private, `hide` folders invisible, `literal_paths` (simulator workspaces the
    job writes to whatever the root variable says) mapped onto the private simulator root.
    num_clients, min_clients (with num_rounds): the fixed budget checked against what ran (see what_ran.py).
    cuda_visible_devices: the child's CUDA_VISIBLE_DEVICES (one GPU per slot of a batch); None keeps the parent's.
    round_judge(curve): asked at every tick with the per-round global metric so far ({round index: value}, from the
    server's round records); a returned reason stops the trial tree, and the trial ends `pruned` with that reason.
    temp_parent: where the disposable trial folder is created (default: the system temp dir).
    limits: memory, disk and process limits (limits.TrialLimits); None runs the trial without them.
    attempt: 1, or 2 when the runner runs the trial again after an infrastructure stall (the child sees it as
    AUTOFL_TRIAL_ATTEMPT).
    """

    python: str
    job_path: Path
    workspace: Path
    run_dir: Path
    trial_name: str
    metric_order: list[str]
    budget_args: list[str] = field(default_factory=list)
    base_args: list[str] = field(default_factory=list)
    run_args: list[str] = field(default_factory=list)
    flag_groups: list[list[str]] = field(default_factory=list)
    name_flag: str | None = None
    switch_flags: list[str] = field(default_factory=list)
    expected_result_names: list[str] = field(default_factory=list)
    num_rounds: int | None = None
    mode: str = "max"
    timeout: float | None = 900.0
    no_progress_timeout: float | None = 240.0
    env_passthrough: list[str] = field(default_factory=list)
    parent_env: Mapping[str, str] | None = None
    uses_simenv: bool = True
    token: str | None = None
    progress_stream: TextIO | None = None
    grace_seconds: float = 5.0
    temp_parent: Path | None = None
    on_start: Callable[[int, str], None] | None = None
    isolate_network: bool = False
    stage_files: dict[str, bytes] | None = None
    hide: list[Path] = field(default_factory=list)
    literal_paths: list[str] = field(default_factory=list)
    num_clients: int | None = None
    min_clients: int | None = None
    cuda_visible_devices: str | None = None
    score_measured_after: bool = False  # a frozen evaluator scores the trial afterwards (the progress line says so)
    limits: limits.TrialLimits | None = None
    round_judge: Callable[[dict[int, float]], str | None] | None = None
    attempt: int = 1


@dataclass(frozen=True)
class TrialResult:
    """Outcome and evidence of one trial (frozen: a later step makes a new one with `dataclasses.replace`, e.g.
    `crashed`); `to_dict()` gives plain JSON-ready data."""

    outcome: str
    score: float | None
    metric_name: str
    metric_source: str
    metric_artifact: str
    failure_reason: str
    exit_code: int | None
    runtime_seconds: float
    run_command: str
    argv: list[str]
    artifacts: dict[str, str]
    watchdog: str | None = None
    termination_seconds: float | None = None
    runner_cpu_seconds: float = 0.0
    survivors: list[int] = field(default_factory=list)
    token: str = ""
    pid: int | None = None
    network_isolation: str | None = None  # "isolated", "allowed" or "unavailable: <why>"
    sandbox: dict | None = None  # {"sealed", "protections", "missing"} (see seal.read_status)
    budget: dict | None = None  # what_ran.Verdict of a trial that produced a score
    tampering: list[str] = field(default_factory=list)  # campaign files the runner found changed and restored
    reported_score: float | None = None  # the job's own metric when a frozen evaluator measured `score`
    evaluation: dict | None = None  # the frozen evaluation's summary (score, per-site value and n, model)
    retried_after: str | None = None  # the infrastructure stall that ended this trial's first attempt

    def to_dict(self) -> dict:
        return asdict(self)

    def crashed(self, reason: str, **changes) -> TrialResult:
        """This trial as a crash for `reason`: no score, whatever it measured."""
        return replace(self, outcome=CRASH, score=None, failure_reason=reason, **changes)


def trial_argv(spec: TrialSpec) -> list[str]:
    """The trial's command line (`argv.build_trial_argv` of the spec); TrialError when its arguments conflict."""
    return argv_mod.build_trial_argv(
        spec.python,
        spec.job_path,
        budget_args=list(spec.budget_args),
        base_args=list(spec.base_args),
        flag_groups=[list(g) for g in spec.flag_groups],
        name_flag=spec.name_flag,
        trial_name=spec.trial_name,
        workspace=spec.workspace,
        run_args=list(spec.run_args),
        switch_flags=list(spec.switch_flags),
    )


def run_trial(spec: TrialSpec) -> TrialResult:
    """Run the trial described by `spec`; see the module docstring."""
    argv = trial_argv(spec)
    token = spec.token or secrets.token_hex(16)
    parent = os.environ if spec.parent_env is None else spec.parent_env
    childenv.validate_passthrough(spec.env_passthrough)  # reject before anything is created
    trial_dir = Path(tempfile.mkdtemp(prefix="autofl-", dir=spec.temp_parent))
    try:
        out = trial_dir / "out"  # the one folder a sealed trial writes for good (a job may remove its root)
        root, private_tmp = out / "sim", out / "tmp"
        root.mkdir(parents=True)
        private_tmp.mkdir()
        env = childenv.build_child_env(
            parent,
            passthrough=spec.env_passthrough,
            simulator_root=root,
            token=token,
            temp_dir=private_tmp if len(str(private_tmp)) <= MAX_PRIVATE_TMP_CHARS else None,
        )
        if spec.cuda_visible_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = spec.cuda_visible_devices
        env[childenv.ATTEMPT_VAR] = str(spec.attempt)
        network = "isolated" if spec.isolate_network else "allowed"
        plan = seal.write_plan(
            trial_dir,
            workspace=spec.workspace,
            network=network,
            writable=[out],
            home=env.get("HOME"),
            stage_files=spec.stage_files,
            hide=list(spec.hide),
            literal_paths=list(spec.literal_paths),
            limits=spec.limits.to_plan() if spec.limits else None,
        )
        launch = seal.launcher_argv(spec.python, plan, argv)
        mapped = seal.literal_root(trial_dir, list(spec.literal_paths)) if spec.stage_files is not None else None
        result = _run_in_root(spec, argv, env, mapped or root, token, launch, trial_dir)
        sandbox = seal.read_status(trial_dir, sealed=spec.stage_files is not None)
        result = _limit_breached(result, seal.read_breach(trial_dir) if spec.limits else None)
        result = replace(result, sandbox=sandbox, network_isolation=seal.network_word(sandbox))
        return replace(result, failure_reason=_network_hint(result, Path(spec.run_dir) / "run.log"))
    finally:
        seal.release_limits(trial_dir)
        trees.remove_tree(trial_dir)  # iterative, never raises: a trial may leave a very deep tree


def _limit_breached(result: TrialResult, record: dict | None) -> TrialResult:
    """A trial that crossed a resource limit is a crash naming the limit, whatever else it did."""
    reason = limits.breach_reason(record) if record else None
    return result.crashed(reason, budget=None) if reason else result


def _run_in_root(
    spec: TrialSpec, argv: list[str], env: dict[str, str], root: Path, token: str, launch: list[str], cwd: Path
) -> TrialResult:
    log_path = _prepare_run_dir(Path(spec.run_dir))
    before = resultdir.snapshot_children(root)
    monitor = Monitor(spec, root, time.monotonic())
    try:
        outcome = processes.run_process(
            launch,
            cwd=cwd,  # the launcher starts outside the job; the job's own cwd is its (sealed) workspace
            env=env,
            log_path=log_path,
            token=(childenv.TOKEN_VAR, token),
            on_line=monitor.on_line,
            tick=monitor.tick,
            grace_seconds=spec.grace_seconds,
            on_start=(lambda pid: spec.on_start(pid, token)) if spec.on_start else None,
            tick_interval=monitor.interval,
            wake=monitor.wake,
            due=monitor.due,
        )
    except OSError as error:
        return _result(spec, argv, token, CRASH, f"could not start the trial: {error}", None, 0.0, {})
    finally:
        monitor.close()
    return _classify(spec, argv, env, root, token, outcome, monitor, before)


def _network_hint(result: TrialResult, run_log: Path) -> str:
    """A crash of an isolated trial that looks like a network failure says how to allow the network."""
    if result.outcome != CRASH or result.network_isolation != ISOLATED:
        return result.failure_reason
    try:
        tail = (bounded.read_tail(run_log, NETWORK_TAIL_BYTES) or b"").decode("utf-8", errors="replace")
    except bounded.BoundedReadError:
        tail = ""
    if not any(marker in tail or marker in result.failure_reason for marker in NETWORK_FAILURES):
        return result.failure_reason
    return (
        f"{result.failure_reason}; the trial ran without network access (network isolation): if the job must "
        "download data or reach a service, rerun with --allow-network"
    )


def _prepare_run_dir(run_dir: Path) -> Path:
    """Create the trial's output folder, drop a stale run.log and simulation copy; return the run.log path."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        log_path = run_dir / "run.log"
        log_path.unlink(missing_ok=True)
    except OSError as error:
        raise TrialError(
            argv_mod.INVALID, f"cannot use {run_dir} as the trial's output folder ({error.strerror}); pick another"
        ) from None
    trees.remove_tree(run_dir / "simulation")  # a stale copy must never be scored
    return log_path


def _classify(spec, argv, env, root, token, outcome, monitor, before) -> TrialResult:
    runtime = outcome.ended_at - outcome.started_at
    artifacts: dict[str, str] = {}
    name, dir_error = _copy_result(spec, root, list(monitor.printed), before, artifacts)
    tail = outcome.tail.decode("utf-8", errors="replace")
    rc = outcome.returncode

    def done(status: str, reason: str, found: metrics.MetricResult | None = None) -> TrialResult:
        result = _result(spec, argv, token, status, reason, rc, runtime, artifacts, found)
        stopped = outcome.stop_triggered_at
        return replace(
            result,
            failure_reason=_without_temp_paths(result.failure_reason, root, name, artifacts),
            watchdog=outcome.stop_reason,
            survivors=outcome.survivors,
            pid=outcome.pid,
            runner_cpu_seconds=round(outcome.runner_cpu_seconds, 4),
            termination_seconds=None if stopped is None else round(outcome.ended_at - stopped, 3),
        )

    if rc == SANDBOX_FAILED and NOT_RUN in tail:
        line = next(line for line in tail.splitlines() if NOT_RUN in line)
        raise TrialError(argv_mod.INVALID, f"{line.removeprefix('autofl: ')}; nothing was counted, run it again")
    if outcome.survivors:
        print(f"autofl: processes survived termination: {outcome.survivors}", file=sys.stderr)
        return done(CRASH, f"processes survived termination (pids {outcome.survivors}); kill them by hand")
    if monitor.pruned and outcome.stop_reason == monitor.pruned:
        return done(PRUNED, monitor.pruned)
    failed = outcome.stop_reason or rc != 0 or name is None
    if failed and sandbox_denied(tail):  # a hang or crash caused by the sandbox is never the candidate's fault
        return done(INFRA_RETRY, SANDBOX_REASON)
    if outcome.stop_reason:
        return done(CRASH, outcome.stop_reason)
    if rc != 0:
        cause = rootcause.root_cause(Path(spec.run_dir) / "simulation" if name else None, tail)
        return done(CRASH, f"exit_code={rc}; {cause}" if cause else f"exit_code={rc}" + _last_error(tail))
    if name is None:
        return done(CRASH, _no_result_reason(spec, env, dir_error))
    aborted = rootcause.aborted_run(Path(spec.run_dir) / "simulation")
    if aborted:  # never score a run NVFLARE aborted, even when the job exited 0
        cause = rootcause.root_cause(Path(spec.run_dir) / "simulation", tail)
        return done(CRASH, f"exit_code=0 but NVFLARE aborted the run: {cause or aborted}")
    found = metrics.extract_metric(spec.run_dir, list(spec.metric_order))
    if found.value is None:
        return done(CRASH, found.reason)
    ran = what_ran.read_what_ran(Path(spec.run_dir) / "simulation")
    verdict = what_ran.check(
        ran, num_rounds=spec.num_rounds, num_clients=spec.num_clients, min_clients=spec.min_clients
    )
    result = done(CRASH, verdict.reason) if verdict.status == what_ran.VIOLATED else done(SUCCESS, "", found)
    return replace(result, budget=verdict.to_dict())


def _copy_result(spec, root, printed, before, artifacts) -> tuple[str | None, str]:
    injected = argv_mod.injected_job_name(spec.workspace, spec.trial_name) if spec.name_flag else None
    try:
        name, _rule = resultdir.resolve_result_dir(
            root, printed, injected_name=injected, expected_names=spec.expected_result_names, before=before
        )
    except resultdir.ResultDirError as error:
        return None, str(error)
    destination = Path(spec.run_dir) / "simulation"
    try:
        resultdir.collect_result(root / name, destination)
    except OSError as error:  # e.g. a full disk while copying across filesystems
        return None, f"the result directory {name} could not be copied out of the trial root ({error})"
    artifacts["simulator_result_name"] = name
    artifacts["simulation"] = _display_path(spec.workspace, destination)
    return name, ""


def _result(spec, argv, token, status, reason, rc, runtime, artifacts, found=None) -> TrialResult:
    run_dir = Path(spec.run_dir)
    artifacts = {"run_log": _display_path(spec.workspace, run_dir / "run.log"), **artifacts}
    artifact = ""
    if found is not None and found.metric_artifact:
        artifact = _display_path(spec.workspace, run_dir / found.metric_artifact)
    return TrialResult(
        outcome=status,
        score=found.value if found else None,
        metric_name=found.metric_name if found else "",
        metric_source=found.metric_source if found else "",
        metric_artifact=artifact,
        failure_reason=reason,
        exit_code=rc,
        runtime_seconds=round(runtime, 3),
        run_command=shlex.join(argv),
        argv=list(argv),
        artifacts=artifacts,
        token=token,
    )


def sandbox_denied(output: str) -> bool:
    """True when a PermissionError "Operation not permitted" comes with socket context in the same traceback."""
    if "Operation not permitted" not in output or "PermissionError" not in output:
        return False
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if "Operation not permitted" not in line:
            continue
        window = "\n".join(lines[max(0, index - SANDBOX_WINDOW) : index + 2])
        if "PermissionError" in window and any(word in window for word in SOCKET_CONTEXT):
            return True
    return False


def _without_temp_paths(reason: str, root: Path, name: str | None, artifacts: dict[str, str]) -> str:
    """Point paths inside the (deleted) trial root at the copied result instead."""
    if name and "simulation" in artifacts:
        reason = reason.replace(str(root / name), artifacts["simulation"])
    return reason.replace(str(root), "<trial simulator root>")


def _last_error(output: str) -> str:
    matches = ERROR_LINE_RE.findall(output)
    if not matches:
        return ""
    kind, message = matches[-1]
    return f"; last error: {kind}: {rootcause.one_line(message)}"


def _no_result_reason(spec: TrialSpec, env: dict[str, str], dir_error: str) -> str:
    reason = f"no simulator result directory: {dir_error}"
    if not spec.uses_simenv:
        return reason + "; make job.py write its simulation workspace under NVFLARE_SIMULATOR_WORKSPACE_ROOT"
    version = child_nvflare_version(spec.python, env, spec.workspace)
    if version and _version_tuple(version) < (2, 9, 0):
        return (
            f"{reason}; the installed nvflare {version} predates 2.9.0 and ignores the SimEnv workspace "
            "override (NVFLARE_SIMULATOR_WORKSPACE_ROOT): upgrade to nvflare>=2.9.0"
        )
    return reason + "; check that job.py runs recipe.execute(SimEnv(...)) and that the run finished"


def child_nvflare_version(python: str, env: dict[str, str], workspace: Path) -> str | None:
    """The nvflare version installed for the trial interpreter (asked only on this failure path).

    Isolated and started outside the job (`childenv.helper_argv`), so no module a candidate left in the
    workspace can run here, outside the trial's sandbox.
    """
    code = "import importlib.metadata as m; print(m.version('nvflare'))"
    try:
        done = childenv.run_helper(python, code, env, workspace, 30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = re.match(r"\d+", piece)
        parts.append(int(digits.group()) if digits else 0)
    return tuple(parts)


def _display_path(workspace: Path, path: Path) -> str:
    """Workspace-relative POSIX path when `path` is inside the workspace, else absolute."""
    try:
        return Path(path).resolve().relative_to(Path(workspace).resolve()).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()


__all__ = ["TrialError", "TrialResult", "TrialSpec", "run_trial", "sandbox_denied"]
