"""One trial of this campaign: the TrialSpec from the contract and settings, the orphan marker, trial.json.

`autofl_runs/<name>/` gets `run.log`, the copied `simulation/` and `trial.json` (argv, exit code, outcome,
watchdog, timings, the runner's own CPU while the child ran).

Before the child starts, `running_trial.json` records the trial token and its temp folder, so the next
action can end an orphaned trial tree and sweep its folder if this runner dies (see `recovery`). A plot
worker process is started with the trial so the plotting library is imported meanwhile (see
`campaign/plot_worker.py`).
Usage::

    result = run(campaign, name="lr-x2", run_args=["--lr", "0.1"], kind="candidate")
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from pathlib import Path

from ..campaign.plot_worker import PlotWorker
from ..common import atomic, faults, trees
from ..importer import runner_view as importer
from ..trial import childenv
from ..trial.argv import TrialError
from ..trial.execute import TrialResult, TrialSpec, run_trial
from .outcome import CampaignError
from .store import contract
from .store.paths import TRIAL_TEMP_PREFIX


def spec(campaign, *, name: str, run_args: list[str], token: str, temp_parent: Path) -> TrialSpec:
    """The TrialSpec of trial `name` with `run_args` under the campaign's fixed budget and settings."""
    config, settings, paths = campaign.config, campaign.settings, campaign.paths
    flags = importer.cli_flags(config)
    schema_budget = contract.schema_budget(config)
    timeout = max(float(settings["timeout"]), float(schema_budget.get("run_timeout_seconds") or 0))
    no_progress = schema_budget.get("simulator_no_progress_timeout_seconds", settings["simulator_no_progress_timeout"])
    return TrialSpec(
        python=settings["python"],
        job_path=paths.job,
        workspace=paths.workspace,
        run_dir=paths.run_dir(name),
        trial_name=name,
        metric_order=list((config.get("objective") or {}).get("metric_extraction_order") or [settings["metric"]]),
        budget_args=contract.budget_args(config),
        base_args=list(settings["base_args"]),
        run_args=list(run_args),
        flag_groups=[list(group) for group in flags["groups"]],
        name_flag=flags["name_flag"],
        switch_flags=[flag for flag, takes in flags["takes_value"].items() if not takes],
        expected_result_names=contract.expected_result_names(config),
        num_rounds=contract.num_rounds(config),
        mode=settings["mode"],
        timeout=timeout,
        no_progress_timeout=float(no_progress) or None,
        env_passthrough=contract.env_passthrough(config),
        uses_simenv=contract.uses_simenv(config),
        token=token,
        progress_stream=sys.stderr,
        temp_parent=temp_parent,
        isolate_network=not settings.get("allow_network", False),
    )


def check_args(campaign, name: str, run_args: list[str]) -> None:
    """Build the trial argv once without running anything: budget conflicts surface before any write."""
    token = "0" * 32
    try:
        from ..trial import argv as argv_mod

        trial = spec(campaign, name=name, run_args=run_args, token=token, temp_parent=Path(tempfile.gettempdir()))
        argv_mod.build_trial_argv(
            trial.python,
            trial.job_path,
            budget_args=trial.budget_args,
            base_args=trial.base_args,
            flag_groups=trial.flag_groups,
            name_flag=trial.name_flag,
            trial_name=name,
            workspace=trial.workspace,
            run_args=trial.run_args,
            switch_flags=trial.switch_flags,
        )
        childenv.validate_passthrough(trial.env_passthrough)
    except TrialError as error:
        raise CampaignError(str(error)) from None


def run(campaign, *, name: str, run_args: list[str], kind: str, candidate: str | None = None) -> TrialResult:
    """Run the trial; the orphan marker exists exactly while it runs."""
    token = secrets.token_hex(16)
    temp_parent = Path(tempfile.mkdtemp(prefix=TRIAL_TEMP_PREFIX))
    marker = {
        "token": token,
        "name": name,
        "kind": kind,
        "candidate": candidate,
        "temp_dir": str(temp_parent),
        "runner_pid": os.getpid(),
    }
    atomic.write_json(campaign.paths.trial_marker, marker)
    faults.checkpoint("trial:marker_written")
    if getattr(campaign, "plot_worker", None) is None:
        campaign.plot_worker = PlotWorker.start()  # imports the plotting library while the child runs
    try:
        try:
            trial = spec(campaign, name=name, run_args=run_args, token=token, temp_parent=temp_parent)
            trial.on_start = lambda _pid, _token: faults.checkpoint("trial:child_started")
            result = run_trial(trial)
            faults.checkpoint("trial:child_finished")
        except TrialError as error:
            raise CampaignError(str(error)) from None
        except BaseException:  # interrupted: make sure no process of this trial outlives the runner
            from ..trial import processes

            processes.terminate_tree(None, (childenv.TOKEN_VAR, token))
            raise
    finally:
        trees.remove_tree(temp_parent)  # iterative, never raises: a trial may leave a very deep tree
    record = {key: value for key, value in result.to_dict().items() if key not in ("token", "pid")}
    atomic.write_json(campaign.paths.run_dir(name) / "trial.json", record)
    return result


def network_status(campaign, result: TrialResult) -> str:
    """What the envelope says about the trial's network: isolated, allowed, or unavailable: <why>."""
    if campaign.settings.get("allow_network", False):
        return "allowed"
    return result.network_isolation or "unavailable: not requested"


def clear_marker(campaign) -> None:
    campaign.paths.trial_marker.unlink(missing_ok=True)
