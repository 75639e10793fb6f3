"""campaign.json (`nvflare.autofl.campaign.v1`): settings, the best configuration and the audit trail.

The best fields (`best_candidate`, `best_score`, `best_source_sha256`, `best_run_args`) are re-derived from
the ledger, the best snapshot and the best candidate's manifest at the end of every action (`with_best`),
so they can never disagree with the evidence for long. Usage::

    meta = read(paths)                      # CampaignError when missing, damaged or not valid per its schema
    write(paths, meta)                      # atomic
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...campaign.ledger import LedgerRow
from ...common import atomic, bounded, schema_check
from ..outcome import CampaignError

SCHEMA = "nvflare.autofl.campaign.v1"
CONTRACT_VERSION = 1
SCHEMA_COPY = Path(__file__).resolve().parent / "campaign.v1.schema.json"  # rendered from shared/ by make sync


def new_metadata(paths, settings: dict, *, budget_sha256: str, now: str) -> dict:
    return {
        "schema_version": SCHEMA,
        "created_at": now,
        "updated_at": now,
        "job": str(paths.job),
        "workspace_root": str(paths.workspace),
        "settings": settings,
        "best_candidate": None,
        "best_score": None,
        "best_source_sha256": None,
        "best_run_args": [],
        "fixed_budget_sha256": budget_sha256,
        "metric_direction_contract_version": CONTRACT_VERSION,
        "cap_changes": [],
        "setting_changes": [],
    }


def exists(paths) -> bool:
    return paths.campaign.exists()


def read(paths) -> dict:
    try:
        meta = bounded.read_json(paths.campaign)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{paths.campaign} {error}; restore it from a backup") from None
    if meta is None:
        raise CampaignError(f"no campaign in {paths.workspace}: run initialize first")
    if meta.get("schema_version") != SCHEMA or not isinstance(meta.get("settings"), dict):
        raise CampaignError(f"{paths.campaign} is not a {SCHEMA} document; restore it from a backup")
    for key, default in (("cap_changes", []), ("setting_changes", []), ("best_run_args", [])):
        meta.setdefault(key, default)
    problems = schema_check.problems(meta, schema())
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CampaignError(
            f"{paths.campaign} is damaged: {problems[0]}{more}; restore it from a backup (nothing was changed)"
        )
    return meta


@lru_cache(maxsize=1)
def schema() -> dict:
    """The campaign.json schema the skill ships (a copy of shared/schemas/campaign.v1.schema.json)."""
    try:
        document = bounded.read_json(SCHEMA_COPY)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{SCHEMA_COPY} {error}; reinstall the skill") from None
    if document is None:
        raise CampaignError(f"{SCHEMA_COPY} is missing; reinstall the skill")
    return document


def write(paths, meta: dict) -> None:
    atomic.write_json(paths.campaign, meta)


def with_best(meta: dict, *, best_row: LedgerRow | None, digest: str | None, run_args: list[str], now: str) -> dict:
    """`meta` with the best fields set; `updated_at` moves only when something changed."""
    best = {
        "best_candidate": best_row.name if best_row else None,
        "best_score": best_row.score if best_row else None,
        "best_source_sha256": digest,
        "best_run_args": list(run_args),
    }
    if all(meta.get(key) == value for key, value in best.items()):
        return meta
    return {**meta, **best, "updated_at": now}
