"""initialize: import + admission in memory, then (under the lock) autofl.yaml, the best snapshot,
campaign.json and, in simulation, the baseline. On an existing campaign: settings were merged by the shell;
retry an unscored simulation baseline as `baseline_retry_N`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .. import childenv
from ..importer import api as importer
from ..importer.files import JobImportError
from . import baseline, contract, metadata, snapshots, sources, trials
from .campaign import Campaign
from .errors import EXIT_OK, CampaignError
from .lock import workspace_lock
from .outcome import ActionResult
from .paths import OUTPUT_KEYS, CampaignPaths

PYTHON_CHECK_TIMEOUT = 120


def import_config(job: Path, settings_or_given: dict) -> dict:
    """Static import of job.py with the campaign's metric and base args; admission errors are rejections."""
    try:
        config = importer.import_job(
            job, metric=settings_or_given.get("metric"), base_args=settings_or_given.get("base_args") or []
        )
    except JobImportError as error:
        raise CampaignError(str(error)) from None
    errors = config["admission_errors"]
    if errors:
        more = f" (and {len(errors) - 1} more: see job_importer.py)" if len(errors) > 1 else ""
        raise CampaignError(f"job.py is not admissible: {errors[0]['code']}: {errors[0]['message']}{more}")
    return config


def new_campaign(options, given: dict, now: str) -> tuple[int, dict]:
    from . import lifecycle
    from . import state as state_mod

    if getattr(options, "confirm_user_approved_cap_change", False):
        raise CampaignError("--confirm-user-approved-cap-change: a new campaign has no cap to raise; drop it")
    probe = CampaignPaths.for_job(options.job, {})
    config = import_config(probe.job, given)
    env = given.get("env") or "sim"
    if env == "sim" and contract.is_export_only(config):
        raise CampaignError(
            "job.py only exports the job (no SimEnv run), so --env sim cannot run it; use --env poc "
            "or --env prod, or make job.py run recipe.execute(SimEnv(...))"
        )
    from .settings import new_settings

    settings = new_settings(given, os.environ, config)
    paths = CampaignPaths.for_job(options.job, {key: settings[key] for key in OUTPUT_KEYS})
    check_outputs(paths, contract.allowed_edit_paths(config))
    files = sources.read_files(paths.workspace, contract.allowed_edit_paths(config))
    meta = metadata.new_metadata(paths, settings, budget_sha256=contract.budget_digest(config), now=now)
    campaign = Campaign(paths=paths, meta=meta, config=config)
    trials.check_args(campaign, "baseline", [])
    if env == "sim":
        check_python(settings["python"], paths.workspace)
    with workspace_lock(paths.lock):
        if metadata.exists(paths):
            raise CampaignError(f"a campaign was created in {paths.workspace} meanwhile; rerun initialize")
        had_config = paths.autofl_yaml.exists()
        try:
            contract.write(paths.autofl_yaml, config)
            snapshots.install(paths, files, candidate="baseline")
            metadata.write(paths, meta)  # the commit point: from here on the campaign exists
        except BaseException:
            _undo_new_campaign(paths, had_config)
            raise
        campaign.forget()
        try:
            code, network = baseline.run(campaign) if env == "sim" else (EXIT_OK, None)
            state = lifecycle.refresh(campaign, lifecycle.now_text(), ledger_changed=True)
        finally:
            lifecycle.stop_plot_worker(campaign)
    extras = {"initialized": True, "baseline_retried": False}
    if network:
        extras["network_isolation"] = network
    return code, state_mod.envelope(paths, state, extras)


def _undo_new_campaign(paths: CampaignPaths, had_config: bool) -> None:
    """Remove what a failed initialize wrote before campaign.json existed (best effort, never raises)."""
    import shutil

    if not had_config:
        paths.autofl_yaml.unlink(missing_ok=True)
    shutil.rmtree(paths.snapshots, ignore_errors=True)
    paths.campaign.unlink(missing_ok=True)


def existing(campaign, options, now: str) -> ActionResult:
    """initialize on an existing campaign: retry an unscored simulation baseline, otherwise report the state."""
    rows = campaign.rows()
    scored = any(row["status"] == "baseline" and row["score"] is not None for row in rows)
    attempts = any(row["status"] in ("keep", "discard", "crash") for row in rows)
    if scored or attempts or campaign.settings["env"] != "sim":
        return ActionResult(extras={"initialized": False, "baseline_retried": False})
    _refresh_baseline_source(campaign)
    check_python(campaign.settings["python"], campaign.paths.workspace)
    code, network = baseline.run(campaign)
    return ActionResult(
        extras={"initialized": False, "baseline_retried": True, "network_isolation": network},
        exit_code=code,
        ledger_changed=True,
    )


def _refresh_baseline_source(campaign) -> None:
    """Before any attempt, a repaired job.py/client (environment or metric extraction) becomes the baseline
    source, provided the fixed budget and the objective stay exactly as imported."""
    paths = campaign.paths
    best = campaign.best()
    if not snapshots.workspace_drift(paths, best):
        return
    config = import_config(paths.job, campaign.settings)
    if contract.budget_digest(config) != campaign.meta["fixed_budget_sha256"]:
        raise CampaignError(
            "the repaired job.py changes the fixed budget; a baseline repair may fix the environment "
            "or the metric extraction only (start a fresh workspace for another budget)"
        )
    if contract.objective_invariants(config) != contract.objective_invariants(campaign.config):
        raise CampaignError("the repaired job.py changes the objective; start a fresh campaign in a new workspace")
    files = sources.read_files(paths.workspace, contract.allowed_edit_paths(campaign.config))
    snapshots.install(paths, files, candidate="baseline")
    campaign.forget()


def check_outputs(paths: CampaignPaths, sources_rel: list[str]) -> None:
    """Output files must not alias each other, job sources or campaign internals."""
    outputs = {key: getattr(paths, key) for key in OUTPUT_KEYS}
    seen: dict[Path, str] = {}
    protected = {(paths.workspace / rel).resolve(): rel for rel in sources_rel}
    protected[paths.job.resolve()] = paths.job.name
    for key, path in outputs.items():
        real = path.resolve()
        if real in protected:
            raise CampaignError(
                f"--{key.replace('_', '-')} {path} would overwrite the job source {protected[real]}; pick another path"
            )
        if real in seen:
            raise CampaignError(
                f"--{key.replace('_', '-')} and --{seen[real].replace('_', '-')} name the same path "
                f"{path}; give each its own"
            )
        if real.is_relative_to(paths.meta.resolve()) and key != "state":
            raise CampaignError(
                f"--{key.replace('_', '-')} {path} is inside the campaign's private folder; pick another"
            )
        seen[real] = key


def check_python(python: str, workspace: Path) -> None:
    """The trial interpreter must start and import nvflare (otherwise every trial would crash and count)."""
    env = childenv.build_child_env(os.environ, passthrough=[], simulator_root=workspace, token="python-check")
    code = (
        "import importlib.metadata as m, importlib.util as u, sys\n"
        "if u.find_spec('nvflare') is None: sys.exit('ModuleNotFoundError: No module named nvflare')\n"
        "print(m.version('nvflare'))"
    )  # finds nvflare without importing it (that takes seconds)
    try:
        done = subprocess.run(
            [python, "-c", code],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=PYTHON_CHECK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise CampaignError(
            f"--python {python} cannot be started ({error}); pass an interpreter that has nvflare installed"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CampaignError(
            f"--python {python} cannot import nvflare ({last}); install nvflare==2.9.0 for it or pass "
            "--python with an interpreter that has it"
        )
