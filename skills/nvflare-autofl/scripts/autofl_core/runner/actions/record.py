"""record: a literature event, an external baseline, or the external result of a candidate that is ready for
external execution (poc/prod), finalized exactly like a simulated one.

- `--literature --hypothesis "<sources and decision>" [--family F] [--name N]` -> a `literature` row with a new
  id `lit-0001`, `lit-0002`, ...
- `--baseline (--score X | --artifacts DIR) [--job-id ID]` -> only before any scored baseline or attempt, and never
  where the frozen evaluator measures the score (simulation with `--evaluator`: initialize retries the baseline).
- `[--manifest M] (--score X | --artifacts DIR | --failure-reason TEXT) [--job-id ID]` -> keep/discard/crash.

Several candidates may be ready at once (`runner/ready.py`); record takes them in any order (with several,
`--manifest` names the one) and decides each against the best at the moment it is recorded: in poc/prod the
order of the records is the order of the decisions. A keep installs the candidate's own source as evaluated
(one prepared from an older best replaces the sibling kept in between, as in a batch); a discard or crash
restores the best.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from ...campaign import ledger
from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from ...trial import job_meta, metrics, what_ran
from .. import finalize, frozen_eval, frozen_submit, noise, ready, what_happened
from ..checks import one_manifest, pick_pending
from ..outcome import ActionResult, CampaignError
from ..store import contract, external, manifests

LIT_RE = re.compile(r"lit-(\d{4,})")
JOB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def run(campaign, options, now: str) -> ActionResult:
    if options.literature:
        return _literature(campaign, options)
    if options.baseline:
        return _baseline(campaign, options)
    return _candidate(campaign, options, now)


def next_event_id(rows: list[LedgerRow]) -> str:
    numbers = [int(m.group(1)) for row in rows for m in [LIT_RE.fullmatch(row.literature_event_id or "")] if m]
    return f"lit-{max(numbers, default=0) + 1:04d}"


def _literature(campaign, options) -> ActionResult:
    hypothesis = (options.hypothesis or "").strip()
    if not hypothesis:
        raise CampaignError("record --literature needs --hypothesis with the sources read and the decision taken")
    event = next_event_id(campaign.rows())
    name = options.name or event
    if name in {row.name for row in campaign.rows()}:
        raise CampaignError(f"--name {name} is already used in the ledger; pick a new name")
    family = (options.family or "").strip()
    ledger.append_row(
        campaign.paths.results,
        v.literature_row(name=name, diff_summary=hypothesis, algorithm_family=family, literature_event_id=event),
    )
    document = {
        "id": event,
        "name": name,
        "hypothesis": ledger.sanitize_text(hypothesis),
        "family": family,
    }
    return ActionResult(extras={"literature_event_id": event, "literature_event": document}, ledger_changed=True)


def _baseline(campaign, options) -> ActionResult:
    rows = campaign.rows()
    if any(r.status == v.BASELINE and r.score is not None for r in rows) or any(r.status in v.ATTEMPTS for r in rows):
        raise CampaignError("record --baseline is only allowed before any scored baseline or candidate attempt")
    if frozen_eval.enabled(campaign) and campaign.settings.env == "sim":
        raise CampaignError(
            "in simulation the frozen evaluator measures the baseline, so a recorded one would be a number it never "
            "measured; fix the job and run initialize again (it retries the baseline)"
        )
    _refuse_unmeasured(campaign, options, "--baseline ")
    if options.failure_reason:
        raise CampaignError(
            "an external baseline needs a score: pass --score or --artifacts (fix a failed baseline run "
            "and submit it again)"
        )
    job_id = _job_id(options.job_id)
    found = _external_score(campaign, options)
    measured = _measured(options)
    if (found["budget"] or {}).get("status") == what_ran.VIOLATED:
        raise CampaignError(
            f"the external baseline's artifacts show a different budget ({found['budget']['reason']}); run the "
            "baseline with the fixed budget and record it again"
        )
    taken = any(r.name == v.BASELINE_NAME for r in rows)
    name = f"baseline_external_{len(rows)}" if taken else v.BASELINE_NAME
    # the evidence the ledger row cannot hold, as a candidate's manifest holds it (written first: a row without it
    # would read as unverified; a record without its row is never read)
    evidence = external.read(campaign.paths, name) or external.new(name)
    external.write(
        campaign.paths,
        name,
        dict(evidence, job_id=job_id, budget=found["budget"], job_status=found.get("job_status"), recorded=True),
    )
    ledger.append_row(
        campaign.paths.results,
        v.baseline_row(
            name=name,
            score=found["score"],
            run_command=f"external submission{f' (job id {job_id})' if job_id else ''}",
            artifacts=found["artifacts"],
            runtime_seconds=found.get("runtime_seconds"),
            metric_name=found["metric_name"],
            metric_source=found["metric_source"],
            metric_artifact=found["metric_artifact"],
        ),
    )
    if measured is not None:
        frozen_submit.finish_record(campaign, name, found.get("reported_score"), None)
    extras = {"job_id": job_id}
    if measured is not None:
        extras.update(reported_score=found.get("reported_score"), evaluation=measured["evaluation"])
    return ActionResult(extras=extras, ledger_changed=True)


def _candidate(campaign, options, now: str) -> ActionResult:
    paths = campaign.paths
    manifest = pick_pending(campaign, one_manifest(options, "record"), want=v.READY)
    draft_files = ready.recordable(campaign, manifest)
    job_id = _job_id(options.job_id)
    _check_one_source(options)
    if options.failure_reason is None:
        _refuse_unmeasured(campaign, options, "")
    measured = _measured(options)
    found, reason = _found(campaign, options)
    status = (
        v.CRASH
        if found["score"] is None
        else finalize.decide(
            v.OUTCOME_SUCCESS,
            found["score"],
            best_score=v.bar_to_beat(campaign.rows(), campaign.settings.mode),  # the best's mean with replicates
            mode=campaign.settings.mode,
            margin=noise.keep_margin(campaign),
        )
    )
    scored = _measured_fields(campaign, found, measured, manifest.candidate_id) if measured else {}
    model = scored or frozen_eval.external_model(campaign, options.artifacts)  # measured, else unmeasured
    artifacts = manifest.artifacts.replace(run=found["artifacts"])
    if job_id:
        artifacts = artifacts.replace(job_id=job_id)
    manifest = manifest.replace(
        artifacts=artifacts,
        result=manifests.ManifestResult.of(
            score=found["score"],
            metric_name=found["metric_name"],
            metric_source=found["metric_source"],
            metric_artifact=found["metric_artifact"],
            runtime_seconds=found.get("runtime_seconds"),
            run_command=f"external submission{f' (job id {job_id})' if job_id else ''}",
            failure_reason=reason,
            budget=found.get("budget"),
            **model,
        ),
    )
    files = draft_files if status == v.KEEP else None  # a keep installs the candidate's own source
    compared = what_happened.compared_with(campaign)
    finalize.finalize(campaign, manifest, status=status, draft_files=files, now=now)
    return ActionResult(
        extras={
            "candidate_manifest": str(paths.manifest(manifest.candidate_id)),
            "job_id": job_id,
            "candidate_status": status,
            **what_happened.outcome(campaign, compared, score=found["score"], name=manifest.candidate_id),
            **model,
        },
        ledger_changed=True,
    )


def _check_one_source(options) -> None:
    """A candidate's result comes from one of --score, --artifacts or --failure-reason (artifacts may name a crash)."""
    given = {
        flag
        for flag, value in (
            ("--score", options.score),
            ("--artifacts", options.artifacts),
            ("--failure-reason", options.failure_reason),
        )
        if value is not None
    }
    if len(given) != 1 and given != {"--artifacts", "--failure-reason"}:
        raise CampaignError("record needs exactly one of --score, --artifacts or --failure-reason (crash)")


