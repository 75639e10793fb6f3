"""Plain data passed between the evidence readers (I/O shell) and the pure matcher."""

from __future__ import annotations

from dataclasses import dataclass, field

SOURCE_KINDS = (
    "log",
    "json_bundle",
    "cli_envelope",
    "metrics_summary",
    "round_metrics",
    "sim_workspace",
    "job_download",
    "inspect_source",
)
SOURCE_STATUSES = (
    "complete",
    "partial",
    "truncated",
    "missing",
    "permission_denied",
    "unavailable",
    "not_streamed",
    "skipped_credential",
    "skipped_binary",
    "skipped_limit",
)
# Site log availability reported *by the evidence itself* (bundles, CLI envelopes).
SITE_STATUSES = ("ok", "truncated", "missing", "permission_denied", "unavailable", "not_streamed")


@dataclass
class Source:
    """One entry of the report's `evidence_sources`. `size` is the file size when known; `regions` lists the
    [start, end) byte ranges read from a file that was not read whole (head, middle windows, tail)."""

    path: str
    kind: str
    site: str | None
    status: str
    bytes_read: int = 0
    truncated: bool = False
    size: int | None = None
    regions: list[tuple[int, int]] = field(default_factory=list)
    # the error a CLI result answered: its error code, or with --collect the collector's reason (not a report field)
    note: str | None = None

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "site": self.site,
            "status": self.status,
            "bytes_read": self.bytes_read,
            "truncated": self.truncated,
            "size": self.size,
            "regions": [list(region) for region in self.regions],
        }


@dataclass
class Line:
    """One decoded evidence line. `line` is 1-based, or None for lines from the tail or a middle window of a
    truncated file. `part` numbers the regions read from one source (head 0, then windows and tail): lines of
    different parts are not adjacent in the file."""

    source: str
    site: str | None
    line: int | None
    text: str
    part: int = 0


@dataclass
class Evidence:
    """Everything the readers gathered; the matcher needs nothing else."""

    sources: list[Source] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    site_status: dict[str, str] = field(default_factory=dict)
    job_id: str | None = None
    job_status: str | None = None  # the first status stated (of any job); the report's is read/sites.job_identity's
    status_of: dict[str, str] = field(default_factory=dict)  # job id -> the first status stated with that id
    status_sources: set[str] = field(default_factory=set)  # structured answers that stated a job status (meta, list)
    listed_status: dict[str, str] = field(default_factory=dict)  # job id -> status, from a `job list` answer
    other_job_ids: list[str] = field(default_factory=list)  # ids the evidence states beside a different `job_id`
    job_id_from: list[str] = field(default_factory=list)  # the sources that stated `job_id`
    no_job_answers: set[str] = field(default_factory=set)  # POC commands refused while no POC system was up
    logs_answered: set[str] = field(default_factory=set)  # sites a `job logs` answer covered (LOG_NOT_FOUND too)
    # (follow-up template, job id) whose answer the evidence holds: `job meta`, `job logs --site all` (read/structured)
    answered: set[tuple[str, str]] = field(default_factory=set)
    metrics: dict | None = None
    mode_hints: list[tuple[str, str]] = field(default_factory=list)
    not_read: list[str] = field(default_factory=list)
    job_written: set[str] = field(default_factory=set)  # files code may have written where the job runs: state no job
    scoped_to: str | None = None  # the job the CLI answers name, when only its part of several jobs' folders was read
    # (line index, path): SimEnv workspaces site-less lines name that exist here and were not given (read/workspaces.py)
    named_workspaces: list[tuple[int, str]] = field(default_factory=list)
