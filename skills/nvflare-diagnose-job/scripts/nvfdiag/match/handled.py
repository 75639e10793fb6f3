"""A traceback the job's code caught and logged is not the run's cause. Pure.

Usage: `found = handled_blocks(blocks)`; `hits, set_aside = set_aside_hits(hits, lines, found)`. A script that
catches an exception (an optional import, a retry) may log it with its traceback and go on. NVFLARE gives such
output no reliable level: the in-process Client API echoes a script's stderr as INFO records, and with
launch_external_process=True every line of the subprocess, the fatal traceback included, is an INFO record. What
shows that the script went on is its own later output: a traceback of a different exception raised through the same
script file (in a simulation the file's path names the site, so it is the same process) ends the run instead. Such
an earlier traceback is "handled": its hits do not decide the row, and the row the later one supports is at most
medium (matcher._confidence).

A traceback is also handled when the same participant went on past it (`went_on_blocks`): a task NVFLARE assigned to
that client after the traceback (its ClientRunner's `got task assignment` record, placed after the traceback in the
same file or dated after the first dated line that follows the traceback) whose result the server accepted from that
peer (its record naming `peer=<client>`, `peer_rc=OK` and the task's id). Progress before the traceback, another
participant's, a result in flight when the script failed (its task was assigned before the traceback) and any echo
of the script's own output do not count.
"""

from __future__ import annotations

import re
from collections import Counter

from ..logline import is_record, timestamp
from ..read.prefixes import echoes_a_script
from ..read.sites import is_server
from .scan import Hit
from .tracebacks import Traceback, chains, is_user_file

REASON = "handled: the job's script went on after this traceback (a later traceback of the same script ended it)"
WENT_ON_REASON = (
    "handled: the same participant went on after this traceback (the server accepted its result of a task "
    "assigned to it after the traceback)"
)
MAX_LINE = 4096
SCAN = 200  # lines after a traceback looked at for a dated one
# the simulator's and POC's per-site app folder in a frame's path (<workspace>/site-1/<run>/app_site-1/custom/...)
_APP_FOLDER = re.compile(r"[\\/]app_([A-Za-z0-9][\w.-]{0,99})[\\/]")
_FL_CTX = re.compile(r"\[([^\[\]\n]{1,2000})\]")
# the run a site's app was deployed for: the folder holding `app_<site>/` (SimEnv's `simulate_job`, a POC job id)
_APP_RUN = re.compile(r"[\\/]([^\\/]{1,200})[\\/]app_[A-Za-z0-9][\w.-]{0,99}[\\/]")
_JOB_FOLDER = re.compile(r"[\\/]([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})[\\/]", re.IGNORECASE)
# ClientRunner's own record of a task it was given (a line a script printed is relayed under another logger, or
# without the logger in the console's concise format)
_ASSIGNED = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{1,6} - (?:[\w.]{1,200}\.)?ClientRunner - INFO - \[[^\[\]\n]{1,2000}\] - "
    r"got task assignment: name=[^,\s]{1,200}, id=([0-9a-fA-F-]{8,64})\b"
)


# The outermost frame of an exception no code caught, which ended a thread or a child process (Python prints it as
# `Exception in thread ...` or `Process ...:`): the script going on after it is not the script handling it.
_ENDED_WORKER = re.compile(r"(?:^|[\\/])(?:threading|multiprocessing[\\/]process)\.py$")


def _ended_worker(block: Traceback) -> bool:
    """The traceback of an uncaught exception that ended a thread or a child process of the script."""
    return bool(block.frames) and bool(_ENDED_WORKER.search(block.frames[0][0]))


def _user_files(block: Traceback) -> set[str]:
    return {path for path, _, _ in block.frames if is_user_file(path)}


class _Later:
    """The (exception class, chain) pairs of the tracebacks seen later through one (source, script file), counted
    per class and per chain so that one question costs O(1) whatever the number of classes."""

    def __init__(self) -> None:
        self.pairs: set[tuple[str, int]] = set()
        self.per_class: Counter[str] = Counter()
        self.per_chain: Counter[int] = Counter()

    def add(self, exc_type: str, chain: int) -> None:
        if (exc_type, chain) not in self.pairs:
            self.pairs.add((exc_type, chain))
            self.per_class[exc_type] += 1
            self.per_chain[chain] += 1

    def other_failure(self, exc_type: str, chain: int) -> bool:
        """Some later traceback of another class in another chain: the pairs that share neither, by counting."""
        both = (exc_type, chain) in self.pairs
        return len(self.pairs) - self.per_class[exc_type] - self.per_chain[chain] + both > 0


