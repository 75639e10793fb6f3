"""Who raised it decides: classify tracebacks by their raising frame and caller chain, and read NVFLARE's messages.

Usage: `found = analyse_raisers(lines, blocks, catalog, mode, skip)` -> RaiserResult with hits per row, the blocks
whose exception is NVFLARE's or a wrapper's (they are not user-code evidence), and the per-site log folder the
simulator's wrapper names. Pure. Rules (spec "Who raised it decides", "NVFLARE's own error messages are data"):
- raised inside the nvflare package from a chain that starts in user code (job.py: recipe, FedJob, env, execute,
  to, simulator_run, export): NVFLARE rejected the job's arguments -> SIMULATION_CONFIG_ERROR, or
  CONFIG_FILE_VALIDATION_ERROR when the message names a config file or outside simulation;
- an exception message that is one of NVFLARE's reviewed templates -> that template's row (more specific);
- `Simulation failed with return code N` and other wrappers are never a cause;
- raised in user code (client script and its modules) -> left to USER_CODE_EXCEPTION as before; when a site ran
  that code (the chain starts in NVFLARE's runner or in an app's custom folder), the run had
  started, so SIMULATION_CONFIG_ERROR ("rejected before the simulation ran") supported only by such exception lines
  is set aside (`refine`): a config file the training code parses itself fails in the training code.
`where_clause` and `user_call` walk the job.py frames for the next action: the deepest job.py frame is where the job
reached NVFLARE, and the catalog's user_calls table (usercalls.py) translates NVFLARE's internal names to the call
the user wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..logline import QUIET_LEVELS, level, loud_lines, timestamp
from ..model import Line
from ..read import sites
from ..textindex import Subset
from . import usercalls
from .messages import LOG, PANIC, RAISE, WRAPPER
from .refine import Candidate, Demoted
from .scan import Hit
from .tracebacks import Traceback, block_containing, is_nvflare_file, is_user_file

USER_CODE, NVFLARE_FROM_USER, NVFLARE, WRAPPED, LIBRARY = (
    "user_code",
    "nvflare_from_user",
    "nvflare",
    "wrapper",
    "library",
)
SIM_ROW, CONFIG_ROW = "SIMULATION_CONFIG_ERROR", "CONFIG_FILE_VALIDATION_ERROR"
MAX_DETAIL_HITS = 2
MAX_INTERLEAVED = 8  # lines between a frame line and its quoted source when other threads' records interleave
_CONFIG_NAMED = re.compile(r"\b[\w.-]+\.(?:json|ya?ml|conf|cfg|toml)\b|config_fed_(?:server|client)|\bmeta\.json\b")
_ERROR_WORDS = ("rror", "RROR", "xception", "CRITICAL", "FATAL")  # cheap substring test before the regex
_ERRORISH = re.compile(r"(?:Error|Exception|ERROR|CRITICAL|FATAL)\b|\berror\b")
_CLASS_PREFIX = re.compile(r"^.*?\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|NotAuthorized|NotFound)\w*: ")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w{0,63}$")
_FILE_NAME = re.compile(r"^[\w.-]{1,80}\.py$")
_FUNCTION = re.compile(r"^(?:[A-Za-z_]\w{0,80}|<module>)$")
# Where an error names the argument it rejects, most explicit first.
_ARGUMENT = (
    re.compile(r"unexpected keyword argument '(\w+)'"),
    re.compile(r"missing \d+ required (?:positional |keyword-only )?arguments?: '(\w+)'"),
    re.compile(r"\b(?:arg|argument|parameter|key)s? '(\w+)'", re.IGNORECASE),
    re.compile(r"\b([a-z]\w*)=\S"),
    re.compile(r"^(?:[\w.]+: )?'?([a-z]\w*)'? (?:must|should|is required|cannot|needs)\b"),
    re.compile(r"\brequires '?([a-z]\w*)'? to be\b"),
    re.compile(r"`([A-Za-z_]\w*)`"),
)
_PYDANTIC_HEAD = re.compile(r"ValidationError: \d+ validation errors? for \w+")
_PYDANTIC_NOISE = re.compile(r"^\s*For further information visit\b")
_NVFLARE_MODULE = re.compile(r"[\\/]nvflare[\\/]([\w/-]{1,160}\.py)$")
_PYDANTIC_FIELD = re.compile(r"^([A-Za-z_]\w{0,63})$")
# An app's custom folder: where NVFLARE puts the job's code a site runs (`app/custom` of a job folder,
# `app_<site>/custom` of a run). A folder named `custom` or `app_x` alone is not (a library can live under either).
_SITE_APP = re.compile(r"[\\/]app(?:_[\w.@-]{1,64})?[\\/]custom[\\/]")
SITE_RAN = (
    "raised in the job's code while a site ran it (the run had started): the training code's exception, not "
    "NVFLARE rejecting job.py before anything ran"
)


@dataclass
class RaiserResult:
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    not_user_evidence: set[int] = field(default_factory=set)  # ids of blocks that are NVFLARE's or a wrapper's
    logs_dir: str | None = None  # per-site log folder named by the simulator's wrapper line
    decided_lines: dict[int, tuple[str, ...]] = field(default_factory=dict)  # line -> values its template leaves open
    bases: dict[int, tuple[str, str]] = field(default_factory=dict)  # line -> (how its template decided, wrapper)
    code_lines: set[int] = field(default_factory=set)  # source-code lines quoted under traceback frames
    site_ran: set[int] = field(default_factory=set)  # message lines of exceptions the job's code raised in a site

    def add(
        self, row: str, index: int, basis: str = "", loose: bool = False, wrapper: str = "", kind: str = ""
    ) -> None:
        bucket = self.hits.setdefault(row, [])
        if all(h.index != index for h in bucket):
            bucket.append(Hit(row, index, "strong", basis=basis, loose=loose, wrapper=wrapper, kind=kind))


def origin(block: Traceback) -> str:
    """Who raised the exception: the deepest frame in user code or NVFLARE decides, the chain's start tells
    whether NVFLARE was called from the user's job script."""
    if block.launcher_echo:
        return WRAPPED
    own = [f for f in block.frames if is_user_file(f[0]) or is_nvflare_file(f[0])]
    if not own:
        return LIBRARY
    if not is_nvflare_file(own[-1][0]):
        return USER_CODE
    return NVFLARE_FROM_USER if is_user_file(own[0][0]) else NVFLARE


