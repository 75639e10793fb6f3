"""Site names and identifiers: validation, which site labels are the server, and the sites and workspaces a line names.

Usage: `valid_site(name)`, `valid_job_id(value)`, `nvflare_job_id(value)` (a UUID, as NVFLARE names a job),
`valid_kit_id(value)`, `valid_job_status(value)`, `is_server(site)`; `job_identity(user_id, user_status, evidence)` -> the job a report names (`JobIdentity`);
`site_in_text(text)` -> the site a line of stdout names (a SimEnv path, `Result from site-3 is bad`, `peer=site-3`);
`logs_dir_named(text)` / `workspace_named(text)` -> the SimEnv job workspace a line names. Pure. The one place for
these identifier rules (CLI options, readers, --collect and the report all use them); only names and paths that pass
them are ever written into follow-up commands or likely_cause.
Site names follow NVFLARE's participant rule (letters, digits, '-', '_'; dots for server host names); '@' is not
allowed (it belongs to admin user names, which are not sites).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


@dataclass(frozen=True)
class JobIdentity:
    """The job a report names: its id and status, whether the user gave a valid id (it decides the mode), and the
    ids the evidence states when it states two and the user gave none (`ids_differ`: none is picked)."""

    job_id: str | None
    status: str | None
    user_given: bool
    ids_differ: tuple[str, ...]


def job_identity(user_id: str | None, user_status: str | None, evidence) -> JobIdentity:
    """The job status and id to report: the user's when valid, else the evidence's (`Evidence`: its one stated id,
    and a status only of the job the report names: the first stated when the evidence names no other job, else the
    one stated with this job's id; then the job's row of a `job list` answer). Two ids and none given: no status."""
    user_given = valid_job_id(user_id)
    found_id = None if evidence.other_job_ids else evidence.job_id  # two ids: none is picked
    job_id = user_id if user_given else (found_id if valid_job_id(found_id) else None)
    named = {evidence.job_id, *evidence.other_job_ids} - {None}
    stated = evidence.job_status if named <= {job_id} else evidence.status_of.get(job_id)
    listed = evidence.listed_status.get(job_id) if job_id else None
    status = next((value for value in (user_status, stated, listed) if valid_job_status(value)), None)
    differ = () if user_given or not evidence.other_job_ids else (evidence.job_id, *evidence.other_job_ids)
    return JobIdentity(job_id, status, user_given, differ)
