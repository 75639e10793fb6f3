"""Assemble the report dict (schema nvflare.diagnose.report.v1) from an Analysis. Pure.

Usage: `report = assemble(analysis, missing_evidence, follow_up_commands, nothing_missing=False)`
(`nothing_missing`: report/advice.nothing_missing, which words the UNKNOWN next action for complete evidence). Lists
are capped so a report stays far below 64 KiB; the `omitted` object says how many entries each capped list dropped.
A fact seen in several places (the same exception line in stdout, log.txt, error_log.txt, log.json of two sites) is
one signal with a `count` and the places it was `seen_in`.
"""

from __future__ import annotations

import json
import re

from .. import logline
from ..match import actions, ended, raiser, rounds
from ..match.attribution import failing_sites, hit_site
from ..match.dissent import SECOND_OPINION
from ..match.jobframes import job_frame
from ..match.matcher import STATIC_ONLY, SUPPORTING
from ..match.refine import TRANSIENT_ON_COMPLETION
from ..match.scan import MARKER, MAX_HITS_PER_ROW
from ..match.tracebacks import block_containing
from ..read import sites
from ..untrusted.injection import defang
from .render import MAX_SEEN_IN, excerpt, to_json  # MAX_SEEN_IN: places listed per merged signal

SCHEMA_VERSION = "nvflare.diagnose.report.v1"
MAX_SOURCES = 100
MAX_SIGNALS = 20
MAX_PRIMARY_SIGNALS = 8
MAX_SUSPICIOUS = 50
MAX_MARKERS = 20
MAX_CANDIDATES = 12
MAX_METRICS = 50
MAX_REPORT_BYTES = 63 * 1024  # as printed by render.to_json; the bar is 64 KiB
SHRINKABLE = ("evidence_sources", "suspicious_content", "signals", "unverified_markers", "other_candidates")
USER_CODE_ID, ABSOLUTE_ID, NOT_FOUND_ID = "USER_CODE_EXCEPTION", "ABSOLUTE_DATA_PATH", "DATA_PATH_NOT_FOUND"
MAX_NAMED_SITES = 5
MAX_PATH_CHARS = 160
# evidence_quality says how much of the evidence given was read; the note says what it does not mean.
QUALITY_NOTES = {
    "complete": (
        "every evidence source given was read whole; this says nothing about evidence that was not given: see "
        "missing_evidence and follow_up_commands"
    ),
    "partial": (
        "some evidence was not read whole or is not visible, such as truncated or skipped files, site logs the "
        "evidence says are missing, or a client traceback that is not in it: see missing_evidence"
    ),
    "insufficient": "nothing usable was read from the evidence given: see missing_evidence",
}
SCOPED_NOTE = (
    "; the folders given hold several jobs, and only job {job}'s folders and its records in shared logs were read "
    "(the job the CLI answers name, as with --job-id {job}); pass --job-id to read another"
)
_IDENT = re.compile(r"^[A-Za-z_<][\w.<>-]{0,80}$")
_QUALITY_PROBLEMS = (
    "partial",
    "truncated",
    "missing",
    "permission_denied",
    "unavailable",
    "not_streamed",
    "skipped_binary",
    "skipped_limit",
)


def _role(an, hits: list) -> str:
    """direct (strong evidence), supporting (weak) or consequence (NVFLARE's reaction to a client's failure)."""
    if all(h.index is not None and h.index in an.consequences for h in hits):
        return "consequence"
    return "direct" if any(h.strength == "strong" for h in hits) else "supporting"


