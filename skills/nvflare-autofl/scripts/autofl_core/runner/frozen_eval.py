"""The campaign's score when a frozen evaluator is declared: measured by the runner on the final global model.

After a trial that succeeded (baseline, candidate, replicate, batch member), `measure` finds the global model the
server persisted in the copied result (`trial/global_model`), runs the frozen evaluator on it for every site that
took part (`trial/evaluator`, sealed) and makes the n-weighted mean the trial's score; the job's own reported
value is kept beside it (`reported_score`). A missing model or a failing evaluator makes the trial a crash naming
the cause, and so does a trial whose model file or site folders differ from the baseline's (the evaluator reads the
file the baseline's model was found at, for the sites that took part in the baseline). The per-site answers go to `autofl_runs/<name>/evaluation.json`. A trial that changed a frozen file
in the live job is a crash (the file is restored). A pruned trial stopped before its last round, so it has no final
model: its `evaluation` says so (`not_measured`, score None). `provenance` says where a campaign's score comes from.
Usage::

    result = measure(campaign, result, name="lr-x2", token=token, temp_parent=folder, sealed=True)   # the measured one
    provenance(campaign)     # "measured: frozen evaluator on the final global model" or "client-reported: ..."
"""

from __future__ import annotations

import dataclasses
import time

from ..campaign import vocabulary as v
from ..campaign.ledger import LedgerRow
from ..campaign.prune import NO_FINAL_MODEL
from ..common import atomic, bounded
from .store import frozen

SUCCESS = v.OUTCOME_SUCCESS

MEASURED = "measured: frozen evaluator on the final global model"
REPORTED = "client-reported: model after round N-1, weighted by client steps"
MEASURED_SOURCE = "measured:frozen_evaluator"
EVALUATION_FILE = "evaluation.json"
ADD_EVALUATOR = (
    "The score is the job's own client-reported metric; to have the runner measure it on the final global model "
    "instead, start the campaign with initialize --evaluator FILE (a Python file in the job folder that prints "
    '{"<metric>": value, "n": samples} for --model PATH --site NAME; template: references/frozen-evaluation.md).'
)


EXTERNAL_NOTE = (
    "In poc/prod the sites hold the data, so the frozen evaluator runs there as an evaluation job: after submit "
    "downloads a run (baseline or candidate), next_action is submit_evaluation: run the same submit with "
    "--evaluation (the user's yes covers it like a run). It builds the job from the runner's frozen copies and the "
    "downloaded global model (NVFLARE's GlobalModelEval, NPModelLocator, ValidationJsonGenerator), submits it, "
    "waits, downloads and records the n-weighted measured score; keep/discard waits for it, and record takes no "
    "hand-reported score. Not automated: global models in other formats than NumPy (the job is refused, nothing "
    "is submitted: evaluate at each site by hand, or start a campaign without --evaluator), and sites whose "
    "authorization policy refuses jobs with custom code (BYOC): the evaluation job carries custom code like every "
    "training job of the campaign, so such a site answers neither; a missing answer makes the run a crash naming "
    "the site (ask the site's admin)."
)


def enabled(campaign) -> bool:
    return frozen.section(campaign.config) is not None


def provenance(campaign) -> str:
    """Measured wherever an evaluator is declared: by the runner in simulation, by the evaluation job in poc/prod
    (where record takes no hand-reported score)."""
    return MEASURED if enabled(campaign) else REPORTED


def external_model(campaign, artifacts: str | None) -> dict:
    """What `record --artifacts` adds with a frozen evaluator: the global model found in the download, and that
    the score was not measured ({} without an evaluator or without artifacts)."""
    found = frozen.section(campaign.config)
    if found is None or not artifacts:
        return {}
    from pathlib import Path

    from ..trial import global_model

    try:
        model = global_model.find_in_download(Path(artifacts).resolve(), found.get("model"))
        where, fmt = campaign.paths.rel(model.path), model.format
    except global_model.ModelNotFound as error:
        where, fmt = None, str(error)
    return {
        "evaluation": {
            "score": None,
            "model": where,
            "model_format": fmt if where else None,
            "not_measured": "poc/prod: recorded without its evaluation job (a run that failed has no score to "
            "measure)" + ("" if where else f"; {fmt}"),
        }
    }


def with_provenance(campaign, action: str, document: dict) -> dict:
    """The envelope with `score_provenance`; a new campaign without an evaluator is told once how to add one; in
    poc/prod a campaign with one is told how its evaluation job runs and what is not automated."""
    document = dict(document, score_provenance=provenance(campaign))
    if enabled(campaign) and campaign.settings.env != "sim":
        document["frozen_evaluation_note"] = EXTERNAL_NOTE
    if action == "initialize" and document.get("initialized") and not enabled(campaign):
        document["agent_instruction"] = f"{document.get('agent_instruction') or ''} {ADD_EVALUATOR}".strip()
    return document


