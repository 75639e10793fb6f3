"""Frozen evaluation in poc/prod: the evaluation job of a downloaded run's global model, and its measured score.

With a frozen evaluator the score of a poc/prod run is measured where the data is: `submit` runs the training job
and downloads it, and the run then awaits its evaluation (`awaiting`; `next_action` `submit_evaluation`); `submit
--evaluation` builds the evaluation job of the downloaded global model (`job_for`: the runner's frozen copies and
the model, `trial/eval_job`), submits it like a run, downloads it and turns each site's answer into the measured
score (`measured`): every site that took part answers with the evaluator's JSON line (the same parser as in
simulation), on the model file the runner shipped (its sha256), and the score is the n-weighted mean. The record
goes to `autofl_runs/<name>/evaluation.json` in the simulation's shape. Usage::

    folder, model = job_for(campaign, "lr-x2", download, job_name="autofl_ab12_lr-x2_eval", min_clients=2)
    found = measured(campaign, "lr-x2", answers, model, sites=["site-1", "site-2"], job={"job_id": ...})
    found["score"], found["failure"]          # failure "" when every site answered
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..common import atomic
from . import frozen_eval
from .outcome import CampaignError
from .store import external, frozen

if TYPE_CHECKING:  # the trial machinery is imported where it is used: status and prepare never load it
    from ..trial import evaluator, global_model

AWAITING = "awaiting_evaluation"  # an external run's submission field: downloaded, its evaluation not yet recorded
JOB_FOLDER, DOWNLOAD_FOLDER = "evaluation_job", "evaluation_download"
EVALUATION_NEEDED = (
    "its run was downloaded; its evaluation job: the user's yes, then submit --manifest M --evaluation (keep/discard "
    "waits for the measured score)"
)
NOT_MEASURABLE = (
    "Such a run cannot be measured here: record it as a crash (record --failure-reason TEXT) or abandon the "
    "candidate; for a baseline, start a fresh campaign without --evaluator (client-reported scores) or make the job "
    "persist a NumPy global model"
)


def awaiting(campaign, names: list[str]) -> list[str]:
    """Which of the runs `names` (the baseline, ready candidates) were downloaded and await their evaluation job."""
    if not frozen_eval.enabled(campaign) or campaign.settings.env == "sim":
        return []
    documents = {name: external.read(campaign.paths, name) or {} for name in names}
    return [name for name, document in documents.items() if (document.get("submission") or {}).get(AWAITING)]


def training_download(campaign, name: str, training: dict) -> Path:
    """The folder run `name`'s training job was downloaded to, as `submit` wrote it in `external/<name>.json`:
    `autofl_runs/<name>/download/<job id>`, a real folder (no link on the way). CampaignError (exit 2) for a
    record that says anything else (hand-edited: another run's or a planted download would be measured as this
    run's)."""
    job_id = training.get("job_id")
    where = training.get("download")
    expected = campaign.paths.run_dir(name) / "download" / str(job_id)
    plain = isinstance(job_id, str) and job_id not in ("", ".", "..") and "/" not in job_id and "\\" not in job_id
    if (
        not plain
        or training.get("state") != "downloaded"
        or not isinstance(where, str)
        or os.path.abspath(campaign.paths.workspace / where) != os.path.abspath(expected)
        or not _real_folder(expected, campaign.paths.run_dir(name).parent)
    ):
        raise CampaignError(
            f"{external.path(campaign.paths, name)} does not describe a training job submit downloaded (state "
            f"downloaded, its job id, the download in {campaign.paths.rel(campaign.paths.run_dir(name))}/download/<job "
            "id>); nothing was submitted. Remove the record and run the same submit without --evaluation"
        )
    return expected


def _real_folder(path: Path, stop: Path) -> bool:
    """True for a folder none of whose parts below `stop` (nor itself) is a symlink."""
    from ..trial import global_model

    mode = global_model.unlinked_mode(path, stop=stop)
    return mode is not None and stat.S_ISDIR(mode)


def job_for(
    campaign, name: str, download: Path, *, job_name: str, min_clients: int
) -> tuple[Path, global_model.GlobalModel]:
    """(the evaluation job folder, the model it carries) for run `name`, built from its downloaded training job."""
    from ..trial import eval_job

    model = job_model(campaign, name, download)
    spec = _spec(campaign, model, job_name=job_name, min_clients=min_clients)
    try:
        folder = eval_job.materialize(spec, campaign.paths.run_dir(name) / JOB_FOLDER)
    except eval_job.EvalJobError as error:
        raise CampaignError(f"frozen evaluation of {name}: {error}; nothing was submitted. {NOT_MEASURABLE}") from None
    return folder, model


def check_ran(campaign, evaluation_download: Path, model: global_model.GlobalModel) -> None:
    """EvalJobError unless the downloaded evaluation job is the one `job_for` builds for `model` now, from the
    runner's frozen copies (the job's name, site count and timeout as its definition declares them)."""
    from ..trial import eval_job_match

    spec = _spec(campaign, model, job_name="autofl_eval", min_clients=1)  # both replaced by the definition's
    eval_job_match.check(evaluation_download, spec)


def _spec(campaign, model: global_model.GlobalModel, *, job_name: str, min_clients: int):
    """The evaluation job of `model` with the runner's frozen copies (`trial/eval_job.EvalJobSpec`)."""
    from ..trial import eval_job

    return eval_job.EvalJobSpec(
        name=job_name,
        script=frozen.section(campaign.config)["script"],
        files=frozen.copies(campaign.paths, campaign.config),
        model=model.path,
        model_format=model.format,
        min_clients=min_clients,
        timeout=int(campaign.settings.timeout),
    )


def job_model(campaign, name: str, download: Path) -> global_model.GlobalModel:
    """The global model of run `name`'s downloaded training job (a declared `evaluation.model` wins)."""
    from ..trial import global_model

    try:
        return global_model.find_in_download(Path(download), frozen.section(campaign.config).get("model"))
    except global_model.ModelNotFound as error:
        raise CampaignError(f"frozen evaluation of {name}: {error}; nothing was submitted. {NOT_MEASURABLE}") from None


def measured(
    campaign, name: str, answers: dict[str, dict], model: global_model.GlobalModel, *, sites: list[str], job: dict
) -> dict:
    """The measured score of run `name` from its evaluation job's answers: {score, failure, evaluation (the
    envelope/manifest form), metric_artifact}; evaluation.json written either way."""
    from ..trial import evaluator

    digest = _sha256(Path(model.path))
    metric = campaign.settings.metric
    pinned, unpinned = frozen_eval.baseline_sites(campaign)
    expected = pinned or sorted(sites)
    results = [_site(site, answers.get(site), metric, digest) for site in expected]
    extra = sorted(set(answers) - set(expected))
    failed = [result for result in results if result.failure]
    if unpinned:
        failure = unpinned
    elif failed:
        failure = f"frozen evaluator failed on {failed[0].site}: {failed[0].failure}"
    elif extra:
        failure = (
            f"frozen evaluation: the evaluation job was answered by {', '.join(extra)}, which did not take part in "
            f"the baseline's evaluation ({', '.join(expected)})"
        )
    else:
        failure = ""
    score = None if failure else evaluator.combine(results)
    if score is None and not failure:
        failure = "the frozen evaluator evaluated no sample"
    sites_found = [
        {"site": r.site, "value": r.value, "n": r.n, "metrics": r.metrics, "failure": r.failure} for r in results
    ]
    path = _write_record(campaign, name, score, failure, model=model, digest=digest, sites=sites_found, job=job)
    return {
        "score": score,
        "failure": failure,
        "metric_artifact": campaign.paths.rel(path),
        "evaluation": {
            "score": score,
            "sites": {r.site: {"value": r.value, "n": r.n} for r in results if not r.failure},
            "model": campaign.paths.rel(model.path),
            "evaluation_job_id": job.get("job_id"),
        },
    }


def unmeasured(campaign, name: str, failure: str, *, model: global_model.GlobalModel | None, job: dict) -> None:
    """Write run `name`'s evaluation.json when its evaluation job's answers are not read (the job did not complete,
    left no answers, or is not the job the runner builds): no score, and the reason."""
    digest = _sha256(Path(model.path)) if model is not None else None
    _write_record(campaign, name, None, failure, model=model, digest=digest, sites=[], job=job)


def _write_record(campaign, name: str, score, failure: str, *, model, digest, sites: list, job: dict) -> Path:
    """Write run `name`'s evaluation.json of its evaluation job; its path."""
    record = {
        "score": score,
        "metric": campaign.settings.metric,
        "model": campaign.paths.rel(model.path) if model is not None else None,
        "model_format": model.format if model is not None else None,
        "model_sha256": digest,
        "model_file": None,
        "sites": sites,
        "failure": failure,
        "evaluation_job": job,
        "measured_at": "sites (poc/prod evaluation job)",
    }
    path = campaign.paths.run_dir(name) / frozen_eval.EVALUATION_FILE
    atomic.write_json(path, record)
    return path


def finish_record(campaign, name: str, reported: float | None, divergence: dict | None) -> None:
    """Add the reported value (and a divergence) to the evaluation.json `measured` wrote, as simulation keeps it."""
    record = dict(frozen_eval.recorded(campaign, name) or {}, reported_score=reported)
    if divergence:
        record["metric_divergence"] = divergence
    atomic.write_json(campaign.paths.run_dir(name) / frozen_eval.EVALUATION_FILE, record)


def _sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _site(site: str, answer: dict | None, metric: str, digest: str) -> evaluator.SiteResult:
    from ..trial import evaluator

    result = evaluator.SiteResult(site=site)
    if answer is None:
        result.failure = "it returned no result to the evaluation job"
        return result
    if answer.get("autofl_model_sha256") != digest:
        result.failure = "it evaluated another model file than the one the runner shipped (sha256 differs)"
        return result
    code = answer.get("autofl_exit")
    if code != 0:
        cause = str(answer.get("autofl_stderr") or "")[:500]
        result.failure = f"exit_code={code}" + (f"; {cause}" if cause else "")
        return result
    try:
        result.value, result.n, result.metrics = evaluator.parse_output(str(answer.get("autofl_stdout") or ""), metric)
    except ValueError as error:
        result.failure = str(error)
    return result