def _signal(an, hits: list, capped: bool) -> dict:
    """One signal row for a fact seen `len(hits)` times: the first occurrence, and where all were seen (each place
    with the site label of its file). `site` is the site the fact belongs to: the line's label, else the site its
    text or traceback names (match/attribution.py). `capped`: the row's hits reached the scan's cap, so `count` is
    a lower bound."""
    hit = hits[0]
    if hit.index is None:
        return {
            "pattern": hit.pattern,
            "source": "job_status",
            "site": None,
            "line": None,
            "excerpt": f"job status {an.job_status}",
            "marker": None,
            "count": len(hits),
            "count_capped": False,
            "role": _role(an, hits),
            "seen_in": [{"source": "job_status", "site": None, "line": None}],
            "match_basis": match_basis(hit),
        }
    lines = an.evidence.lines
    line = lines[hit.index]
    marker = MARKER.search(line.text[:8192])
    places = []
    for other in hits:
        where = lines[other.index]
        place = {"source": where.source, "site": where.site, "line": where.line}
        if place not in places:
            places.append(place)
    return {
        "pattern": hit.pattern,
        "source": line.source,
        "site": hit_site(lines, an.tracebacks, hit.index),
        "line": line.line,
        "excerpt": excerpt(defang(line.text[:2000])),
        "marker": marker.group(0) if marker else None,
        "count": len(hits),
        "count_capped": capped,
        "role": _role(an, hits),
        "seen_in": places[:MAX_SEEN_IN],
        "match_basis": match_basis(hit),
    }


def match_basis(hit) -> dict:
    """Why a signal matched: the kind of rule, the rule itself (catalog row and signal, NVFLARE message template,
    traceback condition), the wrapper template peeled to reach it, and whether it is loose (words or a generic
    template: a diagnosis it supports is at most medium)."""
    basis = hit.basis or f"catalog rule {hit.pattern}"
    last = basis.rsplit("; ", 1)[-1]
    if "nvflare message template" in basis and not last.startswith("catalog rule"):
        kind = "nvflare_template"
    elif "condition user_traceback" in last or last.startswith("traceback"):
        kind = "traceback"
    elif "condition job_status" in last:
        kind = "job_status"
    elif last.startswith("process exit"):
        kind = "process_exit"
    else:
        kind = "catalog_rule"
    note = f"; contradicted: {hit.contested}"[:150] if hit.contested and not basis.startswith(SECOND_OPINION) else ""
    return {
        "kind": kind,
        "rule": basis[: 300 - len(note)] + note,
        "wrapper": hit.wrapper[:200] or None,
        "peeled": bool(hit.wrapper),
        "loose": hit.loose,
    }


def _ordered(hits) -> list:
    return sorted(hits, key=lambda h: (h.strength != "strong", h.index is None, h.index or 0))


def _fact_key(an, hit) -> tuple:
    """What makes two hits the same fact: the message text, whatever the source, log prefix or pattern."""
    return (
        hit.index is None,
        "" if hit.index is None else logline.message(an.evidence.lines[hit.index].text[:2000]).strip(),
    )


def _facts(an, hits) -> list[list]:
    """Hits grouped by fact (same message text whatever the source or log prefix), best first."""
    facts: dict[tuple, list] = {}
    for hit in _ordered(hits):
        facts.setdefault(_fact_key(an, hit), []).append(hit)
    return list(facts.values())


def _signals(an) -> tuple[list[dict], int]:
    """One row per distinct fact: primary facts first (or, for PARTIAL_LOG_VISIBILITY, the symptom's), then
    two per other candidate; identical facts from several sources merge into one row with a count, and a fact
    that several patterns matched appears once, under the first (best) of them. Rows that only a static source
    finding supported show no signal beside a matched pattern (a static hint never adds one)."""
    shown_demoted = [d for d in an.demoted if not (an.primary is not None and d.reason == STATIC_ONLY)]
    groups = [list(c.hits) for c in an.ranked if c is not an.primary] + [list(d.hits) for d in shown_demoted]
    lead = list(an.primary.hits) if an.primary else []
    if not lead and shown_demoted:
        lead = groups.pop(len(groups) - len(shown_demoted))  # the first demoted row: the symptom
    chosen, seen, total = [], set(), 0
    for number, group in enumerate([lead] + groups):
        capped = len(group) >= MAX_HITS_PER_ROW
        fresh = [(fact, capped) for fact in _facts(an, group) if _fact_key(an, fact[0]) not in seen]
        seen |= {_fact_key(an, fact[0]) for fact, _ in fresh}
        chosen += fresh[: MAX_PRIMARY_SIGNALS if number == 0 else 2]
        total += len(fresh)
    shown = chosen[:MAX_SIGNALS]
    return [_signal(an, fact, capped) for fact, capped in shown], max(0, total - len(shown))


