"""Evidence too thin for a high-confidence diagnosis, whatever the row. Pure.

Usage: `uncorroborated(an, primary)` (an: matcher.Analysis) -> the reason the primary's evidence cannot carry
`high`, or "" when it can (matcher._confidence caps the level at medium on a reason). The reasons:
- the row needs the job's code (the job's exception, its data path) and no strong hit lies in a traceback with a
  frame surely of the job's code (jobframes.py): a library outside site-packages reads like the job's code;
- every strong hit is a catalog regex on the words of one line outside a traceback, the line is bare (not a log
  record) or a record whose words are only ones many libraries print (the catalog's `generic` signals: an errno
  text, a Python exception class, gRPC's status), and nothing else supports the row (a second hit line, a failed
  job status, NVFLARE's record that a peer is gone: the catalog's run_course peer_gone; not its ordinary shutdown
  lines, which end every run): one line says too little on its own;
- every strong hit is a record outside a traceback, and NVFLARE's record of completed work (the catalog's
  run_course progress; not its echo of a script's line) follows the last of them in each of their files, or a
  copy of that record in another file (error_log.txt holds no INFO record), and names no other participant
  (`identity=`) nor only other runs than the record (or the job being diagnosed): the run went on past the error;
- every strong hit is a line outside a traceback that a message NVFLARE only logs decided (the mapping's kind
  `log`: it reported the message and may have gone on), and nothing else shows the run failed (a failed job
  status, a traceback, a peer gone, a killed process, another line a raised or panic message decided);
- every strong hit is a bare line (not a log record) outside a traceback that an NVFLARE message decided, and the
  run's course contradicts it: a progress record of its file follows it, or the evidence holds progress records
  and nothing else shows the run failed (an echo or a print of NVFLARE's words, not its own last word);
- every strong hit is the error line of an nvflare CLI envelope (saved or collected): it says why that command
  failed, not why the job did, unless the row is the command's refusal itself (NVFLARE_COMMAND_ERROR) and nothing
  else was given (every evidence line is such an answer, no failed job status): other evidence says a job ran;
- the job being diagnosed is known and every strong hit lies in a record of another run (its `run=<id>` prefix, a
  job id in one of NVFLARE's shapes, the run folder of its file or of its traceback's paths): evidence of another
  job in the same bundle;
- every hit lies in one file whose dated lines all lie more than GAP before or after the span of the other files'
  dated lines (a pasted record or excerpt; more than GAP + ZONES from another site's files, whose clock may be a
  time zone away): another run's lines, whatever job is diagnosed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import NamedTuple

from ..logline import is_record, message, timestamp
from ..read.prefixes import echoes_a_script
from ..read.structured import command_errors
from .jobframes import job_frame
from .messages import LOG, PANIC, RAISE
from .refine import Candidate
from .tracebacks import Traceback, block_containing

USER_CODE_ID = "USER_CODE_EXCEPTION"
COMMAND_ERROR_ID = "NVFLARE_COMMAND_ERROR"
UNSURE_JOB_CODE = "no frame the evidence shows is the job's own code"
LONE_LINE = "one catalog regex hit on one line, nothing else supports it"
OTHER_RUN = "the evidence is another run's"
OUT_OF_SPAN = "the one record it rests on is dated outside the other logs' time span"
COMMAND_ANSWER = "it rests on nvflare commands' own error answers: they say why a command failed, not why the job did"
WENT_ON = "the run went on past it: NVFLARE's records of completed work follow it"
LOGGED_ONLY = "it rests on messages NVFLARE only logs (it may go on after them), and nothing else shows the run failed"
ECHOED = (
    "it rests on bare lines in NVFLARE's words (no log record) that the run's course contradicts: NVFLARE's records "
    "show the run went on past them or kept working, and nothing else shows it failed"
)
EXIT_ID = "PROCESS_EXIT_NEG9"
GAP = timedelta(hours=1)
ZONES = timedelta(hours=26)  # the widest difference of two local times (UTC-12 to UTC+14)
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RUN = re.compile(rf"\brun[=:] ?({_UUID})\b", re.IGNORECASE)
_RUN_FOLDER = re.compile(rf"[\\/]({_UUID})[\\/]", re.IGNORECASE)
# NVFLARE's job-id shapes (`Job <id>`, `job_id='<id>'`, `"job_id": "<id>"`, `job=<id>`; the catalog's mode hint):
# `job_id=<id>` unquoted is an experiment tracker's print.
_JOB = re.compile(rf"\bjob(?:[ _]?id)?['\"]?\s*[=:]?\s*['\"]?(?<!id=)({_UUID})\b", re.IGNORECASE)
# and in 2.4-2.9's other shapes (the catalog's second such mode hint): `run (<id>): `, `abort run (<id>)`, `job
# (<id>)` before `:`, `;` or ` on clients`, `Submitted job '<name>' with ID: <id>`
_JOB_OTHER = re.compile(
    rf"\brun \(({_UUID})\):|\b(?:abort|delete) run \(({_UUID})\)|\bjob \(({_UUID})\)(?:[:;]| on clients)|"
    rf"\bjob '[^'\n]{{0,200}}' with ID: ({_UUID})\b",
    re.IGNORECASE,
)
# a participant named in a record's fl_ctx (`[identity=site-1, run=..., peer=server, ...]`)
_PARTY = re.compile(r"[\[ ](identity|peer)=([^,\]\s]{1,200})")
MAX_LINE = 4096
EDGE = 50  # lines at each end of a file looked at for its first and last time


def uncorroborated(an, primary: Candidate) -> str:
    """The first reason the primary's evidence cannot carry high, or ""."""
    lines, blocks, job_id = an.evidence.lines, an.tracebacks, an.job_id
    strong = [h for h in primary.hits if h.strength == "strong"]
    placed = [(h, _block(lines, blocks, h.index)) for h in strong if h.index is not None]
    needs_job_code = primary.row.id == USER_CODE_ID or primary.row.job_code_only
    if needs_job_code and not any(b is not None and job_frame(b, an.scripts) is not None for _, b in placed):
        return UNSURE_JOB_CODE
    if _command_answers_only(an, strong) and not (primary.row.id == COMMAND_ERROR_ID and _nothing_but_refusals(an)):
        return COMMAND_ANSWER
    if _lone_line(an, primary, placed):
        return LONE_LINE
    if _went_on(an, primary, placed):
        return WENT_ON
    if _logged_only(an, placed):
        return LOGGED_ONLY
    if _echoed(an, placed):
        return ECHOED
    if job_id and placed and all(_other_run(_runs(lines, h.index, b), job_id) for h, b in placed):
        return OTHER_RUN
    if len(an.evidence.sources) > 1 and _outside_the_logs(lines, primary):
        return OUT_OF_SPAN
    return ""


