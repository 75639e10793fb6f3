"""submit (poc/prod): run the baseline or a ready candidate on the real FLARE system, then record it.

`submit (--baseline | [--manifest M]) --confirm-user-authorized (--startup-kit KIT | --kit-id ID)
[--authorization TEXT]`, one call per run, each with the user's explicit yes:

1. refuse (exit 2, nothing changed) without `--confirm-user-authorized`, without a kit, outside poc/prod, for a
   baseline already recorded or a candidate that is not ready (or whose folder changed since evaluate);
2. preflight (`runner/preflight`): the kit, `system status`, as many sites as the fixed budget's clients;
3. export through the recipe's own export path (`trial/export`: job.py's trial command line with the fixed
   budget, base args, injected job name and effective run args, plus `--export --export-dir`), sealed on the
   run's own files where the host allows it, into `autofl_runs/<name>/export/`;
4. `nvflare job submit` with the kit; the job id is persisted (`store/external`, `submission`) before any wait;
5. `job wait` in bounded steps up to the campaign's `--timeout`, `job download` into `autofl_runs/<name>/download/`;
6. record exactly as `record --artifacts DIR --job-id ID` does (the shell passes record's `run` in): score,
   budget verified from the download, duration from the job's metadata; a candidate whose job failed or left no
   score is a crash with the reason (exit 1, as evaluate); a failed baseline is exit 1, nothing recorded, and may
   be submitted again after a fix.

With a frozen evaluator (`runner/frozen_submit`) step 6 waits: a completed run is marked `awaiting_evaluation`
and nothing is decided; `submit (--baseline | [--manifest M]) --evaluation ...` then builds the evaluation job of the
downloaded global model (the runner's frozen copies, `trial/eval_job`), runs steps 2 and 4-5 for it (its own
`evaluation_submission` record), reads each site's answer and records the run with the measured score.

Idempotent: a repeated submit of the same run reuses the persisted job id (also after the runner was killed
mid-wait) and never submits twice; one killed between `job submit` and persisting the id finds its job by the
unique job name in `job list`. The envelope's `submission` says what was submitted, where, and under which
approval.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...campaign import guard_inputs
from ...campaign import vocabulary as v
from ...common import trees
from ...trial import eval_job, export, flare_cli, job_meta
from ...trial.argv import TrialError
from ...trial.execute import trial_argv
from .. import campaign_trial, frozen_eval, frozen_submit, preflight, ready
from ..checks import one_manifest, pick_pending
from ..outcome import EXIT_UNSCORED, ActionResult, CampaignError
from ..store import contract, external, manifests, snapshots
from ..store.paths import TRIAL_TEMP_PREFIX

WAIT_STEP_SECONDS = 60  # one `job wait` child at most this long: a killed runner leaves no long-lived child
EXPORT_TIMEOUT = 600.0
SUBMITTING, SUBMITTED, DOWNLOADED, RECORDED, FAILED = "submitting", "submitted", "downloaded", "recorded", "failed"
TRAINING, EVALUATION = "submission", "evaluation_submission"  # the sections of external/<name>.json


def run(campaign, options, now: str, *, record) -> ActionResult:
    """The action; `record` is record's `run(campaign, options, now)` (actions never import each other)."""
    kit, evaluation, target, document, training = _preconditions(campaign, options)
    paths = campaign.paths
    download = frozen_submit.training_download(campaign, target.name, training) if evaluation else None
    key = EVALUATION if evaluation else TRAINING
    step = _Step(campaign, target, key, document)
    if not step.submission.get("job_id") and guard_inputs.present_stop_files(
        paths.workspace, campaign.settings.stop_files
    ):
        raise CampaignError("a stop file is present; submit starts no new run (follow next_action)")
    sites = preflight.check(
        campaign.settings.python, kit, num_clients=contract.num_clients(campaign.config), job_folder=paths.workspace
    )
    cli = flare_cli.FlareCli(campaign.settings.python, kit, job_folder=paths.workspace)
    built = {}

    def export_step() -> Path:
        if not evaluation:
            return _export(campaign, target)
        folder, built["model"] = frozen_submit.job_for(
            campaign,
            target.name,
            download,
            job_name=f"{training.get('job_name') or 'autofl_' + target.name}_eval",
            min_clients=len(sites),
        )
        return folder

    folder, waited, reused = _run_job(campaign, cli, step, export_step, options, now, kit, sites)
    if evaluation:
        result = _record_evaluation(
            campaign, options, now, record, target, step, training, folder, waited, built.get("model"), sites, download
        )
    elif frozen_eval.enabled(campaign) and waited.status == job_meta.COMPLETED:
        step.save(**{frozen_submit.AWAITING: True})  # keep/discard waits for the measured score
        result = ActionResult(extras={"evaluation_pending": _pending(target, step.submission)})
    else:
        result = _record(campaign, options, now, record, target, folder, step.submission["job_id"], waited, step.save)
        step.save(state=RECORDED)
    result.extras["submission"] = _envelope(step.submission, reused=reused, sites=sites)
    if result.extras.get("candidate_status") == v.CRASH:
        result.exit_code = EXIT_UNSCORED  # as evaluate: the run finished without a score (recorded)
    return result


