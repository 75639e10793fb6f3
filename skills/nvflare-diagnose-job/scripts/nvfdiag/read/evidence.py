"""Bounded, read-only evidence collection: files, folders, stdin, bundles, CLI envelopes -> `Evidence`.

Usage:
    ev = collect_evidence(["/tmp/nvflare/simulation/hello-numpy"], job_id=None, max_bytes=262144,
                          max_total_bytes=4194304, max_files=200)
    ev = evidence_from_envelopes(collect.collect_from_cli("abc123"))      # --collect results

Never writes, never opens credential material (decided by name first), never follows a symlink out of the
given roots. The byte budget is shared before anything is read (budget.py): every file gets a slice (tail
first) before any file is read deeper, at most `max_bytes` each, `max_total_bytes` and `max_files` in all.
Then the unread middles of truncated logs are scanned with a bytes pre-filter (middle.py), files whose head
or tail shows trouble first, and windows around errors found there are read with what is left of the budget.
What was skipped is recorded. Raises `EvidenceError` (one line) when nothing could be read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..model import Evidence, Line, Source
from . import job_folder, jobscope, jsontext, metrics_files, middle, prefixes, structured, walk, workspaces
from .bounded import Chunk, ReadFailure, chunk_from_bytes, chunk_parts, read_head_tail
from .budget import plan_shares
from .credentials import given_credential, is_credential, name_parts
from .jsontext import numbered_to_lines
from .walk import METRICS, OTHER_TEXT, STRUCTURED, EvidenceFile, file_site_label, read_order_key, walk_tree

MAX_LISTED_SKIPPED = 20  # per status; the rest is summarised in not_read (keeps the report small)
MAX_NOTES = 30
STDIN_PATH = "<stdin>"
LINKED_CREDENTIAL = "symlink to credential material (a startup kit or key file); skipped, never opened"
_FIX = "pass a log file, a SimEnv/POC workspace or job-download folder, an evidence bundle or a saved nvflare CLI JSON envelope"


class EvidenceError(Exception):
    """No evidence could be read at all; the message is one line naming the problem and the fix."""


def collect_evidence(
    paths: list[str],
    *,
    job_id: str | None,
    max_bytes: int,
    max_total_bytes: int,
    max_files: int,
    stdin_text: str | None = None,
) -> Evidence:
    """Read the evidence behind `paths` (`-` means `stdin_text`) within the given bounds. Without `job_id`, when the
    given JSON files (CLI answers, job meta, bundle) state one job and the given folders hold it beside other jobs
    (`_stated_job`), the evidence is read as with that job's id; what learning it read counts against the bounds."""
    for name, value in (("max-bytes", max_bytes), ("max-total-bytes", max_total_bytes), ("max-files", max_files)):
        if not isinstance(value, int) or value <= 0:
            raise EvidenceError(f"--{name} must be a positive integer; got {value!r}")
    if not paths:
        raise EvidenceError(f"no evidence given: {_FIX}")
    stated, used, opened = (None, 0, 0) if job_id else _stated_job(paths, max_bytes, max_total_bytes, max_files)
    ev = _read_paths(paths, stated or job_id, max_bytes, max_total_bytes - used, max_files - opened, stdin_text)[0]
    if stated:
        ev.scoped_to = stated
        ev.not_read.append(
            f"the folders given hold several jobs; the CLI answers name job {stated}, so only its folders and lines "
            f"were read (as with --job-id {stated})"
        )
    return ev


PROBE_SHARE = 4  # learning the stated job reads the given JSON files within a quarter of the bounds


