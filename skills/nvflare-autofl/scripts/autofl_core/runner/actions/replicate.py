"""replicate: rerun the best configuration K times, each an isolated trial, to measure run-to-run noise.

Appends `replicate` rows named `replicate_<best>_<n>` (base_candidate = the best): never attempts, never
counted toward the cap, never a new best; the guard folds their scores into `noise{...}`. When job.py has a
seed option the best configuration sets (`noise.seed_option`), replicate n passes the n-th positive seed other
than the best's own (seeds 1..K after seed 0; later calls continue the numbering); otherwise the reruns are
identical. Simulation only. Sealed reruns run concurrently, `--parallel K` at a time (the batch default otherwise,
see `batch_trials`); their rows are appended in replicate order, and after an infrastructure retry no later
rerun is recorded (as when they ran one by one).
Refused (exit 2, nothing written): outside sim, without a scored best, with a pending candidate or a stop
file, or when the workspace differs from the best snapshot. Exit 1 when a replicate ended without a score
(recorded), 75 when the sandbox denied it (recorded as an infrastructure retry; the loop stops).
"""

from __future__ import annotations

import re

from ...campaign import instructions, ledger
from ...campaign import vocabulary as v
from ...campaign.compare import improvement
from ...campaign.ledger import LedgerRow
from ...importer import noise_sources
from ...trial.execute import TrialResult
from .. import batch_trials, campaign_trial, noise, runargs
from .. import state as state_mod
from ..outcome import EXIT_OK, EXIT_SANDBOX, EXIT_UNSCORED, ActionResult, CampaignError, Interrupted
from ..report import curves
from ..store import snapshots, sources

DEFAULT_COUNT = 3
MAX_COUNT = 10
BEST_PART = 64 - len("replicate_") - len("_9999")  # room for four-digit replicate numbers


def run(campaign, options, now: str) -> ActionResult:
    count = DEFAULT_COUNT if options.count is None else options.count
    if not 1 <= count <= MAX_COUNT:
        raise CampaignError(f"--count must be between 1 and {MAX_COUNT}, got {count}")
    best = _check_allowed(campaign, now)
    seed = noise.seed_option(campaign)
    first = next_number(campaign.rows(), best.name)
    plan = []
    for n in range(first, first + count):
        value = noise.replicate_seed(n, current=seed[1]) if seed else None
        plan.append((n, replicate_name(best.name, n), _run_args(campaign, seed, value), value))
    for _n, name, args, _value in plan:
        campaign_trial.check_args(campaign, name, args)
    done, code, trial = [], EXIT_OK, {}
    trials, width = _trials(campaign, plan, options.parallel)
    for (n, name, _args, value), result in trials:
        how = f"{seed[0]} {value}" if seed else "identical rerun"
        row = _record(campaign, best, n, name, result, how)
        extras = campaign_trial.envelope_extras(campaign, result)
        trial = {**extras, "tampering": sorted(set(trial.get("tampering", [])) | set(extras["tampering"]))}
        done.append(
            {
                "name": name,
                "score": row.score,
                "seed": value,
                "failure_reason": row.failure_reason or None,
                "delta": improvement(row.score, best.score, campaign.settings.mode),
                "sites": curves.site_values(campaign, row),
            }
        )
        if row.status == v.INFRASTRUCTURE_RETRY:
            code = EXIT_SANDBOX
            break
        if row.score is None:
            code = EXIT_UNSCORED
    context = state_mod.compute(campaign, now)["noise_context"]
    found = noise.sources(campaign)
    extras = {
        "replicates": done,
        "parallel": width,
        "seed_option": seed[0] if seed else None,
        "replicate_note": " ".join(
            part for part in (instructions.replicate_note(context).strip(), noise_sources.sentence(found)) if part
        ),
        "noise_sources": found,
        "best_candidate": best.name,
        "best_score": best.score,
        "noise_verdict": context["best_gain_verdict"],
        **trial,
    }
    return ActionResult(extras=extras, exit_code=code, ledger_changed=True)


def replicate_name(best: str, n: int) -> str:
    """`replicate_<best>_<n>`; a long best name is cut so the name stays a valid 64-character trial name."""
    return f"{_prefix(best)}_{n}"


