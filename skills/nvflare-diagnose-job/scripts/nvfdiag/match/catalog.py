"""Load and validate the rendered failure-pattern catalog (`references/failure_patterns.json`).

Usage: `catalog = load_catalog()` (default path next to this skill) or `parse_catalog(document)` for a dict.
Regexes are compiled once here; the matcher only uses the compiled `Catalog`. A row's next-action cases are
parsed by actions.py, the `user_calls` table by usercalls.py. `load_catalog` also loads the
reviewed mapping of NVFLARE's own error messages (`references/nvflare_messages.json`, see messages.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..read.jsontext import REFERENCES, decode_reference, read_reference
from . import actions, usercalls
from . import messages as nvflare_messages

DEFAULT_PATH = REFERENCES / "failure_patterns.json"
MODES = ("simulation", "production")
RECOVERY_CATEGORIES = ("FIXABLE_BY_CODE", "FIXABLE_BY_CONFIG", "ENVIRONMENT_FAILURE", "RETRYABLE", "UNKNOWN")
STRENGTHS = ("strong", "weak")
CONDITION_KINDS = ("user_traceback", "job_status", "site_status")
MAX_CATALOG_BYTES = 1024 * 1024


class CatalogError(ValueError):
    """The catalog is missing or malformed; the message names the problem and the fix."""


@dataclass(frozen=True)
class Signal:
    regex: re.Pattern
    strength: str
    any_level: bool
    keywords: tuple[str, ...] = ()  # lower-case; at least one must occur before the regex is tried
    after_partner: bool = False  # counts only after a partner row's hit (requires_any rows; see refine.py)
    loose: bool = False  # matches words, not a specific message: a diagnosis it supports is at most medium
    number: int = 0  # the signal's position in its row (match_basis names it)
    generic: bool = False  # words many libraries print (errno texts, exception classes), not NVFLARE's own text

    def may_match(self, lowered: str) -> bool:
        return not self.keywords or any(word in lowered for word in self.keywords)


@dataclass(frozen=True)
class ModeHint:
    regex: re.Pattern
    reason: str
    keywords: tuple[str, ...] = ()
    weak: bool = False  # says little on its own: outweighed by a hint of the other mode (mode.py)
    # a fact of NVFLARE's own connections: not read on a traceback that is the job's own call (a download)
    nvflare_connections_only: bool = False
    # text the job's own code can print in the same shape (an id): strong only on a record of NVFLARE's logger
    printable: bool = False

    @property
    def printed_reason(self) -> str:
        """The reason when the hint is read on other text (weak: the job may have printed it)."""
        return f"{self.reason}, in text that is not a record of NVFLARE's logger"

    def may_match(self, lowered: str) -> bool:
        return not self.keywords or any(word in lowered for word in self.keywords)


def _keywords(raw: object, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(w, str) and w and w == w.lower() for w in raw):
        raise CatalogError(f"catalog: {where} keywords must be a list of non-empty lower-case strings")
    return tuple(raw)


@dataclass(frozen=True)
class Wording:
    """Lines of one kind in NVFLARE's words: a regex and the lower-case keywords every match holds one of."""

    regex: re.Pattern
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    id: str
    regex: re.Pattern | None
    cause: str


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    modes: tuple[str, ...]
    priority: int
    recovery_category: str
    next_action: str
    signals: tuple[Signal, ...] = ()
    conditions: tuple[dict, ...] = ()
    requires_any: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    resolved_by: tuple[re.Pattern, ...] = ()
    variants: tuple[Variant, ...] = ()
    default_variant: Variant | None = None
    finding_only: bool = False
    depends_on_sites: bool = False
    transient_on_completion: bool = False  # recovered from when the job still finished FINISHED:COMPLETED
    job_code_only: bool = False  # means the job's own code or data: a hit in a third-party traceback is loose
    nvflare_connections_only: bool = False  # means NVFLARE's connections: a hit on the job's own call is loose
    follow_up: dict = field(default_factory=dict)
    next_action_cases: tuple[actions.ActionCase, ...] = ()

    def condition(self, kind: str) -> dict | None:
        return next((c for c in self.conditions if c["kind"] == kind), None)

    def next_action_for(self, mode: str, facts: frozenset[str] | set[str] = frozenset()) -> str:
        """The row's next-action text for the runtime mode and the established facts (placeholders unfilled)."""
        return actions.choose(self.next_action, self.next_action_cases, mode, facts)