def _other_candidates(an) -> list[dict]:
    out = []
    for cand in an.ranked:
        if cand is an.primary:
            continue
        dissent = next(
            (h.contested for h in an.primary.hits if cand.row.id in h.contested.replace(",", " ").split()), None
        )
        if dissent is not None:
            reason = f"{dissent}, on the line whose message points at {an.primary.row.id} (the evidence disagrees)"
        elif not cand.strong:
            reason = f"only {SUPPORTING}"
        else:
            reason = f"lower precedence than {an.primary.row.id} (catalog priority)"
        out.append({"pattern": cand.row.id, "recovery_category": cand.row.recovery_category, "reason": reason})
    for dem in an.demoted:
        out.append({"pattern": dem.row.id, "recovery_category": dem.row.recovery_category, "reason": dem.reason})
    unique: dict[str, dict] = {}
    for item in out:
        unique.setdefault(item["pattern"], item)
    return list(unique.values())[:MAX_CANDIDATES]


def _traceback_detail(an) -> str:
    """`ExcType in file.py:line (function)` for the primary's traceback through user code, if identifiable: the
    deepest frame surely of the job's code (jobframes.py), else the deepest frame that is not a known library."""
    for hit in an.primary.hits if an.primary else []:
        if hit.index is None:
            continue
        block = block_containing(an.tracebacks, hit.index, an.evidence.lines[hit.index].source)
        if block is not None and block.third_party is not None:
            package = f" ({block.third_party})" if _IDENT.match(block.third_party) else ""
            exc = block.exc_type if block.exc_type and _IDENT.match(block.exc_type) else "the exception"
            return f"{exc} raised in third-party code{package}, with no frame of the job's code in the traceback"
        if block is None or not block.user_frame:
            continue
        path, number, func = job_frame(block, an.scripts) or block.user_frame
        name = re.split(r"[\\/]", path)[-1]
        parts = [p for p in (block.exc_type, name, func) if p and _IDENT.match(p)]
        module = raiser.raised_in(block)
        if len(parts) == 3:
            inside = f", raised inside NVFLARE ({module})" if module else ""
            return f"{parts[0]} in {parts[1]}:{number} ({parts[2]}){inside}"
        if block.exc_type and _IDENT.match(block.exc_type):
            return block.exc_type
    return ""


def _variant_cause(an) -> str:
    return _variant_cause_of(an, an.primary.row)


def _variant_cause_of(an, row, hits=None) -> str:
    """The row's first variant whose regex matches a line that is not suspicious (only the hit lines when `hits`
    are given), else its default variant's cause."""
    if not row.variants and not row.default_variant:
        return ""
    lines = an.evidence.lines
    numbers = range(len(lines)) if hits is None else sorted({h.index for h in hits if h.index is not None})
    for variant in row.variants:
        if any(variant.regex.search(lines[i].text[:8192]) for i in numbers if i not in an.flagged):
            return variant.cause
    return row.default_variant.cause if row.default_variant else ""


def _quality_note(quality: str, scoped_to: str | None) -> str:
    """What evidence_quality means here, and that other jobs were skipped when the reading was scoped to the
    stated job (read/jobscope.stated_job; its id is a validated UUID)."""
    scoped = SCOPED_NOTE.format(job=scoped_to) if scoped_to and sites.nvflare_job_id(scoped_to) else ""
    return QUALITY_NOTES[quality] + scoped