def handled_blocks(blocks: list[Traceback], lines) -> list[Traceback]:
    """Ended user-code tracebacks followed, in the same source, by a traceback of another exception class raised
    through one of the same script files. A traceback chained to it (`During handling of the above exception` or
    `The above exception was the direct cause`) is the same failure going on, not the script going past it.
    An uncaught exception that ended a thread or child process is never handled (nothing caught it; what the
    script did next is often its consequence). One pass from the last block back, O(1) per block and script file
    (`_Later`)."""
    chain_of = {id(block): number for number, chain in enumerate(chains(blocks, lines)) for block in chain}
    later: dict[tuple[str, str], _Later] = {}
    handled = []
    for block in reversed(blocks):
        if block.user_frame is None or block.exc_type is None:
            continue
        mine = chain_of[id(block)]
        keys = [(block.source, path) for path in _user_files(block)]
        if (
            block.end is not None
            and not _ended_worker(block)
            and any(key in later and later[key].other_failure(block.exc_type, mine) for key in keys)
        ):
            handled.append(block)
        for key in keys:
            later.setdefault(key, _Later()).add(block.exc_type, mine)
    return handled[::-1]


def _span(block: Traceback) -> range:
    return range(block.start, max([block.end, *block.detail]) + 1)


def set_aside_hits(
    hits: dict[str, list[Hit]], lines, handled: list[Traceback]
) -> tuple[dict[str, list[Hit]], dict[str, list[Hit]]]:
    """Each row's hits minus those on a handled traceback's lines, and the hits set aside per row."""
    if not handled:
        return hits, {}
    covered = {(block.source, index) for block in handled for index in _span(block)}
    kept: dict[str, list[Hit]] = {}
    aside: dict[str, list[Hit]] = {}
    for row_id, row_hits in hits.items():
        for hit in row_hits:
            on_handled = hit.index is not None and (lines[hit.index].source, hit.index) in covered
            (aside if on_handled else kept).setdefault(row_id, []).append(hit)
    return kept, aside


def _fl_ctx(text: str) -> dict[str, str]:
    """The first bracketed `key=value, ...` context of a record (NVFLARE's fl_ctx), or {}."""
    found = _FL_CTX.search(text[:MAX_LINE])
    if not found:
        return {}
    pairs = (item.strip().partition("=") for item in found.group(1).split(","))
    return {key: value for key, sep, value in pairs if sep}


def participant(block: Traceback) -> str | None:
    """The client a traceback is of: its file's site, else the one site its user frames' app folders name (NVFLARE's
    own `nvflare/app_common/...` is no app folder)."""
    if block.site is not None:
        return None if is_server(block.site) else block.site
    named = {m.group(1) for path in _user_files(block) for m in _APP_FOLDER.finditer(path)}
    return next(iter(named)) if len(named) == 1 and not is_server(next(iter(named))) else None


def run_of(block: Traceback) -> str | None:
    """The run a traceback is of: the one folder its user frames' paths deploy an app in (`<run>/app_<site>/`), else the
    one job folder (a job id) its file is in; None when there is none or more than one."""
    named = {m.group(1).lower() for path in _user_files(block) for m in _APP_RUN.finditer(path)}
    if not named:
        named = {m.group(1).lower() for m in _JOB_FOLDER.finditer("/" + block.source)}
    return next(iter(named)) if len(named) == 1 else None


def _time(lines, block: Traceback) -> str | None:
    """A time no earlier than the traceback's: the first dated line of its file after it (its own lines may have
    lost their record prefix: a relayed traceback's are peeled), looked for among the next SCAN lines."""
    last = max([block.end, *block.detail])
    for n in range(last + 1, min(last + 1 + SCAN, len(lines))):
        if lines[n].source != block.source:
            return None
        if stamp := timestamp(lines[n].text[:64].lstrip()):
            return stamp
    return None


