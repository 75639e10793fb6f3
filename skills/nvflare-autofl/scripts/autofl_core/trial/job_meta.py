"""The metadata NVFLARE keeps of a submitted job: its id, final status and duration (poc/prod runs).

`nvflare job download` writes the job's `meta.json` at the top of the downloaded folder; `job wait` and `job meta`
print the same fields. The duration is Python's `str(timedelta)` (`0:00:16.790725`, `1 day, 2:03:04`) or `N/A`
while the job has not run. Pure apart from `read_job_meta` (one bounded read, never through a symlink). Usage::

    meta = read_job_meta(Path("downloads") / job_id)     # JobMeta(job_id, status, duration_seconds) or None
    seconds = parse_duration("0:00:16.790725")            # 16.790725; None for "N/A" or anything else
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..common import bounded

META_FILE = "meta.json"
MAX_META_BYTES = 1024 * 1024
COMPLETED = "FINISHED:COMPLETED"
DURATION_RE = re.compile(r"(?:(\d{1,6}) days?, )?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d{1,6})?)")


@dataclass(frozen=True)
class JobMeta:
    """What the runner records of a finished job: its id, NVFLARE's status word and its duration in seconds."""

    job_id: str | None
    status: str | None
    duration_seconds: float | None


def parse_duration(text) -> float | None:
    """Seconds of NVFLARE's duration text (`str(timedelta)`); None when it is not one (`N/A`, missing)."""
    if bounded.is_number(text):
        return float(text) if text >= 0 else None
    match = DURATION_RE.fullmatch(str(text or "").strip())
    if match is None:
        return None
    days, hours, minutes, seconds = match.groups()
    return round(int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds), 3)


def from_document(document) -> JobMeta | None:
    """The JobMeta of a job's metadata object (`meta.json`, or `job_meta` of `job wait`); None for anything else."""
    if not isinstance(document, dict):
        return None
    job_id, status = document.get("job_id"), document.get("status")
    return JobMeta(
        job_id=job_id if isinstance(job_id, str) else None,
        status=status if isinstance(status, str) else None,
        duration_seconds=parse_duration(document.get("duration")),
    )


def read_job_meta(folder: str | os.PathLike) -> JobMeta | None:
    """The metadata of the downloaded job in `folder` (its top-level meta.json); None when there is none to read."""
    path = Path(folder) / META_FILE
    if path.is_symlink():
        return None
    try:
        return from_document(bounded.read_json(path, MAX_META_BYTES))
    except bounded.BoundedReadError:
        return None