class CourseRecords:
    """Log records (not flagged) in one of the catalog's run_course wordings (catalog.Wording, or None: none),
    found through the text index (index: textindex.TextIndex of the same lines). Called as (after, source, party):
    the records in line order after line `after`, only of the file `source` when given, and with a `party` only
    those that may name it as their `identity=` or `peer=` or name no `identity=` at all (told by the index, so a
    record of another participant is not read). The candidates are listed once (per file and party), and each
    candidate's text is read once, when a caller first asks past it: a caller that stops at the first record it
    wants reads no more. matcher.Analysis.peer_gone and .progress are two of them."""

    def __init__(self, lines, index, flagged, wording) -> None:
        self._lines, self._index, self._flagged, self._wording = lines, index, flagged, wording
        self._files: dict[str | None, list[int]] | None = None
        self._parties: dict[tuple[str | None, str], list[int]] = {}
        self._allowed: dict[str, frozenset[int]] = {}  # per party: candidates that may name it or name no identity
        self._identified: frozenset[int] | None = None  # lines that may hold `identity=`
        self._is_record: dict[int, bool] = {}

    def __call__(self, after: int = -1, source: str | None = None, party: str = "") -> Iterator[int]:
        if self._wording is None:
            return
        candidates = self._naming(source, party) if party else self._candidates().get(source, [])
        for position in range(bisect_right(candidates, after), len(candidates)):
            if self._record(candidates[position]):
                yield candidates[position]

    def _naming(self, source: str | None, party: str) -> list[int]:
        """The file's candidates that may name `party` (identity= or peer=) or name no identity (a superset). The
        index is asked once per party (and once for `identity=`), not per file."""
        key = (source, party)
        if key not in self._parties:
            if party not in self._allowed:
                if self._identified is None:
                    self._identified = frozenset(self._index.lines_with("identity="))
                low = party.lower()
                naming = {n for needle in (f"identity={low}", f"peer={low}") for n in self._index.lines_with(needle)}
                everyone = self._candidates()[None]
                self._allowed[party] = frozenset(n for n in everyone if n in naming or n not in self._identified)
            allowed = self._allowed[party]
            self._parties[key] = [n for n in self._candidates().get(source, []) if n in allowed]
        return self._parties[key]

    def _candidates(self) -> dict[str | None, list[int]]:
        """The lines holding a keyword of the wording, in line order: all (key None) and per file."""
        if self._files is None:
            found = {n for word in self._wording.keywords for n in self._index.lines_with(word)}
            ordered = sorted(found - set(self._flagged))
            self._files = {None: ordered}
            for n in ordered:
                self._files.setdefault(self._lines[n].source, []).append(n)
        return self._files

    def _record(self, n: int) -> bool:
        if n not in self._is_record:
            text = self._lines[n].text[:MAX_LINE]
            wanted = self._wording.regex.search(text) and is_record(text) and not echoes_a_script(text)
            self._is_record[n] = bool(wanted)
        return self._is_record[n]


