"""Pure matching: Evidence + Catalog + options -> Analysis (what the report stage assembles the report from).

Usage: `an = analyse(evidence, catalog, mode="auto", job_id=None, job_status=None)`; the whole diagnosis is
pipeline.diagnose. Steps: flag suspicious lines (untrusted/), scan signals once, find tracebacks and markers, decide
the mode, decide who raised each traceback and which NVFLARE messages occur (raiser.py), set aside rows only static
source findings support, rank candidates (refine.py), set aside rows only NVFLARE's reactions to a client failure
support (downstream.py) and ABSOLUTE_DATA_PATH when the same root works (datapaths.py), then apply the
partial-visibility and confidence rules and note the facts that move the fix (rounds.py, the user's call).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..model import Evidence
from ..read import sites
from ..textindex import TextIndex
from ..untrusted.injection import scan_suspicious
from . import calibration, careful, datapaths, dissent, downstream, ended, exits, foreign_tracebacks, raiser, releases
from .attribution import dependent_sites, mentioned_sites
from .catalog import Catalog
from .jobframes import scripts_in
from .mode import AMBIGUOUS, decide_mode
from .refine import Candidate, Demoted, rank_candidates
from .rounds import Rounds, rounds_before
from .scan import MARKER, Hit, scan_signals
from .tracebacks import Traceback, block_containing, find_tracebacks, job_own_calls
from .usercalls import UserCall

READ_WHOLE_OR_PART = ("complete", "truncated", "partial")
INVISIBLE = ("missing", "permission_denied", "unavailable", "not_streamed")
PARTIAL_ID = "PARTIAL_LOG_VISIBILITY"
USER_CODE_ID = calibration.USER_CODE_ID
EXIT_ID = "PROCESS_EXIT_NEG9"
MARKER_WINDOW = 50
MAX_MARKERS_CHECKED = 200
SUPPORTING = "supporting evidence (terminal status, a server-side echo or a static source finding)"
STATIC_ONLY = f"only {SUPPORTING}"  # the reason of a row only static source findings support: not a candidate


@dataclass
class Analysis:
    """Everything the report is assembled from (kept as plain data so each rule is testable)."""

    evidence: Evidence
    catalog: Catalog
    mode: str
    mode_reason: str
    job_id: str | None
    job_status: str | None
    suspicious: list[dict]
    flagged: set[int]
    tracebacks: list[Traceback]
    markers: list[dict]
    ranked: list[Candidate]
    demoted: list[Demoted]
    primary: Candidate | None = None
    partial_sites: dict[str, str] = field(default_factory=dict)
    unsupplied_sites: list[str] = field(default_factory=list)
    sim_traceback_missing: bool = False
    site_traceback_missing: bool = False  # POC/production: a client failed but its traceback was not supplied
    confidence: str = "low"
    logs_dir: str | None = None  # per-site log folder named by the simulator's `Simulation failed` wrapper
    script: str | None = None  # how to run diagnose_job.py again (follow-up commands); None: a placeholder
    kit: str | None = None  # the startup-kit option --collect used (`--startup-kit=PATH` / `--kit-id=ID`), shell-quoted
    poc_root: str | None = None  # the POC project folder the startup kit lies in (holds <site>/poc_console.log)
    consequences: set[int] = field(default_factory=set)  # hit lines that are NVFLARE's reactions to a client failure
    careful: careful.CarefulReading = field(default_factory=careful.CarefulReading)  # what a careful reader set aside
    rounds: Rounds | None = None  # rounds that completed before the primary's failure
    ended: ended.Ended | None = None  # a client script that ended without a result and raised nothing (ended.py)
    paths: datapaths.Paths | None = None  # missing absolute paths and the same-layout paths that worked
    user_call: UserCall | None = None  # the job.py call NVFLARE rejected, in the user's words
    workspace_to_add: str | None = None  # an existing SimEnv workspace the stdout names that was not given
    named_sites: set[str] = field(default_factory=set)  # sites whose own logs were given (file names, identity=)
    status_in_logs: str | None = None  # a terminal job status the evidence itself prints (not flagged)
    job_ids_differ: tuple[str, ...] = ()  # the different job ids the evidence states when the user named none
    launcher: str | None = None  # how the run was started when the evidence shows it ("nvflare simulator")
    missing_nvflare: str | None = None  # a name under nvflare. the release that ran the job lacks (releases.py)
    scripts: frozenset[str] = frozenset()  # file names of the scripts the evidence names as run (jobframes.py)
    # records where NVFLARE says a peer is gone, and where it says work completed (calibration.CourseRecords), looked
    # for when called, in line order (progress: after a line, of one file, that may name a participant)
    peer_gone: Callable[[], Iterator[int]] = field(default=lambda: iter(()))
    progress: Callable[[int, str, str], Iterator[int]] = field(default=lambda after, source, party="": iter(()))

    @property
    def facts(self) -> frozenset[str]:
        """What the evidence established that moves the fix (the catalog's next_action_cases facts)."""
        found = {"rounds_completed"} if self.rounds is not None else set()
        found |= {"same_root"} if self.paths is not None and self.paths.worked else set()
        found |= {"user_call"} if self.user_call is not None else set()
        return frozenset(found)

    @property
    def limits_reached(self) -> bool:
        """True when --max-files / --max-total-bytes made the readers skip files."""
        return any(source.status == "skipped_limit" for source in self.evidence.sources)

    @functools.cached_property
    def supplied_sites(self) -> set[str]:
        """Sites with at least one evidence line (one pass over the lines, shared by the rules below)."""
        return {line.site for line in self.evidence.lines if line.site}

    @property
    def hidden_sites(self) -> dict[str, str]:
        """Evidence-stated site log problems, minus sites whose own log lines were supplied anyway."""
        supplied = self.supplied_sites | self.named_sites
        return {
            site: state
            for site, state in sorted(self.evidence.site_status.items())
            if not sites.is_server(site) and (state == "truncated" or (state in INVISIBLE and site not in supplied))
        }


def _marker_entries(lines, markers, blocks, flagged) -> list[dict]:
    """unverified_markers: corroborated by the user-code traceback that follows the marker (before any other
    marker line of the same source: a traceback under a separate marker belongs to that one), or by one in
    another file of the same site (its own log). A marker line flagged as suspicious (prose, blame, directives)
    is never corroborated."""
    user_blocks = [b for b in blocks if b.user_frame]
    spoofed = []
    for index in sorted(flagged)[:MAX_MARKERS_CHECKED]:
        marker = MARKER.search(lines[index].text[:8192])
        if marker:
            spoofed.append((index, marker.group(0)))
    starts = sorted({index for index, _ in markers} | {index for index, _ in spoofed})
    entries = [{"index": index, "marker": marker, "corroborated": False} for index, marker in spoofed]
    for index, marker in markers[:MAX_MARKERS_CHECKED]:
        line = lines[index]
        until = next((n for n in starts if n > index and lines[n].source == line.source), len(lines))
        follows = any(
            b.source == line.source and 0 < b.start - index <= MARKER_WINDOW and b.start < until for b in user_blocks
        )
        own_log = not sites.is_server(line.site) and any(
            b.site == line.site and b.source != line.source for b in user_blocks
        )
        entries.append({"index": index, "marker": marker, "corroborated": (follows or own_log)})
    unique = {entry["index"]: entry for entry in reversed(entries)}
    return sorted(unique.values(), key=lambda e: e["index"])


def _structured_hits(
    catalog: Catalog, blocks: list[Traceback], job_status: str | None, not_user: set[int] = frozenset()
) -> dict[str, list[Hit]]:
    hits: dict[str, list[Hit]] = {}
    for row in catalog.rows:
        tb = row.condition("user_traceback")
        if tb:
            for block in (b for b in blocks if b.user_frame and id(b) not in not_user):
                basis = f"catalog rule {row.id} condition user_traceback (a traceback with a frame in the job's code)"
                hits.setdefault(row.id, []).append(
                    Hit(row.id, block.end or block.start, tb.get("strength", "strong"), basis=basis)
                )
        status = row.condition("job_status")
        if status and job_status and status["compiled"].search(job_status):
            basis = f"catalog rule {row.id} condition job_status"
            hits.setdefault(row.id, []).append(Hit(row.id, None, status.get("strength", "weak"), basis=basis))
    return hits


def _exit_hits(lines, catalog: Catalog, index) -> dict[str, list[Hit]]:
    """PROCESS_EXIT_NEG9 hits from exits read as numbers (exits.py), on any line: the pattern is fixed, so no text
    on the line can choose it."""
    if not catalog.has(EXIT_ID):
        return {}
    found = exits.find_exits(lines, index)
    return {EXIT_ID: [Hit(EXIT_ID, e.index, "strong", basis=exits.basis(e)) for e in found]} if found else {}


def _split_static(hits: dict[str, list[Hit]], lines, evidence: Evidence) -> tuple[dict, dict]:
    """Hits per row, minus the rows that only findings of a static source inspection support (returned apart):
    a static hint may support a pattern the runtime evidence shows, never add one."""
    static_sources = {s.path for s in evidence.sources if s.kind == "inspect_source"}
    if not static_sources:
        return hits, {}
    kept, static = {}, {}
    for row_id, row_hits in hits.items():
        runtime = [h for h in row_hits if h.index is None or lines[h.index].source not in static_sources]
        (kept if runtime else static)[row_id] = row_hits
    return kept, static


def _refine(an: Analysis, hits, static: dict, raised: raiser.RaiserResult, index) -> None:
    """The issue-25 refinements after ranking: downstream consequences, the same-root rule, static-only rows; and
    job.py's rejection supported only by exceptions a site's run of the job's code raised (raiser.refine)."""
    lines, code_lines = an.evidence.lines, raised.code_lines
    an.ranked = raiser.refine(an.ranked, an.demoted, raised.site_ran)
    an.consequences = downstream.consequences(lines, hits, an.tracebacks)
    an.ranked = downstream.refine(an.ranked, an.demoted, an.consequences)
    an.ended = ended.scripts_ended(lines, an.evidence.sources, an.tracebacks, index, an.flagged)
    an.ranked = ended.refine(an.ranked, an.demoted, an.ended, an.consequences)
    an.paths = datapaths.same_root(lines, hits, an.flagged, code_lines, index)
    an.ranked = datapaths.refine(an.ranked, an.demoted, an.catalog, an.mode, an.paths)
    for row_id in sorted(static):
        an.demoted.append(Demoted(an.catalog.row(row_id), STATIC_ONLY, tuple(static[row_id])))


def _failure_facts(an: Analysis, index) -> None:
    """Rounds completed before the primary's user-code failure; the job.py call NVFLARE rejected."""
    if an.primary is None:
        return
    lines = an.evidence.lines
    an.user_call = raiser.user_call(an.primary.hits, lines, an.tracebacks, an.catalog.user_calls)
    if not any(case.fact == "rounds_completed" for case in an.primary.row.next_action_cases):
        return  # no wording of this row depends on the rounds
    for hit in sorted((h for h in an.primary.hits if h.index is not None and h.strength == "strong"), key=_at):
        block = block_containing(an.tracebacks, hit.index, lines[hit.index].source)
        if block is not None and block.user_frame and raiser.origin(block) == raiser.USER_CODE:
            an.rounds = rounds_before(lines, block.start, an.evidence.metrics, index)
            return


def _at(hit: Hit) -> int:
    return hit.index if hit.index is not None else -1


_FILE_SITE = re.compile(r"(?<![a-z0-9])(site-\d{1,6}|site_\d{1,6})(?![0-9])")
_FINISHED = re.compile(r"finished[:_]")
_STATUS_VALUE = re.compile(r"finished[:_][a-z_]{2,40}\b")
_STATUS_LEAD = re.compile(r"(?:with status|job status(?: is)?:?|status[=:]) ?$")
_CLI_LAUNCH = (
    "nvflare simulator ",
    "nvflare.private.fed.app.simulator.simulator",
    "/nvflare/private/fed/app/simulator/simulator.py",
    "\\nvflare\\private\\fed\\app\\simulator\\simulator.py",
)


def _named_sites(evidence: Evidence, index: TextIndex, candidates: set[str]) -> set[str]:
    """Of `candidates`, the sites whose own logs were given though no folder labels them: a site in a file name
    (`site-3_log.txt`) or the `identity=<site>` NVFLARE writes into every record of a participant's own log."""
    read = [s for s in evidence.sources if s.kind == "log" and s.status in READ_WHOLE_OR_PART and s.bytes_read]
    in_names = {m.group(1).replace("_", "-") for s in read for m in _FILE_SITE.finditer(s.path.lower())}
    return {
        site
        for site in candidates
        if sites.valid_site(site)
        and not sites.is_server(site)
        and (site in in_names or f"identity={site.lower()}" in index.low)
    }


def _status_in_logs(lines, index: TextIndex, flagged: set[int]) -> str | None:
    """The terminal job status a line that is not flagged prints (`finished with status FINISHED:ABORTED`): found
    from each `finished:` in the whole text (a literal search), then the words before it."""
    low = index.low
    for match in _FINISHED.finditer(low):
        status = _STATUS_VALUE.match(low, match.start())
        if status is None or not _STATUS_LEAD.search(low, max(0, match.start() - 24), match.start()):
            continue
        if index.low_line_at(match.start()) not in flagged:
            value = status.group(0).upper().replace("FINISHED_", "FINISHED:", 1)
            if sites.valid_job_status(value):
                return value
    return None


def _launcher(index: TextIndex) -> str | None:
    """ "nvflare simulator" when the evidence shows the simulator CLI started the run and nothing shows job.py."""
    if "job.py" in index.low or not any(needle in index.low for needle in _CLI_LAUNCH):
        return None
    return "nvflare simulator"


def _workspace_to_add(an: Analysis) -> str | None:
    """The first existing, not given SimEnv workspace a line names that is not suspicious (simulation only)."""
    if an.mode == "production":
        return None
    return next((path for index, path in an.evidence.named_workspaces if index not in an.flagged), None)


def _merge(a: dict[str, list[Hit]], b: dict[str, list[Hit]]) -> dict[str, list[Hit]]:
    merged = {key: list(value) for key, value in a.items()}
    for key, value in b.items():
        merged.setdefault(key, []).extend(value)
    return merged


def _known_sites(an: Analysis) -> set[str]:
    return an.supplied_sites | set(an.evidence.site_status)


def _apply_visibility(an: Analysis, index: TextIndex) -> None:
    """PARTIAL_LOG_VISIBILITY when the symptom depends on sites whose logs the evidence says are not visible."""
    lines, status = an.evidence.lines, an.evidence.site_status
    if an.primary is None:
        depends, server_only = set(), True
    else:
        texts = [lines[h.index].text for h in an.primary.hits if h.index is not None]
        hit_sites = [lines[h.index].site for h in an.primary.hits if h.index is not None]
        depends, server_only = dependent_sites(texts, hit_sites, _known_sites(an))
    an.named_sites = _named_sites(an.evidence, index, (depends | set(status)) - an.supplied_sites)
    blocked = an.hidden_sites
    signal_sites = {lines[h.index].site for h in (an.primary.hits if an.primary else []) if h.index is not None}
    if an.primary is not None and not an.primary.row.depends_on_sites:
        relevant: set[str] = set()  # a cause visible where it happened does not wait for other sites' logs
    else:
        relevant = depends if depends else (set(blocked) if server_only else set())
    an.partial_sites = {
        s: st for s, st in sorted(blocked.items()) if s in relevant and (st in INVISIBLE or s not in signal_sites)
    }
    supplied = an.supplied_sites | an.named_sites
    if an.mode != "simulation":
        an.unsupplied_sites = sorted(s for s in depends if s not in supplied and s not in status)
    can_override = an.catalog.has(PARTIAL_ID) and an.mode != "simulation"
    if an.partial_sites and can_override and (an.primary is None or an.primary.row.id != PARTIAL_ID):
        if an.primary is not None:
            reason = "symptom depends on site logs that are not visible"
            an.demoted.insert(0, Demoted(an.primary.row, reason, tuple(an.primary.hits)))
            an.ranked = an.ranked[1:]
        an.primary = Candidate(an.catalog.row(PARTIAL_ID), [])


def _confidence(an: Analysis) -> str:
    primary = an.primary
    if primary is None or primary.row.id == PARTIAL_ID or not primary.strong:
        return "low"
    if all(h.foreign for h in primary.hits if h.strength == "strong"):
        return "low"  # e.g. the kit row on a web download's certificate line: not NVFLARE's connection
    runner_up = next((c for c in an.ranked if c is not primary and c.strong), None)
    if runner_up is not None and runner_up.row.priority == primary.row.priority:
        return "low"
    level = "high"
    truncated = any(s.truncated for s in an.evidence.sources)
    if an.unsupplied_sites or truncated or an.hidden_sites or an.mode == AMBIGUOUS:
        level = "medium"
    if all(h.loose for h in primary.hits if h.strength == "strong"):
        level = "medium"  # only a generic NVFLARE template or a rule that matches words, not a specific message
    if all(h.contested for h in primary.hits if h.strength == "strong" and not h.loose):
        level = "medium"  # the evidence disagrees with itself: the message's exception class points at another row
    if _default_variant_only(an, primary):
        level = "medium"  # e.g. a kill with neither cleanup nor OOM evidence: the row's own `unexplained` variant
    if _only_other_sites(an, primary):
        level = "medium"  # the direct evidence is another site's view (the server echoing a client's failure)
    if an.careful.caps_confidence(primary.row.id):
        level = "medium"  # a handled traceback supported another row: the careful reading is not the only one
    if calibration.uncorroborated(an, primary):
        level = "medium"  # see calibration.py: unsure job code, one bare regex line, another run's evidence
    return level


def _default_variant_only(an: Analysis, primary: Candidate) -> bool:
    """The row names sub-causes and falls back to a default one, and no named sub-cause matches its hit lines."""
    row = primary.row
    if row.default_variant is None:
        return False
    lines = an.evidence.lines
    texts = [lines[h.index].text[:8192] for h in primary.hits if h.index is not None]
    return not any(v.regex is not None and v.regex.search(t) for v in row.variants for t in texts)


def _site_own_error(an: Analysis) -> bool:
    """The primary's direct evidence is an error line in a client site's own log: the failure is in the evidence
    even without a traceback, so it is not reported missing."""
    if an.primary is None:
        return False
    lines = an.evidence.lines
    return any(
        h.strength == "strong"
        and h.index is not None
        and lines[h.index].site
        and not sites.is_server(lines[h.index].site)
        for h in an.primary.hits
    )


def _only_other_sites(an: Analysis, primary: Candidate) -> bool:
    """True when every strong hit of the primary is on a server line that names a client site: the affected site's
    own evidence was not seen (depends_on_sites rows are the server's view by definition and are left to the
    partial-visibility rules)."""
    if primary.row.depends_on_sites:
        return False
    lines, known = an.evidence.lines, _known_sites(an)
    strong = [h for h in primary.hits if h.strength == "strong" and h.index is not None]
    if not strong:
        return False
    for hit in strong:
        line = lines[hit.index]
        block = block_containing(an.tracebacks, hit.index, line.source)
        if not line.site or not sites.is_server(line.site):
            return False  # the site's own log, or output that is not one participant's (a simulation's stdout)
        named = mentioned_sites(line.text[:4096], known)
        if not named or (block is not None and block.site and not sites.is_server(block.site)):
            return False
    return True


def analyse(
    evidence: Evidence,
    catalog: Catalog,
    *,
    mode: str = "auto",
    job_id: str | None = None,
    job_status: str | None = None,
    script: str | None = None,
    kit: str | None = None,
    poc_root: str | None = None,
) -> Analysis:
    """Apply every matching rule and return the Analysis the report is built from."""
    lines = evidence.lines
    index = TextIndex([line.text for line in lines])  # one joined text for all the cheap whole-text passes
    suspicious, flagged = scan_suspicious(lines, index)
    scanned = scan_signals(lines, catalog, flagged, index)
    blocks = find_tracebacks(lines, flagged, index)
    job = sites.job_identity(job_id, job_status, evidence)
    own = job_own_calls(blocks, lines)
    own_lines = frozenset(i for b in own for i in [*range(b.start, b.end + 1), *b.detail])
    detected, reason = decide_mode(
        mode,
        evidence.mode_hints,
        functools.partial(scanned.find_mode_hints, own_calls=own_lines),
        job_id_given=job.user_given,
        weak=catalog.weak_mode_reasons,
    )
    raised = raiser.analyse_raisers(lines, blocks, catalog, detected, flagged, index)
    hits, static, reading = _all_hits(evidence, catalog, scanned, raised, blocks, own, job.status, index, flagged)
    ranked, demoted = rank_candidates(hits, catalog, lines, detected, flagged, job.status)
    reading.demote(ranked, demoted, catalog)
    an = Analysis(
        evidence,
        catalog,
        detected,
        reason,
        job.job_id,
        job.status,
        suspicious,
        flagged,
        blocks,
        _marker_entries(lines, scanned.markers, blocks, flagged),
        ranked,
        demoted,
        logs_dir=raised.logs_dir,
        script=script,
        kit=kit,
        poc_root=poc_root,
        careful=reading,
        job_ids_differ=job.ids_differ,
    )
    an.scripts = scripts_in(lines, index)
    _refine(an, hits, static, raised, index)
    an.primary = an.ranked[0] if an.ranked else None
    _apply_visibility(an, index)
    _failure_facts(an, index)
    _run_facts(an, index)
    _missing_tracebacks(an, hits)
    an.confidence = _confidence(an)
    return an


def _all_hits(evidence: Evidence, catalog: Catalog, scanned, raised, blocks, own, status, index, flagged) -> tuple:
    """Every row's hits (scanned signals a raiser does not shadow, structured conditions, raisers', exits'), loose
    on third-party tracebacks, contested where the evidence disagrees and read carefully (careful.py); split from
    the static-only rows; and what the careful reading set aside."""
    lines = evidence.lines
    scanned_hits = raiser.drop_shadowed_hits(scanned.hits, raised, lines, catalog)
    hits = _merge(
        _merge(scanned_hits, _structured_hits(catalog, blocks, status, raised.not_user_evidence)), raised.hits
    )
    hits = _merge(hits, _exit_hits(lines, catalog, index))
    hits = foreign_tracebacks.loosen(hits, catalog, blocks, own, lines)
    hits = dissent.contest(hits, lines, blocks, catalog)
    hits, reading = careful.read_carefully(hits, evidence, blocks, catalog, index, flagged)
    return (*_split_static(hits, lines, evidence), reading)


def _run_facts(an: Analysis, index: TextIndex) -> None:
    """What the evidence says about the run besides the failure: a workspace to add, a job status it prints, how
    it was started, NVFLARE's peer-loss and progress records, a name under nvflare. the release lacks."""
    lines = an.evidence.lines
    an.workspace_to_add = _workspace_to_add(an)
    # a status a structured answer stated is that job's (read/sites.job_identity), not a status the logs print
    stated = {number for number, line in enumerate(lines) if line.source in an.evidence.status_sources}
    an.status_in_logs = None if an.job_status else _status_in_logs(lines, index, an.flagged | stated)
    an.launcher = _launcher(index) if an.mode == "simulation" else None
    an.peer_gone = calibration.CourseRecords(lines, index, an.flagged, an.catalog.peer_gone)
    an.progress = calibration.CourseRecords(lines, index, an.flagged, an.catalog.progress)
    if an.primary is not None:
        strong = [h.index for h in an.primary.hits if h.strength == "strong" and h.index is not None]
        an.missing_nvflare = releases.missing_nvflare_name(strong, lines, an.tracebacks)


def _missing_tracebacks(an: Analysis, hits: dict[str, list[Hit]]) -> None:
    """A user-code failure (hit or job status) whose traceback the evidence lacks, by mode: simulation or
    production (a client's own error line counts as its evidence)."""
    status = an.job_status
    # a traceback that ends in third-party code is not missing either
    has_user_tb = any(b.user_frame or b.third_party is not None for b in an.tracebacks)
    failed = bool(hits.get(USER_CODE_ID)) or (status is not None and "EXCEPTION" in status)
    has_user_tb = has_user_tb or _site_own_error(an) or an.ended is not None  # shown absent: ended.py
    an.sim_traceback_missing = an.mode == "simulation" and failed and not has_user_tb
    an.site_traceback_missing = an.mode == "production" and failed and not has_user_tb
