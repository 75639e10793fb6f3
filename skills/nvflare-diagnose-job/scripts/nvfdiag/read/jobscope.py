"""Keep only one job's lines of a log several jobs write into (POC/production participant logs). Pure.

A POC or production participant folder holds one folder per job (named by the job id) and logs shared by every
job that ran there: `poc_console.log` (the site console: where a failing client's traceback goes) and the
participant's own `log.txt` / `error_log.txt`. With `--job-id`, the walk skips the other jobs' folders and
marks these shared logs; `scope(lines, job_id)` then keeps, per source, the log records that name the job
(its id appears in `run=...`, a path or a message) and the lines that continue them (tracebacks, multi-line
messages), and drops records of other jobs and of the system. Usage: `kept = scope(lines_of_one_source, job_id)`.
Without `--job-id`, `stated_job(evidence, paths)` names the job the evidence's CLI answers or job meta state (from outside
every job's folder) when the folders given hold that job's folder beside other jobs' folders: the evidence is then
read again as with its id. `job_folders(path)` -> the job ids of the folders a path lies in; `job_written_files(...)`
-> the files in a SimEnv workspace, where the job runs (their JSON states no job id or status);
`nvflare_meta(path)` -> the file is NVFLARE's own job meta of a job's folder (`<job id>/meta.json`);
`where_jobs_run(walked)` -> the walked files in a participant's workspace or a job's folder, NVFLARE's own job metas
left out (a job-meta-shaped file among them states no job).
"""

from __future__ import annotations

import os
import re

from ..model import Evidence, Line
from ..pylines import START_TEXT

RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")  # a new log record (timestamp first)
JOB_ID_LIKE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
MAX_TRACEBACK_LINES = 400  # as match/tracebacks.MAX_BLOCK_LINES


def scope(lines: list[Line], job_id: str) -> list[Line]:
    """The lines of `job_id`: records naming it, and the continuation lines that follow such a record. A traceback
    begun in the job's lines stays the job's up to its exception line (at most MAX_TRACEBACK_LINES): another job's
    or the system's records written into it (two processes share a console) are dropped without ending it."""
    kept: list[Line] = []
    ours = False
    traceback_from: int | None = None  # where the job's open traceback began
    part = None
    for number, line in enumerate(lines):
        if line.part != part:  # regions of a file are not adjacent: start each one without context
            part, ours, traceback_from = line.part, False, None
        text = line.text
        other = job_id not in text and bool(RECORD_START.match(text) or JOB_ID_LIKE.search(text))
        if traceback_from is not None and number - traceback_from > MAX_TRACEBACK_LINES:
            traceback_from = None
        if traceback_from is not None:
            if other:
                continue  # another job's record inside the job's traceback
            kept.append(line)
            if text.strip() and not text[:1].isspace() and START_TEXT not in text:
                traceback_from = None  # the exception line ends it
            continue
        if job_id in text:
            ours = True
        elif other:
            ours = False  # a record of another job or of the system
        if ours:
            kept.append(line)
            if START_TEXT in text:
                traceback_from = number
    return kept


def scope_shared_sources(lines: list[Line], shared: set[str], job_id: str) -> tuple[list[Line], int]:
    """`lines` with every shared source scoped to `job_id`; also the number of lines dropped."""
    if not shared:
        return lines, 0
    by_source: dict[str, list[Line]] = {}
    for line in lines:
        if line.source in shared:
            by_source.setdefault(line.source, []).append(line)
    keep = {id(line) for source_lines in by_source.values() for line in scope(source_lines, job_id)}
    result = [line for line in lines if line.source not in shared or id(line) in keep]
    return result, len(lines) - len(result)


def job_folders(path: str) -> tuple[str, ...]:
    """The job ids of the folders `path` lies in (folders named by a UUID, as NVFLARE names a job's folder)."""
    return tuple(part for part in re.split(r"[\\/]", path)[:-1] if JOB_ID_LIKE.fullmatch(part))


def stated_job(ev: Evidence, paths: list[str]) -> str | None:
    """The one job id `ev` states (CLI answers, job meta, bundle; a UUID, no second id stated) when one of `paths`
    lies in that job's folder and another in another job's folder; else None (nothing to tell apart). Only a
    statement from outside every job's folder counts: a file a job wrote into its folder does not choose the job."""
    job = ev.job_id
    if not job or ev.other_job_ids or not JOB_ID_LIKE.fullmatch(job):
        return None
    if all(job_folders(source) for source in ev.job_id_from):
        return None
    folders = {part for path in paths for part in job_folders(path)}
    return job if job in folders and len(folders) > 1 else None


def job_written_files(explicit, walked, layouts) -> set[str]:
    """The files that lie where the job itself runs in a SimEnv workspace: found in a given folder with that layout,
    or named with a `simulate_job` folder in their path. The simulator runs every site's code there, and NVFLARE
    writes no JSON that states a job id or status there (its `simulate_job/meta.json` holds neither; the job is
    `simulate_job`), so such a JSON file is read as text but states no job (in a job's folder: `job_folders`)."""
    roots = [os.path.join(root, "") for root, kind in layouts if kind == "sim_workspace"]
    found = {f.path for f in walked if any(f.path.startswith(root) for root in roots)}
    named = {f.path for f in explicit if f and "simulate_job" in os.path.normpath(f.path).split(os.sep)}
    return found | named


def nvflare_meta(path: str) -> bool:
    """True for `meta.json` directly in a folder named by a job id: where NVFLARE writes a job's meta (a site's run
    folder: app_deployer; a job download)."""
    parts = re.split(r"[\\/]", path)
    return len(parts) >= 2 and parts[-1] == "meta.json" and bool(JOB_ID_LIKE.fullmatch(parts[-2]))


def where_jobs_run(walked) -> set[str]:
    """The walked files (walk.EvidenceFile: path, root) that lie, below their given folder or in it, in a folder
    named by a job id or in a participant's workspace: a folder the walk shows holding `poc_console.log`, a file
    under `local/` or `startup/`, or a folder named by a job id. NVFLARE starts a site's processes, and so the job's
    code, in the site's workspace, and runs the job in its run folder: a relative path the job writes lands there,
    so a job-meta-shaped file there other than NVFLARE's own (`nvflare_meta`, left out of the answer) states no job."""
    placed = []
    for file in walked:
        if file.root:
            root = os.path.normpath(file.root)
            inside = file.path[len(file.root) :].lstrip(os.sep) if file.path.startswith(file.root) else None
            relative = inside if inside else os.path.relpath(file.path, root)
            placed.append((file.path, [os.path.basename(root), *relative.split(os.sep)]))
    participants: set[str] = set()  # folders below the given one, as "/"-joined names from it
    for _, parts in placed:
        last = len(parts) - 1
        for n in range(1, last + 1):
            name = parts[n]
            if (n < last and (name in ("local", "startup") or JOB_ID_LIKE.fullmatch(name))) or (
                n == last and name == "poc_console.log"
            ):
                participants.add("/".join(parts[:n]))
    found = set()
    for path, parts in placed:
        folder = ""
        for n, name in enumerate(parts[:-1]):
            folder = f"{folder}/{name}" if n else name
            if folder in participants or JOB_ID_LIKE.fullmatch(name):
                found.add(path)
                break
    return {path for path in found if not nvflare_meta(path)}
