"""autofl_report.md and autofl_report.json: what the campaign found and why the best is the best.

Written after every ledger change (an interim report while the campaign runs) and by the `report` action /
`campaign_report.py` (the final report, behind the refusal rules of `gate`). `build` gathers the
campaign's facts into one JSON-ready dict (schema `nvflare.autofl.report.v1`); `markdown.render` turns
it into the human report. Usage::

    data = build(campaign, state, plot_available=True)
    write(outputs_of(campaign.paths), data)        # both files, atomically
    plot.render(campaign.rows(), campaign.paths.progress, **plot_options(campaign, state))   # progress.png
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ...campaign import compare, gains, prune
from ...campaign import vocabulary as v
from ...campaign.ledger import LedgerRow
from ...common import atomic, faults, stamps
from .. import noise, pointers
from .. import state as state_mod
from ..store.contract import BUDGET_FIELDS
from . import curves, facts, markdown, run_records, score_provenance, warning_rules

SCHEMA = "nvflare.autofl.report.v1"


@dataclass(frozen=True)
class Outputs:
    """Where one report goes: the markdown, the JSON beside it, the progress plot."""

    report: Path
    report_json: Path
    progress: Path


@dataclass
class Context:
    """How this report came to be (defaults: the refresh after a ledger change)."""

    generated_by: str = "refresh"
    confirm_interrupted: bool = False
    lock: str = "held"
    missing_columns: tuple = ()
    stored_state: dict | None = None  # campaign_state.json as found (None: missing or unreadable)
    stored_state_read: bool = False  # False: the refresh, whose state file is the state being written now
    notes: list = field(default_factory=list)


def outputs_of(paths) -> Outputs:
    return Outputs(report=paths.report, report_json=paths.report_json, progress=paths.progress)


def render_plot(campaign, output: Path, options: dict) -> bool:
    """Draw progress.png at `output` in this process with `plot_options`; False when no image could be drawn (a
    text summary beside it instead)."""
    from ...campaign import plot

    return plot.render(campaign.rows(), output, **options)["backend"] != "text"


def plot_options(campaign, state: dict) -> dict:
    """What progress.png shows besides the ledger (the refresh, its plot worker and the report gate draw with it):
    metric, direction, the noise band (`state["noise"]`), the batches of candidates that ran together and the
    round curves of the baseline, the best and the latest candidates (`curves`)."""
    return {
        "metric": campaign.settings.metric,
        "mode": campaign.settings.mode,
        "band": gains.band(state["noise"]),
        "batches": facts.batches(campaign.manifests()),
        "curves": [
            {key: curve[key] for key in ("name", "role", "rounds", "values")} for curve in curves.read_curves(campaign)
        ],
    }


@dataclass(frozen=True)
class _Standing:
    """The ledger judged once for the whole report: the walk over its rows, the baseline and the best, the noise
    band and the headline verdict of the best."""

    rows: list[LedgerRow]
    walk: facts.Walk
    measured: dict | None  # the noise estimate the band comes from (noise.latest_measured)
    band: float | None
    known: dict  # noise.facts: the metric's resolution and whether replicates vary
    best: LedgerRow | None
    baseline: LedgerRow | None
    observed: dict | None  # facts.best_observed: a better discard, shown and never selected
    helped: dict  # facts.what_helped
    verdict: str | None  # the headline's noise verdict of the best (None: no best, or the best is the baseline)


def build(
    campaign, state: dict, *, plot_available: bool, context: Context | None = None, outputs: Outputs | None = None
) -> dict:
    """The campaign's facts as one JSON-ready dict (schema `SCHEMA`), its keys in the order the JSON shows them."""
    context = context or Context()
    outputs = outputs or outputs_of(campaign.paths)
    judged = _standing(campaign, state)
    return {
        "schema_version": SCHEMA,
        "generated_at": stamps.now_text(),
        "provenance": _provenance(state, context),
        **_setup(campaign, judged.rows),
        **_outcome(campaign, state, judged),
        **_history(judged, campaign.settings.exploration_batch_size),
        "noise": _noise(campaign, judged),
        "warnings": warning_rules.collect(_evidence(campaign, state, context, judged)),
        "compute": _compute(campaign, context.stored_state or state, judged.rows),
        **_isolation(campaign, judged.rows),
        **_boards(campaign, judged),
        "artifacts": _artifacts(campaign.paths, outputs, plot_available),
        **_curves(campaign, judged.rows, outputs, plot_available),
    }