def _found(campaign, options) -> tuple[dict, str | None]:
    """(what the external run gave: {score, metric_*, artifacts, ...}, its failure reason or None); a run that
    broke its budget has no score, whatever it scored."""
    if options.failure_reason is not None:
        found = {
            "score": None,
            "metric_name": None,
            "metric_source": None,
            "metric_artifact": None,
            "artifacts": _artifacts_rel(campaign, options.artifacts) if options.artifacts else None,
            **_job_facts(options.artifacts),
        }
        reason = " ".join(options.failure_reason.split()) or "external run failed"
    else:
        found, reason = _external_score(campaign, options), None
    if (found.get("budget") or {}).get("status") == what_ran.VIOLATED:
        return dict(found, score=None), found["budget"]["reason"]
    return found, reason


def _external_score(campaign, options) -> dict:
    """{score, metric_*, artifacts} from --score or from the metric found in --artifacts."""
    if options.score is not None and options.artifacts is not None:
        raise CampaignError("pass --score or --artifacts, not both")
    if options.score is not None:
        if not math.isfinite(options.score):
            raise CampaignError(f"--score must be finite, got {options.score}")
        return {
            "score": options.score,
            "metric_name": campaign.settings.metric,
            "metric_source": "external:--score",
            "metric_artifact": None,
            "artifacts": None,
            "budget": _budget(campaign, what_ran.WhatRan()),
        }
    if options.artifacts is None:
        raise CampaignError("pass --score X or --artifacts DIR (a downloaded job or result folder)")
    folder = Path(os.path.abspath(options.artifacts))
    if not folder.is_dir():
        raise CampaignError(f"--artifacts {options.artifacts} is not a folder; pass the downloaded job's folder")
    order = list((campaign.config.get("objective") or {}).get("metric_extraction_order") or [campaign.settings.metric])
    found = metrics.extract_metric(folder, order)
    measured = _measured(options)
    if measured is not None:  # the frozen evaluator's score; the job's own report is kept beside it
        return {
            "score": measured["score"],
            "reported_score": found.value,
            "metric_name": campaign.settings.metric,
            "metric_source": frozen_eval.MEASURED_SOURCE,
            "metric_artifact": measured["metric_artifact"],
            "artifacts": _artifacts_rel(campaign, options.artifacts),
            "budget": _budget(campaign, what_ran.read_what_ran(folder)),
            **_job_facts(folder),
        }
    if found.value is None:
        raise CampaignError(f"no score in --artifacts {options.artifacts}: {found.reason}")
    return {
        "score": found.value,
        "metric_name": found.metric_name,
        "metric_source": found.metric_source,
        "metric_artifact": campaign.paths.rel(folder / found.metric_artifact) if found.metric_artifact else None,
        "artifacts": _artifacts_rel(campaign, options.artifacts),
        "budget": _budget(campaign, what_ran.read_what_ran(folder)),
        **_job_facts(folder),
    }


