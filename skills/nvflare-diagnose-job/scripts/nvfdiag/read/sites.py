"""Site names and identifiers: validation, and which site labels are the server.

Usage: `valid_site(name)`, `valid_job_id(value)`, `valid_kit_id(value)`, `valid_job_status(value)`, `is_server(site)`.
Pure. The one place for these identifier rules (CLI options, readers, --collect and the report all use them); only
names that pass them are ever written into follow-up commands or likely_cause.
Site names follow NVFLARE's participant rule (letters, digits, '-', '_'; dots for server host names); '@' is not
allowed (it belongs to admin user names, which are not sites).
"""

from __future__ import annotations

import re

SITE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
JOB_STATUS_RE = re.compile(r"^[A-Za-z_]{1,40}(?::[A-Za-z_]{1,40})?$")
KIT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")  # startup-kit ids may be admin user names
SERVER_LABELS = ("server",)


def valid_site(name: object) -> bool:
    return isinstance(name, str) and bool(SITE_RE.match(name))


def valid_job_id(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_ID_RE.match(value))


def valid_job_status(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_STATUS_RE.match(value))


def nvflare_job_status(value: object) -> bool:
    """A status as NVFLARE itself writes it (upper case, e.g. FINISHED:EXECUTION_EXCEPTION)."""
    return valid_job_status(value) and value == value.upper()


def valid_kit_id(value: object) -> bool:
    return isinstance(value, str) and bool(KIT_ID_RE.match(value))


def is_server(site: str | None) -> bool:
    return site is None or site in SERVER_LABELS