def _stated_job(paths, max_bytes, max_total_bytes, max_files) -> tuple[str | None, int, int]:
    """(job id or None, bytes read, files read): the job the given JSON files state when the given folders hold its
    folder beside other jobs' folders (`jobscope.stated_job`). The folders are only listed; the JSON files are read
    (within a quarter of the bounds) only when the folders hold several jobs."""
    named = [p for p in paths if p != "-" and not given_credential(p)]
    answers = [p for p in named if os.path.isfile(p) and p.lower().endswith(".json")]
    folders = [p for p in named if os.path.isdir(p)]
    if not answers or not folders:  # nothing to learn the job from, or nothing to scope: no listing
        return None, 0, 0
    roots_real = [os.path.realpath(p) for p in folders]
    listed = [f.path for folder in folders for f in walk_tree(folder, roots_real, None).files]
    if len({job for path in listed for job in jobscope.job_folders(path)}) < 2:
        return None, 0, 0
    budget, files = max_total_bytes // PROBE_SHARE, max_files // PROBE_SHARE
    if budget <= 0 or files <= 0:
        return None, 0, 0
    probe, used, opened = _read_paths(answers, None, max_bytes, budget, files, None)
    return jobscope.stated_job(probe, [*listed, *answers]), used, opened


def _read_paths(paths, job_id, max_bytes, max_total_bytes, max_files, stdin_text) -> tuple[Evidence, int, int]:
    """The evidence behind `paths`, and the bytes and files that reading spent."""
    reader = _Reader(max_bytes, max_total_bytes, max_files)
    named = [p for p in paths if p != "-" and not given_credential(p)]
    roots_real = [os.path.realpath(p) for p in named if os.path.isdir(p)]
    explicit, walked, layouts = [], [], []
    for path in paths:
        if path == "-":
            explicit.append(None)
        else:
            _plan_path(reader, path, roots_real, job_id, explicit, walked, layouts)
    reader.ev.job_written = jobscope.job_written_files(explicit, walked, layouts)
    reader.where_jobs_run = jobscope.where_jobs_run(walked)
    reader.read_all(explicit + sorted(walked, key=read_order_key), stdin_text)
    _add_layout_sources(reader, layouts)
    ev = reader.finish()
    ev.named_workspaces = workspaces.named_workspaces(ev.lines, ev.sources, [os.path.realpath(p) for p in named])
    return ev, reader.used, reader.files


def evidence_from_envelopes(items: list[dict], *, job_id: str | None = None, max_bytes: int = 262144) -> Evidence:
    """Evidence from `--collect` results ({"command", "envelope", "error"[, "artifacts_read"]}) or raw envelopes."""
    reader = _Reader(max_bytes, max_bytes * 64, 1000)
    for item in items:
        if not isinstance(item, dict):
            continue
        if "command" not in item and structured.looks_like_envelope(item):
            item = {"command": None, "envelope": item, "error": None}
        command = [str(word) for word in item.get("command") or []]
        source = " ".join(command) or "nvflare CLI envelope"
        envelope, error = item.get("envelope"), item.get("error")
        known = len(reader.ev.sources)
        if isinstance(envelope, dict):
            size = len(json.dumps(envelope, default=str))
            structured.ingest_envelope(reader.ev, envelope, source, bytes_read=size, command=command, collected=True)
        elif error:
            reader.ev.sources.append(Source(source, "cli_envelope", None, "unavailable"))
            reader.ev.lines.append(Line(source, None, None, f"nvflare CLI failed: {str(error)[:300]}"))
            reader.ev.not_read.append(f"{source}: {str(error)[:300]}")
        if isinstance(item.get("reason"), str):  # collect.reason(): fixed words and an error code, no CLI text
            for added in reader.ev.sources[known:]:
                if added.status == "unavailable":
                    added.note = item["reason"][:200]
        for artifact in item.get("artifacts_read") or []:
            reader.read_artifact(artifact)
    if job_id and reader.ev.job_id is None:
        structured.note_job(reader.ev, job_id, None)
    return reader.finish()


