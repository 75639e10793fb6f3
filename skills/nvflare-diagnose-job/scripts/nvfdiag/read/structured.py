"""Parse structured evidence (nvflare CLI JSON envelopes, JSON evidence bundles, job meta) into `Evidence`.

One implementation for saved envelope files and for `--collect` results. Envelope kinds are recognised by
the command that produced them when known, else by an error code only one command gives, else by the shape of
`data`: job meta (`data.status`), job logs (`data.logs` site -> JSON-lines string, `data.sites`), job download
(`data.artifacts`, `data.missing_artifacts`), job list (a list of jobs with `job_id` and `status`), job stats, system
status/resources, agent inspect source. Site availability (`site_status`) and job status are taken only from what
the evidence states (cli_answers.py: the job CLI's answers that say a site's logs are absent or state a status).
"""

from __future__ import annotations

import json
import re

from ..model import SITE_STATUSES, Evidence, Line, Source
from . import cli_answers, inspect_source
from .jobscope import job_folders
from .jsontext import text_to_lines
from .sites import nvflare_job_status, valid_job_id, valid_site

MAX_FLAT_LINES = 200
MAX_VALUE_CHARS = 300
_ERROR_LINE = "nvflare CLI error "
_ERROR_CODE = re.compile(r"nvflare CLI error ([A-Z][A-Z0-9_]{0,63}): ")
_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
ALL_TARGETS = ("all", "@all")  # a `job logs` answer for every site (job_cmds: the CLI's `all` and the protocol's @ALL)
_META_KEYS = ("job_id", "submit_time_iso", "job_deploy_detail", "duration", "job_name", "name")


def looks_like_envelope(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and "schema_version" in obj
        and obj.get("status") in ("ok", "error")
        and ("data" in obj or "error_code" in obj)
    )


def looks_like_bundle(obj: object) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("logs"), dict) and not looks_like_envelope(obj)


def looks_like_job_meta(obj: object) -> bool:
    return isinstance(obj, dict) and nvflare_job_status(obj.get("status")) and any(key in obj for key in _META_KEYS)


def envelope_kind(envelope: dict, command: list[str] | None = None) -> str:
    """job_meta | job_logs | job_stats | job_download | job_wait | job_list | system_status | system_resources |
    inspect_source | other."""
    words = [word for word in (command or []) if not word.startswith("-")]
    for first, second in zip(words, words[1:], strict=False):
        if first in ("job", "system") and second in ("meta", "logs", "stats", "download", "status", "resources"):
            return f"{first}_{second}"
        if first == "inspect" and second == "source":
            return "inspect_source"
    if str(envelope.get("error_code") or "").startswith("AGENT_INSPECT"):
        return "inspect_source"
    by_code = cli_answers.command_of_error(envelope.get("error_code"))
    if by_code:
        return by_code
    data = envelope.get("data")
    if cli_answers.looks_like_job_list(data):
        return "job_list"
    if not isinstance(data, dict):
        return "other"
    if data.get("capability") == "source":
        return "inspect_source"
    if isinstance(data.get("logs"), dict):
        return "job_logs"
    if "artifacts" in data or "missing_artifacts" in data or "download_path" in data:
        return "job_download"
    if "stats" in data:
        return "job_stats"
    if looks_like_job_meta(data):
        return "job_meta"
    if {"server_status", "client_status", "server_info", "client_info"} & data.keys():
        return "system_status"
    return "other"


def envelope_error_line(code: object, text: object) -> str:
    """The evidence line an error envelope becomes: `nvflare CLI error <error_code>: <message>`."""
    return f"{_ERROR_LINE}{code}: {text}"


def envelope_error_code(text: str) -> str | None:
    """The error_code of a line envelope_error_line wrote, or None."""
    found = _ERROR_CODE.match(text)
    return found.group(1) if found else None


def command_errors(ev: Evidence, indexes) -> dict[int, str]:
    """Of the lines `indexes` of `ev`, those an nvflare CLI error envelope became (envelope_error_line, in a
    cli_envelope source), with the envelope's error code."""
    envelopes = {s.path for s in ev.sources if s.kind == "cli_envelope"}
    found = {}
    for index in indexes:
        line = ev.lines[index]
        code = envelope_error_code(line.text) if line.source in envelopes else None
        if code is not None:
            found[index] = code
    return found


def note_job(ev: Evidence, job_id: object, status: object, source: str | None = None) -> None:
    """Record the job id / status the evidence states (first statement wins, a different id is kept in
    `other_job_ids`, the sources that stated the recorded id in `job_id_from`; invalid values ignored); a status
    stated with an id is also kept under it (`status_of`). A file inside a job's folder (named by its id) speaks only
    for that job: its statement about another job is ignored; a file in a SimEnv workspace (`Evidence.job_written`)
    states no job id or status at all."""
    if source in ev.job_written:  # written where the job runs: the job's code may have written it (read/jobscope)
        if nvflare_job_status(status):
            ev.status_sources.add(source)  # nor is its status one the logs print (match/matcher._status_in_logs)
        return
    folders = job_folders(source) if source else ()
    if valid_job_id(job_id) and folders and job_id not in folders:
        return
    if ev.job_id is None and valid_job_id(job_id):
        ev.job_id = job_id
    elif valid_job_id(job_id) and job_id != ev.job_id and job_id not in ev.other_job_ids:
        ev.other_job_ids.append(job_id)
    if source and job_id == ev.job_id:
        ev.job_id_from.append(source)
    if not nvflare_job_status(status):
        return
    if source:
        ev.status_sources.add(source)
    if ev.job_status is None:
        ev.job_status = status
    if valid_job_id(job_id):
        ev.status_of.setdefault(job_id, status)


