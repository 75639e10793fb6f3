"""Suspicious-content detection for untrusted log lines (prompt injection, spoofed markers).

Pure and stdlib only. Public API:
    scan_lines(lines: Iterable[Line]) -> list[dict]   findings {source, site, line, kind, summary}
    normalize(text: str) -> str                       the matching view of one line (from normalize.py)
    defang(text: str) -> str                          URLs/IPs made non-clickable, URL paths hidden

Each line is normalized (NFKC, invisible characters removed, homoglyphs folded, embedded
base64/hex/percent runs decoded) and matched against the directive rules in injection_rules.py.
Directives split over 2-3 consecutive lines of one source are found by joining the message parts.
A directive that the plain, rendered view of the line does not show is also reported as `obfuscated`.
Summaries are built from fixed phrases plus a defanged host name: they never echo the log text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from .injection_rules import (
    DIRECTIVE_KINDS,
    candidate_rules,
    config_file_named,
    detect,
    first_web_url,
    open_rules,
    text_features,
)
from .model import Line
from .normalize import normalize, normalize_with_techniques, record_message, visible_view

__all__ = ["KINDS", "defang", "normalize", "scan_lines"]

KINDS = (*DIRECTIVE_KINDS, "obfuscated")
SUMMARY_LIMIT = 200
MAX_JOINED_LINES = 3
# Characters that change how a line displays without changing what it says: always an obfuscation.
_INVISIBLE_TECHNIQUES = ("bidi control characters", "zero-width characters")

_URL_RE = re.compile(r"\b([a-z][a-z0-9+.-]{1,15})://([^\s\"'<>()\[\]]+)", re.IGNORECASE)
_IPV4_RE = re.compile(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d])")
_HOST_SAFE_RE = re.compile(r"[^a-z0-9.-]")
_LOG_PREFIX_RE = re.compile(
    r"^\s*\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\s*-\s*(?:[^\s]+\s+-\s+)?"
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s+-\s+(?:\[[^\]]*\]\s+-\s+)?"
)


def defang(text: str) -> str:
    """Make URLs and dotted IPs non-clickable: scheme hxxp(s), dots as [.], path replaced by '/...'."""
    text = _URL_RE.sub(lambda m: _defang_url(m.group(1), m.group(2)), text)
    return _IPV4_RE.sub(r"\1[.]\2[.]\3[.]\4", text)


def scan_lines(lines: Iterable[Line]) -> list[dict]:
    """Return suspicious-content findings for `lines`, one per (source, line, kind), in input order."""
    items = list(lines)
    views = [_LineView(item.text) for item in items]
    found: dict[tuple, tuple[int, dict]] = {}
    for index, (item, view) in enumerate(zip(items, views, strict=True)):
        for kind, summary in view.findings():
            _add(found, index, item, kind, summary)
    seen: dict[tuple[int, int], set[str]] = {(i, 1): set(view.kinds) for i, view in enumerate(views)}
    for size in range(2, MAX_JOINED_LINES + 1):
        for start in range(len(items) - size + 1):
            group = items[start : start + size]
            if not _consecutive(group):
                continue
            # A kind already visible in a shorter window inside this one belongs to that window.
            excluded = seen.get((start, size - 1), set()) | seen.get((start + 1, size - 1), set())
            kinds, findings = _window_findings(group, views[start : start + size], excluded)
            seen[(start, size)] = excluded | kinds
            for kind, summary in findings:
                _add(found, start, items[start], kind, summary)
    ordered = sorted(found.values(), key=lambda entry: (entry[0], KINDS.index(entry[1]["kind"])))
    return [finding for _, finding in ordered]


class _LineView:
    """Views of one line: normalized text, undone techniques, rule gates and detected kinds."""

    def __init__(self, text: str):
        self.raw = text
        self.text, self.techniques = normalize_with_techniques(text)
        self.lowered, self.words = text_features(self.text)
        self.candidates = candidate_rules(self.lowered, self.words)
        rules = open_rules(self.lowered, self.words, self.candidates) if self.candidates else ()
        self.kinds = detect(self.text, rules) if rules else {}
        self.visible_kinds = detect(visible_view(text)) if self.kinds and self.techniques else self.kinds
        self._message: tuple[str, str] | None = None

    def findings(self) -> list[tuple[str, str]]:
        return _describe(self.kinds, self.visible_kinds, self.techniques, self.text, "")

    def message(self) -> tuple[str, str]:
        """(normalized, visible) text of the message part only, for joining continuation lines."""
        if self._message is None:
            record = record_message(self.raw)
            if record is not None:
                self._message = (normalize(record), visible_view(record))
            else:
                visible = visible_view(self.raw) if self.techniques else self.text
                self._message = (_LOG_PREFIX_RE.sub("", self.text, count=1), _LOG_PREFIX_RE.sub("", visible, count=1))
        return self._message


def _window_findings(
    group: Sequence[Line], views: Sequence[_LineView], excluded: set[str]
) -> tuple[set[str], list[tuple[str, str]]]:
    """Kinds visible only when 2-3 consecutive lines are read as one sentence, and their findings."""
    candidates = frozenset().union(*(view.candidates for view in views))
    if not candidates:
        return set(), []
    lowered = " ".join(view.lowered for view in views)
    rules = open_rules(lowered, frozenset().union(*(view.words for view in views)), candidates)
    if not rules:
        return set(), []
    parts = [view.message() for view in views]
    joined = " ".join(part[0] for part in parts)
    kinds = {kind: detail for kind, detail in detect(joined, rules).items() if kind not in excluded}
    if not kinds:
        return set(), []
    visible_kinds = detect(" ".join(part[1] for part in parts))
    techniques = tuple(sorted({t for view in views for t in view.techniques}))
    first, last = group[0].line, group[-1].line
    where = f" (split across lines {first}-{last})" if first is not None and last is not None else " (split across lines)"
    return set(kinds), _describe(kinds, visible_kinds, techniques, joined, where)


def _describe(
    kinds: dict[str, str | None], visible: dict[str, str | None], techniques: Sequence[str], text: str, where: str
) -> list[tuple[str, str]]:
    out = [(kind, _cap(_summary(kind, detail, text) + where)) for kind, detail in kinds.items()]
    hidden = [kind for kind in DIRECTIVE_KINDS if kind in kinds and kind not in visible]
    invisible = [t for t in techniques if t in _INVISIBLE_TECHNIQUES]
    if hidden:
        how = ", ".join(techniques) if techniques else "text layout"
        out.append(("obfuscated", _cap(f"{', '.join(hidden)} directive hidden by {how}; not visible in the plain rendered line{where}")))
    elif kinds and invisible:
        shown = ", ".join(kind for kind in DIRECTIVE_KINDS if kind in kinds)
        out.append(("obfuscated", _cap(f"{shown} directive disguised with {', '.join(invisible)}{where}")))
    return out


def _summary(kind: str, detail: str | None, text: str) -> str:
    url = first_web_url(text)
    target = f" {defang(url)}" if url else ""
    if kind == "download_execute":
        return f"directive to download and execute code from{target}" if url else "directive to download and execute code"
    if kind == "disable_security":
        return "directive to disable or bypass authentication, TLS or other security checks (e.g. via a command-line flag)"
    if kind == "config_change":
        name = config_file_named(text)
        return f"directive to change job or site configuration ({name})" if name else "directive to change a job or site setting"
    if kind == "exfiltration":
        return f"directive to send data or the workspace to an external destination{target}"
    if kind == "spoofed_marker":
        return f"{detail} marker line carrying prose blame or instructions; unverified, ignored for attribution"
    return "text addressed to an AI assistant/agent or dictating the diagnosis; not followed"


def _add(found: dict, index: int, item: Line, kind: str, summary: str) -> None:
    key = (item.source, item.line if item.line is not None else ("tail", index), kind)
    if key not in found:
        found[key] = (index, {"source": item.source, "site": item.site, "line": item.line, "kind": kind, "summary": summary})


def _consecutive(group: Sequence[Line]) -> bool:
    for before, after in zip(group, group[1:], strict=False):
        if after.source != before.source:
            return False
        if before.line is not None and after.line is not None and after.line != before.line + 1:
            return False
    return True


def _defang_url(scheme: str, rest: str) -> str:
    try:
        host = urlsplit(f"x://{rest}").hostname or ""
    except ValueError:
        host = ""
    host = _HOST_SAFE_RE.sub("", host.lower())[:80].replace(".", "[.]")
    scheme = scheme.lower().replace("tt", "xx").replace("ft", "fx")
    has_path = bool(re.search(r"[/?#]", rest))
    return f"{scheme}://{host}{'/...' if has_path else ''}"


def _cap(summary: str) -> str:
    return summary if len(summary) <= SUMMARY_LIMIT else summary[: SUMMARY_LIMIT - 3] + "..."
