"""The whole diagnosis: Evidence (read/) + Catalog -> report dict (schema nvflare.diagnose.report.v1). Pure.

Usage: `report = diagnose(evidence, catalog, mode="auto", job_id=None, job_status=None)`.
The match stage analyses (match/matcher.analyse, which runs the untrusted scan first), then the report stage derives
what to collect next (report/advice.py) and assembles the report (report/assemble.py). The one module that
imports both stages.
"""

from __future__ import annotations

from .match.catalog import Catalog
from .match.matcher import analyse
from .model import Evidence
from .report import advice, assemble


def diagnose(
    evidence: Evidence,
    catalog: Catalog,
    *,
    mode: str = "auto",
    job_id: str | None = None,
    job_status: str | None = None,
    script: str | None = None,
    kit: str | None = None,
    poc_root: str | None = None,
) -> dict:
    """The full report dict for `evidence` (deterministic for the same input). `script` is the command that runs
    diagnose_job.py here and `kit` the startup-kit option --collect used (both go into follow-up commands)."""
    an = analyse(
        evidence, catalog, mode=mode, job_id=job_id, job_status=job_status, script=script, kit=kit, poc_root=poc_root
    )
    if an.confidence == "high" and advice.needs_evidence(an):  # never sure while naming evidence it still needs
        an.confidence = "medium"
    missing, commands = advice.missing_and_follow_ups(an)
    return assemble.assemble(an, missing, commands, nothing_missing=advice.nothing_missing(an))