def add_hint(ev: Evidence, mode: str, reason: str) -> None:
    if (mode, reason) not in ev.mode_hints:
        ev.mode_hints.append((mode, reason))


def failed_status(collected: bool) -> str:
    """The source status of an error envelope: a command --collect ran did not give its result (`unavailable`); a
    saved envelope file was read whole (`complete`), and its error is evidence like any other line."""
    return "unavailable" if collected else "complete"


def error_note(envelope: dict) -> str | None:
    """The error_code of an error envelope when it is an upper-case code, else None."""
    code = envelope.get("error_code")
    return code if isinstance(code, str) and _CODE.match(code) else None


def ingest_envelope(
    ev: Evidence, envelope: dict, source: str, *, bytes_read: int, command=None, collected: bool = False
) -> None:
    """Add one CLI envelope's facts to `ev`; `collected`: the envelope is the answer of a command --collect ran,
    not a saved file."""
    kind = envelope_kind(envelope, command)
    if kind == "inspect_source":
        inspect_source.ingest(ev, envelope, source, bytes_read, failed_status(collected))
        return
    add_hint(ev, "production", f"nvflare CLI JSON envelope ({kind.replace('_', ' ')}) in {source}")
    data = envelope.get("data")
    if (
        envelope.get("status") == "error"
        and cli_answers.concerns_no_job(data, command)
        and cli_answers.nothing_ran(data)
    ):
        ev.no_job_answers.add(source)  # refused while no POC system was up; a running one may have run jobs
    if envelope.get("status") == "error":
        failed = Source(source, "cli_envelope", None, failed_status(collected), bytes_read, note=error_note(envelope))
        ev.sources.append(failed)
        text = envelope_error_line(envelope.get("error_code", "UNKNOWN"), envelope.get("message", ""))
        ev.lines.append(Line(source, None, 1, text[:MAX_VALUE_CHARS]))
        _error_facts(ev, envelope, kind, command, source)
        return
    ev.sources.append(Source(source, "cli_envelope", None, "complete", bytes_read))
    if kind == "job_list":
        for job_id, status in cli_answers.listed_statuses(data).items():
            ev.listed_status.setdefault(job_id, status)
            ev.status_sources.add(source)
        flatten_lines(ev, data, source, "job list")
    elif not isinstance(data, dict):
        flatten_lines(ev, data, source, kind.replace("_", " "))
    elif kind == "job_logs" and isinstance(data.get("logs"), dict):
        _job_logs(ev, data, source)
    elif kind == "job_meta":
        note_job(ev, data.get("job_id"), cli_answers.stated_status(data), source)
        note_answered(ev, "job_meta", data.get("job_id"), source)
        flatten_lines(ev, data, source, f"job meta {data.get('job_id', '')}".strip())
    elif kind == "job_download":
        _job_download(ev, data, source)
    else:
        note_job(ev, cli_answers.submitted_job(data), None, source)
        flatten_lines(ev, data, source, kind.replace("_", " "))


def _error_facts(ev: Evidence, envelope: dict, kind: str, command, source: str) -> None:
    """What an error answer still states: the job and status a failed wait carries in `data`, the site whose logs a
    `job logs --site <site>` answer says are not available."""
    if kind == "job_wait" and isinstance(envelope.get("data"), dict):
        data = envelope["data"]
        note_job(ev, data.get("job_id"), cli_answers.stated_status(data), source)
    note_job(ev, cli_answers.waited_job(envelope), None, source)
    absent = cli_answers.absent_log(envelope, command) if kind == "job_logs" else None
    if absent is not None:
        site, reason = absent
        ev.site_status.setdefault(site, reason_status(reason) if reason else "unavailable")
        ev.logs_answered.add(site)


def note_answered(ev: Evidence, template: str, job_id: object, source: str) -> None:
    """Record that the evidence holds the answer of follow-up `template` for `job_id` (not for a file inside another
    job's folder, whose statements about that job are ignored, as in note_job)."""
    folders = job_folders(source)
    if valid_job_id(job_id) and not (folders and job_id not in folders) and source not in ev.job_written:
        ev.answered.add((template, job_id))


