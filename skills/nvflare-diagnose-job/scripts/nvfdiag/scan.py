"""One pass over the evidence lines: catalog signal hits, text mode hints and status markers.

Usage: `result = scan_lines(lines, catalog, skip={indexes of suspicious lines})`. Pure; regexes come compiled
from the catalog and a single combined prefilter keeps the pass linear and cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .catalog import Catalog
from .model import Line

MAX_SCAN_CHARS = 8192
MAX_HITS_PER_ROW = 200
_LEVEL = re.compile(
    r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?\s+-\s+(?:\S+\s+-\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+-"
)
_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:[,.](\d+))?")
MARKER = re.compile(r"\[(USER_CODE_EXCEPTION|FLARE)\]")
QUIET_LEVELS = ("DEBUG", "INFO")


@dataclass(frozen=True)
class Hit:
    pattern: str
    index: int | None  # index into Evidence.lines; None for structured facts (job status)
    strength: str


@dataclass
class ScanResult:
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    mode_hints: dict[str, list[str]] = field(default_factory=dict)
    markers: list[tuple[int, str]] = field(default_factory=list)


def line_level(text: str) -> str | None:
    """Log level of an NVFLARE-style log line, or None for tracebacks, stdout and other text."""
    match = _LEVEL.match(text)
    return match.group(1) if match else None


def timestamp(text: str) -> str | None:
    """Sortable timestamp prefix of a log line, or None."""
    match = _TIMESTAMP.match(text)
    if not match:
        return None
    return match.group(1).replace("T", " ") + "," + (match.group(2) or "0").ljust(6, "0")


def _prefilter(catalog: Catalog) -> re.Pattern:
    parts = [sig.regex.pattern for row in catalog.rows for sig in row.signals]
    return re.compile("|".join(f"(?:{p})" for p in parts) or r"(?!x)x", re.IGNORECASE)


def scan_lines(lines: list[Line], catalog: Catalog, skip: set[int] | frozenset = frozenset()) -> ScanResult:
    """Match every non-skipped line once against the catalog signals, mode hints and markers."""
    result = ScanResult()
    prefilter = _prefilter(catalog)
    pending_hints = {mode: list(entries) for mode, entries in catalog.mode_hints.items()}
    for index, line in enumerate(lines):
        if index in skip:
            continue
        text = line.text[:MAX_SCAN_CHARS]
        if "[" in text and MARKER.search(text):
            result.markers.append((index, MARKER.search(text).group(0)))
        for mode, entries in pending_hints.items():
            for entry in [e for e in entries if e[0].search(text)]:
                result.mode_hints.setdefault(mode, []).append(entry[1])
                entries.remove(entry)
        if not prefilter.search(text):
            continue
        quiet = line_level(text) in QUIET_LEVELS
        for row in catalog.rows:
            for sig in row.signals:
                if (sig.any_level or not quiet) and sig.regex.search(text):
                    bucket = result.hits.setdefault(row.id, [])
                    if len(bucket) < MAX_HITS_PER_ROW:
                        bucket.append(Hit(row.id, index, sig.strength))
                    break
    return result
