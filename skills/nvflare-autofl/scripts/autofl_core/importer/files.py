"""The importer's only I/O: bounded, workspace-confined reads of job.py, the train script and the schema."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from .schema import SCHEMA_FILE
from .trust import safe_relative

MAX_SOURCE_BYTES = 2 * 1024 * 1024
# What ast.parse raises for a text Python cannot read: bad syntax, NUL bytes, nesting too deep for its parser.
UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def parsed(text: str | None) -> ast.Module | None:
    """The module `text` holds, or None when there is no text or Python cannot parse it (`UNPARSABLE`)."""
    try:
        return None if text is None else ast.parse(text)
    except UNPARSABLE:
        return None


class JobImportError(Exception):
    """job.py (or an explicit schema) cannot be read; the message names the problem and the fix."""


def read_text(path: Path, what: str) -> str:
    """Read a UTF-8 text file of bounded size; JobImportError with an actionable message otherwise."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise JobImportError(f"{what} {path} does not exist; pass the path of an existing file") from None
    except OSError as exc:
        raise JobImportError(f"{what} {path} cannot be read ({exc.strerror}); check the path") from None
    if not path.is_file():
        raise JobImportError(f"{what} {path} is not a regular file; pass the path of a job.py file")
    if size > MAX_SOURCE_BYTES:
        raise JobImportError(f"{what} {path} is larger than {MAX_SOURCE_BYTES} bytes; this is not a job.py")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise JobImportError(f"{what} {path} cannot be read ({exc.strerror}); check its permissions") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JobImportError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


class Workspace:
    """Workspace-confined file access used as the importer's read_file/exists callbacks."""

    def __init__(self, root: Path):
        self.root = root.resolve()

    def _inside(self, rel: str) -> Path | None:
        norm = safe_relative(rel)
        if norm is None:
            return None
        path = self.root / norm
        try:
            resolved = path.resolve()
            resolved.relative_to(self.root)
        except (OSError, ValueError, RuntimeError):
            return None
        return path if os.path.isfile(resolved) else None

    def exists(self, rel: str) -> bool:
        return self._inside(rel) is not None

    def read_file(self, rel: str) -> str | None:
        path = self._inside(rel)
        if path is None:
            return None
        try:
            return read_text(path, "file")
        except JobImportError:
            return None


class Overlay(Workspace):
    """A workspace seen with some files replaced (a candidate's draft over the live job), without writing it."""

    def __init__(self, root: Path, files: dict[str, bytes]):
        super().__init__(root)
        self.files = {safe_relative(rel): data for rel, data in files.items() if safe_relative(rel)}

    def exists(self, rel: str) -> bool:
        return safe_relative(rel) in self.files or super().exists(rel)

    def read_file(self, rel: str) -> str | None:
        data = self.files.get(safe_relative(rel))
        if data is None:
            return super().read_file(rel)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def load_job(job_path: str | os.PathLike, schema_path: str | os.PathLike | None) -> tuple[Path, str, str | None]:
    """Return (job path, job source, schema text or None)."""
    path = Path(job_path)
    source = read_text(path, "job")
    if schema_path is not None:
        return path, source, read_text(Path(schema_path), "mutation schema")
    default = path.absolute().parent / SCHEMA_FILE
    return path, source, read_text(default, "mutation schema") if default.is_file() else None
