"""autofl_report.md and autofl_report.json: the campaign at a glance, refreshed after every ledger change.

`build` is pure (campaign facts in, one JSON-ready dict out); `render_markdown` turns it into the human
report. Usage::

    data = build(campaign, state)
    write(campaign, data)        # both files, atomically
"""

from __future__ import annotations

import shlex

from .. import atomic, compare, faults
from . import contract

SCHEMA = "nvflare.autofl.report.v1"
FAILURE_STATUSES = ("crash", "infrastructure_retry")


def build(campaign, state: dict, *, plot_available: bool) -> dict:
    paths, settings, config = campaign.paths, campaign.settings, campaign.config
    rows = campaign.rows()
    objective = config.get("objective") or {}
    best = campaign.best_row()
    baseline = next((r for r in rows if r["status"] == "baseline" and r["score"] is not None), None)
    return {
        "schema_version": SCHEMA,
        "objective": {
            "metric": settings["metric"],
            "mode": settings["mode"],
            "env": settings["env"],
            "requested_metric": objective.get("requested_metric"),
            "metric_source": objective.get("metric_source"),
            "metric_extraction_order": objective.get("metric_extraction_order") or [],
            "mode_contract_source": objective.get("mode_contract_source"),
        },
        "config": paths.rel(paths.autofl_yaml),
        "fixed_budget": {key: (config.get("fixed_budget") or {}).get(key, {}).get("value")
                         for key in ("num_clients", "min_clients", "num_rounds")},  # fmt: skip
        "candidate_budget": {"cap": state["candidate_cap"], "attempts": state["candidate_attempts"],
                             "remaining": state["remaining_candidates"]},  # fmt: skip
        "state": {key: state[key] for key in ("decision", "reason", "next_action", "final_response_allowed")},
        "leaderboard": [_entry(paths, row) for row in rows if row["status"] != "literature"],
        "literature": [{"event_id": r["literature_event_id"], "name": r["name"], "notes": r["diff_summary"]}
                       for r in rows if r["status"] == "literature"],  # fmt: skip
        "baseline": _score_of(baseline),
        "best": _score_of(best),
        "improvement": state["improvement"],
        "best_command": _best_command(campaign, best),
        "failures": [_entry(paths, row) for row in rows if row["status"] in FAILURE_STATUSES],
        "abandoned": sorted(m["candidate_id"] for m in campaign.manifests() if m["status"] == "abandoned"),
        "cap_changes": list(campaign.meta.get("cap_changes") or []),
        "setting_changes": list(campaign.meta.get("setting_changes") or []),
        "artifacts": {key: str(value) for key, value in paths.envelope_paths().items()},
        "progress_plot_available": plot_available,
    }


def write(campaign, data: dict) -> None:
    atomic.write_json(campaign.paths.report_json, data)
    faults.checkpoint("refresh:report_json_written")
    atomic.write_text(campaign.paths.report, render_markdown(data))


def render_markdown(data: dict) -> str:
    objective = data["objective"]
    direction = "higher is better" if objective["mode"] == "max" else "lower is better"
    budget = data["fixed_budget"]
    cap = data["candidate_budget"]
    lines = [
        "# Auto-FL campaign report",
        "",
        f"- Objective: `{objective['metric']}` ({objective['mode']}, {direction}; direction from "
        f"{objective['mode_contract_source']}), environment `{objective['env']}`",
        f"- Requested metric: {objective['requested_metric'] or '(job key metric)'}; metric source "
        f"{objective['metric_source']}; extraction order {', '.join(objective['metric_extraction_order'])}",
        f"- Fixed budget: {budget['num_clients']} clients (min {budget['min_clients']}), {budget['num_rounds']} rounds",
        f"- Candidate budget: {cap['attempts']} attempt(s) of "
        f"{'uncapped' if cap['cap'] is None else cap['cap']}; config `{data['config']}`",
        f"- State: {data['state']['decision']} ({data['state']['reason']}); next action "
        f"`{data['state']['next_action']}`",
        "",
        "## Baseline vs best",
        "",
        _baseline_vs_best(data),
    ]
    if data["best_command"]:
        lines += ["", "Best configuration, as a command you can rerun:", "", "```bash", data["best_command"], "```"]
    if data["progress_plot_available"]:
        lines += ["", "![progress](progress.png)"]
    lines += ["", "## Leaderboard", "", "| status | name | score | changed files | manifest | artifacts | notes |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for entry in data["leaderboard"]:
        lines.append(f"| {entry['status']} | {entry['name']} | {entry['score_text']} | {entry['changed_files'] or '-'} "
                     f"| {entry['manifest'] or '-'} | {entry['artifacts'] or '-'} | {_cell(entry['notes'])} |")  # fmt: skip
    lines += ["", "## Failures and friction", ""]
    friction = [f"- {e['status']} `{e['name']}`: {e['notes']}" for e in data["failures"]]
    friction += [f"- abandoned draft `{name}` (not counted)" for name in data["abandoned"]]
    lines += friction or ["- none"]
    if data["literature"]:
        lines += ["", "## Literature events", ""]
        lines += [f"- {e['event_id'] or '(unlabelled)'} `{e['name']}`: {e['notes']}" for e in data["literature"]]
    lines += ["", "## Cap and setting changes", ""]
    changes = [f"- cap {c['old']} -> {c['new']} ({c['source']}, user approved: {c['user_approved']}) at {c['changed_at']}"
               for c in data["cap_changes"]]  # fmt: skip
    changes += [f"- {c['setting']}: {c['old']} -> {c['new']} ({c['action']}) at {c['changed_at']}"
                for c in data["setting_changes"]]  # fmt: skip
    lines += changes or ["- none"]
    lines += ["", "## Artifacts", ""] + [f"- {key}: `{value}`" for key, value in sorted(data["artifacts"].items())]
    return "\n".join(lines) + "\n"


def _entry(paths, row: dict) -> dict:
    notes = row["failure_reason"] if row["status"] in FAILURE_STATUSES else row["diff_summary"]
    return {
        "status": row["status"],
        "name": row["name"],
        "score": row["score"],
        "score_text": "-" if row["score"] is None else compare.format_score(row["score"]),
        "changed_files": row["changed_files"],
        "manifest": row["candidate_manifest"],
        "artifacts": row["artifacts"],
        "notes": notes,
        "run_command": row["run_command"],
    }


def _score_of(row: dict | None) -> dict | None:
    return {"name": row["name"], "score": row["score"], "status": row["status"]} if row else None


def _best_command(campaign, best: dict | None) -> str:
    """The best configuration as a command a user can rerun by hand (fixed budget, base args, best run args)."""
    if best is None:
        return ""
    argv = [campaign.settings["python"], campaign.paths.job.name, *contract.budget_args(campaign.config),
            *campaign.settings["base_args"], *campaign.best_run_args()]  # fmt: skip
    return f"cd {shlex.quote(str(campaign.paths.workspace))} && {shlex.join(argv)}"


def _baseline_vs_best(data: dict) -> str:
    baseline, best = data["baseline"], data["best"]
    if best is None:
        return "No scored result yet."
    if baseline is None:
        return f"Best `{best['name']}`: {compare.format_score(best['score'])} (no scored baseline)."
    gain = data["improvement"]
    return (f"Baseline {compare.format_score(baseline['score'])}; best `{best['name']}` "
            f"{compare.format_score(best['score'])}; improvement {gain:+.6f} (direction-adjusted).")  # fmt: skip


def _cell(text: str) -> str:
    return (text or "-").replace("|", "\\|")