def _standing(campaign, state: dict) -> _Standing:
    settings = campaign.settings
    rows = campaign.rows()
    walk = facts.walk_rows(rows, settings.mode)
    measured = noise.latest_measured(campaign)
    band = gains.band(measured)
    known = noise.facts(campaign)
    judge = {"metric": settings.metric, "resolution": known["metric_resolution"]}
    best = rows[walk.best] if walk.best is not None else None
    baseline = rows[walk.baseline] if walk.baseline is not None else None
    helped = facts.what_helped(walk, band, **judge)
    verdict = (
        None if best is None or best is baseline else _headline_verdict(state, helped, best, baseline, band, judge)
    )
    return _Standing(
        rows=rows,
        walk=walk,
        measured=measured,
        band=band,
        known=known,
        best=best,
        baseline=baseline,
        observed=facts.best_observed(rows, walk),
        helped=helped,
        verdict=verdict,
    )


def _setup(campaign, rows: list[LedgerRow]) -> dict:
    """What the campaign optimises and with which fixed budget."""
    paths, config = campaign.paths, campaign.config
    return {
        "objective": _objective(campaign.settings, config),
        "score": score_provenance.section(campaign, rows),
        "config": paths.rel(paths.autofl_yaml),
        "fixed_budget": {key: (config.get("fixed_budget") or {}).get(key, {}).get("value") for key in BUDGET_FIELDS},
    }


def _outcome(campaign, state: dict, judged: _Standing) -> dict:
    """Where the campaign stands: its candidate budget and state, the selected best and how to rerun it."""
    return {
        "candidate_budget": {
            "cap": state["candidate_cap"],
            "attempts": state["candidate_attempts"],
            "remaining": state["remaining_candidates"],
        },
        "state": {
            **{key: state[key] for key in ("decision", "reason", "next_action", "final_response_allowed", "plateau")},
            "pending_at_stop": _pending_at_stop(campaign, state),
        },
        "selected": _selected(campaign, state, judged),
        "best_observed": judged.observed,
        "baseline": _score_of(judged.baseline),
        "best": _score_of(judged.best),
        "improvement": state["improvement"],
        "best_command": _best_command(campaign, judged.best),
        "best_lives": pointers.best_lives(campaign),
    }


def _history(judged: _Standing, batch_size) -> dict:
    """What the walk over the ledger found: what helped and what did not, literature, families, trajectory."""
    rows, walk = judged.rows, judged.walk
    return {
        "what_helped": judged.helped,
        "what_did_not_help": facts.what_did_not_help(rows, walk),
        "literature": facts.literature_outcomes(rows, walk, batch_size=batch_size),
        "families": facts.families(rows, walk),
        "trajectory": facts.trajectory(rows, walk),
    }


def _noise(campaign, judged: _Standing) -> dict:
    known = judged.known
    return dict(
        _noise_section(judged.rows, judged.measured, judged.band),
        metric_resolution=known["metric_resolution"],  # what the section says when nothing is measured
        resolution_source=known["resolution_source"],
        replicates_vary=known["replicates"],
        sources=noise.sources(campaign),
    )


def _evidence(campaign, state: dict, context: Context, judged: _Standing) -> warning_rules.Evidence:
    return warning_rules.Evidence(
        rows=judged.rows,
        best=judged.best,
        baseline=judged.baseline,
        best_run_args=campaign.best_run_args(),
        metric=campaign.settings.metric,
        missing_columns=tuple(context.missing_columns),
        fresh_state=state,
        stored_state=context.stored_state if context.stored_state_read else state,
        meta=campaign.meta,
        manifest_status={m.candidate_id: m.status for m in campaign.manifests()},
        best_observed=judged.observed,
        gain_verdict=judged.verdict,
        band=judged.band,
    )


def _compute(campaign, state: dict, rows: list[LedgerRow]) -> dict:
    return dict(
        facts.compute_spent(rows), **run_records.wall_time(campaign, state), batches=facts.batches(campaign.manifests())
    )


def _isolation(campaign, rows: list[LedgerRow]) -> dict:
    """How the latest runner trial could reach the network, and its sandbox record."""
    latest_trial = run_records.latest_trial(rows, campaign)
    sandbox = latest_trial.get("sandbox")
    return {
        "network": {
            "allow_network": bool(campaign.settings.allow_network),
            "latest_trial": run_records.trial_network(latest_trial),
        },
        "sandbox": {"latest_trial": sandbox if isinstance(sandbox, dict) else None},
    }


