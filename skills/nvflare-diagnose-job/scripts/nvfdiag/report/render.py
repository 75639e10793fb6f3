"""Render a report dict as JSON (the machine format) or markdown (for a human), and quote evidence text. Pure.

Usage: `to_json(report)` -> sorted, indented JSON text; `to_markdown(report)` -> markdown text;
`excerpt(text)` -> at most MAX_EXCERPT characters of evidence text, safe to show a user (the one rule for quoting
evidence text in a report: single line, bounded, long number/base64 runs elided).
Log-derived text (excerpts, paths) is shown only inside code spans so it cannot format or link anything.
"""

from __future__ import annotations

import json
import re

MAX_EXCERPT = 240
MAX_SEEN_IN = 8  # places a merged signal's seen_in lists (its `count` says how many there were)
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]+")
_DIGITS = re.compile(r"\d{9,}")
# Base64-like runs: long and mixing digits with upper- and lower-case letters (or padded), so that words
# and file paths are kept.
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")


def _elide_base64(match: re.Match) -> str:
    run = match.group(0)
    mixed = any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run)
    return "<elided>" if mixed or run.endswith("=") else run


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """One display line from `text`: control/invisible characters removed, long digit and base64 runs elided."""
    one_line = " ".join(_CONTROL.sub(" ", text[: limit * 8]).split())
    one_line = _DIGITS.sub("<digits>", one_line)
    one_line = _BASE64.sub(_elide_base64, one_line)
    if len(one_line) > limit:
        one_line = one_line[: limit - 3] + "..."
    return one_line


