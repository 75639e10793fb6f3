"""`--collect`: run the bounded, read-only nvflare CLI commands for one job and keep their JSON in memory.

Usage:
    items = collect_from_cli("abc123", startup_kit="/path/admin@example.com")
    ev = evidence.evidence_from_envelopes(items)

Only the commands in `READ_ONLY_COMMANDS` ever run (checked again right before each run), as argv lists
(no shell), with a timeout, a sanitised environment, stdin closed and their own process group (killed as a
whole on timeout). `job download` runs only for a terminal job whose status is a failure; it downloads into
a private temp folder, the artifacts it names are read (bounded) and the folder is deleted before returning.

A slow admin server is waited for, within bounds: each command runs with `--connect-timeout=CONNECT_TIMEOUT`
(the CLI's own default, 5 s, fails on a busy machine); a transient failure (a timeout, a CONNECTION_FAILED or
TIMEOUT envelope, an INTERNAL_ERROR saying a login or reply timed out) is tried again, up to ATTEMPTS tries;
no command starts after BUDGET seconds. Each result says how many attempts it took (`attempts`) and, when it
failed, why (`reason`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import jsontext
from .bounded import ReadFailure, chunk_lines, read_head_tail
from .evidence import EvidenceError
from .sites import COMPLETED, valid_job_id, valid_kit_id

# The complete list of nvflare sub-commands --collect may run; `{job_id}` / `{output_dir}` are filled in.
READ_ONLY_COMMANDS = {
    "job_meta": ("job", "meta", "{job_id}"),
    "job_logs": ("job", "logs", "{job_id}", "--site", "all", "--tail", "200"),
    "job_stats": ("job", "stats", "{job_id}", "--site", "all"),
    "system_status": ("system", "status"),
    "system_resources": ("system", "resources"),
    "job_download": ("job", "download", "{job_id}", "-o", "{output_dir}"),
}
PREFIX = ("nvflare", "--format", "json")
ENV_KEEP = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "NVFLARE_STARTUP_KIT_DIR",
    "NVFLARE_HOME",
    "NVFLARE_POC_WORKSPACE",
)
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
ARTIFACT_MAX_BYTES = 262144
CONNECT_TIMEOUT = 20  # seconds the CLI may take to connect and log in (its default 5 s fails on a busy server)
CONNECT_OPTION = f"--connect-timeout={CONNECT_TIMEOUT}"
ATTEMPTS = 3  # per command, counting the first; only transient failures are tried again
RETRY_PAUSE = 2.0  # seconds before trying again after a transient error envelope (times the attempt number)
BUDGET = 240.0  # seconds for the whole collection; no command starts after it, none runs past it
TRANSIENT_CODES = ("CONNECTION_FAILED", "TIMEOUT")
# A busy server also makes the CLI answer INTERNAL_ERROR: "failed to challenge server: timeout",
# "error:client_registration" (login), "Communication Error - please try later" (command reply late).
TRANSIENT_INTERNAL = re.compile(
    r"time(d)? ?out|challenge server|client_registration|communication error|cannot (connect|authenticate)"
    r"|did not respond",
    re.IGNORECASE,
)


class CollectError(EvidenceError):
    """--collect cannot start (bad job id, both kit options, no nvflare CLI); one-line message (exit 2)."""


def build_argv(
    name: str, job_id: str, *, startup_kit: str | None = None, kit_id: str | None = None, output_dir: str | None = None
) -> list[str]:
    """The argv (with the display name `nvflare` first) for one allowed command."""
    words = [word.format(job_id=job_id, output_dir=output_dir or "") for word in READ_ONLY_COMMANDS[name]]
    kit = [f"--startup-kit={startup_kit}"] if startup_kit else ([f"--kit-id={kit_id}"] if kit_id else [])
    return [*PREFIX, *words, *kit]


def is_allowed(argv: list[str]) -> bool:
    """True when argv is exactly one of READ_ONLY_COMMANDS (with a valid job id and optional kit option)."""
    if list(argv[: len(PREFIX)]) != list(PREFIX):
        return False
    rest = list(argv[len(PREFIX) :])
    if rest and (rest[-1].startswith("--startup-kit=") or rest[-1].startswith("--kit-id=")):
        rest = rest[:-1]
    if rest and rest[-1] == CONNECT_OPTION:
        rest = rest[:-1]
    for template in READ_ONLY_COMMANDS.values():
        if len(rest) != len(template):
            continue
        if all(_word_ok(word, pattern) for word, pattern in zip(rest, template, strict=True)):
            return True
    return False


def _word_ok(word: str, pattern: str) -> bool:
    if pattern == "{job_id}":
        return valid_job_id(word)
    if pattern == "{output_dir}":
        return os.path.isabs(word) and os.path.basename(os.path.dirname(word)).startswith("nvfdiag-collect-")
    return word == pattern


def is_failed_terminal(status: object) -> bool:
    """FINISHED:<anything but COMPLETED> or FAILED...: the only case in which we download artifacts."""
    if not isinstance(status, str):
        return False
    return (status.startswith("FINISHED:") and status != COMPLETED) or status.startswith("FAILED")


class _Clock:
    """The collection's deadline and the retry policy's pause."""

    def __init__(self, budget: float, sleep, now):
        self.budget, self.sleep, self.now = budget, sleep, now
        self.deadline = now() + budget

    def remaining(self) -> float:
        return self.deadline - self.now()


def collect_from_cli(
    job_id: str,
    *,
    startup_kit: str | None = None,
    kit_id: str | None = None,
    timeout: float = 60,
    runner=None,
    download: bool = True,
    attempts: int = ATTEMPTS,
    budget: float = BUDGET,
    sleep=time.sleep,
    now=time.monotonic,
) -> list[dict]:
    """Run the read-only commands; each result is {"command": argv, "envelope": dict|None, "error": str|None,
    "attempts": int, "reason": str|None} (`timeout` per attempt, `attempts` per command, `budget` seconds in all; `sleep` and
    `now` are replaceable for tests)."""
    _validate(job_id, startup_kit, kit_id)
    runner = runner or run_in_process_group
    binary = _nvflare_binary()
    kit = {"startup_kit": startup_kit, "kit_id": kit_id}
    # The CLI walks its working folder for comm_config.* (nvflare 2.9 ConfigFactory): a full /tmp costs seconds
    # per command and a deeply nested one aborts it ("maximum recursion depth exceeded"), so it gets an empty one.
    workdir = tempfile.mkdtemp(prefix="nvfdiag-cwd-")
    try:
        run = _Runs(binary, runner, timeout, attempts, _Clock(budget, sleep, now), workdir)
        items = []
        for name in ("job_meta", "job_logs", "job_stats", "system_status", "system_resources"):
            items.append(run.one(build_argv(name, job_id, **kit)))
        meta = items[0]["envelope"] or {}
        status = (meta.get("data") or {}).get("status") if isinstance(meta.get("data"), dict) else None
        if download and is_failed_terminal(status):
            items.append(_download(job_id, kit, run))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return items


def _validate(job_id, startup_kit, kit_id) -> None:
    if not valid_job_id(job_id):
        raise CollectError(f"--collect needs a job id of letters, digits, '.', '_' or '-'; got {job_id!r}")
    if startup_kit and kit_id:
        raise CollectError("use either --startup-kit or --kit-id, not both")
    if kit_id and not valid_kit_id(kit_id):
        raise CollectError(f"--kit-id must be letters, digits, '.', '_', '@' or '-'; got {kit_id!r}")
    if startup_kit and not os.path.isdir(startup_kit):
        raise CollectError(f"--startup-kit {startup_kit} is not a folder; pass the admin startup kit directory")


def _nvflare_binary() -> str:
    beside = Path(sys.executable).parent / "nvflare"
    found = str(beside) if beside.is_file() else shutil.which("nvflare")
    if not found:
        raise CollectError(
            "the nvflare CLI was not found; install nvflare==2.9.0 or save the CLI envelopes and pass them as files"
        )
    return found


def sanitized_env() -> dict:
    """Only what the nvflare CLI needs to find its startup kit and config; no secrets, no bytecode writes."""
    env = {key: os.environ[key] for key in ENV_KEEP if key in os.environ}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"})
    return env


class _Runs:
    """Runs allowed commands with the retry policy; once a command failed on every attempt with a transient
    failure, later commands get one attempt each (a server that is down costs one wait per command, not three)."""

    def __init__(self, binary: str, runner, timeout: float, attempts: int, clock: _Clock, workdir: str):
        self.binary, self.runner, self.timeout, self.clock = binary, runner, timeout, clock
        self.attempts, self.workdir = max(1, attempts), workdir

    def one(self, argv: list[str], cwd: str | None = None, reset=None) -> dict:
        """Run one allowed command (in `cwd`, else the empty work folder); `reset` (if given) runs before every
        attempt after the first."""
        if not is_allowed(argv):
            raise CollectError(f"refusing to run a command outside the read-only list: {' '.join(argv)}")
        item = {"command": argv, "envelope": None, "error": None, "attempts": 0}
        while item["attempts"] < self.attempts:
            left = self.clock.remaining()
            if left < 1:
                item["error"] = item["error"] or f"not run: the {self.clock.budget:g} s budget of --collect was spent"
                break
            if item["attempts"] and reset:
                reset()
            item["attempts"] += 1
            timeout = self.timeout if self.timeout <= left else float(int(left))  # whole seconds when cut short
            item.update(_run_once(argv, self.binary, self.runner, timeout, cwd or self.workdir))
            if not _transient(item):
                item["reason"] = reason(item)
                return item
            if item["attempts"] < self.attempts and item["envelope"] is not None:
                self.clock.sleep(min(RETRY_PAUSE * item["attempts"], max(0.0, self.clock.remaining() - 1)))
        if _transient(item):
            self.attempts = 1
        item["reason"] = reason(item)
        return item


def reason(item: dict) -> str | None:
    """Why a command gave no data, in our own words plus the CLI's error code (never CLI or server text): the
    report's missing_evidence shows it, e.g. `timed out after 60 s; 3 attempts` or `CONNECTION_FAILED`."""
    envelope, error = item["envelope"], item["error"]
    if not error:
        return None
    if envelope is not None:
        code = envelope.get("error_code")
        text = code if isinstance(code, str) and re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", code) else "error envelope"
    elif error.startswith(("timed out", "not run")):
        text = error
    else:
        text = error.split(":", 1)[0]  # "exit N, no JSON envelope" / "could not start nvflare"
    return text + (f"; {item['attempts']} attempts" if item["attempts"] > 1 else "")