def with_state_fields(campaign, state: dict, manifests: list) -> dict:
    """With a frozen evaluator the state lists every candidate whose reported value diverged from its measured one
    (`metric_divergence`: name plus the numbers); without one the state is unchanged."""
    if not enabled(campaign):
        return state
    diverged = [
        {"name": m.candidate_id, **m.result.metric_divergence}
        for m in manifests
        if isinstance(m.result.metric_divergence, dict)
    ]
    return dict(state, metric_divergence=diverged)


def measure(campaign, result, *, name: str, token: str, temp_parent, sealed: bool):
    """The trial `result` with a successful trial's reported score replaced by the measured one (see the module
    docstring); `result` itself without a frozen evaluator or when the trial did not succeed."""
    found = frozen.section(campaign.config)
    if found is None:
        return result
    started = time.monotonic()
    unmeasured = _unmeasured(campaign, result)
    if unmeasured is not None:
        return unmeasured
    run_dir = campaign.paths.run_dir(name)
    result = dataclasses.replace(result, reported_score=result.score)
    try:
        model, sites = _model_and_sites(campaign, found, run_dir)
    except _Unmeasurable as why:
        return result.crashed(str(why))
    evaluation = _evaluate(campaign, found, model, sites, token=token, temp_parent=temp_parent, sealed=sealed)
    record = _write_record(campaign, run_dir, evaluation, model, result.reported_score, started)
    return _scored(campaign, result, evaluation, record, run_dir)


class _Unmeasurable(Exception):
    """Why a successful trial's model cannot be measured (the trial is then a crash naming it)."""


def _unmeasured(campaign, result):
    """The result of a trial nothing is measured for: one that changed a frozen file in the live job (a crash, the
    files restored), a pruned one (its `evaluation` says why) or one that did not succeed; None otherwise."""
    changed = frozen.changed_live(campaign.paths, campaign.config)
    if changed:
        frozen.restore_live(campaign.paths, campaign.config, changed)
        return result.crashed(
            f"tampering: the trial changed {', '.join(changed)}, frozen with the evaluator; the runner restored them"
        )
    if result.outcome == v.OUTCOME_PRUNED:  # stopped before its last round: say why nothing was measured
        return dataclasses.replace(result, evaluation={"score": None, "model": None, "not_measured": NO_FINAL_MODEL})
    if result.outcome != SUCCESS:
        return result
    return None


def _model_and_sites(campaign, found: dict, run_dir):
    """The global model the trial's result holds and the sites that took part, held to the measured baseline's
    (the model file it was found at, its sites); raises `_Unmeasurable` naming what is missing or differs."""
    from ..trial import global_model

    baseline = _baseline_evaluation(campaign)  # None while the baseline itself is measured
    if baseline is None and _baseline_rows(campaign):
        raise _Unmeasurable(_unreadable_baseline(campaign, "the sites and the model file"))
    pinned = (baseline or {}).get("model_file")  # a candidate may not swap the file (or format) the evaluator reads
    try:
        model = global_model.find_global_model(run_dir / "simulation", found.get("model") or pinned)
    except global_model.ModelNotFound as error:
        where = "" if found.get("model") or not pinned else " (the file the baseline's model was found at)"
        raise _Unmeasurable(f"frozen evaluation: {error}{where}") from None
    sites = global_model.participating_sites(run_dir / "simulation")
    expected = _sites_of(baseline)
    if expected is not None and sites != expected:
        raise _Unmeasurable(
            f"frozen evaluation: the result holds the site folders {', '.join(sites) or 'none'}, but the sites that "
            f"took part in the baseline were {', '.join(expected)}; the evaluator scores those sites, so a trial may "
            "not remove, add or rename site folders",
        )
    return model, sites


def _evaluate(campaign, found: dict, model, sites: list[str], *, token: str, temp_parent, sealed: bool):
    """Run the frozen evaluator (the runner's copies of its files) on `model` for each of `sites`."""
    from ..trial import evaluator as evaluator_mod  # only trials need the evaluator's process code

    settings = campaign.settings
    return evaluator_mod.evaluate_model(
        evaluator_mod.EvaluatorRun(
            python=settings.python,
            script=found["script"],
            files=frozen.copies(campaign.paths, campaign.config),
            model=model.path,
            model_format=model.format,
            sites=sites,
            metric=settings.metric,
            timeout=float(settings.timeout),
            temp_parent=temp_parent,
            token=token,
            sealed=sealed,
            isolate_network=not settings.allow_network,
            workspace=campaign.paths.workspace,
        )
    )


def _write_record(campaign, run_dir, evaluation, model, reported: float | None, started: float) -> dict:
    """Write the trial's `evaluation.json` (the per-site answers, the model and where later trials must persist
    it, the reported score, the step's seconds since `started`); the record written."""
    from ..trial import global_model

    record = dict(
        evaluation.to_dict(),
        model=campaign.paths.rel(model.path),
        model_file=global_model.relative_model(run_dir / "simulation", model.path),  # what later trials must persist
        reported_score=reported,
        measure_seconds=round(time.monotonic() - started, 3),  # the whole step: hashes, model, evaluator processes
    )
    atomic.write_json(run_dir / EVALUATION_FILE, record)
    return record


