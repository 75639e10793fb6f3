"""Turn NVFLARE JSON-lines log records into the plain `log.txt` line shape, and text into `Line`s.

NVFLARE's `log.json` (and the `data.logs.<site>` strings of `nvflare --format json job logs`) hold one record
per line: {"asctime", "name", "fullName", "levelname", "fl_ctx", "message"}. log.txt renders the same record
as `asctime - name - levelname - [fl_ctx] - message` (the fl_ctx part is absent when empty); so do we, so the
matcher sees one shape whatever the source.
"""

from __future__ import annotations

from .bounded import clip_line
from .jsontext import parse_object_line
from .model import Line

_REQUIRED = ("asctime", "levelname", "message")


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


def numbered_to_lines(pairs: list[tuple[int | None, str]], source: str, site: str | None, part: int = 0) -> list[Line]:
    """(line number, raw text) pairs -> `Line`s, expanding JSON-lines records."""
    out: list[Line] = []
    for number, raw in pairs:
        for text in convert_line(raw):
            out.append(Line(source, site, number, text, part))
    return out


def text_to_lines(text: str, source: str, site: str | None) -> list[Line]:
    """A whole in-memory text (bundle or envelope content) -> numbered `Line`s."""
    pairs = [(index, clip_line(raw.rstrip("\r"))) for index, raw in enumerate(text.split("\n"), start=1)]
    if pairs and pairs[-1][1] == "":
        pairs.pop()
    return numbered_to_lines(pairs, source, site)
