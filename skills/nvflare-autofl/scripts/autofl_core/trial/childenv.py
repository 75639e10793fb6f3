"""The allowlisted environment of a trial's child process. Pure.

Only interpreter, locale, temp, proxy/CA, thread-count and GPU-visibility variables are
copied from the parent, plus names the user declared in
`environment.simulator_env_passthrough` (validated; their values are never stored or
logged). The runner adds the isolated simulator root, the per-trial token used to find
stray processes at termination, PYTHONUNBUFFERED=1 so progress streams live, and
optionally a private per-trial TMPDIR/TEMP/TMP (NVFLARE leaves exported job folders in
the temp dir; a private one is deleted with the trial).

Usage: env = build_child_env(os.environ, passthrough=[], simulator_root=root, token=tok)
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from .argv import TrialError

SIMULATOR_ROOT_VAR = "NVFLARE_SIMULATOR_WORKSPACE_ROOT"
TOKEN_VAR = "AUTOFL_TRIAL_TOKEN"
ATTEMPT_VAR = "AUTOFL_TRIAL_ATTEMPT"  # 1, or 2 for the run again after an infrastructure stall
INVALID_PASSTHROUGH = "AUTOFL_INVALID_ENV_PASSTHROUGH"

LOCATING_NAMES = frozenset(
    {
        "PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "PYENV_VERSION",
        "HOME",
        "TMPDIR",
        "TEMP",
        "TMP",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "LD_LIBRARY_PATH",
    }
)  # where the interpreter, libraries, files, locale and network are: the machine's, never a job's knob
ALLOWED_NAMES = LOCATING_NAMES | {
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
}
RUNNER_SET = frozenset({SIMULATOR_ROOT_VAR, TOKEN_VAR, "PYTHONUNBUFFERED"})
PASSTHROUGH_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def validate_passthrough(names: Iterable[str]) -> list[str]:
    """Return the sorted, de-duplicated passthrough names; raise TrialError for an invalid one."""
    valid = set()
    for name in names:
        if not isinstance(name, str) or not PASSTHROUGH_NAME_RE.fullmatch(name):
            raise TrialError(
                INVALID_PASSTHROUGH,
                f"simulator_env_passthrough entry {name!r} is not a variable name (letters, digits, underscore)",
            )
        if name in RUNNER_SET:
            raise TrialError(INVALID_PASSTHROUGH, f"{name} is set by the runner and cannot be passed through")
        valid.add(name)
    return sorted(valid)


def build_child_env(
    parent: Mapping[str, str],
    *,
    passthrough: Iterable[str],
    simulator_root: Path | str,
    token: str,
    temp_dir: Path | str | None = None,
) -> dict[str, str]:
    """The child's complete environment: allowlisted + declared parent variables, then runner settings.

    `temp_dir` (optional) replaces TMPDIR/TEMP/TMP with a per-trial folder the runner deletes afterwards.
    """
    names = ALLOWED_NAMES.union(validate_passthrough(passthrough))
    env = {name: parent[name] for name in sorted(names) if name in parent}
    if temp_dir is not None:
        env.update(TMPDIR=str(temp_dir), TEMP=str(temp_dir), TMP=str(temp_dir))
    env[SIMULATOR_ROOT_VAR] = str(simulator_root)
    env[TOKEN_VAR] = token
    env["PYTHONUNBUFFERED"] = "1"
    return env


def helper_argv(python: str, code: str, env: Mapping[str, str], job_folder: Path | str) -> list[str]:
    """argv of a helper the runner starts outside any trial (interpreter check, version probe): `python -I -c`.

    Isolated mode puts neither the working folder nor the job on sys.path, so a module a candidate left in the
    job (an `importlib.py`) never runs outside a trial. It also ignores PYTHONPATH, so the PYTHONPATH folders
    that lie outside the job are put back explicitly: an interpreter that finds nvflare through them still does.
    """
    job = os.path.realpath(job_folder)
    kept = []
    for entry in (env.get("PYTHONPATH") or "").split(os.pathsep):
        real = os.path.realpath(entry) if entry and os.path.isabs(entry) else ""
        if real and real != job and not real.startswith(job + os.sep) and real not in kept:
            kept.append(real)
    prefix = f"import sys; sys.path[0:0] = {kept!r}\n" if kept else ""
    return [str(python), "-I", "-c", prefix + code]


def run_helper(python: str, code: str, env: dict[str, str], job_folder: Path | str, timeout: float):
    """Run a helper (`helper_argv`) from the temp folder with `env`, output captured as text; a
    CompletedProcess (OSError or SubprocessError when it cannot be started or runs past `timeout`)."""
    return subprocess.run(
        helper_argv(python, code, env, job_folder),
        cwd=tempfile.gettempdir(),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
