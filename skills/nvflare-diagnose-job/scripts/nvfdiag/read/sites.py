"""Site names and identifiers: validation and which sites a symptom depends on.

Usage: `valid_site(name)`, `valid_job_id(value)`, `valid_kit_id(value)`, `dependent_sites(texts, hit_sites, known)`.
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
_PEER = re.compile(r"\bpeer=([A-Za-z0-9][A-Za-z0-9._-]{0,63})")
_SITE_TOKEN = re.compile(r"\b(site-\d{1,6})\b")


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


def mentioned_sites(text: str, known: set[str]) -> set[str]:
    """Client sites a line names: peer=..., site-N tokens, or any known site label appearing as a word."""
    found = set(_PEER.findall(text)) | {m.rstrip(".,;:") for m in _SITE_TOKEN.findall(text)}
    for name in known:
        if not is_server(name) and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            found.add(name)
    return {name for name in found if valid_site(name) and not is_server(name)}


def dependent_sites(texts: list[str], hit_sites: list[str | None], known: set[str]) -> tuple[set[str], bool]:
    """Sites a symptom depends on, and whether it is a server-side view that names no site."""
    named: set[str] = set()
    for text in texts:
        named |= mentioned_sites(text[:4096], known)
    named |= {site for site in hit_sites if not is_server(site) and valid_site(site)}
    server_only = not named and all(is_server(site) for site in hit_sites)
    return named, server_only