def _plan_path(reader, path, roots_real, job_id, explicit, walked, layouts) -> None:
    """Turn one given path into explicit files or a folder walk (no file content is touched)."""
    ev = reader.ev
    if given_credential(path):  # decided by name only, before any stat or open
        reader.skip_credential(path, file_site_label(path, job_id))
        if os.path.islink(path) and not is_credential(name_parts(os.path.normpath(os.path.abspath(path)))):
            ev.not_read.append(f"{path}: {LINKED_CREDENTIAL}")
        return
    if os.path.isdir(path):
        result = walk_tree(path, roots_real, job_id)
        walked.extend(result.files)
        for cred_path, site in result.credentials:
            reader.skip_credential(cred_path, site)
        for link in result.linked_credentials:
            ev.not_read.append(f"{link}: {LINKED_CREDENTIAL}")
        for link in result.escaped:  # a deliberate safety skip, not missing evidence: noted, not a source
            ev.not_read.append(f"{link}: symlink pointing outside the given folders; not followed")
        for hint in result.hints:
            structured.add_hint(ev, *hint)
        ev.not_read.extend(result.notes)
        if result.duplicates:
            ev.not_read.append(
                f"{path}: {result.duplicates} log.json file(s) not read: log.txt beside them holds the same records"
            )
        if result.other_jobs:
            ev.not_read.append(f"{path}: {result.other_jobs} folder(s) of other jobs not read (--job-id {job_id})")
        reader.shared.update(c.path for c in result.files if c.shared)
        reader.job_id = job_id
        if result.layout:
            layouts.append((path, result.layout))
        if result.exported and result.layout != "job_download":
            structured.add_hint(ev, "simulation", f"exported job folder layout (meta.json with app folders) in {path}")
        if not result.files and not result.credentials:
            reader.problems.extend(result.notes[:1] or [f"{path} holds no log, metrics or JSON evidence files"])
        return
    if os.path.isfile(path):
        if "simulate_job" in os.path.normpath(path).split(os.sep):
            structured.add_hint(ev, "simulation", f"SimEnv workspace layout (simulate_job folder) in {path}")
        explicit.append(
            EvidenceFile(
                path=path,
                real=os.path.realpath(path),
                klass=OTHER_TEXT,
                site=file_site_label(path, job_id),
                explicit=True,
            )
        )
        return
    if not os.path.lexists(path):
        status, problem = "missing", "does not exist"
    elif not os.access(path, os.R_OK):
        status, problem = "permission_denied", "is not readable (permission denied)"
    else:
        status, problem = "unavailable", "is neither a regular file nor a folder"
    ev.sources.append(Source(path, "log", None, status))
    reader.problems.append(f"{path} {problem}")


def _add_layout_sources(reader, layouts) -> None:
    for root, kind in layouts:
        inside = [s for s in reader.ev.sources if s.path.startswith(os.path.join(root, ""))]
        partial = any(s.truncated or s.status in ("skipped_limit", "truncated") for s in inside)
        total = sum(s.bytes_read for s in inside)
        reader.ev.sources.append(Source(root, kind, None, "partial" if partial else "complete", total))


