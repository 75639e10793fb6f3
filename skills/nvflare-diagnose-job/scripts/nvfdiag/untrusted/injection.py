"""Suspicious-content detection for untrusted log lines (prompt injection, spoofed markers).

Pure and stdlib only. Public API:
    scan_lines(lines: Iterable[Line]) -> list[dict]   findings {source, site, line, kind, summary, span}
    scan_suspicious(lines) -> (findings, flagged)     plus the indexes of every line a finding covers
    normalize(text: str) -> str                       the matching view of one line (from normalize.py)
    defang(text: str) -> str                          URLs/IPs made non-clickable, URL paths hidden

Each line is normalized (NFKC, invisible characters removed, homoglyphs folded, embedded
base64/hex/percent runs decoded) and matched against the directive rules in rules.py.
Directives split over 2-3 consecutive lines of one source are found by joining the message parts: a line
and the continuation fragments after it (lines that are not timestamped log records of their own, such as the
rest of a multi-line message; a real run interleaves records of other sites and threads, which never join).
Such a finding sits on the first line of the shortest window and its summary ends with
"(split across lines N-M)". `span` (internal, not part of the report) holds the (first, last) indexes into
`lines` a finding covers, so every line of a directive is excluded from matching (`scan_suspicious`).
A directive that the plain, rendered view of the line does not show is also reported as `obfuscated`.
Summaries are built from fixed phrases plus a defanged host name: they never echo the log text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from .. import logline
from ..model import Line
from ..textindex import TextIndex
from .gates import gate_lines
from .normalize import encoded_run_lines, normalize, normalize_with_techniques, record_message, visible_view
from .rules import (
    DIRECTIVE_KINDS,
    any_open,
    candidate_rules,
    config_file_named,
    detect,
    first_web_url,
    open_rules,
    rules_need_words,
    text_features,
)

__all__ = ["KINDS", "defang", "normalize", "scan_lines", "scan_suspicious"]

KINDS = (*DIRECTIVE_KINDS, "obfuscated")
SUMMARY_LIMIT = 200
MAX_JOINED_LINES = 3
# Characters that change how a line displays without changing what it says: always an obfuscation.
_INVISIBLE_TECHNIQUES = ("bidi control characters", "zero-width characters")

_URL_RE = re.compile(r"\b([a-z][a-z0-9+.-]{1,15})://([^\s\"'<>()\[\]]+)", re.IGNORECASE)
_IPV4_RE = re.compile(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d])")
_HOST_SAFE_RE = re.compile(r"[^a-z0-9.-]")


def defang(text: str) -> str:
    """Make URLs and dotted IPs non-clickable: scheme hxxp(s), dots as [.], path replaced by '/...'."""
    text = _URL_RE.sub(lambda m: _defang_url(m.group(1), m.group(2)), text)
    return _IPV4_RE.sub(r"\1[.]\2[.]\3[.]\4", text)


def scan_lines(lines: Iterable[Line], index: TextIndex | None = None) -> list[dict]:
    """Return suspicious-content findings for `lines`, one per (source, line, kind), in input order.

    `index` (a TextIndex of the same lines' texts) is built when not given. Only the lines it shows can matter
    get the full per-line treatment (see _worth_a_look); the others cannot match any rule.
    """
    items = list(lines)
    index = index or TextIndex([item.text for item in items])
    single, windows = _worth_a_look(items, index)
    views = _Views(items)
    found: dict[tuple, tuple[int, dict]] = {}
    for number in sorted(single):
        for kind, summary in views[number].findings():
            _add(found, number, items[number], kind, summary)
    for start in windows:
        end = start + 1  # the window is items[start:end + 1], up to MAX_JOINED_LINES consecutive lines
        while end + 1 < min(len(items), start + MAX_JOINED_LINES) and _consecutive(items[end], items[end + 1]):
            end += 1
        for first, last, kind, summary in _split_findings(items, views, start, end):
            _add(found, first, items[first], kind, summary, last)
    ordered = sorted(found.values(), key=lambda entry: (entry[0], KINDS.index(entry[1]["kind"])))
    return [finding for _, finding in ordered]


def scan_suspicious(lines: list[Line], index=None) -> tuple[list[dict], set[int]]:
    """Findings and flagged line indexes (those never count as signals); `index` is a textindex.TextIndex of
    the same lines (built if None)."""
    findings = scan_lines(lines, index)
    return findings, flagged_indexes(findings)


def flagged_indexes(findings: list[dict]) -> set[int]:
    """Indexes of every line a finding covers (all lines of a directive split across lines included)."""
    flagged: set[int] = set()
    for finding in findings:
        first, last = finding["span"]
        flagged.update(range(first, last + 1))
    return flagged


class _Views(dict):
    """_LineView per line index, built on first use."""

    def __init__(self, items: Sequence[Line]):
        super().__init__()
        self.items = items

    def __missing__(self, number: int) -> _LineView:
        view = self[number] = _LineView(self.items[number].text)
        return view

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [self[n] for n in range(*key.indices(len(self.items)))]
        return super().__getitem__(key)


def _worth_a_look(items: Sequence[Line], index: TextIndex) -> tuple[set[int], list[int]]:
    """(lines that need the full single-line scan, starts of windows that need the joined scan).

    A plain line (printable ASCII, nothing to decode) is its own normalized text up to whitespace, so a rule can
    only match it when all of the rule's gates are open on it; the text index finds the few lines holding a
    first-gate word of a rule whose gates all occur somewhere in the text, and only those are checked. Lines
    that normalization could change (other characters, encodings, HTML comments, markdown links, JSON) always
    get the full scan. A window (a line plus continuation fragments) is scanned when one of its lines is such
    a line or holds a first-gate word.
    """
    unusual = _unusual_lines(items, index)
    fragments = _fragments(items, index)
    near = {n + step for n in fragments for step in (-1, 0, 1)}.intersection(range(len(items)))  # a window's lines
    anchored, opened = gate_lines(index, unusual, near)
    single = unusual | opened
    windows = []
    marked = unusual.union(*anchored.values())  # a window needs one among its lines (at most 3: start - 1 .. + 1)
    for number in fragments:
        if number - 1 not in marked and number not in marked and number + 1 not in marked:
            continue
        start = number - 1
        if start < 0 or not _consecutive(items[start], items[number]):
            continue
        span = [
            n
            for n in range(start, min(len(items), start + MAX_JOINED_LINES))
            if n == start or _consecutive(items[n - 1], items[n])
        ]
        rules = {rule for rule, anchors in anchored.items() if not anchors.isdisjoint(span)}
        if unusual.intersection(span) or (rules and _open(rules, " ".join(items[n].text for n in span).lower())):
            windows.append(start)
    return single, windows


def _open(rules, lowered: str) -> bool:
    """Whether one of `rules` has all gates open on plain lower-cased text. A spaced gate substring matches any
    whitespace run: no normalization needed."""
    words = frozenset(_WORD.findall(lowered)) if rules_need_words(rules) else frozenset()
    return any_open(rules, lowered, words)


_WORD = re.compile(r"[a-z]+")
_PERCENT_SHAPE = re.compile(rb"%00")  # the shape of a % and two hex digits
_JSON_SHAPE = re.compile(rb"(?m)^[ \t]*\{")


def _fragments(items: Sequence[Line], index: TextIndex) -> list[int]:
    """Lines that are not timestamped log records (continuations, tracebacks, plain text), in order: among the
    lines that are not DEBUG/INFO records (one pass the catalog scan shares), those with no timestamp."""
    return [n for n in logline.loud_lines(index, lambda n: items[n].text) if not logline.is_record(items[n].text)]


def _unusual_lines(items: Sequence[Line], index: TextIndex) -> set[int]:
    """Lines that normalize.py could change beyond whitespace, plus lines with base64/hex-like runs (the
    characters looked for here are not hex digits, so the line shapes answer exactly)."""
    lines = set(index.odd)
    for needle in ("\\", "<!--", "]("):
        lines.update(index.lines_with(needle))
    lines.update(index.shape_lines(_PERCENT_SHAPE))
    lines.update(index.shape_lines(_JSON_SHAPE))
    lines.update(encoded_run_lines(index))
    return lines


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
                self._message = (logline.message(self.text), logline.message(visible))
        return self._message


def _split_findings(items: Sequence[Line], views: Sequence[_LineView], start: int, end: int) -> list[tuple]:
    """Findings of directives split over lines start..end, attributed to the shortest window that holds them."""
    new = _window_kinds(views[start : end + 1])
    spans: dict[tuple[int, int], set[str]] = {}
    for kind in new:
        pairs = [(s, s + 1) for s in range(start, end) if kind in _window_kinds(views[s : s + 2])]
        spans.setdefault(pairs[0] if pairs else (start, end), set()).add(kind)
    out = []
    for (first, last), kinds in sorted(spans.items()):
        described = _window_describe(items, views, first, last)
        out += [(first, last, kind, summary) for kind, summary in described if kind in kinds or kind == "obfuscated"]
    return out


def _window_kinds(views: Sequence[_LineView]) -> dict[str, str | None]:
    """Kinds found only when the lines are read as one sentence (not on any single line)."""
    candidates = frozenset().union(*(view.candidates for view in views))
    if not candidates:
        return {}
    lowered = " ".join(view.lowered for view in views)
    rules = open_rules(lowered, frozenset().union(*(view.words for view in views)), candidates)
    if not rules:
        return {}
    joined = " ".join(view.message()[0] for view in views)
    return {kind: detail for kind, detail in detect(joined, rules).items() if not any(kind in v.kinds for v in views)}


def _window_describe(items: Sequence[Line], views: Sequence[_LineView], first: int, last: int) -> list[tuple]:
    """(kind, summary) pairs for the split directive(s) on lines first..last."""
    window = views[first : last + 1]
    joined = " ".join(view.message()[0] for view in window)
    visible_kinds = detect(" ".join(view.message()[1] for view in window))
    techniques = tuple(sorted({t for view in window for t in view.techniques}))
    numbers = (items[first].line, items[last].line)
    span = f" {numbers[0]}-{numbers[1]}" if None not in numbers else ""
    return _describe(_window_kinds(window), visible_kinds, techniques, joined, f" (split across lines{span})")


def _describe(
    kinds: dict[str, str | None], visible: dict[str, str | None], techniques: Sequence[str], text: str, where: str
) -> list[tuple[str, str]]:
    out = [(kind, _cap(_summary(kind, detail, text) + where)) for kind, detail in kinds.items()]
    hidden = [kind for kind in DIRECTIVE_KINDS if kind in kinds and kind not in visible]
    invisible = [t for t in techniques if t in _INVISIBLE_TECHNIQUES]
    if hidden:
        how = ", ".join(techniques) if techniques else "text layout"
        summary = f"{', '.join(hidden)} directive hidden by {how}; not visible in the plain rendered line{where}"
        out.append(("obfuscated", _cap(summary)))
    elif kinds and invisible:
        shown = ", ".join(kind for kind in DIRECTIVE_KINDS if kind in kinds)
        out.append(("obfuscated", _cap(f"{shown} directive disguised with {', '.join(invisible)}{where}")))
    return out


_SUMMARIES = {
    ("disable_security", "flag"): "directive to disable a security check (authentication, TLS or verification) with a "
    "command-line flag",
    ("disable_security", None): "directive to disable or bypass authentication, TLS or other security checks",
    ("exfiltration", None): "directive to send data or the workspace to an external destination",
    (
        "assistant_directive",
        "addressed",
    ): "text addressed to an AI assistant/agent that tries to steer it; not followed",
    ("assistant_directive", "diagnosis"): "text that tries to dictate the diagnosis (blame, verdict or category); "
    "not followed",
}


def _summary(kind: str, detail: str | None, text: str) -> str:
    """Describe a directive with fixed phrases; only a defanged host or a known config file name is added."""
    if kind == "spoofed_marker":
        return f"{detail} marker line carrying prose blame or instructions; unverified, ignored for attribution"
    if kind == "config_change":
        name = config_file_named(text)
        return (
            f"directive to change job or site configuration ({name})" if name else "directive to change a job setting"
        )
    url = first_web_url(text) if kind in ("download_execute", "exfiltration") else None
    target = f" {defang(url)}" if url else ""
    if kind == "download_execute":
        return f"directive to download and execute code{' from' + target if url else ''}"
    return _SUMMARIES[(kind, detail)] + target


def _add(found: dict, index: int, item: Line, kind: str, summary: str, last: int | None = None) -> None:
    key = (item.source, item.line if item.line is not None else ("tail", index), kind)
    if key not in found:
        finding = {
            "source": item.source,
            "site": item.site,
            "line": item.line,
            "kind": kind,
            "summary": summary,
            "span": (index, index if last is None else last),
        }
        found[key] = (index, finding)


def _consecutive(before: Line, after: Line) -> bool:
    """True when `after` continues `before`: the next line of the same region of the same source, and not a
    complete log record of its own (records of other threads and sites interleave; only fragments join)."""
    if after.source != before.source or after.part != before.part or logline.is_record(after.text):
        return False
    return before.line is None or after.line is None or after.line == before.line + 1


def _defang_url(scheme: str, rest: str) -> str:
    try:
        host = urlsplit(f"x://{rest}").hostname or ""
    except ValueError:
        host = ""
    labels = _HOST_SAFE_RE.sub("", host.lower()).split(".")
    if len(labels) > 4 or any(len(label) > 24 for label in labels):  # a host name that could carry prose
        labels = ["*", *labels[-2:]]
    host = "[.]".join(labels)[:80]
    scheme = scheme.lower().replace("tt", "xx").replace("ft", "fx")
    has_path = bool(re.search(r"[/?#]", rest))
    return f"{scheme}://{host}{'/...' if has_path else ''}"


def _cap(summary: str) -> str:
    return summary if len(summary) <= SUMMARY_LIMIT else summary[: SUMMARY_LIMIT - 3] + "..."