def _boards(campaign, judged: _Standing) -> dict:
    """The leaderboard, the failures and the abandoned candidates; the cap and setting changes on record."""
    rows = judged.rows
    budgets = run_records.budgets(campaign, rows)
    return {
        "leaderboard": _with_sites(
            [_entry(row, budgets) for row in rows if row.status != v.LITERATURE],
            {v.BASELINE: judged.baseline, "best": judged.best},
            campaign,
        ),
        "failures": [_entry(row, budgets) for row in rows if row.status in v.FAILURES],
        "abandoned": sorted(m.candidate_id for m in campaign.manifests() if m.status == v.ABANDONED),
        "cap_changes": list(campaign.meta.get("cap_changes") or []),
        "setting_changes": list(campaign.meta.get("setting_changes") or []),
    }


def _artifacts(paths, outputs: Outputs, plot_available: bool) -> dict:
    return dict(
        {key: str(value) for key, value in paths.envelope_paths().items()},
        report=str(outputs.report),
        report_json=str(outputs.report_json),
        # the picture, or the text summary written instead (never a path to a picture that is not there)
        progress=str(outputs.progress if plot_available else outputs.progress.with_suffix(".txt")),
    )


def _curves(campaign, rows: list[LedgerRow], outputs: Outputs, plot_available: bool) -> dict:
    """The round curves, their summary and where the progress plot is, relative to the report."""
    round_curves = curves.read_curves(campaign, rows)
    return {
        "curves": round_curves,
        "curves_summary": curves.describe(round_curves, campaign.settings.mode),
        "progress_plot_available": plot_available,
        "progress_plot": os.path.relpath(outputs.progress, outputs.report.parent) if plot_available else None,
    }


def _pending_at_stop(campaign, state: dict) -> dict | None:
    """What was pending when a stop file stopped the campaign: the next action without the stop, in words."""
    unstopped = state_mod.pending_at_stop(campaign, state, stamps.now_text())
    if unstopped is None:
        return None
    return {"next_action": unstopped["next_action"], "reason": unstopped["reason"], "text": pending_text(unstopped)}


def pending_text(unstopped: dict) -> str:
    """One sentence on what a stopped campaign would have done next (`unstopped`: its state without the stop)."""
    action, plateau, batch = unstopped["next_action"], unstopped["plateau"], unstopped["exploration_batch"]
    if action == v.NextAction.RUN_LITERATURE_LOOP:
        return (
            f"a literature pass was due ({plateau['scored_since_reset']} of {plateau['threshold']} scored "
            "candidates without a real gain)"
        )
    if action == v.NextAction.DEVELOP_LITERATURE_BATCH:
        event = batch["literature_event_id"] or f"the unlabelled event at ledger row {batch['event_index'] + 1}"
        missing = batch["required"] - batch["completed"]
        return f"the batch of literature event {event} needed {missing} more scored source-backed candidate(s)"
    if action == v.NextAction.DIVERSIFY_CANDIDATES:
        return "a source change from another algorithm family was due (the last candidates were argument tweaks of one)"
    if action == v.NextAction.FINAL_REPORT:
        return f"nothing: the campaign had finished anyway ({unstopped['reason']})"
    due_in = max(plateau["threshold"] - plateau["scored_since_reset"], 0)
    return (
        f"nothing special: the next ordinary candidate ({plateau['scored_since_reset']} of {plateau['threshold']} "
        f"scored candidates without a real gain; a literature pass {due_in} more away)"
    )


def write(outputs: Outputs, data: dict) -> None:
    atomic.write_json(outputs.report_json, data)
    faults.checkpoint("refresh:report_json_written")
    atomic.write_text(outputs.report, markdown.render(data))


def _provenance(state: dict, context: Context) -> dict:
    return {
        "generated_by": context.generated_by,
        "final_response_allowed": state["final_response_allowed"],
        "reason": state["reason"],
        "confirm_interrupted": context.confirm_interrupted,
        "lock": context.lock,
        "interim": context.generated_by == "refresh" and not state["final_response_allowed"],
        "notes": list(context.notes),
    }


def _objective(settings, config: dict) -> dict:
    objective = config.get("objective") or {}
    return {
        "metric": settings.metric,
        "mode": settings.mode,
        "env": settings.env,
        "requested_metric": objective.get("requested_metric"),
        "metric_source": objective.get("metric_source"),
        "metric_extraction_order": objective.get("metric_extraction_order") or [],
        "mode_contract_source": objective.get("mode_contract_source"),
    }


def _headline_verdict(state, helped, best, baseline, band, judge) -> str | None:
    """The headline's noise verdict of the best: the gain over the baseline's, never `beyond noise` when the best's
    own step (its gain over the best it replaced, as "What helped" judges it) was within the band or unverified:
    a best whose last step is unproven is not shown as proven by the steps before it."""
    total = gains.verdict(state["improvement"], band, reference=baseline.score if baseline else None, **judge)
    if total != gains.BEYOND:
        return total
    own = next((item for item in helped["improvements"] if item["name"] == best.name), None)
    return own["noise"] if own and own["noise"] in (gains.WITHIN, gains.UNVERIFIED) else total


