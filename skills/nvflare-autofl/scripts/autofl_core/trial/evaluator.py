"""Run the frozen evaluator on a global model, once per site, sealed like a trial; the n-weighted score.

Each site's run is `python -B -s EVALUATOR --model PATH --site NAME --format F` in the trial sandbox
(`sandbox/`): its own user, mount, PID and network namespaces, the host read-only, and a view that holds only
the frozen files (the evaluator, the job-local modules it imports, its declared inputs) at their job-relative
paths, so no candidate file can shadow a module it imports. The only writable folder is the run's temp folder
(TMPDIR); the rest of the host, /tmp and HOME included, is read-only (writes to the view vanish with it). Sites
run concurrently. After each run, every process still carrying that run's own token (a detached daemon, where no
PID namespace ended it) is ended. The evaluator prints one JSON
object on stdout (its last line that is one): metric name -> number, plus `n`, the samples it evaluated.

    evaluation = evaluate_model(EvaluatorRun(python=..., script="evaluate.py", files={...}, model=path,
                                             model_format="numpy", sites=["site-1"], metric="accuracy"))
    evaluation.score, evaluation.sites, evaluation.failure   # failure "" when every site answered
"""

from __future__ import annotations

import math
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..common import bounded, trees
from . import childenv, processes, rootcause, seal

EVALUATION_TOKEN_VAR = "AUTOFL_EVALUATION_TOKEN"  # one per site's run: what it leaves behind is found by it
MAX_OUTPUT_BYTES = 64 * 1024  # the tail of each stream that is read
MAX_STREAM_BYTES = 64 * 1024 * 1024  # stdout + stderr on disk: an evaluator printing more is ended
TIMED_OUT, TOO_MUCH_OUTPUT = "timed out", "too much output"  # why `_run` ended a run (code None)
NON_NUMBER = re.compile(r"-?Infinity|NaN")
KILL_GRACE_SECONDS = 3.0
NOT_RUN = 126  # the sandbox launcher's exit when a protection the plan requires could not be set up


@dataclass
class EvaluatorRun:
    """What to evaluate: `files` {job-relative path: bytes} are the frozen files; `script` is one of them."""

    python: str
    script: str
    files: dict[str, bytes]
    model: Path
    model_format: str
    sites: list[str]
    metric: str
    timeout: float = 600.0
    temp_parent: Path | None = None
    parent_env: Mapping[str, str] | None = None
    token: str = ""
    sealed: bool = True
    isolate_network: bool = True
    workspace: Path | None = None  # PYTHONPATH entries inside it are dropped (candidate files never on the path)


@dataclass
class SiteResult:
    site: str
    value: float | None = None
    n: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the evaluator process tree's CPU (sandbox launcher included)
    failure: str = ""