def to_json(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def _code(text: object) -> str:
    """Inline code span for untrusted text: one line, bounded, backticks and pipes neutralised."""
    clean = excerpt(str(text)).replace("`", "'").replace("|", "\\|")
    return f"`{clean}`" if clean else "`-`"


def _bullets(items: list[str], empty: str = "none") -> list[str]:
    return [f"- {item}" for item in items] if items else [f"- {empty}"]


def _header(report: dict) -> list[str]:
    return [
        "# NVFLARE job diagnosis",
        "",
        f"- **Mode:** {report['runtime_mode']} ({report['mode_reason']})",
        f"- **Job:** {_code(report['job_id'] or '-')} status {_code(report['job_status'] or 'unknown')}",
        f"- **Matched pattern:** `{report['matched_pattern']}` (confidence **{report['confidence']}**)",
        f"- **Recovery category:** `{report['recovery_category']}`",
        f"- **Evidence quality:** {_quality(report)}",
        "",
        "## Likely cause",
        "",
        report["likely_cause"],
        "",
        "## Next action",
        "",
        report["next_action"],
        "",
    ]


def _quality(report: dict) -> str:
    """`complete (every evidence source given was read whole; ...)`: the level with what it does and does not say."""
    note = report.get("evidence_quality_note")
    return f"{report['evidence_quality']} ({note})" if note else str(report["evidence_quality"])


ROLE_WORDS = {"supporting": " (supporting)", "consequence": " (consequence, not a cause)"}  # direct: unmarked


def _evidence(report: dict) -> list[str]:
    out = ["## Evidence (source-aware)", ""]
    if report["signals"]:
        out += ["| pattern | site | source:line | seen | excerpt |", "|---|---|---|---|---|"]
        for sig in report["signals"]:
            where = f"{sig['source']}:{sig['line'] if sig['line'] is not None else '?'}"
            role = ROLE_WORDS.get(sig.get("role"), "")
            out.append(
                f"| `{sig['pattern']}`{role} | {_code(sig['site'] or '-')} | {_code(where)} | {_seen(sig)} | "
                f"{_code(sig['excerpt'])} |"
            )
    else:
        out.append("- no catalogued signal was found")
    if report["omitted"].get("signals"):
        out.append(f"- ({report['omitted']['signals']} more signal lines not shown)")
    out += ["", "## Other candidates", ""]
    out += _bullets([f"`{c['pattern']}` ({c['recovery_category']}): {c['reason']}" for c in report["other_candidates"]])
    out += ["", "## Findings", ""] + _bullets([f"`{f}`" for f in report["findings"]])
    return out + [""]


def _seen(signal: dict) -> str:
    """`once`, or how often and where else the same fact was seen (sites and file names, not full paths); a count
    the scan stopped at says `at least`, a list of places cut at MAX_SEEN_IN says it lists only the first ones."""
    if signal["count"] <= 1 and not signal.get("count_capped"):
        return "once"
    places = signal["seen_in"]
    sites = sorted({p["site"] for p in places if p["site"]})
    names = sorted({str(p["source"]).replace("\\", "/").rsplit("/", 1)[-1] for p in places})
    where = ", ".join(sites + names)
    count = (
        f"at least {signal['count']} times (count capped)" if signal.get("count_capped") else f"{signal['count']} times"
    )
    listed = (
        f"first {len(places)} places"
        if len(places) >= MAX_SEEN_IN and signal["count"] > len(places)
        else f"{len(places)} places"
    )
    return f"{count}, {listed}: {_code(where)}"


def _follow_up(report: dict) -> list[str]:
    out = ["## Missing evidence", ""] + _bullets(report["missing_evidence"])
    out += ["", "## Follow-up commands (read-only)", ""]
    if report["follow_up_commands"]:
        out += ["```"] + report["follow_up_commands"] + ["```"]
    else:
        out.append("- none")
    metrics = report["metrics"]
    out += ["", "## Metrics", ""]
    if metrics:
        out.append(
            f"- final round: {_code(metrics.get('final_round'))}, key metric: {_code(metrics.get('key_metric'))}"
        )
        out.append(
            f"- final aggregated metrics: {_code(json.dumps(metrics.get('final_aggregated_metrics'), sort_keys=True))}"
        )
        for item in metrics.get("non_finite") or []:
            out.append(f"- non-finite: {_code(json.dumps(item, sort_keys=True))}")
    else:
        out.append("- no metrics artifacts were read")
    return out + [""]


def _sources(report: dict) -> list[str]:
    out = ["## Evidence sources", "", "| path | kind | site | status | read |", "|---|---|---|---|---|"]
    for src in report["evidence_sources"]:
        out.append(
            f"| {_code(src['path'])} | {src['kind']} | {_code(src['site'] or '-')} | {src['status']} | {_read(src)} |"
        )
    if report["omitted"].get("evidence_sources"):
        out.append(f"\n({report['omitted']['evidence_sources']} more sources not shown)")
    return out + [""]


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _read(src: dict) -> str:
    """How much of a source was read: `12 B`, `all of 3.0 KiB`, or `92.0 KiB of 26.0 MiB: head, 2 windows, tail`."""
    size, regions = src.get("size"), src.get("regions") or []
    if size is None or src["status"] not in ("complete", "truncated", "partial"):
        return _size(src["bytes_read"])
    if not regions:
        return f"all of {_size(size)}"
    windows = len(regions) - 2
    middle = f", {windows} window{'s' if windows != 1 else ''} around errors" if windows > 0 else ""
    return f"{_size(src['bytes_read'])} of {_size(size)}: head{middle}, tail"


def _suspicious(report: dict) -> list[str]:
    out = [
        "## Suspicious log content (not followed)",
        "",
        "> These log lines try to direct the reader (run code, weaken security, change configuration, send data,",
        "> or dictate the diagnosis). They were **not followed** and did not influence the matched pattern.",
        "",
    ]
    items = report["suspicious_content"]
    out += _bullets(
        [
            f"{_code(f['source'])} line {f['line'] if f['line'] is not None else '?'} ({f['kind']}): {_code(f['summary'])}"
            for f in items
        ]
    )
    if report["omitted"].get("suspicious_content"):
        out.append(f"- ({report['omitted']['suspicious_content']} more not shown)")
    out += ["", "## Unverified markers", ""]
    out += _bullets(
        [
            f"{_code(m['marker'])} at {_code(str(m['source']) + ':' + str(m['line'] if m['line'] is not None else '?'))}: "
            + (
                "corroborated by a user-code traceback"
                if m["corroborated"]
                else "not corroborated, ignored for attribution"
            )
            for m in report["unverified_markers"]
        ]
    )
    return out + [""]


def to_markdown(report: dict) -> str:
    parts = _header(report) + _evidence(report) + _follow_up(report) + _suspicious(report) + _sources(report)
    return "\n".join(parts).rstrip() + "\n"