def _selected(campaign, state: dict, judged: _Standing) -> dict | None:
    best, baseline, observed = judged.best, judged.baseline, judged.observed
    if best is None:
        return None
    manifest = campaign.manifest_of(best.name) if best.status == v.KEEP else None
    metric = campaign.settings.metric
    why = (
        f"{best.name} has the best {metric} ({compare.format_score(best.score)}) among scored baseline and "
        "keep rows (a tie never replaces the earlier row)"
    )
    if observed:
        why += (
            f"; discard {observed['name']} scored {compare.format_score(observed['score'])} but was not kept, so "
            "it is only best_observed"
        )
    return {
        "name": best.name,
        "status": best.status,
        "score": best.score,
        "baseline_name": baseline.name if baseline else None,
        "baseline_score": baseline.score if baseline else None,
        "delta": state["improvement"],
        "noise": judged.verdict,
        "family": best.algorithm_family or (manifest.algorithm_family if manifest else None) or None,
        "kind": best.candidate_kind or (v.BASELINE if best.status == v.BASELINE else None),
        "hypothesis": (manifest.hypothesis if manifest else None)
        or (None if best.status == v.BASELINE else best.diff_summary),
        "literature_event_id": best.literature_event_id or None,
        "why": why,
        "lineage": facts.lineage(judged.rows, judged.walk.best),
        "baseline_command": baseline.run_command if baseline else None,
        "best_run_command": best.run_command or None,
        "effective_run_args": campaign.best_run_args(),
        "rerun_command": _best_command(campaign, best),
    }


def _noise_section(rows: list[LedgerRow], estimate: dict | None, band: float | None) -> dict:
    of = estimate["of"] if estimate else None
    replicates = [
        {"name": row.name, "score": row.score, "notes": row.diff_summary or row.failure_reason}
        for row in rows
        if row.status == v.REPLICATE and row.base_candidate == of
    ]
    return {
        "estimate": estimate,
        "band": band,
        "replicates": replicates,
        "seeded": any(
            "seed" in (item["notes"] or "") and "identical" not in (item["notes"] or "") for item in replicates
        ),
    }


def _entry(row: LedgerRow, budgets: dict[str, str | None]) -> dict:
    notes = row.failure_reason if row.status in v.FAILURES else row.diff_summary
    if row.status == v.DISCARD and row.failure_reason:
        notes = f"{row.diff_summary}; {row.failure_reason}"
        if prune.is_pruned(row):  # stopped early: no score and no final model (nothing to evaluate)
            notes = f"{notes}; {prune.NO_FINAL_MODEL}"
    return {
        "status": row.status,
        "name": row.name,
        "score": row.score,
        "score_text": "-" if row.score is None else compare.format_score(row.score),
        "changed_files": row.changed_files,
        "manifest": row.candidate_manifest,
        "artifacts": row.artifacts,
        "notes": notes,
        "run_command": row.run_command,
        "budget": budgets.get(row.name),
    }


def _with_sites(board: list[dict], marked: dict[str, dict | None], campaign) -> list[dict]:
    """The leaderboard with `role` (baseline, best) and `sites` (each site's value of the final round, from the
    run's round records) on the baseline's and the best's entries; other entries carry neither."""
    for role, row in marked.items():
        entry = next((e for e in board if row is not None and e["name"] == row.name), None)
        if entry is not None:
            entry["role"] = "baseline, best" if entry.get("role") else role
            entry["sites"] = curves.site_values(campaign, row)
    return board


def _score_of(row: LedgerRow | None) -> dict | None:
    return {"name": row.name, "score": row.score, "status": row.status} if row else None


def _best_command(campaign, best: LedgerRow | None) -> str:
    """The best configuration as a command a user can rerun by hand (fixed budget, base args, best run args); in
    poc/prod its export through the recipe's `--export --export-dir` and an `nvflare job submit` of the export."""
    if best is None:
        return ""
    argv = campaign.job_argv(campaign.best_run_args())
    where = f"cd {shlex.quote(str(campaign.paths.workspace))}"
    if campaign.settings.env == "sim":
        return f"{where} && {shlex.join(argv)}"
    # poc/prod: the recipe's own export path, then a submission with the user's admin startup kit (their yes first)
    folder = campaign.paths.run_dir("rerun-export")
    export = shlex.join([*argv, "--export", "--export-dir", str(folder)])
    submit = f'nvflare job submit -j {shlex.quote(str(folder))}/* --startup-kit "$ADMIN_STARTUP_KIT"'
    return f"{where} && {export} && {submit}"