@dataclass(frozen=True)
class Catalog:
    rows: tuple[Row, ...]
    fallback_next_action: str
    mode_hints: dict
    follow_up_templates: dict
    messages: nvflare_messages.MessageCatalog | None = None  # NVFLARE's own error messages (None: not loaded)
    fallback_cases: tuple[actions.ActionCase, ...] = ()  # the fallback's wording per runtime mode
    user_calls: tuple[usercalls.UserCall, ...] = ()  # NVFLARE's internal names -> the user's job.py call
    release_mismatch: str = ""  # said first when a name under nvflare. is missing (a job for another release)
    # lines of a web download (urllib, a host at port 443, curl, wget, git): never NVFLARE's own connection
    web_downloads: re.Pattern | None = None
    # NVFLARE's records that a peer is gone, and that work completed (the catalog's run_course; None: not given)
    peer_gone: Wording | None = None
    progress: Wording | None = None

    def row(self, pattern_id: str) -> Row:
        return next(r for r in self.rows if r.id == pattern_id)

    def has(self, pattern_id: str) -> bool:
        return any(r.id == pattern_id for r in self.rows)

    def fallback_for(self, mode: str, facts: frozenset[str] = frozenset()) -> str:
        """The next action when nothing matched, worded for the runtime mode and the facts (`nothing_missing`)."""
        return actions.choose(self.fallback_next_action, self.fallback_cases, mode, facts)

    @property
    def weak_mode_reasons(self) -> frozenset[str]:
        hints = [hint for entries in self.mode_hints.values() for hint in entries]
        return frozenset(hint.reason for hint in hints if hint.weak) | {h.printed_reason for h in hints if h.printable}


def load_catalog(path: str | Path = DEFAULT_PATH, messages_path: str | Path = nvflare_messages.DEFAULT_PATH) -> Catalog:
    """Read and parse the rendered JSON catalog and the message mapping; CatalogError with a one-line fix. A process
    that diagnoses many inputs (the in-process tests and replays) parses the same pair of files once: the parsed
    catalog is never changed, and files whose bytes differ are parsed again. Each file is read once: the bytes
    remembered by their digest are the bytes parsed."""
    rows_raw, messages_raw = (
        _snapshot(path, MAX_CATALOG_BYTES),
        _snapshot(messages_path, nvflare_messages.MAX_MESSAGES_BYTES),
    )
    key = None
    if rows_raw is not None and messages_raw is not None:
        key = (str(path), _digest(rows_raw), str(messages_path), _digest(messages_raw))
        if key in _LOADED:
            return _LOADED[key]
    if rows_raw is None:
        catalog = _load_rows(path)
    else:
        catalog = parse_catalog(decode_reference(rows_raw, path, MAX_CATALOG_BYTES, error=CatalogError, what="catalog"))
    ids = {row.id for row in catalog.rows}
    try:
        if messages_raw is None:
            known = nvflare_messages.load_messages(ids, messages_path)
        else:
            document = decode_reference(
                messages_raw,
                messages_path,
                nvflare_messages.MAX_MESSAGES_BYTES,
                error=nvflare_messages.MessagesError,
                what="NVFLARE message mapping",
            )
            known = nvflare_messages.parse_messages(document, ids)
    except nvflare_messages.MessagesError as exc:
        raise CatalogError(str(exc)) from None
    loaded = dataclasses.replace(catalog, messages=known)
    if key is not None:
        _LOADED.clear()  # one pair kept: the default one in practice
        _LOADED[key] = loaded
    return loaded


