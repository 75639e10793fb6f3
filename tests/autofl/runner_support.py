"""Shared helpers of the campaign-runner tests: a stand-in workspace, the runner (in-process or as a CLI),
and schema validation of every document the runner writes.

`run_cli` runs `run_job_campaign.py` as a user would and validates, after every action, the envelope, the
state file, campaign.json and every candidate manifest against `shared/schemas/` (so documents are checked
as the runner writes them). `run_inproc` calls the same lifecycle in this process (fast mechanics tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jsonschema import Draft202012Validator

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
RUNNER = SCRIPTS / "run_job_campaign.py"
STANDIN = Path(__file__).resolve().parent / "standin_campaign"
SCHEMAS = REPO / "shared" / "schemas"
_VALIDATORS: dict[str, Draft202012Validator] = {}
# A command prefix standing for a locked-down container: a user namespace of its own in which no further user
# namespace may be made, so the runner cannot seal its trials (run_cli(..., prefix=WITHOUT_NAMESPACES)).
WITHOUT_NAMESPACES = ("unshare", "-U", "-r", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces; exec "$@"', "sh")


@dataclass
class Done:
    code: int
    envelope: dict | None
    stderr: str
    pid: int | None = None  # the runner's process id (run_cli only)


def dry_run(job: Path, args: list[str], python: str | None = None):
    """The dry-run record of `python job.py ARGS` in a session of its own (None where this host cannot seal one)."""
    from autofl_core.importer import dryrun

    with dryrun.Session(job, python=python) as session:
        return session.run(args)


def standin_workspace(tmp_path: Path, name: str = "ws") -> Path:
    workspace = tmp_path / name
    shutil.copytree(STANDIN, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    return workspace


def initialized_standin(tmp_path: Path, *initialize_args: str) -> Path:
    """A stand-in campaign after a successful `initialize` (baseline included) with these options."""
    workspace = standin_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", *initialize_args)
    assert done.code == 0, done.stderr
    return workspace


def run_cli(
    workspace: Path,
    action: str,
    *args: str,
    python: str | None = None,
    env: dict | None = None,
    timeout: float = 300,
    job: str = "job.py",
    prefix: tuple[str, ...] = (),
    stdin=None,
) -> Done:
    """The runner as a subprocess; documents are schema-checked after every action that printed an envelope.

    `prefix` is put before the runner's argv (e.g. an `unshare ... exec "$@"` wrapper that execs it in place,
    so `Done.pid` stays the runner's pid); `stdin` is the runner's standard input (inherited by default).
    """
    command = [*prefix, python or sys.executable, str(RUNNER), action, str(workspace / job), *args]
    with subprocess.Popen(
        command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=workspace
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    envelope = json.loads(stdout) if stdout.strip() else None
    if envelope is not None:
        assert_documents_valid(workspace, envelope)
    else:
        assert process.returncode != 0, stderr
    return Done(process.returncode, envelope, stderr, process.pid)


def run_inproc(workspace: Path, action: str, *args: str, job: str = "job.py") -> Done:
    """The same lifecycle in this process: (exit code, envelope, error line)."""
    from autofl_core.runner import lifecycle
    from autofl_core.runner.outcome import CampaignError

    runner = _runner_module()
    options = runner.build_parser().parse_args(runner.join_argument_strings([action, str(workspace / job), *args]))
    try:
        code, envelope = lifecycle.run(action, options)
    except CampaignError as error:
        return Done(error.exit_code, None, str(error))
    envelope = json.loads(json.dumps(envelope, sort_keys=True))
    assert_documents_valid(workspace, envelope)
    return Done(code, envelope, "")


def assert_documents_valid(workspace: Path, envelope: dict) -> None:
    _check("runner_envelope.v1", envelope, "envelope")
    state = Path(envelope["state"])
    if state.exists():
        _check("campaign_state.v1", json.loads(state.read_text()), str(state))
    meta = workspace / ".nvflare" / "autofl" / "campaign.json"
    if meta.exists():
        _check("campaign.v1", json.loads(meta.read_text()), str(meta))
    for manifest in sorted((workspace / ".nvflare" / "autofl" / "candidates").glob("*/candidate_manifest.json")):
        _check("candidate_manifest.v1", json.loads(manifest.read_text()), str(manifest))
    report = Path(envelope["report"]).with_suffix(".json")
    if report.exists() and (SCHEMAS / "autofl_report.v1.schema.json").exists():
        _check("autofl_report.v1", json.loads(report.read_text()), str(report))


def tree_digest(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """{relative path: sha256} of every file under root (symlinks by target text), for byte-identity checks."""
    digest = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                continue
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            digest[rel] = hashlib.sha256(data).hexdigest()
    return digest


def ledger_records(workspace: Path) -> list:
    """The workspace's ledger as the runner reads it (`ledger.LedgerRow` records)."""
    from autofl_core.campaign import ledger

    return ledger.read_rows(workspace / "results.tsv")


