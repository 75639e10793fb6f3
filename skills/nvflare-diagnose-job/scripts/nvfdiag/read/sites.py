"""Site names and identifiers: validation, which site labels are the server, and the sites and workspaces a line names.

Usage: `valid_site(name)`, `valid_job_id(value)`, `nvflare_job_id(value)` (a UUID, as NVFLARE names a job),
`valid_kit_id(value)`, `valid_job_status(value)`, `is_server(site)`; `job_identity(...)` -> the job status and id a report names;
`site_in_text(text)` -> the site a line of stdout names (a SimEnv path, `Result from site-3 is bad`, `peer=site-3`);
`logs_dir_named(text)` / `workspace_named(text)` -> the SimEnv job workspace a line names. Pure. The one place for
these identifier rules (CLI options, readers, --collect and the report all use them); only names and paths that pass
them are ever written into follow-up commands or likely_cause.
Site names follow NVFLARE's participant rule (letters, digits, '-', '_'; dots for server host names); '@' is not
allowed (it belongs to admin user names, which are not sites).
"""

from __future__ import annotations

import re

SITE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# NVFLARE's own job ids: str(uuid.uuid4()) (the job definition manager names every submitted job so)
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
JOB_STATUS_RE = re.compile(r"^[A-Za-z_]{1,40}(?::[A-Za-z_]{1,40})?$")
KIT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")  # startup-kit ids may be admin user names
SERVER_LABELS = ("server",)
MAX_TEXT = 4096
# Where NVFLARE's output names a site: the simulator's per-site folder (<root>/<job>/site-3/simulate_job/app_site-3),
# the controller's verdict on a result, the peer of a server-side record. First match wins.
_SITE_MENTIONS = (
    re.compile(r"[\\/]([A-Za-z0-9][\w.-]{0,63})[\\/]simulate_job[\\/]app_\1\b"),
    re.compile(r"\bResult from ([A-Za-z0-9][\w.-]{0,63}) is bad\b"),
    re.compile(r"\bpeer=([A-Za-z0-9][\w.-]{0,63}?),"),
)
_LOGS_DIR = re.compile(r"Logs are in per-site subdirectories under (\S{1,512}?),? e\.g\.")
_WORKSPACE_PATH = re.compile(r"(/[\w.~-]{1,80}(?:/[\w.~-]{1,80}){0,20}?)/[A-Za-z0-9][\w.-]{0,63}/simulate_job/")
_SAFE_PATH = re.compile(r"^[\w./~-]{1,512}$")


def valid_site(name: object) -> bool:
    return isinstance(name, str) and bool(SITE_RE.match(name))


def valid_job_id(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_ID_RE.match(value))


def nvflare_job_id(value: object) -> bool:
    """A job id as NVFLARE names a submitted job (a UUID)."""
    return isinstance(value, str) and bool(UUID_RE.match(value))


COMPLETED = "FINISHED:COMPLETED"  # the one final status of a job that did not fail


def valid_job_status(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_STATUS_RE.match(value))


def nvflare_job_status(value: object) -> bool:
    """A status as NVFLARE itself writes it (upper case, e.g. FINISHED:EXECUTION_EXCEPTION)."""
    return valid_job_status(value) and value == value.upper()


def valid_kit_id(value: object) -> bool:
    return isinstance(value, str) and bool(KIT_ID_RE.match(value))


def is_server(site: str | None) -> bool:
    return site is None or site in SERVER_LABELS


def site_in_text(text: str) -> str | None:
    """The site a line names (a SimEnv site folder, `Result from X is bad`, `peer=X`), validated; else None."""
    head = text[:MAX_TEXT]
    if "simulate_job" not in head and "Result from" not in head and "peer=" not in head:
        return None
    for pattern in _SITE_MENTIONS:
        match = pattern.search(head)
        if match and valid_site(match.group(1)):
            return match.group(1)
    return None


def safe_path(path: str) -> bool:
    """A path made of plain characters only (letters, digits, `_ . / ~ -`), without `..`: safe in a command."""
    return bool(_SAFE_PATH.match(path)) and ".." not in path


def logs_dir_named(text: str) -> str | None:
    """The per-site log folder the simulator's `Simulation failed ... Logs are in ... under X` line names."""
    match = _LOGS_DIR.search(text[:MAX_TEXT])
    return match.group(1) if match and safe_path(match.group(1)) else None


def workspace_named(text: str) -> str | None:
    """The SimEnv job workspace (`<root>/<job>`) a line names: the simulator's log folder, or the part of a
    `<root>/<job>/<site>/simulate_job/...` path before the site folder."""
    named = logs_dir_named(text)
    if named or "simulate_job/" not in text[:MAX_TEXT]:
        return named
    match = _WORKSPACE_PATH.search(text[:MAX_TEXT])
    return match.group(1) if match and safe_path(match.group(1)) else None


def job_identity(
    user_id: str | None, user_status: str | None, found_id: str | None, found_status: str | None, listed: dict
) -> tuple[str | None, str | None, bool]:
    """The job status and id to report (the user's when valid, else the evidence's; a status also from the job's
    row of a `job list` answer, `listed`: id -> status) and whether the user's id is valid (it decides the mode)."""
    status = user_status if valid_job_status(user_status) else None
    status = status or (found_status if valid_job_status(found_status) else None)
    user_given = valid_job_id(user_id)
    job_id = user_id if user_given else (found_id if valid_job_id(found_id) else None)
    listed_status = listed.get(job_id) if job_id else None
    return status or (listed_status if valid_job_status(listed_status) else None), job_id, user_given
