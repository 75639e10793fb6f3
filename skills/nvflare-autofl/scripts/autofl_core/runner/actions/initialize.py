"""initialize: a new campaign, or a baseline retry on an existing one.

New workspace (the shell calls `admit`, then `create` under the lock, then `start` as the action): import +
admission in memory, then autofl.yaml, the best snapshot, campaign.json and, in simulation, the baseline.
Existing campaign (`run`): settings were merged by the shell; retry an unscored simulation baseline as
`baseline_retry_N`.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ...campaign import ledger
from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from ...common import trees
from ...trial import childenv
from .. import campaign_trial, data_fixed, frozen_request, preflight
from ..open_campaign import Campaign
from ..outcome import EXIT_OK, EXIT_SANDBOX, EXIT_UNSCORED, ActionResult, CampaignError
from ..settings import FLAGS, new_settings
from ..store import contract, frozen, metadata, snapshots, sources
from ..store.paths import OUTPUT_KEYS, CampaignPaths

PYTHON_CHECK_TIMEOUT = 120
RETRY_RE = re.compile(r"baseline_retry_(\d+)")


def admit(options, given: dict, now: str) -> tuple[Campaign, dict[str, bytes]]:
    """Import, admission, settings and output checks of a new campaign, in memory: a rejection writes nothing.

    Returns the campaign to create and the managed source files of its first best snapshot.
    """
    if getattr(options, "confirm_user_approved_cap_change", False):
        raise CampaignError("--confirm-user-approved-cap-change: a new campaign has no cap to raise; drop it")
    probe = CampaignPaths.for_job(options.job, {})
    config = contract.import_config(probe.job, given)
    env = given.get("env") or "sim"
    if env == "sim" and contract.is_export_only(config):
        raise CampaignError(
            "job.py only exports the job (no SimEnv run), so --env sim cannot run it; use --env poc "
            "or --env prod, or make job.py run recipe.execute(SimEnv(...))"
        )
    settings = new_settings(given, os.environ, config)
    paths = CampaignPaths.for_job(options.job, {key: settings[key] for key in OUTPUT_KEYS})
    config = frozen_request.with_evaluation(config, options, paths)  # --evaluator: the score is measured
    config = data_fixed.with_fixed_args(config, list(getattr(options, "fixed_args", None) or []))
    check_outputs(paths, contract.allowed_edit_paths(config))
    files = sources.read_files(paths.workspace, contract.allowed_edit_paths(config))
    contract.note_classified_folder(config, paths)
    meta = metadata.new_metadata(paths, settings, budget_sha256=contract.budget_digest(config), now=now)
    campaign = Campaign(paths=paths, meta=meta, config=config)
    campaign_trial.check_args(campaign, v.BASELINE_NAME, [])
    if env == "sim":
        check_python(settings["python"], paths.workspace)
        campaign_trial.check_isolable(campaign)
    _PREFLIGHT[id(campaign)] = check_system(campaign, options, env)
    return campaign, files


_PREFLIGHT: dict[int, dict | None] = {}  # admit's preflight result, for the envelope of `start`


def check_system(campaign, options, env: str) -> dict | None:
    """poc/prod with a kit given: the preflight of the system (exit 2 on a mismatch); None without a kit."""
    kit = preflight.kit_of(options)
    if kit is None:
        return None
    if env == "sim":
        raise CampaignError("--startup-kit and --kit-id apply to --env poc|prod (a simulation needs no kit); drop it")
    sites = preflight.check(
        campaign.settings.python,
        kit,
        num_clients=contract.num_clients(campaign.config),
        job_folder=campaign.paths.workspace,
    )
    return {"kit": kit.shown(), "sites": sites}


def create(campaign: Campaign, files: dict[str, bytes]) -> None:
    """Write autofl.yaml, the best snapshot and campaign.json (the commit point); the caller holds the lock.

    A failure before campaign.json exists removes what was written, so the workspace stays as it was.
    """
    paths = campaign.paths
    if metadata.exists(paths):
        raise CampaignError(f"a campaign was created in {paths.workspace} meanwhile; rerun initialize")
    had_config = paths.autofl_yaml.exists()
    try:
        contract.write(paths.autofl_yaml, campaign.config)
        snapshots.install(paths, files, candidate=v.BASELINE_NAME)
        frozen.install_from_workspace(paths, campaign.config)
        metadata.write(paths, campaign.meta)  # the commit point: from here on the campaign exists
    except BaseException:
        _undo_new_campaign(paths, had_config)
        raise


def start(campaign, options, now: str) -> ActionResult:
    """The first step of a new campaign: the baseline in simulation (poc/prod: submit_baseline follows)."""
    code, trial = run_baseline(campaign) if campaign.settings.env == "sim" else (EXIT_OK, {})
    extras = {"initialized": True, "baseline_retried": False, **trial}
    checked = _PREFLIGHT.pop(id(campaign), None)
    if checked is not None:
        extras["preflight"] = checked
    return ActionResult(extras=extras, exit_code=code, ledger_changed=True)


def run(campaign, options, now: str) -> ActionResult:
    """initialize on an existing campaign: retry an unscored simulation baseline, otherwise report the state."""
    frozen_request.check_unchanged(campaign.config, options)
    if data_fixed.with_fixed_args(campaign.config, list(options.fixed_args or [])) != campaign.config:
        raise CampaignError("--fixed-args is fixed when the campaign starts; start a fresh campaign to pin more")
    rows = campaign.rows()
    scored = any(row.status == v.BASELINE and row.score is not None for row in rows)
    attempts = any(row.status in v.ATTEMPTS for row in rows)
    checked = check_system(campaign, options, campaign.settings.env)
    if checked is not None:
        return ActionResult(extras={"initialized": False, "baseline_retried": False, "preflight": checked})
    if scored or attempts or campaign.settings.env != "sim":
        return ActionResult(extras={"initialized": False, "baseline_retried": False})
    _refresh_baseline_source(campaign)
    check_python(campaign.settings.python, campaign.paths.workspace)
    code, trial = run_baseline(campaign)
    return ActionResult(
        extras={"initialized": False, "baseline_retried": True, **trial},
        exit_code=code,
        ledger_changed=True,
    )


def next_baseline_name(rows: list[LedgerRow]) -> str:
    """`baseline` for the first attempt, then `baseline_retry_N`."""
    used = [row.name for row in rows if row.name == v.BASELINE_NAME or RETRY_RE.fullmatch(row.name)]
    return v.BASELINE_NAME if not used else f"baseline_retry_{len(used)}"


def run_baseline(campaign) -> tuple[int, dict]:
    """Run the next baseline attempt and record its row: scored, unscored (exit 1) or a sandbox denial (75).

    Returns the exit code and what the envelope says about how the trial ran (`campaign_trial.envelope_extras`).
    """
    paths = campaign.paths
    name = next_baseline_name(campaign.rows())
    result = campaign_trial.run(
        campaign, name=name, run_args=[], kind=v.BASELINE, stage_files=campaign_trial.sealed_view(campaign)
    )
    row = v.baseline_row(
        name=name,
        score=result.score,
        runtime_seconds=result.runtime_seconds,
        run_command=result.run_command,
        artifacts=paths.rel(paths.run_dir(name)),
        failure_reason=result.failure_reason,
        metric_name=result.metric_name,
        metric_source=result.metric_source,
        metric_artifact=result.metric_artifact,
    )
    denied = result.outcome == v.OUTCOME_INFRASTRUCTURE_RETRY
    ledger.append_row(paths.results, v.infrastructure_retry_row(row) if denied else row)
    campaign_trial.clear_marker(campaign)
    trial = campaign_trial.envelope_extras(campaign, result)
    if denied:
        return EXIT_SANDBOX, trial
    return (EXIT_OK if result.score is not None else EXIT_UNSCORED), trial


def _undo_new_campaign(paths: CampaignPaths, had_config: bool) -> None:
    """Remove what a failed initialize wrote before campaign.json existed (best effort, never raises)."""
    if not had_config:
        paths.autofl_yaml.unlink(missing_ok=True)
    trees.remove_tree(paths.snapshots)
    trees.remove_tree(paths.meta / frozen.FOLDER)
    (paths.meta / frozen.SECTION_DIGEST).unlink(missing_ok=True)
    paths.campaign.unlink(missing_ok=True)


def _refresh_baseline_source(campaign) -> None:
    """Before any attempt, a repaired job.py/client (environment or metric extraction) becomes the baseline
    source, provided the fixed budget and the objective stay exactly as imported."""
    paths = campaign.paths
    best = campaign.best()
    if not snapshots.workspace_drift(paths, best):
        return
    config = contract.import_config(paths.job, campaign.settings.to_json())
    if contract.budget_digest(config) != campaign.meta["fixed_budget_sha256"]:
        raise CampaignError(
            "the repaired job.py changes the fixed budget; a baseline repair may fix the environment "
            "or the metric extraction only (start a fresh workspace for another budget)"
        )
    if contract.objective_invariants(config) != contract.objective_invariants(campaign.config):
        raise CampaignError("the repaired job.py changes the objective; start a fresh campaign in a new workspace")
    files = sources.read_files(paths.workspace, contract.allowed_edit_paths(campaign.config))
    snapshots.install(paths, files, candidate=v.BASELINE_NAME)


def check_outputs(paths: CampaignPaths, sources_rel: list[str]) -> None:
    """Output files must not alias each other, job sources or campaign internals."""
    outputs = {key: getattr(paths, key) for key in OUTPUT_KEYS}
    seen: dict[Path, str] = {}
    protected = {(paths.workspace / rel).resolve(): rel for rel in sources_rel}
    protected[paths.job.resolve()] = paths.job.name
    for key, path in outputs.items():
        real, flag = path.resolve(), FLAGS[key]
        if real in protected:
            raise CampaignError(f"{flag} {path} would overwrite the job source {protected[real]}; pick another path")
        if real in seen:
            raise CampaignError(f"{flag} and {seen[real]} name the same path {path}; give each its own")
        if real.is_relative_to(paths.meta.resolve()) and key != "state":
            raise CampaignError(f"{flag} {path} is inside the campaign's private folder; pick another")
        seen[real] = flag


def check_python(python: str, workspace: Path) -> None:
    """The trial interpreter must start and import nvflare (otherwise every trial would crash and count).

    Isolated and started outside the job (`childenv.helper_argv`): a module a candidate left in the workspace
    (an `importlib.py`) is never imported by this check, which runs outside any trial's sandbox.
    """
    env = childenv.build_child_env(os.environ, passthrough=[], simulator_root=workspace, token="python-check")
    code = (
        "import importlib.metadata as m, importlib.util as u, sys\n"
        "if u.find_spec('nvflare') is None: sys.exit('ModuleNotFoundError: No module named nvflare')\n"
        "print(m.version('nvflare'))"
    )  # finds nvflare without importing it (that takes seconds)
    try:
        done = childenv.run_helper(python, code, env, workspace, PYTHON_CHECK_TIMEOUT)
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