def next_number(rows: list[LedgerRow], best: str) -> int:
    """1 + the highest replicate number already used for `best` (rows of any status carry the name)."""
    pattern = re.compile(re.escape(_prefix(best)) + r"_(\d+)")
    used = [int(m.group(1)) for row in rows for m in [pattern.fullmatch(row.name)] if m]
    return max(used, default=0) + 1


def _prefix(best: str) -> str:
    return "replicate_" + best[:BEST_PART]


def _check_allowed(campaign, now: str) -> dict:
    if campaign.settings.env != "sim":
        raise CampaignError(
            "replicate runs simulations only; in poc/prod rerun the best configuration by hand and "
            "record nothing (replicates of external runs are not supported)"
        )
    best = campaign.best_row()
    if best is None:
        raise CampaignError("there is no scored best to replicate yet; run initialize until the baseline has a score")
    state = state_mod.compute(campaign, now)
    if state["stop_files"]:
        raise CampaignError(
            f"a stop file is present ({', '.join(state['stop_files'])}); replicate runs no more "
            "simulations after a manual stop"
        )
    if state["pending_candidates"]:
        raise CampaignError("a candidate is pending; evaluate or abandon it before replicating the best")
    drift = snapshots.workspace_drift(campaign.paths, campaign.best())
    if drift:
        raise CampaignError(
            f"the workspace differs from the best snapshot ({', '.join(drift)}); undo those edits first"
        )
    return best


def _run_args(campaign, seed: tuple[str, str] | None, value: str | None) -> list[str]:
    best_args = campaign.best_run_args()
    if seed is None:
        return best_args
    pairs = runargs.merge(runargs.pairs_from_tokens(campaign.config, best_args), [(seed[0], value)])
    return runargs.flatten(pairs)


def _trials(campaign, plan: list, parallel: int | None) -> tuple:
    """(an iterator of (plan entry, TrialResult) in plan order, trials run at a time): sealed reruns run
    concurrently (at most `parallel` at a time, see `batch_trials`), contained ones one by one (a rerun's ledger
    row is written before the next starts)."""
    staged = campaign_trial.sealed_view(campaign)
    if staged is None or (len(plan) == 1 and parallel is None):
        return ((entry, _trial(campaign, entry[1], entry[2], staged)) for entry in plan), 1
    requests = [batch_trials.Request(name, args, staged, kind=v.REPLICATE) for _n, name, args, _v in plan]
    try:
        results, width = batch_trials.run_all(campaign, requests, parallel=parallel)
    finally:
        campaign_trial.clear_marker(campaign)
    return zip(plan, results, strict=True), width


def _trial(campaign, name: str, args: list[str], staged) -> TrialResult:
    try:
        return campaign_trial.run(campaign, name=name, run_args=args, kind=v.REPLICATE, stage_files=staged)
    except (CampaignError, Interrupted, KeyboardInterrupt):
        campaign_trial.clear_marker(campaign)
        raise


def _record(campaign, best: LedgerRow, n: int, name: str, result: TrialResult, how: str) -> LedgerRow:
    """The ledger row of one replicate trial (the workspace is restored if the run changed managed source)."""
    paths = campaign.paths
    snapshot = campaign.best()
    drift = sources.differing(paths.workspace, snapshot.hashes)
    reason = result.failure_reason
    if drift:
        snapshots.restore_workspace(paths, snapshot)
        reason = f"managed source changed while the replicate ran: {', '.join(drift)}"
    scored = result.outcome == v.OUTCOME_SUCCESS and not drift
    row = v.replicate_row(
        name=name,
        base_candidate=best.name,
        diff_summary=f"replicate {n} of {best.name}; {how}",
        score=result.score if scored else None,
        runtime_seconds=result.runtime_seconds,
        run_command=result.run_command,
        artifacts=paths.rel(paths.run_dir(name)),
        failure_reason=None if scored else (reason or "no score"),
        metric_name=result.metric_name if scored else None,
        metric_source=result.metric_source if scored else None,
        metric_artifact=result.metric_artifact if scored else None,
    )
    if result.outcome == v.OUTCOME_INFRASTRUCTURE_RETRY:
        row = v.infrastructure_retry_row(row)
    written = ledger.append_row(paths.results, row)
    campaign_trial.clear_marker(campaign)
    return written