def _outside_the_logs(lines, primary: Candidate) -> bool:
    """Every hit in one file, and the file _apart from the others."""
    at = {h.index for h in primary.hits}
    if not at or None in at or len({lines[n].source for n in at}) != 1:
        return False
    return _apart(lines, _by_file(lines), lines[min(at)].source)


def _by_file(lines) -> dict[str, tuple[str | None, list[int]]]:
    """Each file's site and line numbers."""
    files: dict[str, tuple[str | None, list[int]]] = {}
    for number, line in enumerate(lines):
        files.setdefault(line.source, (line.site, []))[1].append(number)
    return files


def _apart(lines, files: dict[str, tuple[str | None, list[int]]], source: str) -> bool:
    """The file's dated lines lie more than GAP before or after the span of the other files' (more than GAP + ZONES
    from a file of another site: each site logs its own local time)."""
    site = files[source][0]
    own = _span(lines, files[source][1])
    if own is None:
        return False
    earliest = latest = None
    for other, (other_site, rows) in files.items():
        if other == source:
            continue
        span = _span(lines, rows)
        if span is None:
            continue
        zoned = site is not None and other_site is not None and site != other_site
        start, end = (
            span[0] - GAP - (ZONES if zoned else timedelta()),
            span[1] + GAP + (ZONES if zoned else timedelta()),
        )
        if start <= own[1] and own[0] <= end:
            return False  # a file of the same hours: no need to read the others
        earliest, latest = min(start, earliest or start), max(end, latest or end)
    return earliest is not None and (own[1] < earliest or own[0] > latest)


def _span(lines, rows: list[int]) -> tuple[datetime, datetime] | None:
    """The times of a file's first and last dated line (looked for among its first and last EDGE lines: logs are
    in time order), or None."""
    first = next((w for n in rows[:EDGE] if (w := _when(lines[n].text)) is not None), None)
    last = next((w for n in reversed(rows[-EDGE:]) if (w := _when(lines[n].text)) is not None), None)
    return (min(first, last), max(first, last)) if first is not None and last is not None else None


def _when(text: str) -> datetime | None:
    stamp = timestamp(text[:64]) if text[:1].isdigit() else None
    try:
        return datetime.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S") if stamp else None
    except ValueError:  # a date that does not exist (month 13)
        return None


def _failed_status(an) -> bool:
    """The job status the evidence or the user states is a failure (an exception or an abort)."""
    status = an.job_status or an.status_in_logs or ""
    return any(word in status for word in ("EXCEPTION", "ABORT"))


def _command_answers_only(an, strong) -> bool:
    """Every strong hit lies on the line an nvflare CLI error envelope became."""
    at = {h.index for h in strong}
    return bool(at) and None not in at and len(command_errors(an.evidence, at)) == len(at)