def _measured(options) -> dict | None:
    """The frozen evaluator's measured score `submit --evaluation` passes in (never a command-line option)."""
    return getattr(options, "measured", None)


def _refuse_unmeasured(campaign, options, flag: str) -> None:
    """With a frozen evaluator in poc/prod a score is only recorded as measured by the evaluation job."""
    if _measured(options) is None and frozen_eval.enabled(campaign) and campaign.settings.env != "sim":
        raise CampaignError(
            f"this campaign's score is measured by its frozen evaluator, so record {flag}cannot take the job's own "
            "report: run it with submit, then submit --evaluation (keep/discard waits for the measured score); a "
            "run that failed is still recorded with --failure-reason"
        )


def _measured_fields(campaign, found: dict, measured: dict, name: str) -> dict:
    """What a measured candidate's manifest result and envelope add: the reported value beside the measured one,
    the per-site evaluation, and `metric_divergence` when the report beats the measurement by more than the band."""
    reported = found.get("reported_score")
    divergence = frozen_eval.divergence(campaign, reported, found["score"])
    frozen_submit.finish_record(campaign, name, reported, divergence)
    evaluation = dict(measured["evaluation"], reported_score=reported)
    fields = {"reported_score": reported, "evaluation": evaluation}
    if divergence:
        evaluation["metric_divergence"] = divergence
        fields["metric_divergence"] = divergence
    return fields


def _job_facts(folder) -> dict:
    """The job's duration (compute and time) and NVFLARE's status word, from the downloaded job's meta.json."""
    meta = job_meta.read_job_meta(os.path.abspath(folder)) if folder is not None else None
    return {"runtime_seconds": meta.duration_seconds if meta else None, "job_status": meta.status if meta else None}


def _budget(campaign, ran: what_ran.WhatRan) -> dict:
    """The fixed budget checked against what an external run's artifacts show (unverified without them)."""
    config = campaign.config
    verdict = what_ran.check(
        ran,
        num_rounds=contract.num_rounds(config),
        num_clients=contract.num_clients(config),
        min_clients=contract.min_clients(config),
    )
    return verdict.to_dict()


def _artifacts_rel(campaign, given: str) -> str:
    return campaign.paths.rel(os.path.abspath(given))


def _job_id(value: str | None) -> str | None:
    if value is None:
        return None
    if not JOB_ID_RE.fullmatch(value):
        raise CampaignError(f"--job-id {value!r} is not a job id (letters, digits, '.', '_', ':', '-')")
    return value