def ran_by_a_site(block: Traceback) -> bool:
    """The job's code raised it while a site ran that code: raised in user code, and the chain starts in NVFLARE (its
    script runner called the client script) or in an app's custom folder (an external client process starts there;
    a helper it imports may be read from the job folder). A chain that starts in job.py is not a site's, even when
    job.py calls a helper kept in app/custom (the old job-folder layout)."""
    if origin(block) != USER_CODE:
        return False
    own = [f for f in block.frames if is_user_file(f[0]) or is_nvflare_file(f[0])]
    return is_nvflare_file(own[0][0]) or bool(_SITE_APP.search(own[0][0]))


def refine(ranked: list[Candidate], demoted: list[Demoted], site_ran: set[int]) -> list[Candidate]:
    """SIMULATION_CONFIG_ERROR is set aside (listed with SITE_RAN) when every strong hit is the message of an
    exception the job's code raised while a site ran it; when other strong hits remain (job.py's own failure), those
    messages do not support it (they would name a site's file as the job.py argument to fix)."""
    kept = []
    for cand in ranked:
        strong = [h.index for h in cand.hits if h.strength == "strong"]
        if cand.row.id != SIM_ROW or not any(i in site_ran for i in strong):
            kept.append(cand)
        elif all(i is not None and i in site_ran for i in strong):
            demoted.append(Demoted(cand.row, SITE_RAN, tuple(cand.hits)))
        else:
            kept.append(replace(cand, hits=[h for h in cand.hits if h.index not in site_ran]))
    return kept


def message_lines(block: Traceback) -> list[int]:
    """The exception line and the detail lines that continue its message."""
    return ([block.end] if block.end is not None else []) + list(block.detail)


