"""Assemble the report dict (schema nvflare.diagnose.report.v1) from an Analysis. Pure.

Usage: `report = assemble(analysis, missing_evidence, follow_up_commands)`. Lists are capped so a report stays
far below 64 KiB; the `omitted` object says how many entries each capped list dropped. A fact seen in several
places (the same exception line in stdout, log.txt, error_log.txt, log.json of two sites) is one signal with a
`count` and the places it was `seen_in`.
"""

from __future__ import annotations

import json
import re

from .. import logline
from ..match import raiser
from ..match.scan import MARKER
from ..match.tracebacks import block_containing
from ..read import sites
from ..untrusted.injection import defang
from .render import excerpt, to_json

SCHEMA_VERSION = "nvflare.diagnose.report.v1"
MAX_SOURCES = 100
MAX_SIGNALS = 20
MAX_PRIMARY_SIGNALS = 8
MAX_SEEN_IN = 8  # places listed per merged signal; `count` says how many there were
MAX_SUSPICIOUS = 50
MAX_MARKERS = 20
MAX_CANDIDATES = 12
MAX_METRICS = 50
MAX_REPORT_BYTES = 63 * 1024  # as printed by render.to_json; the bar is 64 KiB
SUPPORTING = "supporting evidence (terminal status, a server-side echo or a static source finding)"
SHRINKABLE = ("evidence_sources", "suspicious_content", "signals", "unverified_markers", "other_candidates")
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


def _signal(an, hits: list) -> dict:
    """One signal row for a fact seen `len(hits)` times: the first occurrence, and where all were seen."""
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
            "seen_in": [{"source": "job_status", "site": None, "line": None}],
        }
    line = an.evidence.lines[hit.index]
    marker = MARKER.search(line.text[:8192])
    places = []
    for other in hits:
        where = an.evidence.lines[other.index]
        place = {"source": where.source, "site": where.site, "line": where.line}
        if place not in places:
            places.append(place)
    return {
        "pattern": hit.pattern,
        "source": line.source,
        "site": line.site,
        "line": line.line,
        "excerpt": excerpt(defang(line.text[:2000])),
        "marker": marker.group(0) if marker else None,
        "count": len(hits),
        "seen_in": places[:MAX_SEEN_IN],
    }


def _ordered(hits) -> list:
    return sorted(hits, key=lambda h: (h.strength != "strong", h.index is None, h.index or 0))


def _facts(an, hits) -> list[list]:
    """Hits grouped by fact (same pattern, same message text whatever the source or log prefix), best first."""
    facts: dict[tuple, list] = {}
    for hit in _ordered(hits):
        text = "" if hit.index is None else logline.message(an.evidence.lines[hit.index].text[:2000]).strip()
        facts.setdefault((hit.pattern, hit.index is None, text), []).append(hit)
    return list(facts.values())


def _signals(an) -> tuple[list[dict], int]:
    """One row per distinct fact: primary facts first (or, for PARTIAL_LOG_VISIBILITY, the symptom's), then
    two per other candidate; identical facts from several sources merge into one row with a count."""
    groups = [list(c.hits) for c in an.ranked if c is not an.primary] + [list(d.hits) for d in an.demoted]
    lead = list(an.primary.hits) if an.primary else []
    if not lead and an.demoted:
        lead = groups.pop(len(groups) - len(an.demoted))  # the first demoted row: the symptom
    lead_facts = _facts(an, lead)
    chosen = lead_facts[:MAX_PRIMARY_SIGNALS]
    total = len(lead_facts)
    for group in groups:
        facts = _facts(an, group)
        chosen += facts[:2]
        total += len(facts)
    shown = chosen[:MAX_SIGNALS]
    return [_signal(an, fact) for fact in shown], max(0, total - len(shown))


def _other_candidates(an) -> list[dict]:
    out = []
    for cand in an.ranked:
        if cand is an.primary:
            continue
        if not cand.strong:
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
    """`ExcType in file.py:line (function)` for the primary's traceback through user code, if identifiable."""
    for hit in an.primary.hits if an.primary else []:
        if hit.index is None:
            continue
        block = block_containing(an.tracebacks, hit.index, an.evidence.lines[hit.index].source)
        if block is None or not block.user_frame:
            continue
        path, number, func = block.user_frame
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
    row = an.primary.row
    if not row.variants and not row.default_variant:
        return ""
    for variant in row.variants:
        if any(
            variant.regex.search(line.text[:8192]) for i, line in enumerate(an.evidence.lines) if i not in an.flagged
        ):
            return variant.cause
    return row.default_variant.cause if row.default_variant else ""


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
        if an.job_status == "FINISHED:COMPLETED" and not an.suspicious:
            text += (
                "; the job finished with status FINISHED:COMPLETED: nothing in the evidence says it failed (a "
                "disappointing metric is not a failure this catalog covers)"
            )
    elif an.primary.row.id == "PARTIAL_LOG_VISIBILITY":
        listed = ", ".join(f"{s} ({st})" for s, st in an.partial_sites.items())
        symptom = next((d.row.id for d in an.demoted if d.reason.startswith("symptom depends")), None)
        text = f"Cannot attribute a cause: logs of {listed} are not visible"
        text += f", and the observed {symptom} depends on them" if symptom else ""
    else:
        row = an.primary.row
        hit_sites = sorted(
            {
                an.evidence.lines[h.index].site
                for h in an.primary.hits
                if h.index is not None and sites.valid_site(an.evidence.lines[h.index].site)
            }
        )
        text = row.title + (f" (seen in: {', '.join(hit_sites[:5])})" if hit_sites else "")
        detail = "; ".join(part for part in (_traceback_detail(an), _variant_cause(an)) if part)
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


def assemble(an, missing: list[str], commands: list[str]) -> dict:
    """The report dict; deterministic for the same analysis."""
    sources = an.evidence.sources
    signals, signals_omitted = _signals(an)
    findings = _findings(an, sources)
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
            "evidence_quality": _quality(an, findings),
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
            "next_action": _next_action(an),
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


def _next_action(an) -> str:
    if an.primary is not None:
        clause = raiser.where_clause(an.primary.hits, an.evidence.lines, an.tracebacks)
        return raiser.fill_next_action(an.primary.row.next_action, clause)
    if an.suspicious and an.catalog.has("SUSPICIOUS_LOG_CONTENT"):
        return an.catalog.row("SUSPICIOUS_LOG_CONTENT").next_action
    return an.catalog.fallback_next_action
