"""JSON in untrusted evidence text and in the skill's reference files: the one place JSON is parsed.

Usage::

    value = parse(text)               # the parsed value, or None when the text is not JSON
    record = parse_object_line(line)  # a dict for a one-line `{...}` JSON object, else None
    document = read_reference(path, limit, error=CatalogError, what="catalog")   # bounded; `error` on any problem
    lines = text_to_lines(text, source, site)        # text -> `Line`s, JSON-lines log records rendered

Evidence is hostile input: besides invalid JSON, a document nested thousands of levels deep makes `json.loads`
raise RecursionError, which would abort the whole diagnosis. Here every such text is simply "not JSON".

NVFLARE's `log.json` (and the `data.logs.<site>` strings of `nvflare --format json job logs`) hold one record
per line: {"asctime", "name", "fullName", "levelname", "fl_ctx", "message"}. log.txt renders the same record
as `asctime - name - levelname - [fl_ctx] - message` (the fl_ctx part is absent when empty); so do we, so the
matcher sees one shape whatever the source.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..model import Line
from . import prefixes
from .bounded import clip_line
from .sites import valid_site

REFERENCES = Path(__file__).resolve().parents[3] / "references"  # the skill's rendered reference files
_REQUIRED = ("asctime", "levelname", "message")


def parse(text: str | bytes) -> object | None:
    """The JSON value of `text`, or None when it is invalid, not UTF-8 or nested too deeply to parse."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_object_line(text: str) -> dict | None:
    """The object of a line that holds exactly one JSON object (`{...}` after stripping), else None."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    value = parse(stripped)
    return value if isinstance(value, dict) else None


def read_reference(path: str | Path, limit: int, *, error: type[Exception], what: str) -> object:
    """One of the skill's rendered reference JSON files (catalog, message mapping), at most `limit` bytes; any
    problem raises `error` with a one-line message that names the fix (`make sync`)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}; run `make sync` to render it") from None
    return decode_reference(raw, path, limit, error=error, what=what)


def decode_reference(raw: bytes, path: str | Path, limit: int, *, error: type[Exception], what: str) -> object:
    """The JSON document in `raw`, the bytes read from `path` (read_reference's checks and messages)."""
    if len(raw) > limit:
        raise error(f"{what} {path} is larger than {limit} bytes; re-render it with `make sync`")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{what} {path} is not valid JSON ({exc}); re-render it with `make sync`") from None


def is_json_lines(pairs) -> bool:
    """More than one line that each is a JSON object: JSON-lines, not one JSON document."""
    objects = [text for _, text in pairs[:3] if text.strip()]
    return len(objects) > 1 and all(t.strip().startswith("{") and t.strip().endswith("}") for t in objects)


def record_to_text(record: object) -> str | None:
    """Render one JSON log record as a log.txt line, or None when it is not a log record."""
    if not isinstance(record, dict) or not all(isinstance(record.get(key), str) for key in _REQUIRED):
        return None
    parts = [record["asctime"], str(record.get("name") or "-"), record["levelname"]]
    fl_ctx = record.get("fl_ctx")
    if isinstance(fl_ctx, str) and fl_ctx.strip():
        fl_ctx = fl_ctx.strip()
        parts.append(fl_ctx if fl_ctx.startswith("[") else f"[{fl_ctx}]")
    parts.append(record["message"])
    return " - ".join(parts)


def convert_line(text: str) -> list[str]:
    """A JSON-lines record becomes its log.txt rendering (one item per message line); other text stays."""
    if '"levelname"' in text:
        rendered = record_to_text(parse_object_line(text))
        if rendered is not None:
            return [clip_line(piece) for piece in rendered.splitlines()] or [""]
    return [text]


def numbered_to_lines(
    pairs: list[tuple[int | None, str]],
    source: str,
    site: str | None,
    part: int = 0,
    peeler: prefixes.Peeler | None = None,
) -> list[Line]:
    """(line number, raw text) pairs -> `Line`s: wrappers peeled (prefixes.py), JSON-lines records expanded. A line
    of a source with no site of its own takes the site its prefix names (a compose service, `@site-1`)."""
    if peeler is None or not peeler.active:
        return [Line(source, site, number, text, part) for number, raw in pairs for text in convert_line(raw)]
    out: list[Line] = []
    for number, raw in pairs:
        raw, named = peeler.peel(raw)
        line_site = named if site is None and named is not None and valid_site(named) else site
        for text in convert_line(raw):
            out.append(Line(source, line_site, number, text, part))
    return out


def text_to_lines(text: str, source: str, site: str | None) -> list[Line]:
    """A whole in-memory text (bundle or envelope content) -> numbered `Line`s, wrappers peeled."""
    pairs = [(index, clip_line(raw.rstrip("\r"))) for index, raw in enumerate(text.split("\n"), start=1)]
    if pairs and pairs[-1][1] == "":
        pairs.pop()
    return numbered_to_lines(pairs, source, site, peeler=prefixes.detect([raw for _, raw in pairs]))
