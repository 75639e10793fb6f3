"""The `nvflare` admin CLI steps of an external run (poc/prod): system status, submit, wait, list, download.

Each step is one child process: the campaign's interpreter runs NVFLARE's own CLI (`nvflare.cli.main`) with
`--format json` and the user's admin startup kit (`--startup-kit PATH` or `--kit-id ID`; the runner never opens
the kit, the CLI does), argv only, the allowlisted environment of a trial child (`childenv`), from an empty
temporary folder (NVFLARE walks its working folder for comm_config files), its output bounded. The JSON envelope
NVFLARE prints (`status` ok|error, `data`, `error_code`, `message`) is the only thing read. Usage::

    kit = Kit(startup_kit="/path/admin@nvidia.com")
    cli = FlareCli(python, kit, job_folder=workspace)
    sites = cli.system_sites()                       # ["site-1", "site-2"]
    job_id = cli.submit(exported_job_folder)
    done = cli.wait(job_id, timeout=60)              # Waited(finished, status, meta)
    folder = cli.download(job_id, destination)       # destination/<job_id>
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..common import bounded, trees
from . import childenv, job_meta

MAX_OUTPUT_BYTES = 4 * 1024 * 1024
STEP_TIMEOUT = 300.0  # a CLI step other than wait (connect, submit, download) that takes longer has hung
WAIT_SLACK = 60.0  # the wait step's own bound beyond the --timeout it passes to `job wait`
# `job wait`'s status poll (NVFLARE's default is 2 s: a finished job was seen up to 2 s late, 1 s on average, at
# every wait); each poll is one small `get_job_meta` request on the open admin session
WAIT_POLL_SECONDS = 0.5
JOB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
CLI_CODE = "import sys\nfrom nvflare.cli import main\nsys.argv[0] = 'nvflare'\nsys.exit(main())"


class FlareCliError(Exception):
    """A step failed; str() is one line naming the step and NVFLARE's own words (error code, message, hint)."""


@dataclass(frozen=True)
class Kit:
    """The admin startup kit a step uses: a kit folder or a registered kit id (never both)."""

    startup_kit: str | None = None
    kit_id: str | None = None

    def args(self) -> list[str]:
        return ["--startup-kit", str(self.startup_kit)] if self.startup_kit else ["--kit-id", str(self.kit_id)]

    def shown(self) -> str:
        """How the envelope and records name the kit (its path or id, never its contents)."""
        return f"--startup-kit {self.startup_kit}" if self.startup_kit else f"--kit-id {self.kit_id}"


@dataclass(frozen=True)
class Waited:
    """The end of one bounded `job wait`: finished or not, NVFLARE's status word and the job's metadata."""

    finished: bool
    status: str | None
    meta: job_meta.JobMeta | None


class FlareCli:
    """The CLI steps against one FLARE system (the kit's), run with the campaign's interpreter."""

    def __init__(self, python: str, kit: Kit, *, job_folder: Path | str, parent_env=None):
        self.python, self.kit, self.job_folder = str(python), kit, Path(job_folder)
        self.parent_env = os.environ if parent_env is None else parent_env

    def system_sites(self) -> list[str]:
        """The client sites `system status` lists as connected."""
        data = self._step("system status", ["system", "status"])
        clients = data.get("clients") if isinstance(data, dict) else None
        names = [c.get("client_name") for c in clients or [] if isinstance(c, dict)]
        return sorted({name for name in names if isinstance(name, str) and name})

    def submit(self, job_folder: Path) -> str:
        data = self._step("job submit", ["job", "submit", "-j", str(job_folder)])
        job_id = data.get("job_id") if isinstance(data, dict) else None
        if not isinstance(job_id, str) or not JOB_ID_RE.fullmatch(job_id):
            raise FlareCliError(f"nvflare job submit returned no job id ({_short(data)})")
        return job_id

    def jobs_named(self, name: str) -> list[str]:
        """Ids of the jobs `job list` shows with job name `name` (to find a submission whose id was lost)."""
        data = self._step("job list", ["job", "list"])
        jobs = data if isinstance(data, list) else []
        return [
            job["job_id"]
            for job in jobs
            if isinstance(job, dict) and job.get("job_name") == name and isinstance(job.get("job_id"), str)
        ]

    def wait(self, job_id: str, timeout: float) -> Waited:
        """`job wait` for at most `timeout` seconds, polling every WAIT_POLL_SECONDS: a finished job (any final
        status) or not yet."""
        seconds = max(int(timeout), 1)
        code, envelope = self._run(
            ["job", "wait", job_id, "--timeout", str(seconds), "--interval", str(WAIT_POLL_SECONDS)],
            timeout=seconds + WAIT_SLACK,
            step="job wait",
        )
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        if envelope.get("status") == "ok" or (code == 1 and data.get("status")):  # 1: finished, not completed
            return Waited(True, data.get("status"), job_meta.from_document(data.get("job_meta") or data))
        if envelope.get("error_code") == "TIMEOUT":
            return Waited(False, None, None)
        raise FlareCliError(_error_text("job wait", code, envelope))

    def download(self, job_id: str, destination: Path) -> Path:
        destination.mkdir(parents=True, exist_ok=True)
        trees.remove_tree(destination / job_id)  # a download an interrupted step left half-written
        data = self._step("job download", ["job", "download", job_id, "-o", str(destination)])
        folder = destination / job_id
        if not folder.is_dir() or folder.is_symlink():
            raise FlareCliError(f"nvflare job download left no folder {folder} ({_short(data)})")
        return folder

    # --- one child -------------------------------------------------------------------------------------------
    def _step(self, step: str, args: list[str]):
        code, envelope = self._run(args, timeout=STEP_TIMEOUT, step=step)
        if code != 0 or envelope.get("status") != "ok":
            raise FlareCliError(_error_text(step, code, envelope))
        return envelope.get("data")

    def _run(self, args: list[str], *, timeout: float, step: str) -> tuple[int, dict]:
        cwd = Path(tempfile.mkdtemp(prefix="autofl-cli-"))
        env = childenv.build_child_env(
            self.parent_env, passthrough=[], simulator_root=cwd / "unused", token=secrets.token_hex(16)
        )
        argv = [*childenv.helper_argv(self.python, CLI_CODE, env, self.job_folder), "--format", "json", *args]
        argv += self.kit.args()
        try:
            done = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise FlareCliError(f"nvflare {step} gave no answer within {timeout:g} s") from None
        except OSError as error:
            raise FlareCliError(f"nvflare {step} could not start: {error.strerror or error}") from None
        finally:
            trees.remove_tree(cwd)
        return done.returncode, _envelope(done.stdout[-MAX_OUTPUT_BYTES:], done.stderr[-2000:])


def _envelope(stdout: bytes, stderr: bytes) -> dict:
    """NVFLARE's JSON envelope: the last line of stdout that is a JSON object with a `status`."""
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                document = bounded.parse_json(line, allow_nan=True)
            except bounded.BoundedReadError:
                continue
            if isinstance(document, dict) and "status" in document:
                return document
    tail = " ".join(stderr.decode("utf-8", "replace").split())[-300:]
    return {"status": "error", "message": f"no JSON answer{f' ({tail})' if tail else ''}"}


def _error_text(step: str, code: int, envelope: dict) -> str:
    words = [str(envelope.get(key)) for key in ("error_code", "message", "hint") if envelope.get(key)]
    return f"nvflare {step} failed (exit {code}): " + " ".join(" - ".join(words).split())[:500]


def _short(data) -> str:
    return " ".join(json.dumps(data, default=str).split())[:200]
