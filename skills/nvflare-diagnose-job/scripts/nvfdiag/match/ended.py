"""A client script that ended without sending its task's result and raised nothing. Pure.

Usage: `found = scripts_ended(lines, sources, blocks, index, flagged)` -> Ended or None; then
`refine(ranked, demoted, found, consequences)` and `said(found)` for likely_cause.

NVFLARE's in-process Client API executor (nvflare/app_common/executors/client_api/in_process_backend.py) runs the
job's script in a thread. When the script raises, NVFLARE's TaskScriptRunner logs the traceback and fires an abort,
and the executor answers TASK_ABORTED. When the thread ends while a task waits for its result and no abort came, the
executor logs `trainer thread exited before producing a result for task '<task>'` (a later task: `in-process trainer
is no longer available (reason: trainer thread exited without signaling ABORT)`) and answers EXECUTION_EXCEPTION: the
script returned or exited without sending, or it died of an exception TaskScriptRunner does not log (an ImportError
it re-raises, a BaseException): Python prints that one to the process's stderr (`Exception in thread
client_api_in_process_trainer:`), never to NVFLARE's log files (log.txt, error_log.txt, log.json, log_fl.txt). So only
the process's console output shows every way the script can fail: when a console output (the stdout and stderr of
python job.py, a site's console log; not one of NVFLARE's log files) holding the record was read whole and no
traceback in the evidence runs through the job's code or ends in a third-party package, the evidence shows that the
script raised nothing: the client traceback is not missing, and the server's echo of the failed task (peer_rc=EXECUTION_EXCEPTION, a result that is not a valid DXO,
`Result from site-N is bad`) is a consequence that selects no row, USER_CODE_EXCEPTION included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..read import sites
from .refine import Candidate, Demoted
from .tracebacks import Traceback

_NEEDLES = ("trainer thread exited before producing a result", "trainer thread exited without signaling ABORT")
_TASK = re.compile(r"trainer thread exited before producing a result for task '([\w.-]{1,64})'")
NVFLARE_LOG_FILES = ("log.txt", "error_log.txt", "log.json", "log_fl.txt")  # its default log config's files
_IDENTITY = re.compile(r"\bidentity=([A-Za-z0-9][\w.-]{0,63})[,\]]")
MAX_TEXT = 4096
MAX_NAMED = 5
REASON = (
    "the server's view of a client task that ended without a result: the client's script raised nothing "
    "(it returned or exited before sending)"
)


@dataclass(frozen=True)
class Ended:
    """Where the evidence shows a client script ended without sending: its records, the sites and tasks named."""

    indexes: tuple[int, ...]
    sites: tuple[str, ...]
    tasks: tuple[str, ...]
    record: str  # NVFLARE's words in the first record


def scripts_ended(lines, sources, blocks: list[Traceback], index, flagged: set[int]) -> Ended | None:
    """The executor's records that a script ended without a result (sites and tasks from all of them), when one is
    in a console output read whole and no traceback runs through the job's code or ends in a third-party package;
    else None."""
    if any(b.user_frame is not None or b.third_party is not None for b in blocks):
        return None
    whole = {s.path for s in sources if s.status == "complete" and not s.truncated and _console(s.path)}
    records = sorted(
        (number, needle)
        for needle in _NEEDLES
        for number in index.lines_with_text(needle)
        if number not in flagged and needle in lines[number].text[:MAX_TEXT]
    )
    if not any(lines[number].source in whole for number, _ in records):
        return None
    named_sites, tasks = [], []
    for number, _ in records:
        site = _site(lines[number])
        task = _TASK.search(lines[number].text[:MAX_TEXT])
        if site and site not in named_sites:
            named_sites.append(site)
        if task and task.group(1) not in tasks:
            tasks.append(task.group(1))
    found = [number for number, _ in records]
    return Ended(tuple(found), tuple(sorted(named_sites)), tuple(tasks), records[0][1])


def _console(path: str) -> bool:
    """Not one of NVFLARE's log files (a bundle's or envelope's `#site` entry is the server's copy of one)."""
    return "#" not in path and re.split(r"[\\/]", path)[-1].lower() not in NVFLARE_LOG_FILES


def _site(line) -> str | None:
    if line.site and not sites.is_server(line.site):
        return line.site
    identity = _IDENTITY.search(line.text[:MAX_TEXT])
    name = identity.group(1) if identity else None
    return name if sites.valid_site(name) and not sites.is_server(name) else None


def refine(ranked: list[Candidate], demoted: list[Demoted], found: Ended | None, later: set[int]) -> list[Candidate]:
    """Candidates that only NVFLARE's reactions to the failed task (or the job status) support are not selected."""
    if found is None:
        return ranked
    kept = []
    for cand in ranked:
        if cand.hits and all(h.index is None or h.index in later for h in cand.hits):
            demoted.append(Demoted(cand.row, REASON, tuple(cand.hits)))
        else:
            kept.append(cand)
    return kept


def said(found: Ended) -> str:
    """The likely_cause clause: what the records show, in NVFLARE's words, without guessing why the script ended."""
    many = len(found.sites) > 1
    who = ", ".join(found.sites[:MAX_NAMED]) or "a client"
    task = f" for task '{found.tasks[0]}'" if len(found.tasks) == 1 else ""
    scripts, its = ("scripts", "their") if many else ("script", "its")
    return (
        f"the training {scripts} of {who} ended before sending {its} result{task} and raised no exception: NVFLARE's "
        f"in-process executor logged `{found.record}`, and the console output that "
        f"holds it, read whole, has no traceback from the {scripts}: the {scripts} returned or exited (a sys.exit, a "
        f"return or break out of {its} receive loop) while the task waited for the result. NVFLARE's errors on the server after it (a "
        "result that is not a valid DXO, `Result from <site> is bad`, peer_rc=EXECUTION_EXCEPTION) are consequences"
    )
