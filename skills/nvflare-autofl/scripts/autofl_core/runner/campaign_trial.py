"""One trial of this campaign: the TrialSpec from the contract and settings, the orphan marker, trial.json.

`autofl_runs/<name>/` gets `run.log`, the copied `simulation/` and `trial.json` (argv, exit code, outcome,
watchdog, timings, the runner's own CPU while the child ran). A trial that NVFLARE's simulator stalls by itself
(`watchdog.infrastructure_stall`) runs once more; `trial.json` says why (`retried_after`).

Before the child starts, `running_trial.json` records the trial token and its temp folder, so the next
action can end an orphaned trial tree and sweep its folder if this runner dies (see `recovery`). A plot
worker process is started with the trial so the plotting library is imported meanwhile (see
`campaign/plot_worker.py`).
Usage::

    result = run(campaign, name="lr-x2", run_args=["--lr", "0.1"], kind="candidate")
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import sys
import tempfile
from pathlib import Path

from ..campaign.plot_worker import PlotWorker
from ..common import atomic, faults, trees
from ..importer import runner_view as importer
from ..trial import childenv, seal, watchdog
from ..trial.argv import TrialError
from ..trial.execute import TrialResult, TrialSpec, run_trial, trial_argv
from . import frozen_eval, pruning
from .outcome import CampaignError
from .settings import limits_of
from .store import contract, snapshots
from .store.paths import TRIAL_TEMP_PREFIX
from .tamper import EvidenceGuard


def spec(
    campaign,
    *,
    name: str,
    run_args: list[str],
    token: str,
    temp_parent: Path,
    stage_files: dict[str, bytes] | None = None,
    slots: int = 1,
) -> TrialSpec:
    """The TrialSpec of trial `name` with `run_args` under the campaign's fixed budget and settings.

    `stage_files` (the managed files the trial must see) makes it a sealed trial; None runs it contained in the
    live workspace. `slots`: trials running at once (the machine's default limits are divided among them).
    """
    config, settings, paths = campaign.config, campaign.settings, campaign.paths
    flags = importer.cli_flags(config)
    schema_budget = contract.schema_budget(config)
    timeout = max(float(settings.timeout), float(schema_budget.get("run_timeout_seconds") or 0))
    no_progress = schema_budget.get("simulator_no_progress_timeout_seconds", settings.simulator_no_progress_timeout)
    return TrialSpec(
        python=settings.python,
        job_path=paths.job,
        workspace=paths.workspace,
        run_dir=paths.run_dir(name),
        trial_name=name,
        metric_order=list((config.get("objective") or {}).get("metric_extraction_order") or [settings.metric]),
        budget_args=contract.budget_args(config),
        base_args=list(settings.base_args),
        run_args=list(run_args),
        flag_groups=[list(group) for group in flags["groups"]],
        name_flag=flags["name_flag"],
        switch_flags=[flag for flag, takes in flags["takes_value"].items() if not takes],
        expected_result_names=contract.expected_result_names(config),
        num_rounds=contract.num_rounds(config),
        mode=settings.mode,
        timeout=timeout,
        no_progress_timeout=float(no_progress) or None,
        env_passthrough=contract.env_passthrough(config),
        uses_simenv=contract.uses_simenv(config),
        token=token,
        progress_stream=sys.stderr,
        temp_parent=temp_parent,
        isolate_network=not settings.allow_network,
        stage_files=stage_files,
        hide=[paths.meta, paths.output_root],
        literal_paths=contract.literal_simulator_paths(config, paths.workspace),
        num_clients=contract.num_clients(config),
        min_clients=contract.min_clients(config),
        score_measured_after=frozen_eval.enabled(campaign),
        limits=limits_of(settings, slots=slots, folder=temp_parent),
    )


def sealing(campaign) -> bool:
    """True when this host lets trials run sealed (namespaces and overlays; probed once per interpreter)."""
    return seal.can_seal(_probe(campaign))


def check_isolable(campaign) -> None:
    """A FedJob writing to a literal simulator path needs sealed trials (they map the path); refuse it elsewhere."""
    if contract.literal_simulator_paths(campaign.config, campaign.paths.workspace) and not sealing(campaign):
        from ..importer.admission import unisolated_message

        missing = ", ".join(_probe(campaign).get("missing") or ["namespaces"])
        why = f" on this host (a sealed trial would map that path, but {missing} are unavailable)"
        raise CampaignError(unisolated_message(campaign.config, why))


def start_probe(campaign) -> None:
    """Begin probing the sandbox while the action does its own checks (`sealing` then waits for it)."""
    seal.start_probe(campaign.settings.python, _probe_env())


def _probe(campaign) -> dict:
    return seal.probe(campaign.settings.python, _probe_env())


def _probe_env() -> dict[str, str]:
    return childenv.build_child_env(os.environ, passthrough=[], simulator_root=tempfile.gettempdir(), token="0" * 32)


def sealed_view(campaign) -> dict[str, bytes] | None:
    """The best source as a sealed baseline or replicate trial sees it; None where trials cannot be sealed."""
    if campaign.settings.env != "sim" or not sealing(campaign):
        return None
    return snapshots.files_of(campaign.paths, campaign.best())


def check_args(campaign, name: str, run_args: list[str]) -> None:
    """Build the trial argv once without running anything: budget conflicts surface before any write."""
    try:
        trial = spec(campaign, name=name, run_args=run_args, token="0" * 32, temp_parent=Path(tempfile.gettempdir()))
        trial_argv(trial)
        childenv.validate_passthrough(trial.env_passthrough)
    except TrialError as error:
        raise CampaignError(str(error)) from None


def run(
    campaign,
    *,
    name: str,
    run_args: list[str],
    kind: str,
    candidate: str | None = None,
    stage_files: dict[str, bytes] | None = None,
) -> TrialResult:
    """Run the trial (sealed when `stage_files` is given); the orphan marker exists exactly while it runs.

    The campaign's evidence is copied before the trial and checked after it (see `tamper`): a trial that
    changed it is a crash, whatever it scored, and the files are restored.
    """
    if stage_files is None:
        check_isolable(campaign)  # a contained trial would write to the job's literal simulator path
    token = secrets.token_hex(16)
    temp_parent = Path(tempfile.mkdtemp(prefix=TRIAL_TEMP_PREFIX))
    marker = marker_entry(token, name, kind, candidate, temp_parent, sealed=stage_files is not None)
    atomic.write_json(campaign.paths.trial_marker, dict(marker, runner_pid=os.getpid()))
    faults.checkpoint("trial:marker_written")
    start_plot_worker(campaign)
    try:
        result = run_marked(
            campaign,
            name=name,
            run_args=run_args,
            token=token,
            temp_parent=temp_parent,
            stage_files=stage_files,
            kind=kind,
        )
    finally:
        trees.remove_tree(temp_parent)  # iterative, never raises: a trial may leave a very deep tree
    return result


def marker_entry(token: str, name: str, kind: str, candidate: str | None, temp_parent: Path, *, sealed: bool) -> dict:
    """What the orphan marker records of one trial (a batch's marker lists one per trial under `trials`)."""
    return {
        "token": token,
        "name": name,
        "kind": kind,
        "candidate": candidate,
        "temp_dir": str(temp_parent),
        "sealed": sealed,
    }


def start_plot_worker(campaign) -> None:
    if getattr(campaign, "plot_worker", None) is None:
        campaign.plot_worker = PlotWorker.start()  # imports the plotting library while the child runs


def run_marked(
    campaign,
    *,
    name: str,
    run_args: list[str],
    token: str,
    temp_parent: Path,
    stage_files: dict[str, bytes] | None,
    gpu: str | None = None,
    progress_stream=None,
    slots: int = 1,
    kind: str | None = None,
) -> TrialResult:
    """One trial whose marker entry is already written: evidence guard, the child, trial.json. Safe to call from
    several threads at once for different `name`s (a batch of `slots` at a time); `gpu` is the child's
    CUDA_VISIBLE_DEVICES; a candidate (`kind`) gets the round judge when pruning is on (`pruning.judge_for`)."""
    guard = EvidenceGuard.take(campaign, live_workspace=stage_files is None)
    try:
        trial = spec(
            campaign,
            name=name,
            run_args=run_args,
            token=token,
            temp_parent=temp_parent,
            stage_files=stage_files,
            slots=slots,
        )
        trial.on_start = lambda _pid, _token: faults.checkpoint("trial:child_started")
        trial.cuda_visible_devices = gpu
        if progress_stream is not None:
            trial.progress_stream = progress_stream
        trial.round_judge = pruning.judge_for(campaign, kind)  # pruning: None unless a candidate with --prune
        result = run_trial(trial)
        if watchdog.infrastructure_stall(result.failure_reason):
            result = _run_again(campaign, trial, name, kind, result)
        faults.checkpoint("trial:child_finished")
    except TrialError as error:
        raise CampaignError(str(error)) from None
    except BaseException:  # interrupted: make sure no process of this trial outlives the runner
        from ..trial import processes

        processes.terminate_tree(None, (childenv.TOKEN_VAR, token))
        raise
    finally:
        restored = guard.restore()
    if restored:
        result = _tampered(result, restored)
    result = frozen_eval.measure(  # with a frozen evaluator, the score is measured on the final global model
        campaign, result, name=name, token=token, temp_parent=temp_parent, sealed=stage_files is not None
    )
    record = {key: value for key, value in result.to_dict().items() if key not in ("token", "pid")}
    record["rounds"] = round_records(campaign, name, result)
    atomic.write_json(campaign.paths.run_dir(name) / "trial.json", record)
    return result


def _run_again(campaign, trial: TrialSpec, name: str, kind: str | None, first: TrialResult) -> TrialResult:
    """Run the trial once more after NVFLARE's simulator lost a site's worker by itself (not the job's code): the
    first attempt's log stays as `run.attempt-1.log`; the result names what ended it and counts both runtimes."""
    run_dir = campaign.paths.run_dir(name)
    try:
        os.replace(run_dir / "run.log", run_dir / "run.attempt-1.log")
    except OSError:
        pass
    if trial.progress_stream is not None:
        print(
            f"[autofl {name}] {first.failure_reason}: the simulator lost a site's worker by itself; "
            "running the trial once more",
            file=trial.progress_stream,
            flush=True,
        )
    trial.attempt = 2
    trial.round_judge = pruning.judge_for(campaign, kind)
    result = run_trial(trial)
    return dataclasses.replace(
        result, retried_after=first.failure_reason, runtime_seconds=result.runtime_seconds + first.runtime_seconds
    )


def round_records(campaign, name: str, result: TrialResult) -> list[dict]:
    """The trial's metric per round and each site's value per round, from NVFLARE's round_metrics.jsonl in its
    copied result (kept in trial.json, so the report and `status` read them without the trial package)."""
    from ..trial import rounds

    metric = result.metric_name or campaign.settings.metric
    return rounds.as_records(rounds.read_rounds(campaign.paths.run_dir(name), metric))


def _tampered(result: TrialResult, restored: list[str]) -> TrialResult:
    """A trial that changed the campaign's evidence earns no score."""
    shown = ", ".join(restored[:8]) + (f" (+{len(restored) - 8} more)" if len(restored) > 8 else "")
    return result.crashed(f"tampering: the trial changed {shown}; the runner restored them", tampering=restored)


def envelope_extras(campaign, result: TrialResult) -> dict:
    """What an envelope says about how a trial ran: network, sandbox (and the missing protections), tampering
    found and restored, and the fixed budget as verified from what ran."""
    network = "allowed" if campaign.settings.allow_network else result.network_isolation or "unavailable: not requested"
    return {
        "network_isolation": network,  # isolated, allowed, or unavailable: <why>
        "sandbox": result.sandbox,
        "tampering": list(result.tampering),
        "budget": result.budget,
        **frozen_eval.manifest_fields(result),
    }


def clear_marker(campaign) -> None:
    campaign.paths.trial_marker.unlink(missing_ok=True)