def what_is_wrong(block: Traceback, lines: list[Line]) -> list[int]:
    """pydantic's field and reason lines after `N validation error(s) for X` (its exception line alone says
    nothing), without the docs link; [] for other exceptions."""
    if block.end is None or not _PYDANTIC_HEAD.search(lines[block.end].text[:4096]):
        return []
    wanted = [i for i in block.detail if not _PYDANTIC_NOISE.match(lines[i].text)]
    return wanted[:MAX_DETAIL_HITS]


def message_text(block: Traceback, lines: list[Line]) -> str:
    return " ".join(lines[i].text.strip() for i in message_lines(block))


def _is_quiet(text: str) -> bool:
    return level(text) in QUIET_LEVELS


def _row_for(group: str, mode: str) -> str:
    """SIMULATION_CONFIG_ERROR is simulation-only: elsewhere NVFLARE's rejection reads as a configuration error."""
    return CONFIG_ROW if group == SIM_ROW and mode == "production" else group


def _structural_row(text: str, mode: str) -> str:
    return CONFIG_ROW if mode == "production" or _CONFIG_NAMED.search(text) else SIM_ROW


def _block_hits(result: RaiserResult, block: Traceback, lines: list[Line], catalog, mode: str) -> None:
    kind = origin(block)
    if kind in (USER_CODE, LIBRARY):
        return
    text = message_text(block, lines)
    templates = catalog.messages.match(text) if catalog.messages is not None and text else []
    if kind == WRAPPED or any(t.group == WRAPPER for t in templates):
        result.not_user_evidence.add(id(block))
        _note_logs_dir(result, text)
    peeled = peel(templates, text, catalog, lines_of=_line_breaks(block, lines))
    chosen = peeled.templates
    rows = {_row_for(t.group, mode) for t in chosen}
    for index in message_lines(block) if (chosen or peeled.carrier) else ():
        result.decided_lines[index] = peeled.values
        result.bases[index] = (peeled.basis, peeled.wrapper)
    if peeled.inner_rows:
        result.not_user_evidence.add(id(block))
    if kind == NVFLARE_FROM_USER and not templates:
        rows = {_structural_row(text, mode)}
    if not rows:
        return
    result.not_user_evidence.add(id(block))
    where = [block.end] + what_is_wrong(block, lines) + _call_site_line(block)
    basis = peeled.basis if chosen else "traceback raised inside nvflare from the job's own call (no template)"
    for row in sorted(rows):
        for index in where:
            result.add(row, index, basis, peeled.loose, peeled.wrapper)


@dataclass(frozen=True)
class Peeled:
    """What decides a message: the templates (after peeling carriers), the rows a catalog rule finds in the peeled
    inner text (their scan hits on the same line decide), the outermost carrier, and the open values a catalog rule
    may still match (each value on its own)."""

    templates: list
    inner_rows: frozenset[str] = frozenset()
    carrier: object = None
    values: tuple[str, ...] = ()
    basis: str = ""
    loose: bool = False
    peeled: bool = False  # the carrier was peeled: what decides is inside it

    @property
    def wrapper(self) -> str:
        return self.carrier.text if self.carrier is not None and self.peeled else ""


def _quote(text: str) -> str:
    return '"' + (text if len(text) <= 90 else text[:87] + "...") + '"'


def _inner_rows(inner: str, catalog) -> frozenset[str]:
    """Rows whose strong catalog rule matches the peeled inner text on its own."""
    found = set()
    for row in catalog.rows:
        if row.finding_only:
            continue
        if any(sig.strength == "strong" and sig.regex.search(inner[:4096]) for sig in row.signals):
            found.add(row.id)
    return frozenset(found)


def _line_breaks(block: Traceback, lines: list[Line]) -> str:
    """The message text joined with newlines (same length as message_text: the value a carrier holds ends with
    its line, so a chained exception on the next line is not read as part of it)."""
    return "\n".join(lines[i].text.strip() for i in message_lines(block))


