"""results.tsv: the campaign ledger (tab-separated, one header row, one row per event).

Each line is read and written through one typed record, `LedgerRow` (a frozen dataclass with one field per
column: ``score`` and ``runtime_seconds`` floats or None, every other field a string): `LedgerRow.from_fields`
checks a parsed line, `LedgerRow.from_row` checks a row a writer builds (a dict from a `vocabulary` row
builder), `LedgerRow.to_line` formats it. Readers get records and read attributes. Usage::

    rows = read_rows("results.tsv")            # [LedgerRow, ...]; [] when the file does not exist
    rows[0].status, rows[0].score
    append_row("results.tsv", vocabulary.literature_row(name="lit-0001", diff_summary=h, literature_event_id="lit-0001"))

Statuses and candidate kinds are the ones `vocabulary` defines; every row a writer appends comes from one of its
row builders.

`append_row` rewrites the whole file atomically (temp file + fsync + os.replace) instead of appending in
place: a crash at any instant leaves either the old ledger or the new one, never a partial row, and the
existing rows are validated first so a corrupt ledger is never extended. The cost (one read and one write
of the file per row) is negligible next to the simulation that produced the row.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

from ..common import bounded
from . import vocabulary
from .compare import format_score

COLUMNS = (
    "status",
    "name",
    "score",
    "runtime_seconds",
    "changed_files",
    "diff_summary",
    "run_command",
    "artifacts",
    "failure_reason",
    "candidate_manifest",
    "base_candidate",
    "patch_sha256",
    "metric_name",
    "metric_source",
    "metric_artifact",
    "candidate_kind",
    "algorithm_family",
    "literature_event_id",
)
HEADER = "\t".join(COLUMNS)
MAX_LEDGER_BYTES = 512 * 1024 * 1024  # about 2.5 million rows; anything larger is not a ledger

_STATUS_SET = frozenset(vocabulary.LEDGER_STATUSES)
_KIND_SET = frozenset(("",) + vocabulary.CANDIDATE_KINDS)
# Characters that would break the one-row-per-line, tab-separated layout (plus other C0/C1 controls).
_UNSAFE = {code: " " for code in list(range(0x00, 0x20)) + [0x7F, 0x85, 0x2028, 0x2029]}


class LedgerError(ValueError):
    """A ledger that cannot be trusted; the message is one line naming file, line and problem."""


@dataclasses.dataclass(frozen=True)
class LedgerRow:
    """One ledger row: a field per column of `COLUMNS`, in order. ``status`` is a `LedgerStatus`,
    ``candidate_kind`` a `CandidateKind` or ""; other text fields hold what the file holds (sanitized, "" when
    empty); ``score`` and ``runtime_seconds`` are finite floats or None."""

    status: vocabulary.LedgerStatus
    name: str = ""
    score: float | None = None
    runtime_seconds: float | None = None
    changed_files: str = ""
    diff_summary: str = ""
    run_command: str = ""
    artifacts: str = ""
    failure_reason: str = ""
    candidate_manifest: str = ""
    base_candidate: str = ""
    patch_sha256: str = ""
    metric_name: str = ""
    metric_source: str = ""
    metric_artifact: str = ""
    candidate_kind: vocabulary.CandidateKind | str = ""
    algorithm_family: str = ""
    literature_event_id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", vocabulary.LedgerStatus(self.status))
        if self.candidate_kind:
            object.__setattr__(self, "candidate_kind", vocabulary.CandidateKind(self.candidate_kind))

    @classmethod
    def from_fields(cls, fields: list[str], source: str = "results.tsv", number: int = 0) -> LedgerRow:
        """The record of one parsed line (exactly `len(COLUMNS)` fields); LedgerError names `source` and line."""
        row = dict(zip(COLUMNS, fields, strict=True))
        if row["status"] not in _STATUS_SET:
            raise LedgerError(
                f"{source}: line {number}: unknown status {row['status']!r}; expected one of: "
                f"{', '.join(vocabulary.LEDGER_STATUSES)}"
            )
        if row["candidate_kind"] not in _KIND_SET:
            raise LedgerError(f"{source}: line {number}: unknown candidate_kind {row['candidate_kind']!r}")
        try:
            for column in _NUMBERS:
                row[column] = _finite(row[column], column) if row[column] else None
        except LedgerError as exc:
            raise LedgerError(f"{source}: line {number}: {exc}") from None
        return cls(**row)

    @classmethod
    def from_row(cls, row: dict) -> LedgerRow:
        """The record of a row a writer built (columns may be missing; lists are joined with commas; numbers may
        be strings); LedgerError on an unknown column, status or kind, or a score or runtime that is no number."""
        unknown = sorted(set(row) - set(COLUMNS))
        if unknown:
            raise LedgerError(f"unknown ledger column(s): {', '.join(unknown)}")
        status = row.get("status")
        if status not in _STATUS_SET:
            raise LedgerError(
                f"invalid ledger status {status!r}; expected one of: {', '.join(vocabulary.LEDGER_STATUSES)}"
            )
        kind = row.get("candidate_kind") or ""
        if kind not in _KIND_SET:
            raise LedgerError(f"invalid candidate_kind {kind!r}; expected {' or '.join(vocabulary.CANDIDATE_KINDS)}")
        values = {}
        for column in COLUMNS:
            value = row.get(column)
            if column in _NUMBERS:
                values[column] = None if value is None or value == "" else _finite(value, column)
            else:
                values[column] = "" if value is None or value == "" else sanitize_text(value)
        return cls(**values)

    def to_row(self) -> dict:
        """The row as a dict keyed by `COLUMNS`, in column order."""
        return {column: getattr(self, column) for column in COLUMNS}

    def to_line(self) -> str:
        """The ledger line (no newline)."""
        return "\t".join(_format_field(column, getattr(self, column)) for column in COLUMNS)


_NUMBERS = ("score", "runtime_seconds")


def parse(text: str, source: str = "results.tsv") -> list[LedgerRow]:
    """Parse ledger text into records; raise LedgerError on a bad header or any corrupt row.

    A row with fewer fields than the header is padded with empty trailing fields; more fields is an error.
    """
    lines = text.removeprefix("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    if lines[0].rstrip("\r") != HEADER:
        raise LedgerError(
            f"{source}: line 1: header does not match the ledger columns; expected {len(COLUMNS)} "
            f"tab-separated columns starting with 'status<TAB>name<TAB>score'"
        )
    rows = []
    width = len(COLUMNS)
    for number in range(2, len(lines) + 1):
        line = lines[number - 1].rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) > width:
            raise LedgerError(f"{source}: line {number}: expected {width} tab-separated fields, found {len(fields)}")
        fields += [""] * (width - len(fields))  # editors that trim trailing whitespace drop trailing tabs
        rows.append(LedgerRow.from_fields(fields, source, number))
    return rows


def read_rows(path: str | os.PathLike) -> list[LedgerRow]:
    """Read and parse the ledger at `path`; a missing file is an empty ledger."""
    text = _read_text(Path(path))
    return [] if text is None else parse(text, str(path))


def parse_any_version(text: str, source: str = "results.tsv") -> tuple[list[LedgerRow], tuple[str, ...]]:
    """Like `parse`, but an older ledger whose header is a leading part of `COLUMNS` (at least status, name,
    score) is read too, its rows padded; returns (rows, the columns that ledger did not have yet)."""
    head, _, body = text.removeprefix("\ufeff").partition("\n")
    fields = tuple(head.rstrip("\r").split("\t"))
    width = len(fields)
    if not 3 <= width < len(COLUMNS) or fields != COLUMNS[:width]:
        return parse(text, source), ()
    for number, line in enumerate(body.split("\n"), start=2):
        if line.count("\t") >= width:
            raise LedgerError(
                f"{source}: line {number}: expected {width} tab-separated fields (the ledger's own "
                f"header), found {line.count(chr(9)) + 1}"
            )
    return parse(HEADER + "\n" + body, source), COLUMNS[width:]


def read_rows_any_version(path: str | os.PathLike) -> tuple[list[LedgerRow], tuple[str, ...]]:
    """`read_rows` that also accepts an older ledger (see `parse_any_version`)."""
    text = _read_text(Path(path))
    return ([], ()) if text is None else parse_any_version(text, str(path))


def format_row(row: dict) -> str:
    """One ledger line (no newline) for a writer's `row`; missing columns are empty, free text is sanitized."""
    return LedgerRow.from_row(row).to_line()


