"""External runs (poc/prod): what the ledger row cannot hold, one JSON file per run name.

`.nvflare/autofl/external/<name>.json` (`nvflare.autofl.external.v1`) is written by `record` when it records an
external baseline (the fixed budget as verified from the download, the job id, NVFLARE's job status and duration:
the report reads the baseline's budget here, as it reads a candidate's in its manifest) and by `submit`, which
keeps its progress in the same file (`submission`: the job id once NVFLARE returned it, before any wait, so a
repeated submit never submits twice; with a frozen evaluator `awaiting_evaluation` there, and the evaluation job's
own progress in `evaluation_submission`). Usage::

    document = read(paths, "baseline")              # None when the run has no record
    write(paths, "baseline", dict(document or new(paths, "baseline"), budget=verdict))
"""

from __future__ import annotations

from ...common import atomic, bounded
from ..outcome import CampaignError
from .manifests import check_id

SCHEMA = "nvflare.autofl.external.v1"
FOLDER = "external"


def path(paths, name: str):
    return paths.meta / FOLDER / f"{check_id(name, 'run name')}.json"


def new(name: str) -> dict:
    return {"schema_version": SCHEMA, "name": name}


def read(paths, name: str) -> dict | None:
    """The record of external run `name`, or None; a damaged one stops the action (exit 2 naming it)."""
    where = path(paths, name)
    if where.is_symlink():
        raise CampaignError(f"{where} is a symlink; remove it (the runner writes this file itself)")
    try:
        document = bounded.read_json(where)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{where} {error}; remove it and record or submit the run again") from None
    if document is not None and document.get("schema_version") != SCHEMA:
        raise CampaignError(f"{where} is not an external-run record ({SCHEMA}); remove it and submit the run again")
    return document


def write(paths, name: str, document: dict) -> None:
    atomic.write_json(path(paths, name), dict(document, schema_version=SCHEMA, name=name))