def peel(templates: list, text: str, catalog, depth: int = 0, lines_of: str | None = None) -> Peeled:
    """The inner exception decides: when the decisive template (or a wrapper) ends in a value that is itself a
    message, that value is matched on its own, up to three nested carriers. A template found there decides; else a
    catalog rule matching the inner text decides (the carrier's row is dropped for this line); else the carrier's
    own row stands, and a generic carrier (a config-processing or runtime-error wrapper) is a loose basis."""
    chosen = decisive(templates)
    carriers = [t for t in chosen if t.carrier] or [t for t in templates if t.group == WRAPPER and t.carrier]
    values = tuple(v for t in chosen for v in _open_list(t, text))
    base = Peeled(chosen, values=values, basis=_template_basis(chosen))
    if not carriers or depth >= 3:
        return base
    carrier = max(carriers, key=lambda t: t.literal_length)
    inner = carrier.tail(text)
    if lines_of is not None and len(lines_of) == len(text) and inner:
        start = text.rfind(inner)  # tail() strips; the value runs to the end of its line
        inner = lines_of[start:].split("\n", 1)[0].strip() if start >= 0 else inner
    if not inner:
        return base
    inner_templates = [t for t in catalog.messages.match(inner) if t.text != carrier.text]
    wrapped = f"wrapper {_quote(carrier.text)} peeled"
    if decisive(inner_templates):
        deeper = peel(inner_templates, inner, catalog, depth + 1)
        return Peeled(
            deeper.templates,
            deeper.inner_rows,
            carrier,
            deeper.values,
            f"{wrapped}; {deeper.basis}",
            deeper.loose,
            True,
        )
    rows = _inner_rows(inner, catalog)
    if rows:
        return Peeled([], rows, carrier, (inner,), f"{wrapped}; the inner message matched a catalog rule", peeled=True)
    if carrier.group == WRAPPER:
        return base  # a wrapper with nothing recognizable inside: it decides nothing, and restricts no rule
    return Peeled(
        chosen,
        values=values,
        basis=f"{base.basis} (generic; its inner message matched nothing)" if carrier.generic else base.basis,
        carrier=carrier,
        loose=carrier.generic,
    )


def _open_list(template, text: str) -> list[str]:
    return [_CLASS_PREFIX.sub("", value, count=1) for value in template.open_text(text)]


def _template_basis(chosen: list) -> str:
    if not chosen:
        return ""
    first = chosen[0]
    return f"nvflare message template {_quote(first.text)} ({first.at})"


def decisive(templates: list) -> list:
    """The most specific non-wrapper templates (most literal text): a generic check such as `{} must be {}, but
    got {}.` yields to `timeout must > 0, but got {}` when both fit the same message."""
    rows = [t for t in templates if t.group != WRAPPER]
    longest = max((t.literal_length for t in rows), default=0)
    return [t for t in rows if t.literal_length == longest]


def drop_shadowed_hits(
    hits: dict[str, list[Hit]], result: RaiserResult, lines: list[Line], catalog
) -> dict[str, list[Hit]]:
    """Catalog regex hits that only echo code, an exception class or NVFLARE's own wording are dropped: hits on
    source-code lines quoted under traceback frames (`raise FileNotFoundError(...)`), and hits on a line NVFLARE's
    reviewed template decided unless the regex matches what the template leaves open: its values and the rest of
    the line (`FileNotFoundError: CC config file not found: /home/x` is the template's row; a CUDA out-of-memory
    error inside NVFLARE's `failed to instantiate class: {}` still counts)."""
    kept: dict[str, list[Hit]] = {}
    for row_id, row_hits in hits.items():
        signals = catalog.row(row_id).signals
        for hit in row_hits:
            if hit.index in result.code_lines:
                continue
            if hit.index in result.decided_lines:
                values = result.decided_lines[hit.index]  # each value on its own: a rule never spans two values
                if not any(sig.regex.search(value) for sig in signals for value in values):
                    continue
                basis, wrapper = result.bases.get(hit.index, ("", ""))
                if wrapper:
                    hit = replace(hit, basis=f"{basis}; {hit.basis}", wrapper=wrapper)
            kept.setdefault(row_id, []).append(hit)
    return kept