def _job_logs(ev: Evidence, data: dict, source: str) -> None:
    note_job(ev, data.get("job_id"), None, source)
    if str(data.get("target", "")).lower() in ALL_TARGETS:
        note_answered(ev, "all_logs", data.get("job_id"), source)  # every site's log the server's store holds
    sites = data.get("sites") if isinstance(data.get("sites"), dict) else {}
    unavailable = data.get("unavailable") if isinstance(data.get("unavailable"), dict) else {}
    names = sorted(set(data["logs"]) | set(sites) | set(unavailable))
    for site in names:
        if not valid_site(site):
            ev.not_read.append(f"{source}: ignored a site entry with an invalid name")
            continue
        info = sites.get(site) if isinstance(sites.get(site), dict) else {}
        text = data["logs"].get(site)
        status = _cli_site_status(info, unavailable.get(site), isinstance(text, str))
        ev.site_status[site] = status
        ev.logs_answered.add(site)  # asking `job logs --site <site>` again reads the same log store
        entry = f"{source}#{site}"
        if isinstance(text, str):
            ev.lines.extend(text_to_lines(text, entry, site))
        ev.sources.append(
            Source(
                entry,
                "cli_envelope",
                site,
                _source_status(status),
                len(text.encode()) if isinstance(text, str) else 0,
                status == "truncated",
            )
        )


def _cli_site_status(info: dict, reason: object, has_text: bool) -> str:
    if info.get("available") is False or (reason is not None and not has_text):
        return reason_status(str(info.get("reason") or reason or ""))
    return "truncated" if info.get("logs_truncated") else "ok"


def reason_status(reason: str) -> str:
    """Map a free-text unavailability reason onto a site status."""
    low = reason.lower()
    if "stream" in low:
        return "not_streamed"
    if "permission" in low or "denied" in low or "forbidden" in low:
        return "permission_denied"
    if "not found" in low or "missing" in low or "no such" in low:
        return "missing"
    return "unavailable"


def _source_status(site_status: str) -> str:
    return {"ok": "complete"}.get(site_status, site_status)


def _job_download(ev: Evidence, data: dict, source: str) -> None:
    note_job(ev, data.get("job_id"), None, source)
    missing = data.get("missing_artifacts")
    if isinstance(missing, list) and missing:
        names = ", ".join(sorted(str(name) for name in missing))
        ev.lines.append(Line(source, None, None, f"job download: missing artifacts: {names}"))
    artifacts = data.get("artifacts") if isinstance(data.get("artifacts"), dict) else {}
    present = ", ".join(sorted(str(name) for name in artifacts))
    ev.lines.append(Line(source, None, None, f"job download: artifacts present: {present or 'none'}"))


def ingest_bundle(ev: Evidence, bundle: dict, source: str, *, bytes_read: int) -> None:
    """Add a JSON evidence bundle {"job_id", "job_status", "logs": {site: {status, truncated, lines}}}."""
    add_hint(ev, "production", f"JSON evidence bundle {source}")
    note_job(ev, bundle.get("job_id"), bundle.get("job_status"), source)
    ev.sources.append(Source(source, "json_bundle", None, "complete", bytes_read))
    for site in sorted(bundle["logs"], key=str):
        entry = bundle["logs"][site]
        if not valid_site(site) or not isinstance(entry, dict):
            ev.not_read.append(f"{source}: ignored a malformed site entry in the bundle")
            continue
        status = entry.get("status", "ok")
        if status not in SITE_STATUSES:
            ev.not_read.append(f"{source}: site {site} has an unknown status; treated as unavailable")
            status = "unavailable"
        if status == "ok" and entry.get("truncated") is True:
            status = "truncated"
        ev.site_status[site] = status
        lines = entry.get("lines")
        if isinstance(lines, list):
            lines = "\n".join(json.dumps(item) if isinstance(item, dict) else str(item) for item in lines)
        text = lines
        label = f"{source}#{site}"
        if isinstance(text, str):
            ev.lines.extend(text_to_lines(text, label, site))
        size = len(text.encode()) if isinstance(text, str) else 0
        ev.sources.append(Source(label, "json_bundle", site, _source_status(status), size, status == "truncated"))


def flatten_lines(ev: Evidence, data: object, source: str, prefix: str) -> None:
    """Render nested data as `prefix key.sub: value` lines (bounded) so the matcher can see it."""
    out: list[str] = []
    _flatten(data, "", out)
    for index, text in enumerate(out[:MAX_FLAT_LINES], start=1):
        ev.lines.append(Line(source, None, index, f"{prefix}: {text}"))
    if len(out) > MAX_FLAT_LINES:
        ev.not_read.append(f"{source}: only the first {MAX_FLAT_LINES} of {len(out)} fields were read")


def _flatten(value: object, key: str, out: list[str]) -> None:
    if len(out) > MAX_FLAT_LINES:
        return
    if isinstance(value, dict):
        for name in sorted(value, key=str):
            _flatten(value[name], f"{key}.{name}" if key else str(name), out)
    elif isinstance(value, list) and value and any(isinstance(item, (dict, list)) for item in value):
        for index, item in enumerate(value):
            _flatten(item, f"{key}[{index}]", out)
    else:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        out.append(f"{key or 'value'}={text}"[:MAX_VALUE_CHARS])