def ledger_rows(workspace: Path) -> list[dict]:
    """The workspace's ledger rows as dicts keyed by column (`LedgerRow.to_row`), for assertions."""
    return [record.to_row() for record in ledger_records(workspace)]


def manifest(workspace: Path, name: str) -> dict:
    return json.loads((workspace / ".nvflare" / "autofl" / "candidates" / name / "candidate_manifest.json").read_text())


def source_dir(workspace: Path, name: str) -> Path:
    return workspace / ".nvflare" / "autofl" / "candidates" / name / "source"


def set_bonus(folder: Path, value: float) -> None:
    path = folder / "client.py"
    text = path.read_text()
    lines = [f"BONUS = {value}" if line.startswith("BONUS = ") else line for line in text.splitlines()]
    path.write_text("\n".join(lines) + "\n")


def _check(kind: str, document: dict, where: str) -> None:
    validator = _VALIDATORS.get(kind)
    if validator is None:
        validator = Draft202012Validator(json.loads((SCHEMAS / f"{kind}.schema.json").read_text()))
        _VALIDATORS[kind] = validator
    errors = ["/".join(map(str, e.absolute_path)) + ": " + e.message for e in validator.iter_errors(document)]
    assert not errors, f"{where} violates {kind}: {errors[:3]}"


def _runner_module():
    from module_loader import load_by_path

    return load_by_path("run_job_campaign_under_test", RUNNER)


def token_processes(token: str) -> list[int]:
    """Live (not zombie) processes whose environment carries the trial token `token`."""
    needle = f"AUTOFL_TRIAL_TOKEN={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read():
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        if stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
                            found.append(int(entry))
        except OSError:
            continue
    return found


def run_trial_settled(trial_spec):
    """run_trial as the runner calls it: a stall NVFLARE's simulator causes itself (its race as a site's worker
    starts, seen under load) is run once more (`runner/campaign_trial`); any other outcome is the first one."""
    from autofl_core.trial import watchdog
    from autofl_core.trial.execute import run_trial

    result = run_trial(trial_spec)
    if watchdog.infrastructure_stall(result.failure_reason):
        result = run_trial(trial_spec)
    return result


def run_job_settled(command: list[str], cwd: Path, env: dict, timeout: float = 600.0) -> tuple[int, str]:
    """A job run bare (no runner) under the runner's rule for NVFLARE's own stall: a run whose output shows it
    (`watchdog.INFRASTRUCTURE_STALLS`; the simulator then waits forever) is ended and run once more. Returns
    (exit code, output); a run over `timeout` seconds fails with its output. Every process of a run is ended
    (the simulator and its workers start sessions of their own, so they are found by a token in their env)."""
    from autofl_core.trial import watchdog

    code, output = _run_job_watched(command, cwd, env, timeout, watchdog.INFRASTRUCTURE_STALLS)
    if code is None:
        code, output = _run_job_watched(command, cwd, env, timeout, watchdog.INFRASTRUCTURE_STALLS)
    assert code is not None, f"the bare job stalled twice (NVFLARE's own stall):\n{output[-3000:]}"
    return code, output


def _run_job_watched(command, cwd, env, timeout, stall) -> tuple[int | None, str]:
    """One run of the job: (exit code, output), or (None, output) once its output shows `stall`."""
    from autofl_core.trial import childenv, processes

    token = (childenv.TOKEN_VAR, uuid.uuid4().hex)
    lines: list[str] = []
    with subprocess.Popen(
        command,
        cwd=cwd,
        env={**env, token[0]: token[1]},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as process:
        reader = threading.Thread(target=_collect, args=(process.stdout, lines), daemon=True)
        reader.start()
        deadline, seen = time.monotonic() + timeout, 0
        try:
            while process.poll() is None:
                new = lines[seen:]
                seen += len(new)
                if any(stall.search(line) for line in new):
                    return None, "".join(lines)
                assert time.monotonic() < deadline, f"the bare job ran over {timeout:.0f} s:\n{''.join(lines)[-3000:]}"
                time.sleep(0.5)
        finally:
            processes.terminate_tree(process.pid, token)
            reader.join(timeout=10)
    return process.returncode, "".join(lines)


def _collect(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)