def _likely_cause(an) -> str:
    if an.primary is None:
        text = "No catalogued failure pattern matched the evidence"
        metrics = an.evidence.metrics or {}
        if metrics.get("non_finite"):
            text += "; metrics contain non-finite values (NaN/inf), so training may have diverged"
        if an.suspicious:
            text += "; log text that tries to direct the reader was found and not followed"
        if an.logs_dir:
            text += (
                "; `Simulation failed with return code` only reports that the simulated run failed, the cause "
                "is in the per-site logs it names"
            )
        text += _static_only_said(an)
        text += "".join(f"; {clause}" for clause in an.careful.clauses(an.flagged))
        text += f"; {ended.said(an.ended)}" if an.ended is not None else ""
        if an.job_status == sites.COMPLETED and not an.suspicious:
            text += (
                "; the job finished with status FINISHED:COMPLETED: nothing in the evidence says it failed (a "
                "disappointing metric is not a failure this catalog covers)"
            )
            recovered = sorted({d.row.id for d in an.demoted if d.reason == TRANSIENT_ON_COMPLETION})
            if recovered:
                text += f"; the run recovered from the transient {', '.join(recovered)} it logged (other_candidates)"
    elif an.primary.row.id == "PARTIAL_LOG_VISIBILITY":
        listed = ", ".join(f"{s} ({st})" for s, st in an.partial_sites.items())
        symptom = next((d.row.id for d in an.demoted if d.reason.startswith("symptom depends")), None)
        text = f"Cannot attribute a cause: logs of {listed} are not visible"
        text += f", and the observed {symptom} depends on them" if symptom else ""
    else:
        row = an.primary.row
        lines = an.evidence.lines
        hit_sites = sorted(
            {site for h in an.primary.hits if sites.valid_site(site := hit_site(lines, an.tracebacks, h.index))}
        )
        text = row.title + (f" (seen in: {', '.join(hit_sites[:5])})" if hit_sites else "")
        detail = "; ".join(part for part in (_traceback_detail(an), _variant_cause(an), *_facts_said(an)) if part)
        text += f": {detail}" if detail else ""
        if not an.primary.strong:
            text += f"; only {SUPPORTING} was found"
    if an.sim_traceback_missing:
        text += "; the client traceback is missing (a SimEnv workspace only shows the server's view; ask for the stdout of python job.py)"
    if an.site_traceback_missing:
        text += (
            "; the client traceback is missing (the server's job log only echoes the failure; the traceback is "
            "in the site's console output)"
        )
    return text + "."


def _facts_said(an) -> list[str]:
    """likely_cause clauses for the facts that move the fix: rounds completed, the paths that worked, NVFLARE's
    words in the user's, and NVFLARE's reactions that are consequences (identifiers and paths validated)."""
    said = []
    if an.rounds is not None and an.primary.row.id == USER_CODE_ID:
        said.append(
            f"it surfaced after earlier rounds completed ({rounds.summary(an.rounds)}; from "
            f"{', '.join(an.rounds.evidence)}), so what the client receives or sends changed between rounds"
        )
    if an.paths is not None and an.primary.row.id == NOT_FOUND_ID and any(d.row.id == ABSOLUTE_ID for d in an.demoted):
        missing = ", ".join(excerpt(p, MAX_PATH_CHARS) for p in an.paths.missing)
        if an.paths.worked:
            worked = ", ".join(excerpt(p, MAX_PATH_CHARS) for p in an.paths.worked)
            said.append(f"missing: {missing}; opened under the same root: {worked}")
        else:
            said.append(
                f"missing: {missing} (in a simulation every site runs on this machine, so the path is wrong "
                "or its data is missing here, not unreachable)"
            )
    if an.user_call is not None:
        said.append(an.user_call.meaning)
    said.extend(an.careful.clauses(an.flagged))
    if an.consequences and any(h.strength == "strong" and h.index not in an.consequences for h in an.primary.hits):
        said.append(
            "NVFLARE's errors on the server after it (a result that is not a valid DXO, `Result from <site> is "
            "bad`, peer_rc=EXECUTION_EXCEPTION) are consequences of this failure, not causes"
        )
    return said