def _transient(item: dict) -> bool:
    """A failure worth another attempt: the command timed out, or the CLI says it could not connect, log in or get
    a reply in time."""
    envelope = item["envelope"]
    if envelope is None:
        return str(item["error"] or "").startswith("timed out")
    if envelope.get("status") != "error":
        return False
    code, message = envelope.get("error_code"), str(envelope.get("message", ""))[:500]
    return code in TRANSIENT_CODES or (code == "INTERNAL_ERROR" and bool(TRANSIENT_INTERNAL.search(message)))


def executed_argv(argv: list[str], binary: str) -> list[str]:
    """The argv actually run: the real binary first, and the connect timeout before any kit option."""
    words = [binary, *argv[1:]]
    has_kit = words[-1].startswith(("--startup-kit=", "--kit-id="))
    return [*words[:-1], CONNECT_OPTION, words[-1]] if has_kit else [*words, CONNECT_OPTION]


def _run_once(argv: list[str], binary: str, runner, timeout: float, cwd: str) -> dict:
    """One attempt: {"envelope", "error"} (the item's other keys are the caller's)."""
    item = {"envelope": None, "error": None}
    try:
        proc = runner(
            executed_argv(argv, binary),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env=sanitized_env(),
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        item["error"] = f"timed out after {timeout:g} s"
        return item
    except OSError as exc:
        item["error"] = f"could not start nvflare: {exc.strerror or exc}"
        return item
    item["envelope"] = parse_envelope(proc.stdout or b"")
    if item["envelope"] is None:
        stderr = (proc.stderr or b"").decode("utf-8", errors="replace").strip().splitlines()
        item["error"] = f"exit {proc.returncode}, no JSON envelope" + (f": {stderr[-1][:200]}" if stderr else "")
    elif item["envelope"].get("status") == "error":
        item["error"] = (
            f"{item['envelope'].get('error_code', 'ERROR')}: {str(item['envelope'].get('message', ''))[:200]}"
        )
    return item


def parse_envelope(stdout: bytes) -> dict | None:
    """The JSON envelope in a CLI's stdout (the whole output, else the last line that parses)."""
    if len(stdout) > MAX_OUTPUT_BYTES:
        return None
    text = stdout.decode("utf-8", errors="replace").strip()
    for candidate in [text, *reversed(text.splitlines())]:
        if candidate.startswith("{") and isinstance(value := jsontext.parse(candidate), dict):
            return value
    return None


def _download(job_id, kit, run: _Runs) -> dict:
    temp = tempfile.mkdtemp(prefix="nvfdiag-collect-")
    try:
        output_dir = os.path.join(temp, "download")
        argv = build_argv("job_download", job_id, output_dir=output_dir, **kit)
        item = run.one(argv, temp, reset=lambda: shutil.rmtree(output_dir, ignore_errors=True))
        data = (item["envelope"] or {}).get("data")
        if isinstance(data, dict) and isinstance(data.get("artifacts"), dict):
            item["artifacts_read"] = _read_artifacts(data["artifacts"], temp)
        return item
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _read_artifacts(artifacts: dict, temp: str) -> list[dict]:
    """Read (bounded) the metrics and client logs the download names, only inside our temp folder."""
    wanted = [
        ("metrics_summary", artifacts.get("metrics_summary"), None),
        ("round_metrics", artifacts.get("round_metrics"), None),
    ]
    logs = artifacts.get("client_logs") if isinstance(artifacts.get("client_logs"), dict) else {}
    wanted += [("client_log", path, site) for site, path in sorted(logs.items())]
    root = os.path.realpath(temp) + os.sep
    out = []
    for name, path, site in wanted:
        if not isinstance(path, str) or not os.path.realpath(path).startswith(root):
            continue
        try:
            chunk = read_head_tail(os.path.realpath(path), ARTIFACT_MAX_BYTES)
        except ReadFailure:
            continue
        if chunk.binary:
            continue
        text = "\n".join(line for _, line in chunk_lines(chunk))
        display = f"job download:{os.path.relpath(path, temp)}"
        out.append({"name": name, "path": display, "site": site, "text": text, "truncated": chunk.truncated})
    return out


def run_in_process_group(argv, *, timeout, **kwargs):
    """subprocess.run in a new session; on timeout the whole process group is killed, then re-raised."""
    with subprocess.Popen(
        argv,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=kwargs.get("stdin"),
        env=kwargs.get("env"),
        cwd=kwargs.get("cwd"),
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise
        except BaseException:
            _kill_group(proc)
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