def code_lines(block: Traceback, lines: list[Line]) -> list[int]:
    """Indented lines right under a frame line (the quoted source and its ^^^ markers), up to the next frame, and
    the quoted source a log record of another thread split from its frame (between the frame and the next frame
    line of the same source, the one line that is neither a frame nor a timestamped record)."""
    found = []
    stops = set(block.frame_lines) | {block.end}
    for frame_line in block.frame_lines:
        index = frame_line + 1
        while index not in stops and index < len(lines) and index - frame_line <= 2:
            if lines[index].source != lines[frame_line].source or not lines[index].text[:1].isspace():
                break
            found.append(index)
            index += 1
    for frame_line, next_stop in zip(block.frame_lines, sorted(stops)[1:], strict=False):
        between = [
            i
            for i in range(frame_line + 1, min(next_stop, frame_line + MAX_INTERLEAVED))
            if lines[i].source == lines[frame_line].source and timestamp(lines[i].text[:64]) is None
        ]
        found += [i for i in between if i not in found][:2]
    return found


def _call_site_line(block: Traceback) -> list[int]:
    """Index of the frame line of the deepest user frame (the job.py line that called NVFLARE)."""
    for frame, index in zip(reversed(block.frames), reversed(block.frame_lines), strict=True):
        if is_user_file(frame[0]):
            return [index]
    return []


def _note_logs_dir(result: RaiserResult, text: str) -> None:
    if result.logs_dir is None:
        result.logs_dir = sites.logs_dir_named(text)


def _line_hits(
    result: RaiserResult, lines: list[Line], catalog, mode: str, covered: set[int], skip, candidates
) -> None:
    """NVFLARE messages on error lines outside tracebacks (log records, CLI output, a pasted exception line).
    `candidates`: the indexes of the lines that may be such lines (see _error_lines)."""
    for index in candidates:
        if index in covered or index in skip:
            continue
        text = lines[index].text[:8192]
        if not any(word in text for word in _ERROR_WORDS) or not _ERRORISH.search(text) or _is_quiet(text):
            continue
        templates = catalog.messages.match(text)
        if any(t.group == WRAPPER for t in templates):
            _note_logs_dir(result, text)
        peeled = peel(templates, text, catalog)
        kind = line_kind(peeled)
        for template in peeled.templates:
            result.add(_row_for(template.group, mode), index, peeled.basis, peeled.loose, peeled.wrapper, kind)
        if peeled.templates or peeled.carrier:
            result.decided_lines[index] = peeled.values
            result.bases[index] = (peeled.basis, peeled.wrapper)


def line_kind(peeled: Peeled) -> str:
    """How NVFLARE printed a line its templates decided: LOG when the decisive templates and the carrier peeled to
    reach them are all only logged, PANIC when one is a panic's reason, else RAISE."""
    kinds = {t.kind for t in peeled.templates} | ({peeled.carrier.kind} if peeled.carrier is not None else set())
    return LOG if kinds == {LOG} else PANIC if PANIC in kinds else RAISE


def _error_lines(lines: list[Line], index) -> list[int] | range:
    """Every line, or with a textindex.TextIndex only the lines that are not DEBUG/INFO records and hold an
    error word (found with one search per word over the joined text of those lines)."""
    if index is None:
        return range(len(lines))
    loud = Subset(index, loud_lines(index, lambda n: lines[n].text[:8192]))
    return sorted({n for word in {w.lower() for w in _ERROR_WORDS} for n in loud.lines_with(word)})


def analyse_raisers(
    lines: list[Line], blocks: list[Traceback], catalog, mode: str, skip=frozenset(), index=None
) -> RaiserResult:
    """Hits from traceback structure and NVFLARE's messages; see the module docstring for the rules. `index`, a
    textindex.TextIndex of the same lines, finds the lines that are not DEBUG/INFO records without a loop."""
    result = RaiserResult()
    covered: set[int] = set()
    for block in blocks:
        if block.end is None:
            continue
        covered.update(range(block.start, block.end + 1), block.detail)  # source lines quote messages too
        result.code_lines.update(code_lines(block, lines))
        if ran_by_a_site(block):
            result.site_ran.update(message_lines(block))
        _block_hits(result, block, lines, catalog, mode)
    if catalog.messages is not None:
        _line_hits(result, lines, catalog, mode, covered, skip, _error_lines(lines, index))
    return result


