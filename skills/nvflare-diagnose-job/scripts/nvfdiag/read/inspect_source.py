"""Saved `nvflare agent inspect source --format json` output (nvflare 2.9) -> evidence lines.

Usage: `ingest(ev, envelope, source, bytes_read)` for an envelope whose `data.capability` is "source" (or whose
`error_code` starts with AGENT_INSPECT). Each finding becomes `inspect source finding CODE at file:line (meaning)`;
only the code, file and line are used: a finding's `value`/`name` can hold a secret or a path (with
`--redact off`) and is never copied. NVFLARE flags every string literal that starts with '/', '~' or a drive
letter as ABSOLUTE_DATA_PATH (a lone "/" path separator too): when the value is shown and is not a path, the
finding becomes an `inspect source note` that supports nothing; a redacted value is relayed as "check that line".
A failed inspection's source is `complete` when it is a saved file (read whole) and `unavailable` when --collect
ran it; either way its note is the error code and no finding comes from it.
"""

from __future__ import annotations

import re

from ..model import Evidence, Line, Source

MAX_FINDINGS = 200
_CODE = re.compile(r"^[A-Z][A-Z0-9_]{1,63}$")
_FILE = re.compile(r"^[\w.@+-]+(?:/[\w.@+-]+){0,15}$")
_DATA_PATH = re.compile(r"^(?:/|~/|[A-Za-z]:[\\/])(?!/)[^\s{}%]*[A-Za-z0-9][^\s{}%]*$")
_REDACTED = re.compile(r"^<REDACTED[A-Z_]*>$")
# Meanings of the finding codes the catalog uses (others are shown by code only).
MEANINGS = {
    "ABSOLUTE_DATA_PATH": (
        "string literal starting with '/', '~' or a drive letter, value not shown; check that "
        "line is a data path before calling it a hard-coded absolute path"
    ),
    "PYTHON_PARSE_ERROR": "the file does not parse as Python",
    "SECRET_LITERAL_REDACTED": "secret-like literal in the source; value not shown",
}


def is_code(value: object) -> bool:
    """An upper-case finding or error code (`ABSOLUTE_DATA_PATH`, `AGENT_INSPECT_PATH_NOT_FOUND`)."""
    return isinstance(value, str) and bool(_CODE.match(value))


def ingest(ev: Evidence, envelope: dict, source: str, bytes_read: int, failed_status: str = "unavailable") -> None:
    """Add the inspection's source entry and its finding lines to `ev`; a failed inspection's source gets
    `failed_status` and its error code as note."""
    if envelope.get("status") == "error":
        code = envelope.get("error_code") if is_code(envelope.get("error_code")) else "ERROR"
        ev.sources.append(Source(source, "inspect_source", None, failed_status, bytes_read, note=code))
        ev.lines.append(Line(source, None, None, f"nvflare agent inspect source failed: {code}"))
        return
    ev.sources.append(Source(source, "inspect_source", None, "complete", bytes_read))
    data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
    scan = data.get("scan") if isinstance(data.get("scan"), dict) else {}
    findings = scan.get("findings") if isinstance(scan.get("findings"), list) else []
    for index, finding in enumerate(findings[:MAX_FINDINGS], start=1):
        if isinstance(finding, dict) and is_code(finding.get("code")):
            ev.lines.append(Line(source, None, index, finding_text(finding)))
    read = scan.get("files_read") if isinstance(scan.get("files_read"), int) else "?"
    ev.lines.append(
        Line(source, None, None, f"inspect source summary: {read} file(s) read, {len(findings)} finding(s)")
    )
    if scan.get("complete") is False:
        ev.not_read.append(
            f"{source}: nvflare agent inspect source reports an incomplete scan (limits or unreadable files)"
        )


def finding_text(finding: dict) -> str:
    code, file, line = finding["code"], finding.get("file"), finding.get("line")
    where = file if isinstance(file, str) and _FILE.match(file) else "<file>"
    where += f":{line}" if isinstance(line, int) and line > 0 else ""
    if code == "ABSOLUTE_DATA_PATH" and not_a_path(finding.get("value")):
        return f"inspect source note: {code} at {where} flags a string that is not an absolute path (ignored)"
    meaning = MEANINGS.get(code)
    return f"inspect source finding {code} at {where}" + (f" ({meaning})" if meaning else "")


def not_a_path(value: object) -> bool:
    """True when an unredacted ABSOLUTE_DATA_PATH value is not a usable absolute path (`/`, `~`, `/%s`, `//host`).
    The value is only tested, never copied."""
    if not isinstance(value, str) or _REDACTED.match(value):
        return False
    return not _DATA_PATH.match(value)