def _scored(campaign, result, evaluation, record: dict, run_dir):
    """The trial's result with the measured score (a crash naming the evaluator's failure); a divergence from the
    reported value is added to its summary and to `evaluation.json`."""
    summary = {
        "score": evaluation.score,
        "reported_score": result.reported_score,
        "sites": {site.site: {"value": site.value, "n": site.n} for site in evaluation.sites},
        "model": record["model"],
        "seconds": evaluation.seconds,
    }
    if evaluation.failure:
        return result.crashed(evaluation.failure, evaluation=summary)
    found_divergence = divergence(campaign, result.reported_score, evaluation.score)  # None for a baseline
    if found_divergence:
        summary["metric_divergence"] = found_divergence
        atomic.write_json(run_dir / EVALUATION_FILE, dict(record, metric_divergence=found_divergence))
    return dataclasses.replace(
        result,
        evaluation=summary,
        score=evaluation.score,
        metric_source=MEASURED_SOURCE,
        metric_artifact=campaign.paths.rel(run_dir / EVALUATION_FILE),
    )


def divergence(campaign, reported: float | None, measured: float | None) -> dict | None:
    """`metric_divergence` when the reported value beats the measured one by more than the baseline's own gap plus
    the noise band (the measured band when replicates exist, else the spread typical for the metric, else the
    plateau's min delta); None otherwise. Direction-adjusted: for a `min` metric a lower report is the better one."""
    if reported is None or measured is None:
        return None
    baseline = _baseline_evaluation(campaign)
    if baseline is None or baseline.get("reported_score") is None or baseline.get("score") is None:
        return None
    sign = 1.0 if campaign.settings.mode == "max" else -1.0
    gap = round(sign * (reported - measured), 6)
    baseline_gap = round(sign * (baseline["reported_score"] - baseline["score"]), 6)
    band = _band(campaign, baseline["score"])
    if gap <= baseline_gap + band:
        return None
    return {"reported": reported, "measured": measured, "gap": gap, "baseline_gap": baseline_gap, "band": band}


def divergence_text(found: dict) -> str:
    return (
        f"metric_divergence: reported {found['reported']:.6f} vs measured {found['measured']:.6f} (gap "
        f"{found['gap']:.6f} > the baseline's gap {found['baseline_gap']:.6f} + noise band {found['band']:.6f}); "
        "the job's own metric no longer describes its model (an edited validation path?)"
    )


def _band(campaign, reference: float) -> float:
    from ..campaign import gains
    from . import noise

    measured = gains.band(noise.latest_measured(campaign))
    if measured is not None:
        return float(measured)
    typical = gains.typical_spread(campaign.settings.metric, reference)
    return float(typical if typical is not None else campaign.settings.plateau_min_delta)


def baseline_sites(campaign) -> tuple[list[str] | None, str]:
    """(the sites the measured baseline's evaluation scored, "") once a baseline is measured; (None, "") before;
    (None, the problem) when its record is missing or unreadable (the pins fail closed)."""
    if not _baseline_rows(campaign):
        return None, ""
    sites = _sites_of(_baseline_evaluation(campaign))
    return sites, "" if sites is not None else _unreadable_baseline(campaign, "the sites")


def _baseline_rows(campaign) -> list[LedgerRow]:
    """The scored baselines whose score the frozen evaluator measured."""
    return [
        row
        for row in campaign.rows()
        if row.status == v.BASELINE and row.score is not None and row.metric_source == MEASURED_SOURCE
    ]


def _unreadable_baseline(campaign, what: str) -> str:
    record = campaign.paths.run_dir(_baseline_rows(campaign)[-1].name) / EVALUATION_FILE
    return (
        f"frozen evaluation: the scored baseline's record {campaign.paths.rel(record)} is missing or unreadable, so "
        f"{what} cannot be held to the baseline's; restore it, or start a fresh campaign"
    )


def _baseline_evaluation(campaign) -> dict | None:
    rows = _baseline_rows(campaign)
    return recorded(campaign, rows[-1].name) if rows else None


def _sites_of(evaluation: dict | None) -> list[str] | None:
    """The site names a recorded evaluation scored (None when there is none to compare with)."""
    sites = (evaluation or {}).get("sites")
    if not isinstance(sites, list) or not sites:
        return None
    names = [site.get("site") for site in sites if isinstance(site, dict)]
    return names if all(isinstance(name, str) for name in names) else None


def manifest_fields(result) -> dict:
    """What a manifest's result and an envelope add about a measured score (nothing without an evaluation)."""
    if result.evaluation is None:
        return {}
    fields = {"reported_score": result.reported_score, "evaluation": result.evaluation}
    if result.evaluation.get("metric_divergence"):
        fields["metric_divergence"] = result.evaluation["metric_divergence"]
    return fields


def recorded(campaign, name: str) -> dict | None:
    """What `measure` wrote for trial `name` (None without an evaluator or when it did not run)."""
    return bounded.read_json_or_none(campaign.paths.run_dir(name) / EVALUATION_FILE)