def _static_only_said(an) -> str:
    """When nothing matched: what static source findings suggested, said as the supporting evidence it is."""
    static = [d for d in an.demoted if d.reason == STATIC_ONLY]
    if not static:
        return ""
    causes = [_variant_cause_of(an, d.row, d.hits) for d in static]
    names = ", ".join(d.row.id for d in static)
    text = f"; a static source finding suggests {names}, but that is only supporting evidence"
    return text + "".join(f" ({cause})" for cause in causes if cause)


def _findings(an, sources) -> list[str]:
    found = set()
    states = set(an.evidence.site_status.values())
    if an.partial_sites or set(an.hidden_sites.values()) - {"truncated"}:
        found.add("PARTIAL_LOG_VISIBILITY")
    if any(s.truncated or s.status == "truncated" for s in sources) or "truncated" in states:
        found.add("LOGS_TRUNCATED")
    if an.limits_reached:
        found.add("EVIDENCE_LIMIT_REACHED")
    if an.mode == "ambiguous":
        found.add("MODE_AMBIGUOUS")
    if an.suspicious:
        found.add("SUSPICIOUS_LOG_CONTENT")
    if (an.evidence.metrics or {}).get("non_finite"):
        found.add("NON_FINITE_METRICS")
    if an.sim_traceback_missing or an.site_traceback_missing:
        found.add("CLIENT_TRACEBACK_MISSING")
    return sorted(found)


def _quality(an, findings: list[str]) -> str:
    readable = any(s.status in ("complete", "partial", "truncated") for s in an.evidence.sources)
    if not readable or (not an.evidence.lines and not an.evidence.metrics):
        return "insufficient"
    problems = {"PARTIAL_LOG_VISIBILITY", "LOGS_TRUNCATED", "EVIDENCE_LIMIT_REACHED", "CLIENT_TRACEBACK_MISSING"}
    if (
        problems & set(findings)
        or an.unsupplied_sites
        or any(s.status in _QUALITY_PROBLEMS for s in an.evidence.sources)
    ):
        return "partial"
    return "complete"


def _suspicious(an) -> list[dict]:
    keyed = sorted(an.suspicious, key=lambda f: (f["source"], f["line"] if f["line"] is not None else -1, f["kind"]))
    return [{k: f[k] for k in ("source", "site", "line", "kind", "summary")} for f in keyed[:MAX_SUSPICIOUS]]


def assemble(an, missing: list[str], commands: list[str], *, nothing_missing: bool = False) -> dict:
    """The report dict; deterministic for the same analysis."""
    sources = an.evidence.sources
    signals, signals_omitted = _signals(an)
    findings = _findings(an, sources)
    quality = _quality(an, findings)
    row = an.primary.row if an.primary else None
    markers = [
        {
            "marker": m["marker"],
            "source": an.evidence.lines[m["index"]].source,
            "line": an.evidence.lines[m["index"]].line,
            "corroborated": m["corroborated"],
        }
        for m in an.markers
    ]
    return _fit(
        {
            "schema_version": SCHEMA_VERSION,
            "runtime_mode": an.mode,
            "mode_reason": an.mode_reason,
            "job_id": an.job_id,
            "job_status": an.job_status,
            "evidence_sources": [s.as_dict() for s in sources[:MAX_SOURCES]],
            "evidence_quality": quality,
            "evidence_quality_note": _quality_note(quality, an.evidence.scoped_to),
            "matched_pattern": row.id if row else "UNKNOWN",
            "recovery_category": row.recovery_category if row else "UNKNOWN",
            "confidence": an.confidence,
            "likely_cause": _likely_cause(an),
            "signals": signals,
            "other_candidates": _other_candidates(an),
            "findings": findings,
            "suspicious_content": _suspicious(an),
            "unverified_markers": markers[:MAX_MARKERS],
            "metrics": _metrics(an.evidence.metrics),
            "next_action": _next_action(an, nothing_missing and quality == "complete"),
            "missing_evidence": missing,
            "follow_up_commands": commands,
            "omitted": {
                "evidence_sources": max(0, len(sources) - MAX_SOURCES),
                "signals": signals_omitted,
                "suspicious_content": max(0, len(an.suspicious) - MAX_SUSPICIOUS),
                "unverified_markers": max(0, len(markers) - MAX_MARKERS),
            },
        }
    )