def _preconditions(campaign, options) -> tuple:
    """What a submit needs before it starts anything (kit, evaluation flag, target, its external document and its
    training section), or the CampaignError naming what is missing."""
    if campaign.settings.env == "sim":
        raise CampaignError("submit runs poc/prod campaigns; in simulation evaluate runs the candidate itself")
    if not options.confirm_user_authorized:
        raise CampaignError(
            "submit needs the user's explicit yes for this run: show them the environment, the job, the startup "
            "kit and the cost, then pass --confirm-user-authorized (nothing was submitted)"
        )
    kit = preflight.kit_of(options)
    if kit is None:
        raise CampaignError("submit needs the admin startup kit: pass --startup-kit KIT or --kit-id ID")
    evaluation = bool(getattr(options, "evaluation", False))
    if evaluation and not frozen_eval.enabled(campaign):
        raise CampaignError(
            "submit --evaluation runs the frozen evaluator's job, and this campaign declares no evaluator; drop "
            "--evaluation"
        )
    target = _target(campaign, options)
    document = external.read(campaign.paths, target.name) or external.new(target.name)
    training = document.get(TRAINING) or {}
    if evaluation and not training.get(frozen_submit.AWAITING):
        raise CampaignError(
            f"{target.label} has no downloaded run awaiting its evaluation; submit it first (the same submit "
            "without --evaluation), then submit --evaluation"
        )
    if not evaluation and training.get(frozen_submit.AWAITING):
        raise CampaignError(
            f"{target.label} ran (job {training.get('job_id')}) and awaits its evaluation job; run the same submit "
            "with --evaluation (its keep/discard waits for the measured score)"
        )
    return kit, evaluation, target, document, training


class _Step:
    """One submission's progress in `external/<name>.json` under `key` (the training run or its evaluation job)."""

    def __init__(self, campaign, target, key: str, document: dict):
        self.paths, self.name, self.key, self.document = campaign.paths, target.name, key, document
        submission = document.get(key) or {}
        if submission.get("state") in (RECORDED, FAILED):
            submission = {}  # a new run (a failed one may be submitted again after a fix)
        self.submission = submission

    def save(self, **fields) -> None:
        self.submission = {**self.submission, **fields}
        current = external.read(self.paths, self.name) or self.document  # record writes the baseline's evidence too
        external.write(self.paths, self.name, dict(current, **{self.key: self.submission}))


def _run_job(campaign, cli, step: _Step, export_step, options, now, kit, sites):
    """Export (or build), submit once, wait, download: (download folder, Waited, whether the job id was reused)."""
    paths = campaign.paths
    reused = bool(step.submission.get("job_id"))  # this run's job exists: never submitted again
    if not reused:
        job_id = _adopt(cli, step.submission) if step.submission.get("state") == SUBMITTING else None
        reused = job_id is not None
        if job_id is None:
            folder = export_step()
            step.save(
                state=SUBMITTING,
                job_name=folder.name,
                exported=paths.rel(folder),
                kit=kit.shown(),
                environment=campaign.settings.env,
                sites=sites,
                approval=_approval(options, now),
                target=step.name if step.key == TRAINING else f"evaluation of {step.name}",
            )
            job_id = _cli(cli.submit, folder)
        step.save(state=SUBMITTED, job_id=job_id, submitted_at=now)
    job_id = step.submission["job_id"]
    waited = _wait(cli, job_id, float(campaign.settings.timeout))
    if not waited.finished:
        raise CampaignError(
            f"job {job_id} has not finished within {campaign.settings.timeout:g} s; run the same submit again "
            "to keep waiting (it reuses the job id and never submits twice)"
        )
    where = "download" if step.key == TRAINING else frozen_submit.DOWNLOAD_FOLDER
    folder = _cli(cli.download, job_id, paths.run_dir(step.name) / where)
    step.save(state=DOWNLOADED, job_status=waited.status, download=paths.rel(folder))
    return folder, waited, reused