class _Reader:
    """Applies the byte/file budgets and turns bytes into Evidence (one place for every input kind)."""

    def __init__(self, max_bytes: int, max_total_bytes: int, max_files: int):
        self.max_bytes, self.max_total, self.max_files = max_bytes, max_total_bytes, max_files
        self.used = 0
        self.files = 0
        self.ev = Evidence()
        self.metric_parts: list[dict] = []
        self.problems: list[str] = []
        self.skipped = {"skipped_limit": 0, "skipped_credential": 0}
        self.unrecognized = 0
        self.truncated = 0
        self.deep: list[_Deep] = []
        self.shared: set[str] = set()  # participant logs of several jobs: scoped to job_id when finishing
        self.job_id: str | None = None
        self.where_jobs_run: set[str] = set()  # walked files where a job runs, NVFLARE's own job metas left out

    # --- budget and skip bookkeeping -------------------------------------------------------------
    def _skip(self, status: str, path: str, site: str | None, kind: str = "log") -> None:
        self.skipped[status] += 1
        if self.skipped[status] <= MAX_LISTED_SKIPPED:
            self.ev.sources.append(Source(path, kind, site, status))

    def skip_credential(self, path: str, site: str | None) -> None:
        self._skip("skipped_credential", path, site)
        if self.skipped["skipped_credential"] == 1:
            self.problems.append(f"{path} is credential material and is never opened")

    def read_all(self, items: list[EvidenceFile | None], stdin_text: str | None) -> None:
        """Read `items` in order (None = stdin) with budget shares planned up front, then scan the middles."""
        stdin = stdin_text.encode("utf-8", errors="replace") if stdin_text and stdin_text.strip() else None
        opened = [item for item in items if walk.is_opened(item, stdin)]
        shares = plan_shares(
            [walk.planned_size(item, stdin) for item in opened],
            max_bytes=self.max_bytes,
            budget=self.max_total,
            max_files=self.max_files,
        )
        share_of = {id(item): share for item, share in zip(opened, shares, strict=True)}
        for item in items:
            if item is None:
                self.read_stdin(stdin, share_of.get(id(item)))
            else:
                self.read_file(item, share_of.get(id(item)))
        self.read_middles()

    def read_file(self, file: EvidenceFile, share: int | None) -> None:
        if not walk.is_opened(file, None):  # empty file found in a walk: listed, not opened
            self.ev.sources.append(Source(file.path, "log", file.site, "complete", size=0))
            return
        if share is None:
            self._skip("skipped_limit", file.path, file.site)
            return
        try:
            chunk = read_head_tail(file.real, share)
        except ReadFailure as failure:
            self.ev.sources.append(Source(file.path, "log", file.site, failure.status))
            self.problems.append(f"{file.path}: {failure.reason}")
            return
        self.files += 1
        self.used += chunk.bytes_read
        if file.exported_meta and not chunk.binary:
            self._exported_job(chunk, os.path.dirname(file.path))
        else:
            self._dispatch(chunk, file.path, file.site, file.klass, explicit=file.explicit, real=file.real)

    def read_stdin(self, data: bytes | None, share: int | None) -> None:
        if data is None:
            self.ev.sources.append(Source(STDIN_PATH, "log", None, "complete", size=0))  # given, read, empty
            self.problems.append("stdin was empty")
            return
        if share is None:
            self._skip("skipped_limit", STDIN_PATH, None)
            return
        chunk = chunk_from_bytes(data, share)
        self.files += 1
        self.used += chunk.bytes_read
        self._dispatch(chunk, STDIN_PATH, None, OTHER_TEXT, explicit=True)

    def read_middles(self) -> None:
        """Scan the unread middles of truncated logs (troubled head/tail first) and insert the windows read."""
        scan_left = self.max_total * middle.SCAN_PER_BUDGET_BYTE
        troubled = [d for d in self.deep if middle.looks_troubled(d.chunk.head) or middle.looks_troubled(d.chunk.tail)]
        for deep in troubled + [d for d in self.deep if d not in troubled]:
            room = min(self.max_bytes, self.max_total - self.used)
            if room <= 0 or scan_left <= 0:
                break
            try:
                windows, scanned = middle.read_middle_windows(
                    deep.real, deep.chunk, scan_limit=scan_left, byte_limit=room
                )
            except ReadFailure:
                continue
            scan_left -= scanned
            deep.chunk.windows = windows
            self.used += sum(len(window.data) for window in windows)
            deep.source.bytes_read, deep.source.regions = deep.chunk.bytes_read, deep.chunk.regions()
        for deep in sorted(self.deep, key=lambda d: d.insert_at, reverse=True):
            parts = chunk_parts(deep.chunk)[1:-1]
            self.ev.lines[deep.insert_at : deep.insert_at] = [
                line
                for number, pairs in enumerate(parts, start=2)
                for line in numbered_to_lines(pairs, deep.source.path, deep.source.site, number, deep.peeler)
            ]

    def read_artifact(self, artifact: dict) -> None:
        """A file `job download` produced, already read (bounded) by collect.py before its temp dir was removed."""
        text = artifact.get("text")
        if not isinstance(text, str):
            return
        chunk = chunk_from_bytes(text.encode("utf-8", errors="replace"), self.max_bytes)
        chunk.truncated = chunk.truncated or bool(artifact.get("truncated"))
        name = str(artifact.get("name") or "artifact")
        klass = METRICS if name in ("metrics_summary", "round_metrics") else OTHER_TEXT
        self._dispatch(
            chunk,
            str(artifact.get("path") or name),
            artifact.get("site"),
            klass,
            explicit=True,
            log_kind="job_download",
        )

    # --- content dispatch -------------------------------------------------------------------------
    def _dispatch(
        self,
        chunk: Chunk,
        path: str,
        site,
        klass: int,
        *,
        explicit: bool,
        log_kind: str = "log",
        real: str | None = None,
    ) -> None:
        if chunk.binary:
            self._binary(path, site, chunk)
            return
        parts = chunk_parts(chunk)
        pairs = [pair for part in parts for pair in part]
        low = path.lower()
        if low.endswith(".jsonl") and self._jsonl(pairs, path, site, chunk):
            return
        peeler = prefixes.detect([text for _, text in pairs])
        unwrapped = [(n, peeler.peel(text)[0]) for n, text in pairs] if peeler.active else pairs
        first = next((text.lstrip() for _, text in unwrapped if text.strip()), "")
        if (
            first.startswith("{")
            and (klass in (METRICS, STRUCTURED) or explicit)
            and not jsontext.is_json_lines(unwrapped)
        ):
            document = "\n".join(text for _, text in unwrapped) if peeler.active else None
            if self._json(chunk, pairs, path, site, explicit, document):
                return
        self._wrapped(peeler, path)
        self._log(parts, path, site, chunk, log_kind, real, peeler)

    def _wrapped(self, peeler: prefixes.Peeler, path: str) -> None:
        """Docker, Kubernetes and journal wrappers say the evidence comes from a deployed system."""
        kinds = sorted(set(peeler.kinds) & prefixes.PRODUCTION_KINDS)
        if kinds:
            structured.add_hint(self.ev, "production", f"deployment line prefixes ({', '.join(kinds)}) in {path}")

    def _exported_job(self, chunk: Chunk, folder: str) -> None:
        """An exported job folder: its meta.json was read (bounded); the structure check adds evidence lines."""
        text = None if chunk.truncated else (chunk.head + chunk.tail).decode("utf-8", errors="replace")
        problems = job_folder.check_exported(folder, text) if text is not None else []
        if text is None:
            self.ev.not_read.append(
                f"{folder}: meta.json larger than --max-bytes; the job folder structure was not checked"
            )
        self.ev.lines.extend(Line(folder, None, None, problem) for problem in problems)
        status = "truncated" if chunk.truncated else "complete"
        self.ev.sources.append(Source(folder, "job_download", None, status, chunk.bytes_read, chunk.truncated))

    def _binary(self, path, site, chunk) -> None:
        self.ev.sources.append(Source(path, "log", site, "skipped_binary", chunk.bytes_read))
        self.problems.append(f"{path} is a binary file")

    def _log(self, parts, path, site, chunk, kind="log", real=None, peeler=None) -> None:
        head = numbered_to_lines(parts[0], path, site, peeler=peeler)
        self.ev.lines.extend(head)
        tail = numbered_to_lines(parts[-1], path, site, 1, peeler) if len(parts) > 1 else []
        status = "truncated" if chunk.truncated else "complete"
        source = Source(
            path,
            kind,
            site,
            status,
            chunk.bytes_read,
            chunk.truncated,
            chunk.size,
            chunk.regions() if chunk.truncated else [],
        )
        self.ev.sources.append(source)
        if real is not None and chunk.middle[1] > chunk.middle[0]:
            self.deep.append(_Deep(real, chunk, source, len(self.ev.lines), peeler))
        self.ev.lines.extend(tail)
        self.truncated += chunk.truncated
        if not head and not tail:
            self.problems.append(f"{path} is empty")

    def _jsonl(self, pairs, path, site, chunk) -> bool:
        part = metrics_files.rounds_part([text for _, text in pairs], path)
        if part is None:
            return False
        self.metric_parts.append(part)
        status = "truncated" if chunk.truncated else "complete"
        self.ev.sources.append(Source(path, "round_metrics", site, status, chunk.bytes_read, chunk.truncated))
        return True

    def _json(self, chunk, pairs, path, site, explicit, document: str | None = None) -> bool:
        """A whole JSON document (`document`: its text with line wrappers peeled, when it had them)."""
        text = document if document is not None else (chunk.head + chunk.tail).decode("utf-8", errors="replace")
        obj = None if chunk.truncated else jsontext.parse(text)
        if obj is None:
            if path.lower().endswith(".json"):
                why = "larger than --max-bytes" if chunk.truncated else "not valid JSON"
                self.ev.not_read.append(f"{path}: {why}; read as plain text")
            return False
        size = chunk.bytes_read
        if structured.looks_like_envelope(obj):
            structured.ingest_envelope(self.ev, obj, path, bytes_read=size)
        elif structured.looks_like_bundle(obj):
            structured.ingest_bundle(self.ev, obj, path, bytes_read=size)
        elif (part := metrics_files.summary_part(obj, path)) is not None:
            self.metric_parts.append(part)
            self.ev.sources.append(Source(path, "metrics_summary", site, "complete", size))
        elif structured.looks_like_job_meta(obj):
            if path in self.where_jobs_run:
                self.ev.job_written.add(path)  # code where the job runs may have written it: not NVFLARE's job meta
            structured.note_job(self.ev, obj.get("job_id"), obj.get("status"), path)
            self.ev.sources.append(Source(path, "log", site, "complete", size))
            structured.flatten_lines(self.ev, obj, path, "job meta")
        elif explicit:
            return False  # a user-named JSON file we do not recognise: still read its text
        else:
            self.unrecognized += 1
        return True

    # --- result -----------------------------------------------------------------------------------
    def finish(self) -> Evidence:
        ev = self.ev
        ev.metrics = metrics_files.combine(self.metric_parts)
        if self.job_id and self.shared:
            ev.lines, dropped = jobscope.scope_shared_sources(ev.lines, self.shared, self.job_id)
            if dropped:
                ev.not_read.append(
                    f"{dropped} line(s) of other jobs or of the system left out of logs every job "
                    f"writes into (site consoles, participant logs): only job {self.job_id} counts"
                )
        if self.truncated:
            ev.not_read.append(
                f"{self.truncated} file(s) not read whole (--max-bytes {self.max_bytes}, --max-total-bytes "
                f"{self.max_total}): the head, the tail and windows around errors in the middle were "
                "read (see the regions of truncated sources)"
            )
        limit_skips = self.skipped["skipped_limit"]
        if limit_skips:
            ev.not_read.append(
                f"{limit_skips} file(s) not read: the limit of {self.max_files} files / {self.max_total} bytes was "
                "reached; raise --max-files / --max-total-bytes or point at the job's own folder"
            )
        for status, count in self.skipped.items():
            if count > MAX_LISTED_SKIPPED:
                ev.not_read.append(f"{count - MAX_LISTED_SKIPPED} more {status} source(s) not listed individually")
        if self.skipped["skipped_credential"]:
            ev.not_read.append(f"{self.skipped['skipped_credential']} credential file(s) skipped without opening them")
        if self.unrecognized:
            ev.not_read.append(f"{self.unrecognized} JSON file(s) read but not recognised as evidence (configs, stats)")
        if len(ev.not_read) > MAX_NOTES:
            hidden = len(ev.not_read) - MAX_NOTES + 1
            ev.not_read[MAX_NOTES - 1 :] = [f"{hidden} more notes about unread evidence not shown"]
        if not (ev.lines or ev.metrics or ev.site_status or ev.job_status):
            reasons = "; ".join(self.problems[:3]) or "nothing readable was found"
            raise EvidenceError(f"no evidence could be read ({reasons}): {_FIX}")
        return ev


@dataclass
class _Deep:
    """A truncated log whose unread middle may be scanned: where its window lines go in Evidence.lines."""

    real: str
    chunk: Chunk
    source: Source
    insert_at: int
    peeler: prefixes.Peeler | None = None  # the wrappers of its head and tail, peeled from its windows too


__all__ = ["EvidenceError", "collect_evidence", "evidence_from_envelopes"]