def argument_named(block: Traceback | None, lines: list[Line], index: int) -> str | None:
    """The argument an error rejects: pydantic's field line, else the first explicit mention in the message."""
    if block is not None:
        for i in block.detail:
            field_line = _PYDANTIC_FIELD.match(lines[i].text.strip())
            if field_line:
                return field_line.group(1)
        text = message_text(block, lines)
    else:
        text = lines[index].text[:4096]
    text = text.split(": ", 1)[1] if re.match(r"^(?:[\w.]+Error|[\w.]+Exception): ", text) else text
    for pattern in _ARGUMENT:
        match = pattern.search(text)
        if match and _IDENTIFIER.match(match.group(1)):
            return match.group(1)
    return None


def user_call(primary_hits, lines: list[Line], blocks: list[Traceback], calls) -> usercalls.UserCall | None:
    """The job.py call NVFLARE rejected, in the user's words: the catalog's user_calls row that fits the message and
    the frames of the first traceback NVFLARE raised from user code among the primary's hits."""
    for hit in sorted((h for h in primary_hits if h.index is not None), key=lambda h: h.index):
        block = block_containing(blocks, hit.index, lines[hit.index].source)
        if block is not None and origin(block) == NVFLARE_FROM_USER:
            found = usercalls.find(calls, message_text(block, lines), block.frames)
            if found is not None:
                return found
    return None


def where_clause(primary_hits, lines: list[Line], blocks: list[Traceback], calls=()) -> str:
    """` (argument `x`, at job.py:27 in main())` from the primary's first hit that gives either, or, when NVFLARE's
    words translate to the user's call (user_calls), ` (call `SimEnv(num_clients=...)`, used at job.py:24 in
    main())`: the deepest job.py frame is where the object that call built reached NVFLARE (` (argument `n_clients`
    of `job.simulator_run(..., n_clients=...)`, at job.py:22 in main())` when the argument NVFLARE names is the
    user's own keyword in that call). '' when nothing can be named with validated identifiers (they go into a
    catalog next_action, so nothing else is allowed)."""
    call = user_call(primary_hits, lines, blocks, calls)
    for hit in sorted((h for h in primary_hits if h.index is not None), key=lambda h: h.index):
        block = block_containing(blocks, hit.index, lines[hit.index].source)
        site = _call_site(block) if block is not None else None
        if call is not None:
            if block is None or origin(block) != NVFLARE_FROM_USER:
                continue
            argument = argument_named(block, lines, hit.index)
            if argument and re.search(rf"(?<![\w.]){re.escape(argument)}=", call.call):  # NVFLARE's word is the user's
                return f" (argument `{argument}` of `{call.call}`" + (f", {site}" if site else "") + ")"
            return f" (call `{call.call}`" + (f", used {site}" if site else "") + ")"
        argument = argument_named(block, lines, hit.index)
        parts = [f"argument `{argument}`"] if argument else []
        parts += [site] if site else []
        if parts:
            return " (" + ", ".join(parts) + ")"
    return ""


def at_clause(primary_hits, lines: list[Line], blocks: list[Traceback]) -> str:
    """` (at client.py:14 in train())`: only the place of the primary's first traceback through user code (a
    next action's `{at}`, for an exception the user's code raised: no argument is named)."""
    for hit in sorted((h for h in primary_hits if h.index is not None), key=lambda h: h.index):
        block = block_containing(blocks, hit.index, lines[hit.index].source)
        site = _call_site(block) if block is not None else None
        if site:
            return f" ({site})"
    return ""


def _call_site(block: Traceback) -> str | None:
    frame = block.user_frame
    if frame is None:
        return None
    name, number, func = re.split(r"[\\/]", frame[0])[-1], frame[1], frame[2]
    if not (_FILE_NAME.match(name) and _FUNCTION.match(func)):
        return None
    return f"at {name}:{number} in {func}()" if func != "<module>" else f"at {name}:{number}"


def raised_in(block: Traceback) -> str | None:
    """`nvflare/<module>.py` of the raising frame when NVFLARE raised the exception (validated), else None."""
    if origin(block) not in (NVFLARE_FROM_USER, NVFLARE):
        return None
    own = [f for f in block.frames if is_nvflare_file(f[0])]
    match = _NVFLARE_MODULE.search(own[-1][0]) if own else None
    return f"nvflare/{match.group(1)}" if match else None