def _nothing_but_refusals(an) -> bool:
    """Every line of the evidence is an nvflare CLI error answer and no failed job status is stated: nothing
    given says a job ran that the refusal leaves unexplained."""
    lines = an.evidence.lines
    answers = sum(s.kind == "cli_envelope" for s in an.evidence.sources)  # one line per error envelope
    if _failed_status(an) or len(lines) > answers:
        return False
    return len(command_errors(an.evidence, range(len(lines)))) == len(lines)


def _lone_line(an, primary: Candidate, placed) -> bool:
    """One hit line outside a traceback (or copies of one record: NVFLARE writes each ERROR record to log.txt,
    error_log.txt, log.json and the console; hits in another run's pasted file do not count), only catalog words on it, bare or a record of generic words only, and
    no failed job status or NVFLARE shutdown line beside it."""
    lines, at = an.evidence.lines, {h.index for h in primary.hits}
    if not at or None in at or not placed or not all(h.words and b is None for h, b in placed):
        return False
    if len({lines[n].source for n in at}) > 1:  # a copy in another run's excerpt supports nothing
        files = _by_file(lines)
        pasted = {source for source in {lines[n].source for n in at} if _apart(lines, files, source)}
        at = {n for n in at if lines[n].source not in pasted} or at
    texts = [lines[n].text[:MAX_LINE] for n in sorted(at)]
    if len({lines[n].site for n in at} - {None}) > 1 or not _one_record(texts):  # two sites' records are two
        return False
    if _failed_status(an):
        return False
    if not any(is_record(text) for text in texts):
        return True
    return all(h.generic for h, _ in placed) and next(an.peer_gone(), None) is None


def _went_on(an, primary: Candidate, placed) -> bool:
    """Every hit a record outside a traceback, and after the last hit of each of their files (or after a copy of
    that record in another file of the same site or of none: error_log.txt holds no INFO record) a progress record
    of the same course."""
    lines, at = an.evidence.lines, {h.index for h in primary.hits}
    if not at or None in at or not placed or any(b is not None for _, b in placed):
        return False
    if not all(is_record(lines[n].text[:MAX_LINE]) for n in at):
        return False
    copies: dict[tuple, dict[str, int]] = {}  # a record's key -> its first copy in each file
    last: dict[str, int] = {}
    for n in sorted(at):
        copies.setdefault(_key(lines[n].text[:MAX_LINE]), {}).setdefault(lines[n].source, n)
        last[lines[n].source] = n
    job = {an.job_id.lower()} if an.job_id else set()
    answers: dict[int, bool] = {}  # per copy: the files' last hits share their copies
    courses: dict[int, Course] = {}  # per record read

    def went_on(copy: int, source: str) -> bool:
        if copy not in answers:
            own = _course(lines, copy)
            answers[copy] = _went_on_after(lines, own, an.progress(copy, source, own.who), job, courses)
        return answers[copy]

    return all(
        any(
            went_on(c, source)
            for source, c in copies[_key(lines[n].text[:MAX_LINE])].items()
            if None in (lines[c].site, lines[n].site) or lines[c].site == lines[n].site
        )
        for n in last.values()
    )


def _logged_only(an, placed) -> bool:
    """Every strong hit is a line outside a traceback that NVFLARE's message templates decided, each one it only
    logs (messages.LOG), and nothing else in the evidence shows the run failed (_run_failed)."""
    if not placed or any(h.kind != LOG or b is not None for h, b in placed):
        return False
    return not _run_failed(an, {h.index for h, _ in placed})


def _echoed(an, placed) -> bool:
    """Every strong hit is a bare line (not a log record) outside a traceback that NVFLARE's message templates
    decided, and the run's course contradicts it being NVFLARE's own last word: a progress record of its file
    follows each, or the evidence holds progress records and nothing else shows the run failed."""
    lines = an.evidence.lines
    if not placed or any(not h.kind or b is not None or is_record(lines[h.index].text[:MAX_LINE]) for h, b in placed):
        return False
    if all(next(an.progress(h.index, lines[h.index].source), None) is not None for h, _ in placed):
        return True
    return next(an.progress(), None) is not None and not _run_failed(an, {h.index for h, _ in placed})