def format_ledger(rows: list[dict]) -> str:
    """The whole ledger text (header plus one line per writer's row, trailing newline)."""
    return "".join(line + "\n" for line in [HEADER, *(format_row(row) for row in rows)])


def append_row(path: str | os.PathLike, row: dict) -> LedgerRow:
    """Atomically add `row` at the end of the ledger at `path` (created with a header if missing).

    Returns the row as it will read back (typed, sanitized). Raises LedgerError, leaving the file untouched,
    when the existing ledger is corrupt or the row is invalid.
    """
    target = Path(path)
    line = format_row(row)
    existing = _read_text(target) or ""
    parse(existing, str(target))
    if not existing:
        existing = HEADER + "\n"
    elif not existing.endswith("\n"):
        existing += "\n"
    from ..common import atomic  # imported here: read-only callers (the guard CLI) never pay for tempfile

    atomic.write_text(target, existing + line + "\n")
    return parse(HEADER + "\n" + line + "\n", str(target))[0]


def sanitize_text(value: object) -> str:
    """Free text safe for one TSV field: tabs, newlines and other control characters become spaces.

    A list or tuple (e.g. changed files) is joined with commas.
    """
    if isinstance(value, (list, tuple)):
        value = ",".join(str(item) for item in value)
    return str(value).translate(_UNSAFE)


def _read_text(target: Path) -> str | None:
    """The ledger's text, None when the file does not exist; LedgerError when it cannot be a ledger."""
    try:
        data = bounded.read_regular(target, MAX_LEDGER_BYTES)
    except bounded.BoundedReadError as exc:
        raise LedgerError(f"{target}: {exc}; pass the path of a results.tsv ledger") from None
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LedgerError(f"{target}: line {line}: not valid UTF-8; restore the ledger from a backup") from None


def _format_field(column: str, value: object) -> str:
    if value is None or value == "":
        return ""
    if column == "score":
        return format_score(_finite(value, column))
    if column == "runtime_seconds":
        return f"{_finite(value, column):.3f}"
    return sanitize_text(value)


def _finite(value: object, column: str) -> float:
    if isinstance(value, bool):
        raise LedgerError(f"{column} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LedgerError(f"{column} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise LedgerError(f"{column} must be finite, got {value!r}; record the run as a crash instead")
    if column == "runtime_seconds" and number < 0:
        raise LedgerError(f"runtime_seconds must be >= 0, got {value!r}")
    return number