@dataclass(frozen=True)
class _Target:
    """What is submitted: the baseline, or a ready candidate (its manifest, its files as evaluated, its path)."""

    name: str
    manifest: manifests.CandidateManifest | None
    files: dict[str, bytes] | None
    label: str
    manifest_path: str | None = None


def _target(campaign, options) -> _Target:
    if options.baseline:
        if options.manifest:
            raise CampaignError("--baseline and --manifest name different runs; pass one of them")
        rows = campaign.rows()
        if any(r.status == v.BASELINE and r.score is not None for r in rows) or any(
            r.status in v.ATTEMPTS for r in rows
        ):
            raise CampaignError("the baseline is already recorded; submit a ready candidate (--manifest)")
        drift = snapshots.workspace_drift(campaign.paths, campaign.best())
        if drift:  # what is submitted must be the snapshot the campaign compares against
            raise CampaignError(
                f"the job folder differs from the campaign's snapshot ({', '.join(drift)}); undo those edits, then "
                "submit the baseline"
            )
        return _Target(v.BASELINE_NAME, None, None, v.BASELINE_NAME)
    manifest = pick_pending(campaign, one_manifest(options, "submit"), want=v.READY)
    files = ready.recordable(campaign, manifest)  # unchanged since evaluate, else refused
    name = manifest.candidate_id
    return _Target(name, manifest, files, f"candidate {name}", str(campaign.paths.manifest(name)))


def _export(campaign, target: _Target) -> Path:
    """The run's job folder, exported by job.py itself (sealed on the run's own files where the host allows)."""
    paths, settings = campaign.paths, campaign.settings
    run_args = list(target.manifest.effective_run_args) if target.manifest else []
    sealed = campaign_trial.sealing(campaign)
    files = target.files if target.manifest else snapshots.files_of(paths, campaign.best())
    workspace = paths.workspace
    if not sealed and target.manifest is not None:
        workspace = ready.export_from(paths, target.manifest)  # contained: its own folder holds its files
    temp_parent = Path(tempfile.mkdtemp(prefix=TRIAL_TEMP_PREFIX))
    try:
        spec = campaign_trial.spec(
            campaign, name=target.name, run_args=run_args, token="0" * 32, temp_parent=temp_parent
        )
        argv = trial_argv(dataclasses.replace(spec, job_path=workspace / paths.job.name))
        run_dir = paths.run_dir(target.name)
        return export.export_job(
            export.ExportRequest(
                python=settings.python,
                argv=argv,
                workspace=workspace,
                destination=run_dir / "export",
                log_path=run_dir / "export.log",
                temp_parent=temp_parent,
                timeout=EXPORT_TIMEOUT,
                stage_files=files if sealed else None,
                hide=[paths.meta, paths.output_root] if sealed else [],
                isolate_network=not settings.allow_network,
                env_passthrough=list(contract.env_passthrough(campaign.config)),
            )
        )
    except TrialError as error:
        raise CampaignError(str(error)) from None
    except export.ExportError as error:
        raise CampaignError(f"export of {target.label} failed: {error}; nothing was submitted") from None
    finally:
        trees.remove_tree(temp_parent)


def _adopt(cli, submission: dict) -> str | None:
    """The job of a submission whose runner died between `job submit` and persisting the id: the one job
    `job list` shows with its unique job name; None when there is none (it was never submitted)."""
    found = _cli(cli.jobs_named, submission.get("job_name") or "")
    if len(found) > 1:
        raise CampaignError(
            f"{len(found)} jobs are named {submission.get('job_name')} ({', '.join(found)}); record the right one "
            "by hand with record --artifacts ... --job-id ..."
        )
    return found[0] if found else None


def _wait(cli, job_id: str, bound: float) -> flare_cli.Waited:
    deadline = time.monotonic() + bound
    while True:
        left = deadline - time.monotonic()
        waited = _cli(cli.wait, job_id, max(min(left, WAIT_STEP_SECONDS), 1))
        if waited.finished or time.monotonic() >= deadline:
            return waited


def _record(campaign, options, now, record, target: _Target, folder: Path, job_id, waited, save):
    """Record the download exactly as `record --artifacts DIR --job-id ID` (a crash with the reason when the job
    did not complete or left no score)."""
    completed = waited.status == job_meta.COMPLETED
    reason = None if completed else f"job {job_id} ended {waited.status or 'without a status'}"
    if target.manifest is None and reason:
        save(state=FAILED, failure_reason=reason)
        raise CampaignError(
            f"the baseline {reason}; nothing was recorded. Find out why (the diagnose-job skill: diagnose_job.py "
            f"--job-id {job_id} --collect ...), fix it, then submit --baseline again",
            exit_code=EXIT_UNSCORED,
        )
    given = _record_options(options, target, folder, job_id, failure_reason=reason)
    try:
        return record(campaign, given, now)
    except CampaignError as error:
        if target.manifest is None:
            save(state=FAILED, failure_reason=str(error))
            raise
        if "no score in --artifacts" not in str(error):
            raise
        unscored = str(error)
    return record(campaign, _record_options(options, target, folder, job_id, failure_reason=unscored), now)