def _run_failed(an, own: set[int]) -> bool:
    """Besides the lines `own`, the evidence shows the run failed: a failed job status, a traceback, NVFLARE's record
    that a peer is gone, a process killed, or a line that a message NVFLARE raises or panics with decided."""
    if _failed_status(an) or an.tracebacks or next(an.peer_gone(), None) is not None:
        return True
    hits = (h for found in (*an.ranked, *an.demoted) for h in found.hits if h.index not in own)
    return any(h.strength == "strong" and (h.kind in (RAISE, PANIC) or h.pattern == EXIT_ID) for h in hits)


def _key(text: str) -> tuple:
    """A record's time and message: the same in its copies (log.txt, error_log.txt, the console)."""
    return timestamp(text.lstrip()), message(text).strip()


class Course(NamedTuple):
    """Whose course a record tells: the participant (`identity=`), its peer (`peer=`; "" when not named) and the
    runs it names."""

    who: str
    peer: str
    runs: frozenset[str]


def _course(lines, index: int) -> Course:
    """The participant, peer and runs a record names."""
    text = lines[index].text[:MAX_LINE]
    found: dict[str, str] = {}
    for m in _PARTY.finditer(text):
        found.setdefault(m.group(1), m.group(2))  # the fl_ctx's, before any in the message
    runs = frozenset(_folders(lines[index].source) | _named([text]))
    return Course(found.get("identity", ""), found.get("peer", ""), runs)


def _went_on_after(lines, own: Course, after: Iterator[int], job: set[str], courses: dict[int, Course]) -> bool:
    """One of the file's progress records that follow the record whose course is `own` (`after`, in line order;
    read up to the first that answers) names the record's participant as its own or as its peer (or names none of
    them), and not only other runs than the record's (or, when the record names none, the job being diagnosed).
    `courses`: the courses of the records read so far, kept across calls."""
    runs = own.runs or job
    for p in after:
        if p not in courses:
            courses[p] = _course(lines, p)
        other = courses[p]
        if not (own.who and other.who and own.who not in (other.who, other.peer)) and not (
            runs and other.runs and not runs & other.runs
        ):
            return True
    return False


def _one_record(texts: list[str]) -> bool:
    """The texts are one line, or copies of one log record: its time and message in every text (a JSON copy
    holds them as values)."""
    if len(texts) == 1:
        return True
    records = [text for text in texts if is_record(text)]
    if not records or len({timestamp(text.lstrip()) for text in records}) != 1:
        return len({text.strip() for text in texts}) == 1
    stamp, words = timestamp(records[0].lstrip()) or "", message(records[0]).strip()
    return bool(words) and all(words in text and stamp[:19] in text for text in texts)


def _other_run(runs: set[str], job_id: str) -> bool:
    return bool(runs) and job_id.lower() not in runs


def _block(lines, blocks: list[Traceback], index: int) -> Traceback | None:
    return block_containing(blocks, index, lines[index].source)


def _runs(lines, index: int, block: Traceback | None) -> set[str]:
    """Run ids the hit's record names: its own line and its file's run folder, or for a traceback also the record
    line before it and its frames' run folders."""
    texts = [lines[index].text[:MAX_LINE]]
    found = _folders(lines[index].source)
    if block is not None:
        if block.start > 0 and lines[block.start - 1].source == lines[index].source:
            texts.append(lines[block.start - 1].text[:MAX_LINE])
        found |= {m.group(1).lower() for path, _, _ in block.frames for m in _RUN_FOLDER.finditer(path)}
    return found | _named(texts)


def _folders(source: str) -> set[str]:
    """Run ids in the folders of a file's path."""
    return {m.group(1).lower() for m in _RUN_FOLDER.finditer("/" + source)}


def _named(texts: list[str]) -> set[str]:
    """Run ids the texts name in NVFLARE's shapes (`run=<id>`, the job-id shapes)."""
    patterns = (_RUN, _JOB, _JOB_OTHER)
    return {(m.group(1) or m.group(m.lastindex)).lower() for text in texts for p in patterns for m in p.finditer(text)}