_LOADED: dict[tuple, Catalog] = {}


def _snapshot(path: str | Path, limit: int) -> bytes | None:
    """The bytes of a readable regular file of at most `limit` bytes, read once; None otherwise (then the file is
    read the ordinary way, which raises the right error, and nothing is remembered)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except (OSError, ValueError):
        return None
    return None if len(data) > limit else data


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _load_rows(path: str | Path) -> Catalog:
    return parse_catalog(read_reference(path, MAX_CATALOG_BYTES, error=CatalogError, what="catalog"))


def _need(mapping: object, key: str, kind: type, where: str):
    if not isinstance(mapping, dict) or not isinstance(mapping.get(key), kind):
        raise CatalogError(
            f"catalog: {where} needs `{key}` ({kind.__name__}); fix shared/catalog/failure_patterns.yaml"
        )
    return mapping[key]


def _compile(pattern: object, where: str) -> re.Pattern:
    if not isinstance(pattern, str) or not pattern:
        raise CatalogError(f"catalog: {where} has an empty or non-string regex; fix the catalog source")
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise CatalogError(f"catalog: {where} regex does not compile ({exc}); fix the catalog source") from None


def _parse_signals(item: dict, where: str) -> tuple[Signal, ...]:
    signals = []
    for i, sig in enumerate(item.get("signals", [])):
        strength = sig.get("strength", "strong") if isinstance(sig, dict) else None
        if strength not in STRENGTHS:
            raise CatalogError(f"catalog: {where} signal {i} needs strength strong or weak")
        signals.append(
            Signal(
                _compile(sig.get("regex"), f"{where} signal {i}"),
                strength,
                bool(sig.get("any_level")),
                _keywords(sig.get("keywords"), f"{where} signal {i}"),
                bool(sig.get("after_partner")),
                bool(sig.get("loose")),
                i,
                bool(sig.get("generic")),
            )
        )
    if any(sig.after_partner for sig in signals) and not item.get("requires_any"):
        raise CatalogError(f"catalog: {where} has an after_partner signal but no requires_any partners")
    return tuple(signals)


def _parse_conditions(item: dict, where: str) -> tuple[dict, ...]:
    conditions = tuple(dict(c) if isinstance(c, dict) else c for c in item.get("conditions", []))
    for cond in conditions:
        if not isinstance(cond, dict) or cond.get("kind") not in CONDITION_KINDS:
            raise CatalogError(f"catalog: {where} has a condition whose kind is not one of {list(CONDITION_KINDS)}")
        if cond["kind"] == "job_status":
            cond["compiled"] = _compile(cond.get("regex"), f"{where} job_status condition")
    return conditions


def _parse_follow_up(item: dict, templates: dict, where: str) -> dict:
    follow_up = item.get("follow_up", {})
    for mode, names in follow_up.items():
        if mode not in MODES or any(name not in templates for name in names):
            raise CatalogError(f"catalog: {where} follow_up names an unknown mode or template")
    return {mode: tuple(names) for mode, names in follow_up.items()}


def _parse_row(item: dict, templates: dict) -> Row:
    row_id = _need(item, "id", str, "a pattern row")
    where = f"row {row_id}"
    modes = tuple(_need(item, "modes", list, where))
    if not modes or any(m not in MODES for m in modes):
        raise CatalogError(f"catalog: {where} modes must be a non-empty subset of {list(MODES)}")
    category = _need(item, "recovery_category", str, where)
    if category not in RECOVERY_CATEGORIES:
        raise CatalogError(f"catalog: {where} recovery_category {category!r} is not one of {list(RECOVERY_CATEGORIES)}")
    variants = tuple(
        Variant(_need(v, "id", str, where), _compile(v.get("regex"), f"{where} variant"), _need(v, "cause", str, where))
        for v in item.get("variants", [])
    )
    default = item.get("default_variant")
    return Row(
        id=row_id,
        title=_need(item, "title", str, where),
        modes=modes,
        priority=_need(item, "priority", int, where),
        recovery_category=category,
        next_action=actions.check_placeholders(_need(item, "next_action", str, where).strip(), where, CatalogError),
        signals=_parse_signals(item, where),
        conditions=_parse_conditions(item, where),
        requires_any=tuple(item.get("requires_any", [])),
        supersedes=tuple(item.get("supersedes", [])),
        resolved_by=tuple(_compile(p, f"{where} resolved_by") for p in item.get("resolved_by", [])),
        variants=variants,
        default_variant=Variant(default["id"], None, default["cause"]) if isinstance(default, dict) else None,
        finding_only=bool(item.get("finding_only")),
        depends_on_sites=bool(item.get("depends_on_sites")),
        transient_on_completion=bool(item.get("transient_on_completion")),
        job_code_only=bool(item.get("job_code_only")),
        nvflare_connections_only=bool(item.get("nvflare_connections_only")),
        follow_up=_parse_follow_up(item, templates, where),
        next_action_cases=actions.parse_cases(item, where, CatalogError),
    )


def parse_catalog(document: object) -> Catalog:
    """Validate the catalog document and compile its regexes."""
    items = _need(document, "patterns", list, "the catalog")
    templates = _need(document, "follow_up_templates", dict, "the catalog")
    rows = tuple(_parse_row(item, templates) for item in items)
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise CatalogError("catalog: pattern ids must be unique; fix the catalog source")
    for row in rows:
        for ref in row.requires_any + row.supersedes:
            if ref not in ids:
                raise CatalogError(f"catalog: row {row.id} refers to unknown pattern {ref}")
    fallback = _need(_need(document, "fallback", dict, "the catalog"), "next_action", str, "fallback")
    hints = {}
    for mode, entries in _need(document, "mode_hints", dict, "the catalog").items():
        if mode not in MODES:
            raise CatalogError(f"catalog: mode_hints has unknown mode {mode!r}")
        hints[mode] = tuple(
            ModeHint(
                _compile(e.get("regex"), f"mode hint {mode}"),
                str(e.get("reason")),
                _keywords(e.get("keywords"), f"mode hint {mode}"),
                bool(e.get("weak")),
                bool(e.get("nvflare_connections_only")),
                bool(e.get("printable")),
            )
            for e in entries
        )
    return Catalog(
        rows=rows,
        fallback_next_action=fallback.strip(),
        mode_hints=hints,
        follow_up_templates=templates,
        fallback_cases=actions.parse_cases(document["fallback"], "fallback", CatalogError),
        user_calls=usercalls.parse_user_calls(document, CatalogError),
        release_mismatch=_release_mismatch(document),
        web_downloads=_web_downloads(document),
        **_run_course(document),
    )


def _run_course(document: dict) -> dict[str, Wording]:
    """The optional `run_course` wordings (see the catalog's comment), by name."""
    if document.get("run_course") is None:
        return {}
    course = _need(document, "run_course", dict, "the catalog")
    out = {}
    for name in ("peer_gone", "progress"):
        entry = _need(course, name, dict, "run_course")
        where = f"run_course {name}"
        keywords = _keywords(entry.get("keywords"), where)
        if not keywords:
            raise CatalogError(f"catalog: {where} needs keywords (its lines are found through them)")
        out[name] = Wording(_compile(entry.get("regex"), where), keywords)
    return out


def _web_downloads(document: dict) -> re.Pattern | None:
    """The optional `web_downloads.regex` (see the catalog's comment)."""
    if document.get("web_downloads") is None:
        return None
    return _compile(_need(document, "web_downloads", dict, "the catalog").get("regex"), "web_downloads")


def _release_mismatch(document: dict) -> str:
    """The optional `release_mismatch.next_action` text (only `{missing}` may be filled in it)."""
    if document.get("release_mismatch") is None:
        return ""
    text = _need(_need(document, "release_mismatch", dict, "the catalog"), "next_action", str, "release_mismatch")
    return actions.check_placeholders(" ".join(text.split()), "release_mismatch", CatalogError)