@dataclass
class Evaluation:
    score: float | None
    metric: str
    model: str
    model_format: str
    sites: list[SiteResult]
    failure: str
    seconds: float
    sandbox: dict | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def evaluate_model(run: EvaluatorRun) -> Evaluation:
    """Run the evaluator for every site (concurrently) and combine the answers; see the module docstring."""
    started = time.monotonic()
    if not run.sites:
        return _evaluation(run, [], "no site took part in the run, so there is nothing to evaluate on", started)
    results: list[SiteResult | None] = [None] * len(run.sites)
    statuses: list[dict | None] = [None] * len(run.sites)

    def one(index: int, site: str) -> None:
        results[index], statuses[index] = _run_site(run, site)

    threads = [threading.Thread(target=one, args=(i, site), daemon=True) for i, site in enumerate(run.sites)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = [
        result or SiteResult(site=site, failure="no result") for result, site in zip(results, run.sites, strict=False)
    ]
    failed = [result for result in done if result.failure]
    failure = f"frozen evaluator failed on {failed[0].site}: {failed[0].failure}" if failed else ""
    evaluation = _evaluation(run, done, failure, started)
    evaluation.sandbox = next((status for status in statuses if status), None)
    return evaluation


def combine(sites: list[SiteResult]) -> float | None:
    """The n-weighted mean of the sites' values (None when no sample was evaluated). Counts so large that the sums
    overflow are scaled by the largest first (the mean is the same, and never 0 or NaN by overflow)."""
    counted = [site for site in sites if site.n]
    if not counted:
        return None
    score = sum(site.value * site.n for site in counted) / sum(site.n for site in counted)
    if not math.isfinite(score) or not math.isfinite(sum(site.n for site in counted)):
        top = max(site.n for site in counted)
        weights = [site.n / top for site in counted]
        score = sum(site.value * weight for site, weight in zip(counted, weights, strict=True)) / sum(weights)
    return score


def parse_output(text: str, metric: str) -> tuple[float, float, dict[str, float]]:
    """(value of `metric`, n, every numeric metric) from the evaluator's stdout; ValueError naming the problem."""
    document = None
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                document = bounded.parse_json(line)
            except bounded.BoundedReadError:
                word = _non_number(line)
                if word:  # the answer itself, not junk: an earlier line never stands in for it
                    raise ValueError(f"its JSON answer holds {word} is not a number") from None
                continue
            break
    if not isinstance(document, dict):
        raise ValueError('it printed no JSON object on stdout (expected e.g. {"accuracy": 0.91, "n": 200})')
    numbers = {str(key): _number(value) for key, value in document.items() if bounded.is_number(value)}
    if metric not in numbers:
        raise ValueError(f"its JSON has no number for {metric!r} (keys: {', '.join(sorted(document)) or 'none'})")
    n = numbers.get("n")
    if n is None or not math.isfinite(n) or n <= 0:
        raise ValueError("its JSON has no positive `n` (the number of samples it evaluated)")
    if not math.isfinite(numbers[metric]):
        raise ValueError(f"its {metric} is not a finite number")
    return numbers[metric], n, {key: value for key, value in numbers.items() if math.isfinite(value)}


def _non_number(line: str) -> str:
    """NaN, Infinity or -Infinity when `line` is JSON once they are allowed (an answer holding a value that is no
    number), else ''."""
    try:
        bounded.parse_json(line, allow_nan=True)
    except bounded.BoundedReadError:
        return ""
    found = NON_NUMBER.search(line)
    return found.group(0) if found else "NaN"


def _number(value: int | float) -> float:
    """A JSON number as a float; an integer too large for one is infinite (then refused as not finite)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _evaluation(run: EvaluatorRun, sites: list[SiteResult], failure: str, started: float) -> Evaluation:
    score = None if failure else combine(sites)
    if not failure and score is None:
        failure = "the frozen evaluator evaluated no sample"
    return Evaluation(
        score=score,
        metric=run.metric,
        model=str(run.model),
        model_format=run.model_format,
        sites=sites,
        failure=failure,
        seconds=round(time.monotonic() - started, 3),
    )


def _run_site(run: EvaluatorRun, site: str) -> tuple[SiteResult, dict | None]:
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="autofl-eval-", dir=run.temp_parent))
    try:
        view, scratch = folder / "view", folder / "tmp"
        view.mkdir()
        scratch.mkdir()
        env = _env(run, scratch)
        argv = [str(run.python), "-B", "-s", str(view / run.script), "--model", str(run.model), "--site", site]
        if run.model_format:
            argv += ["--format", run.model_format]
        if not run.sealed:  # contained: the staged copy is the folder it runs in
            seal.stage(view, run.files)
        plan = seal.write_plan(
            folder,
            workspace=view,
            network="isolated" if run.isolate_network else "allowed",
            writable=[scratch],
            home=env.get("HOME"),
            stage_files=run.files if run.sealed else None,
            discard_writes=False,  # only its temp folder (TMPDIR) is writable
        )
        code, out, err, cpu, ended = _run(seal.launcher_argv(run.python, plan, argv), env, folder, run.timeout)
        # a detached daemon (setsid) left where no PID namespace ends it: found by its site run's token
        processes.terminate_tree(None, (EVALUATION_TOKEN_VAR, env[EVALUATION_TOKEN_VAR]), grace_seconds=1.0)
        status = seal.read_status(folder, sealed=run.sealed)
        result = SiteResult(site=site, seconds=round(time.monotonic() - started, 3), cpu_seconds=cpu)
        if code == NOT_RUN:
            result.failure = "the sandbox could not be set up: " + _last_line(err)
        elif ended == TOO_MUCH_OUTPUT:
            result.failure = f"it printed more than {MAX_STREAM_BYTES // (1024 * 1024)} MiB, so it was ended"
        elif ended == TIMED_OUT:
            result.failure = f"timed out after {run.timeout:g} s"
        elif code != 0:
            cause = rootcause.one_line(_last_error(err))
            result.failure = f"exit_code={code}" + (f"; {cause}" if cause else "")
        else:
            try:
                result.value, result.n, result.metrics = parse_output(out, run.metric)
            except ValueError as error:
                result.failure = str(error)
        return result, status
    finally:
        trees.remove_tree(folder)


def _env(run: EvaluatorRun, scratch: Path) -> dict[str, str]:
    parent = os.environ if run.parent_env is None else run.parent_env
    env = childenv.build_child_env(
        parent, passthrough=[], simulator_root=scratch, token=run.token or secrets.token_hex(16), temp_dir=scratch
    )
    env[EVALUATION_TOKEN_VAR] = secrets.token_hex(16)
    if run.workspace is not None and env.get("PYTHONPATH"):
        job = os.path.realpath(run.workspace)
        kept = [
            entry
            for entry in env["PYTHONPATH"].split(os.pathsep)
            if entry and os.path.isabs(entry) and not (os.path.realpath(entry) + os.sep).startswith(job + os.sep)
        ]
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int | None, str, str, float, str]:
    """Run to the end, to `timeout` or until it printed more than MAX_STREAM_BYTES (then the code is None and the last
    value says which: TIMED_OUT, TOO_MUCH_OUTPUT; the whole process group is killed). Output read bounded.
    The last value is the CPU seconds of the whole process tree (the launcher waits for everything it started)."""
    with tempfile.TemporaryFile(dir=cwd) as out, tempfile.TemporaryFile(dir=cwd) as err:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        code, cpu, ended = None, 0.0, TIMED_OUT
        try:
            code, cpu, ended = _wait(
                proc, timeout, lambda: os.fstat(out.fileno()).st_size + os.fstat(err.fileno()).st_size
            )
        finally:
            _kill_group(proc)
        return code, _tail(out), _tail(err), cpu, ended


def _wait(proc: subprocess.Popen, timeout: float, printed) -> tuple[int | None, float, str]:
    """(exit code or None, CPU seconds of the process and what it waited for, why it was ended: "", TIMED_OUT or
    TOO_MUCH_OUTPUT when `printed()` bytes exceed MAX_STREAM_BYTES) via wait4."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, round(usage.ru_utime + usage.ru_stime, 3), ""
        if printed() > MAX_STREAM_BYTES:
            return None, 0.0, TOO_MUCH_OUTPUT
        if time.monotonic() >= deadline:
            return None, 0.0, TIMED_OUT
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
            if sig == signal.SIGTERM:
                break
        except subprocess.TimeoutExpired:
            continue
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _tail(handle) -> str:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - MAX_OUTPUT_BYTES))
    return handle.read(MAX_OUTPUT_BYTES).decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return rootcause.one_line(lines[-1]) if lines else "no output"


def _last_error(text: str) -> str:
    """The last `SomethingError: message` line of stderr (the root cause of a traceback), else its last line."""
    for line in reversed(text.splitlines()):
        stripped = line.strip()
        head = stripped.split(":", 1)[0]
        if head.endswith(("Error", "Exception", "Exit", "Interrupt")) and " " not in head:
            return stripped
    return _last_line(text) if text.strip() else ""