def _record_evaluation(campaign, options, now, record, target, step, training, folder, waited, model, sites, download):
    """Measure the run from its evaluation job's download and record it (training artifacts, measured score)."""
    job = {"job_id": step.submission.get("job_id"), "job_status": waited.status}
    meta = job_meta.read_job_meta(folder)
    job["duration_seconds"] = meta.duration_seconds if meta else None
    found, reason = _measure(campaign, target, folder, waited, model, sites, download, job)
    if target.manifest is None and reason:
        step.save(state=FAILED, failure_reason=reason)
        raise CampaignError(
            f"the baseline's {reason}; nothing was recorded. Find out why (the evaluation job's download is in "
            f"{campaign.paths.rel(folder)}), fix what it names, then submit --evaluation --baseline again",
            exit_code=EXIT_UNSCORED,
        )
    given = _record_options(options, target, download, training["job_id"], failure_reason=reason)
    given.measured = None if reason else found
    result = record(campaign, given, now)
    step.save(state=RECORDED)
    _mark_training_recorded(campaign, target)
    result.extras["evaluation_job"] = dict(job, download=campaign.paths.rel(folder))
    return result


def _measure(campaign, target, folder, waited, model, sites, download, job) -> tuple[dict | None, str | None]:
    """(the measured score or None, the reason there is none): the answers count only from a completed job whose
    definition is the evaluation job the runner builds; evaluation.json says why when none was read."""
    found = reason = None
    if waited.status != job_meta.COMPLETED:
        reason = f"frozen evaluation: evaluation job {job['job_id']} ended {waited.status or 'without a status'}"
    else:
        if model is None:  # a repeat after the runner was killed: the model the job was built from
            model = frozen_submit.job_model(campaign, target.name, download)
        try:
            frozen_submit.check_ran(campaign, folder, model)
            answers = eval_job.read_answers(folder)
        except eval_job.EvalJobError as error:
            reason = f"frozen evaluation: {error}"
        else:
            found = frozen_submit.measured(campaign, target.name, answers, model, sites=sites, job=job)
            reason = found["failure"] or None
    if found is None:
        frozen_submit.unmeasured(campaign, target.name, reason, model=model, job=job)
    return found, reason


def _mark_training_recorded(campaign, target) -> None:
    document = external.read(campaign.paths, target.name) or {}
    training = {**(document.get(TRAINING) or {}), "state": RECORDED, frozen_submit.AWAITING: False}
    external.write(campaign.paths, target.name, dict(document, **{TRAINING: training}))


def _pending(target, submission: dict) -> dict:
    """What the envelope says of a run that awaits its evaluation job."""
    flag = "--baseline" if target.manifest is None else f"--manifest {target.manifest_path}"
    return {
        "target": target.label,
        "job_id": submission.get("job_id"),
        "download": submission.get("download"),
        "next": f"submit {flag} --evaluation --confirm-user-authorized (same kit): builds the evaluation job of "
        "the downloaded global model with the frozen evaluator, submits it, and records the measured score; "
        "keep/discard waits for it",
    }


def _record_options(options, target: _Target, folder: Path, job_id: str, *, failure_reason) -> argparse.Namespace:
    manifest = None if target.manifest is None else [target.manifest_path]
    return argparse.Namespace(
        **dict(
            vars(options),
            literature=False,
            baseline=target.manifest is None,
            manifest=manifest,
            score=None,
            artifacts=str(folder),
            job_id=job_id,
            failure_reason=failure_reason,
            measured=None,
        )
    )


def _approval(options, now: str) -> dict:
    note = " ".join((options.authorization or "").split())[:500] or None
    return {"confirmed_by": "--confirm-user-authorized", "authorization": note, "at": now}


def _envelope(submission: dict, *, reused: bool, sites: list[str]) -> dict:
    keys = ("target", "job_id", "job_name", "environment", "kit", "approval", "job_status", "exported", "download")
    return {**{key: submission.get(key) for key in keys}, "sites": sites, "reused_job_id": reused}


def _cli(step, *args):
    try:
        return step(*args)
    except flare_cli.FlareCliError as error:
        raise CampaignError(f"{error}; run the same submit again once the system answers") from None
