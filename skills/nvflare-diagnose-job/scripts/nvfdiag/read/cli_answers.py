"""What the nvflare job CLI's own structured answers state about a job: its status and the sites whose logs it
says are absent. Pure.

Usage: `command_of_error(code)` -> the envelope kind an error code belongs to; `absent_log(envelope, command)` ->
(site, reason) of a `LOG_NOT_FOUND` answer; `stated_status(data)` -> the job status a wait, monitor or meta answer
carries; `listed_statuses(data)` -> {job id: status} of a `job list` answer; `submitted_job(data)` /
`waited_job(envelope)` -> the job id a `job submit` answer or a timed-out `job wait` printed; `concerns_no_job(data,
command)` -> the answer is a POC command's (no job involved); `nothing_ran(data)` -> a refused POC command's preflight
shows no POC system could have been running.

NVFLARE 2.9's job CLI (nvflare/tool/job/job_cli.py, cli_errors.py, private/fed/server/job_cmds.py) says a site's logs
are absent in these answers only:
- `job logs <id> --site <client>`: error envelope `LOG_NOT_FOUND`, message `Job logs are not available for site
  '<site>'.`, the server's reason after ` — ` (`client log stream not available for this job`);
- `job logs <id> --site all|server`: ok envelope, `data.unavailable` {site: reason} and `data.sites[site]`
  {"available": false, "reason"} (`client log stream not available ...`, `server log not available for this job`);
- `job download`: ok envelope, `data.missing_artifacts` holding `client_logs` when no site log came with the result.
The job status is in `data.status` (job meta, and the ok answer of job wait / monitor), in `data.status` and
`data.job_meta.status` of the error answers `JOB_FINISHED_EXCEPTION`, `JOB_FAILED`, `JOB_ABORTED`, `JOB_ABANDONED`
of job wait / monitor, and per job in the list `job list` answers (`job_id`, `status`).
The job id is also in the ok answer of `job submit` (`data` is `{"job_id": <id>}`, job_cli.submit_job) and in the
message of a `job wait` that timed out (error `TIMEOUT`, `Operation timed out. — job <id> did not finish within
<timeout>s`: cli_errors' TIMEOUT message and flare_api.wait_for_job's JobTimeout); taken only when it is a UUID, as
NVFLARE names every submitted job. `poc start` and `poc prepare` answers (ok or error) hold the POC port preflight
(`data.port_preflight`, poc_commands._build_poc_port_diagnostics): no job is involved in them. The preflight checks
the POC server's ports on the loopback before the command runs: `checked` with no `conflicts` (the ports are free),
or not checked because the workspace has no server port configuration (`server port configuration is not
available`: not prepared, so nothing was ever started from it), means no POC system was up. Ports in use
(`port_conflict`, `conflicts`: a system may be running and may have run jobs) or a server not selected for startup
(`-p site-1`: started beside a server that may already run) do not; neither does a refusal without a preflight
(`poc prepare`'s `system is still running`).
"""

from __future__ import annotations

import re

from .sites import nvflare_job_id, nvflare_job_status, valid_job_id, valid_site

# error codes only one command gives, and that command's envelope kind
ERROR_COMMANDS = {
    "LOG_NOT_FOUND": "job_logs",
    "JOB_FINISHED_EXCEPTION": "job_wait",
    "JOB_FAILED": "job_wait",
    "JOB_ABORTED": "job_wait",
    "JOB_ABANDONED": "job_wait",
}
LOG_ABSENT_CODE = "LOG_NOT_FOUND"
_NOT_AVAILABLE = re.compile(r"^Job logs are not available for site '([^'\s]{1,64})'\.(?: \u2014 (.{0,300}))?$", re.S)
MAX_LISTED = 1000
_WAIT_TIMED_OUT = re.compile(
    r"^Operation timed out\. \u2014 job ([0-9a-fA-F-]{36}) did not finish within \d{1,9}(?:\.\d{1,6})?s$"
)


def command_of_error(code: object) -> str | None:
    return ERROR_COMMANDS.get(code) if isinstance(code, str) else None


def absent_log(envelope: dict, command: list[str] | None = None) -> tuple[str, str] | None:
    """(site, reason) of a `job logs --site <site>` answer that the site's logs are not available, else None. The
    site is the one the command asked for when the command is known, else the one the message names; the reason
    is the server's detail after the message ('' when it gave none)."""
    if envelope.get("error_code") != LOG_ABSENT_CODE or not isinstance(envelope.get("message"), str):
        return None
    found = _NOT_AVAILABLE.match(envelope["message"].strip())
    asked = _site_option(command or [])
    site = asked or (found.group(1) if found else None)
    if not valid_site(site):
        return None
    reason = found.group(2) if found and found.group(2) and (asked is None or asked == found.group(1)) else ""
    return site, reason.strip()


def _site_option(command: list[str]) -> str | None:
    for index, word in enumerate(command):
        if word == "--site" and index + 1 < len(command):
            return command[index + 1]
        if word.startswith("--site="):
            return word.split("=", 1)[1]
    return None


def stated_status(data: object) -> str | None:
    """The job status an answer's data states: `status`, else `job_meta.status` (NVFLARE's own spelling only)."""
    if not isinstance(data, dict):
        return None
    meta = data.get("job_meta") if isinstance(data.get("job_meta"), dict) else {}
    for value in (data.get("status"), meta.get("status")):
        if nvflare_job_status(value):
            return value
    return None


def looks_like_job_list(data: object) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(item, dict) and "job_id" in item and "status" in item for item in data[:MAX_LISTED])
    )


def listed_statuses(data: list) -> dict[str, str]:
    """{job id: status} of the jobs a `job list` answer lists (invalid ids and statuses left out)."""
    return {
        item["job_id"]: item["status"]
        for item in data[:MAX_LISTED]
        if valid_job_id(item.get("job_id")) and nvflare_job_status(item.get("status"))
    }


def submitted_job(data: object) -> str | None:
    """The job id of a `job submit` ok answer (`data` holds only `job_id`), when it is a UUID."""
    if isinstance(data, dict) and set(data) == {"job_id"} and nvflare_job_id(data["job_id"]):
        return data["job_id"]
    return None


def waited_job(envelope: dict) -> str | None:
    """The job id a timed-out `job wait` names in its message, when the message has exactly NVFLARE's wording."""
    message = envelope.get("message")
    if envelope.get("error_code") != "TIMEOUT" or not isinstance(message, str):
        return None
    found = _WAIT_TIMED_OUT.match(message.strip())
    return found.group(1) if found and nvflare_job_id(found.group(1)) else None


NOT_CONFIGURED = "server port configuration is not available"  # poc_commands: no project config to read ports from


def nothing_ran(data: object) -> bool:
    """True when a POC command's port preflight shows no POC system was up: the server's ports checked and free, or
    no server port configuration to check (the workspace was never prepared)."""
    preflight = data.get("port_preflight") if isinstance(data, dict) else None
    if not isinstance(preflight, dict) or data.get("port_conflict") is not False or preflight.get("conflicts"):
        return False
    return preflight.get("checked") is True or preflight.get("message") == NOT_CONFIGURED


def concerns_no_job(data: object, command: list[str] | None = None) -> bool:
    """True for the answer of a POC command (`poc start`, `poc prepare`, ...): by the command when known, else by
    the POC port preflight only `poc start` / `poc prepare` answers hold."""
    words = [word for word in (command or []) if not word.startswith("-")]
    if words and words[0].endswith("nvflare"):
        words = words[1:]
    if words:
        return words[0] == "poc"
    return isinstance(data, dict) and isinstance(data.get("port_preflight"), dict)