class _Course:
    """One participant's task assignments (its ClientRunner's records, per file in line order) and whether the
    server accepted each task's result from it (a record in the catalog's progress wording of another participant
    naming it as `peer`, with `peer_rc=OK` and the task's id). Candidates come from the text index (index:
    textindex.TextIndex of the same lines); a line's text is read only when a question reaches it, once; flagged
    lines never count."""

    def __init__(self, lines, index, flagged, wording, party: str) -> None:
        self.lines, self.index, self.wording, self.party = lines, index, wording, party
        low = party.lower()
        named = set(index.lines_with(f"identity={low}"))
        self.assigning: dict[str, list[int]] = {}
        for n in index.lines_with("got task assignment"):
            if n in named and n not in flagged:
                self.assigning.setdefault(lines[n].source, []).append(n)
        peered = set(index.lines_with(f"peer={low}")) if self.assigning and wording is not None else set()
        self.accepting = {n for n in index.lines_with("peer_rc=ok") if n in peered and n not in flagged}
        self.assignments: dict[int, tuple[str | None, str | None, str]] = {}  # line -> (task id, time, run)
        self.tasks: dict[str, bool] = {}

    def went_on(self, block: Traceback) -> bool:
        """A task of the traceback's run assigned after it whose result was accepted: each file's assignments are
        walked from its last back to the traceback (in its own file by line, in another by time) up to the first
        that answers. A site's log and console hold every job it ran, so a traceback whose run is unknown (run_of)
        never counts as gone past, and another run's task says nothing of it."""
        run = run_of(block)
        if run is None:
            return False
        last = max([block.end, *block.detail])
        when: str | None = None
        timed = False
        for source, numbers in self.assigning.items():
            if source != block.source and not timed:
                when, timed = _time(self.lines, block), True
            if source != block.source and when is None:
                continue
            for n in reversed(numbers):
                task, stamp, task_run = self._assignment(n)
                if n <= last if source == block.source else (stamp is None or stamp <= when):
                    break
                if task is not None and task_run == run and self._accepted(task):
                    return True
        return False

    def _assignment(self, n: int) -> tuple[str | None, str | None, str]:
        """(task id when the record is this participant's assignment, its time, the run it names)."""
        if n not in self.assignments:
            text = self.lines[n].text[:MAX_LINE].lstrip()
            m = _ASSIGNED.match(text)
            ctx = _fl_ctx(text)
            mine = m is not None and ctx.get("identity") == self.party
            self.assignments[n] = (
                m.group(1).lower() if mine else None,
                timestamp(text[:64]),
                ctx.get("run", "").lower(),
            )
        return self.assignments[n]

    def _accepted(self, task: str) -> bool:
        if task not in self.tasks:
            self.tasks[task] = any(self._accepts(n) for n in self.index.lines_with(task) if n in self.accepting)
        return self.tasks[task]

    def _accepts(self, n: int) -> bool:
        text = self.lines[n].text[:MAX_LINE]
        ctx = _fl_ctx(text)
        if ctx.get("identity") in (None, self.party) or ctx.get("peer") != self.party or ctx.get("peer_rc") != "OK":
            return False
        return bool(self.wording.regex.search(text)) and is_record(text) and not echoes_a_script(text)


def went_on_blocks(blocks: list[Traceback], lines, index, flagged, wording, skip: list[Traceback]) -> list[Traceback]:
    """Ended user-code tracebacks (not those in `skip`, nor an uncaught exception that ended a thread or child
    process) after which the same participant went on: a task assigned to it after the traceback whose result
    the server accepted (wording: the catalog's run_course progress, catalog.Wording or None)."""
    skipped = {id(block) for block in skip}
    per_party: dict[str, _Course] = {}
    found = []
    for block in blocks:
        if id(block) in skipped or block.user_frame is None or block.exc_type is None or block.end is None:
            continue
        party = participant(block)
        if party is None or _ended_worker(block):
            continue
        if party not in per_party:
            per_party[party] = _Course(lines, index, flagged, wording, party)
        if per_party[party].went_on(block):
            found.append(block)
    return found