def _metrics(metrics: dict | None) -> dict | None:
    """The readers' metrics, with at most MAX_METRICS final aggregated values (sorted by name)."""
    if not metrics:
        return metrics
    final = metrics.get("final_aggregated_metrics")
    if isinstance(final, dict) and len(final) > MAX_METRICS:
        metrics = dict(metrics, final_aggregated_metrics={k: final[k] for k in sorted(final)[:MAX_METRICS]})
    return metrics


def _fit(report: dict) -> dict:
    """Halve the longest lists (counting what is dropped in `omitted`) until the JSON fits MAX_REPORT_BYTES."""
    while len(to_json(report).encode("utf-8")) > MAX_REPORT_BYTES:
        key = max(SHRINKABLE, key=lambda k: len(json.dumps(report[k])))
        if not report[key]:
            break
        keep = len(report[key]) // 2
        report["omitted"][key] = report["omitted"].get(key, 0) + len(report[key]) - keep
        report[key] = report[key][:keep]
    return report


def _in_users_terms(an, text: str) -> str:
    """A simulation the nvflare simulator CLI started (nothing shows job.py) is rerun with that command: the catalog's
    fixed phrase `python job.py` becomes `the same nvflare simulator command` (a fixed substitution, no log text)."""
    if an.launcher == "nvflare simulator":
        return text.replace("rerun python job.py", "rerun the same nvflare simulator command").replace(
            "python job.py", "the nvflare simulator command"
        )
    return text


def _next_action(an, complete: bool = False) -> str:
    """The matched row's next action for the runtime mode and the established facts (match/actions.py), its
    placeholders filled only with validated identifiers, numbers and the catalog's own user_calls text; with no
    row, the fallback's (its `nothing_missing` wording when `complete`: read whole, no gap found)."""
    if an.primary is not None:
        lines, primary = an.evidence.lines, an.primary
        failing = failing_sites(lines, an.tracebacks, [h for h in primary.hits if h.strength == "strong"])
        values = {
            "{where}": raiser.where_clause(primary.hits, lines, an.tracebacks, an.catalog.user_calls),
            "{at}": raiser.at_clause(primary.hits, lines, an.tracebacks),
            "{rounds}": rounds.describe(an.rounds),
            "{sites}": f" ({', '.join(failing[:MAX_NAMED_SITES])})" if failing else "",
            "{change}": f" {an.user_call.change}" if an.user_call is not None else "",
        }
        text = actions.fill(primary.row.next_action_for(an.mode, an.facts), values)
        if an.missing_nvflare and an.catalog.release_mismatch:
            first = actions.fill(an.catalog.release_mismatch, {"{missing}": f"`{an.missing_nvflare}`"})
            text = f"{first} {text}"
        return _in_users_terms(an, text)
    if an.suspicious and an.catalog.has("SUSPICIOUS_LOG_CONTENT"):
        return _in_users_terms(an, an.catalog.row("SUSPICIOUS_LOG_CONTENT").next_action_for(an.mode))
    facts = frozenset({"nothing_missing"}) if complete else frozenset()
    return _in_users_terms(an, an.catalog.fallback_for(an.mode, facts))
