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

from ..logline import timestamp
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
    """The client a traceback is of: its file's site, else the one site its frames' app folders name."""
    if block.site is not None:
        return None if is_server(block.site) else block.site
    named = {m.group(1) for path, _, _ in block.frames for m in _APP_FOLDER.finditer(path)}
    return next(iter(named)) if len(named) == 1 and not is_server(next(iter(named))) else None


class _Assigned:
    """Where the participant's tasks whose result the server accepted were assigned: the last such record per file
    (line number) and the latest time over all files."""

    def __init__(self) -> None:
        self.last_line: dict[str, int] = {}
        self.latest: str | None = None

    def after(self, block: Traceback, lines) -> bool:
        """One such assignment lies after the traceback: later in its file, or dated after it in another file."""
        last = max([block.end, *block.detail])
        if self.last_line.get(block.source, -1) > last:
            return True
        when = _time(lines, block)
        return when is not None and self.latest is not None and self.latest > when


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


def _accepted_assignments(lines, progress, party: str) -> _Assigned:
    """The participant's task assignments (its own records) whose result the server accepted (a record of another
    participant naming it as `peer` with `peer_rc=OK` and the task's id). progress: calibration.CourseRecords."""
    assigned: list[tuple[int, str]] = []
    accepted: set[str] = set()
    for n in progress(-1, None, party):
        text = lines[n].text[:MAX_LINE]
        ctx = _fl_ctx(text)
        if ctx.get("identity") == party and (m := _ASSIGNED.match(text.lstrip())):
            assigned.append((n, m.group(1).lower()))
        elif ctx.get("identity") not in (None, party) and ctx.get("peer") == party and ctx.get("peer_rc") == "OK":
            accepted.add(ctx.get("task_id", "").lower())
    found = _Assigned()
    for n, task in assigned:
        if task not in accepted:
            continue
        found.last_line[lines[n].source] = max(n, found.last_line.get(lines[n].source, -1))
        stamp = timestamp(lines[n].text[:64].lstrip())
        if stamp is not None and (found.latest is None or stamp > found.latest):
            found.latest = stamp
    return found


def went_on_blocks(blocks: list[Traceback], lines, progress, skip: list[Traceback]) -> list[Traceback]:
    """Ended user-code tracebacks (not those in `skip`, nor an uncaught exception that ended a thread or child
    process) after which the same participant went on: a task assigned to it after the traceback whose result
    the server accepted. The participant's records are read once per participant."""
    skipped = {id(block) for block in skip}
    per_party: dict[str, _Assigned] = {}
    found = []
    for block in blocks:
        if id(block) in skipped or block.user_frame is None or block.exc_type is None or block.end is None:
            continue
        party = participant(block)
        if party is None or _ended_worker(block):
            continue
        if party not in per_party:
            per_party[party] = _accepted_assignments(lines, progress, party)
        if per_party[party].after(block, lines):
            found.append(block)
    return found
