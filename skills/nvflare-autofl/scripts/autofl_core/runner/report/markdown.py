"""The human report (`autofl_report.md`) from the report data `build.build` returns (pure text).

Sections (`SECTIONS`, each always present but Score, which needs a score section, with a "none recorded" line when
it has nothing, so agents and tools can rely on the shape): summary, score (where it comes from), selected candidate
and why, what helped, what did not help, literature outcomes, families, trajectory, noise, warnings, compute and
time, leaderboard, failures and friction, cap and setting changes, artifacts. Every recorded string (names,
hypotheses, reasons, paths, commands, settings: anything that came from the ledger, a manifest, campaign.json or a
trial) goes through `safe_text.recorded`, so none can change the report's structure. Usage: `text = render(data)`.
"""

from __future__ import annotations

from urllib.parse import quote

from ...campaign import vocabulary as v
from ...campaign.compare import format_score
from ...campaign.gains import BEYOND as BEYOND_NOISE
from ...campaign.gains import IDENTICAL_RERUNS
from ...common import trial_limits
from .facts import GROUP_FAMILY, GROUP_LITERATURE, GROUP_UNCLASSIFIED
from .safe_text import cell, code, joined, recorded

BUDGET_WORDS = {v.BUDGET_VERIFIED: "budget verified", v.BUDGET_VIOLATED: "violated", v.BUDGET_UNVERIFIED: "unverified"}
MAX_LEADERBOARD = 200  # rows shown in the markdown leaderboard (the JSON has them all)
SECTIONS = (  # the `## ` headings after the summary, in order
    "Score",
    "Selected candidate and why",
    "What helped",
    "What did not help",
    "Literature outcomes",
    "Families",
    "Trajectory",
    "Noise",
    "Warnings",
    "Compute and time",
    "Leaderboard",
    "Failures and friction",
    "Cap and setting changes",
    "Artifacts",
)


def render(data: dict) -> str:
    lines = ["# Auto-FL campaign report", "", *_summary(data)]
    for heading, body in zip(SECTIONS, _BODIES, strict=True):
        shown = body(data)
        if shown is not None:
            lines += [f"## {heading}", "", *shown, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _score(value) -> str:
    return "-" if value is None else format_score(value)


def _gain(value) -> str:
    return "-" if value is None else f"{value:+.6f}"


def _summary(data: dict) -> list[str]:
    objective, budget, cap, state = data["objective"], data["fixed_budget"], data["candidate_budget"], data["state"]
    direction = "higher is better" if objective["mode"] == "max" else "lower is better"
    provenance = data["provenance"]
    lines = []
    if provenance["interim"]:
        lines += [
            f"> Interim report: the campaign is still running (next action {code(state['next_action'])}); it is "
            "not a final answer.",
            "",
        ]
    elif provenance["confirm_interrupted"]:
        lines += [
            "> Report of an interrupted campaign: the user confirmed it was stopped while the state still "
            f"said {code(state['next_action'])} ({recorded(state['reason'])}); no runner or trial process was alive.",
            "",
        ]
    return lines + [
        f"- Objective: {code(objective['metric'])} ({recorded(objective['mode'])}, {direction}; direction from "
        f"{recorded(objective['mode_contract_source'])}), environment {code(objective['env'])}",
        f"- Requested metric: {recorded(objective['requested_metric'] or '(job key metric)')}; metric source "
        f"{recorded(objective['metric_source'])}; extraction order {joined(objective['metric_extraction_order'])}",
        f"- Fixed budget: {recorded(budget['num_clients'])} clients (min {recorded(budget['min_clients'])}), "
        f"{recorded(budget['num_rounds'])} rounds",
        f"- Candidate budget: {_candidate_budget(cap)}; config {code(data['config'])}",
        f"- State: {recorded(state['decision'])} ({recorded(state['reason'])}); next action "
        f"{code(state['next_action'])}",
        _plateau_line(state["plateau"]),
        *_pending_line(state.get("pending_at_stop")),
        "",
    ]


def _score_source(data: dict) -> list[str] | None:
    """Where the score comes from; with a frozen evaluator, measured vs job-reported per trial and divergences."""
    score = data.get("score")
    if not score:
        return None
    lines = [f"- Provenance: {recorded(score['provenance'])}"]
    if not score["evaluator"]:
        return lines + [
            "- The runner did not measure it: a candidate's client code decides the number (start a campaign with "
            "`--evaluator FILE` to have the runner measure it on the final global model)."
        ]
    frozen = ", ".join(recorded(rel, "code") for rel in score["frozen_files"])
    lines += [
        f"- Frozen evaluator: {recorded(score['evaluator'], 'code')} (frozen with it: {frozen}); the score is the "
        "n-weighted mean of its per-site results, the job-reported value is shown beside it",
        "",
        "| trial | status | measured (score) | job-reported |",
        "|---|---|---|---|",
    ]
    for trial in score["trials"]:
        reported = "-" if trial["reported"] is None else f"{trial['reported']:.6f}"
        lines.append(f"| {recorded(trial['name'])} | {trial['status']} | {trial['measured']:.6f} | {reported} |")
    diverged = [
        f"- {recorded(trial['name'])}: {recorded(trial['divergence_text'])}"
        for trial in score["trials"]
        if trial["divergence_text"]
    ]
    return lines + ["", *diverged] if diverged else lines


def _candidate_budget(cap: dict) -> str:
    if cap["cap"] is None:
        return f"{cap['attempts']} attempt(s), uncapped"
    return f"{cap['attempts']} of {recorded(cap['cap'])} attempt(s) used, {recorded(cap['remaining'])} remaining"


def _pending_line(pending: dict | None) -> list[str]:
    if not pending:
        return []
    return [
        f"- Pending at the stop: {recorded(pending['text'])} (next action would have been {code(pending['next_action'])})"
    ]


def _plateau_line(plateau: dict) -> str:
    since = f"{recorded(plateau['scored_since_reset'])} of {recorded(plateau['threshold'])} scored candidate(s)"
    reset = plateau["reset_row_index"]
    where = f" since ledger row {reset + 1}" if isinstance(reset, int) else ""
    gain = recorded(plateau["min_delta"])
    return f"- Plateau: {recorded(plateau['recommendation'])} ({since}{where} without a gain above {gain})"


def _selected(data: dict) -> list[str]:
    chosen = data["selected"]
    if chosen is None:
        return ["No scored result yet."]
    lines = [_baseline_vs_best(data), ""]
    lines.append(f"- Why: {recorded(chosen['why'])}.")
    facts = [
        f"kind {recorded(chosen['kind'] or 'unrecorded')}",
        f"family {recorded(chosen['family'] or 'unclassified')}",
    ]
    if chosen["literature_event_id"]:
        facts.append(f"literature event {recorded(chosen['literature_event_id'])}")
    lines.append(f"- {', '.join(facts)}")
    if chosen["hypothesis"]:
        lines.append(f"- Hypothesis (as recorded): {recorded(chosen['hypothesis'])}")
    lineage = chosen["lineage"]
    chain = " <- ".join(code(name) for name in lineage["chain"])
    partial = f" (partial: {joined(lineage['missing'])} not in the ledger)" if lineage["partial"] else ""
    lines.append(f"- Lineage: {chain}{partial}; files changed along it: {joined(lineage['changed_files']) or 'none'}")
    if chosen["effective_run_args"]:
        lines.append(f"- Effective run args: {code(' '.join(chosen['effective_run_args']))}")
    if data["best_observed"]:
        seen = data["best_observed"]
        reason = f"; {recorded(seen['reason'])}" if seen["reason"] else ""
        lines.append(
            f"- Best observed (not selected): discard {code(seen['name'])} {_score(seen['score'])} "
            f"({_gain(seen['gain_over_best'])} over the best){reason}"
        )
    lines.append("")
    for label, command in (
        ("Baseline, as it ran", chosen["baseline_command"]),
        ("Best, as it ran", chosen["best_run_command"] if chosen["name"] != chosen["baseline_name"] else None),
        ("Best configuration, as a command you can rerun", chosen["rerun_command"]),
    ):
        if command:
            fence = recorded(command, "fence")
            lines += [f"{label}:", "", f"{fence}bash", recorded(command, "block"), fence, ""]
    lives = data.get("best_lives")
    if lives:
        lines += [f"Where the best lives: {recorded(lives['note'])}", ""]
    if data["progress_plot_available"]:
        # the link's destination cleaned and percent-encoded, so it can neither end the link nor start markup
        lines += [f"![progress]({quote(recorded(data['progress_plot'], 'block'), safe='/._-~')})", ""]
    return lines + _curves(data)


def _curves(data: dict) -> list[str]:
    """What the round curves show, in words (the picture's lower panel)."""
    summary = data.get("curves_summary") or []
    if not summary:
        return ["Round curves: no round records (NVFLARE's round_metrics.jsonl) in the runs shown."]
    where = " (the picture's lower panel)" if data["progress_plot_available"] else ""
    return [f"Round curves, metric per round{where}:", ""] + [f"- {recorded(line)}" for line in summary]


def _baseline_vs_best(data: dict) -> str:
    chosen = data["selected"]
    name = code(chosen["name"])
    if chosen["baseline_score"] is None:
        return f"Best {name}: {_score(chosen['score'])} (no scored baseline)."
    if chosen["name"] == chosen["baseline_name"]:
        return f"The baseline {name} ({_score(chosen['score'])}) is still the best: no candidate beat it."
    verdict = f", {recorded(chosen['noise'])}" if chosen["noise"] else ""
    own = next((i for i in data["what_helped"]["improvements"] if i["name"] == chosen["name"]), None)
    if own and chosen["noise"] and chosen["noise"] == own["noise"] and chosen["noise"] != BEYOND_NOISE:
        verdict = f"; its own step over {code(own['previous_name'])} is {recorded(own['noise'])}"
    return (
        f"Baseline {_score(chosen['baseline_score'])}; best {name} {_score(chosen['score'])}; "
        f"improvement {_gain(chosen['delta'])} (direction-adjusted{verdict})."
    )


def _helped(data: dict) -> list[str]:
    helped = data["what_helped"]
    if not helped["improvements"]:
        return ["Nothing beat the baseline."]
    lines = []
    by_name = {item["name"]: item for item in helped["improvements"]}
    labels: dict[str, list[str]] = {}
    for label in ("first", "largest", "final"):
        labels.setdefault(helped[label], []).append(label)
    for name, names in labels.items():
        item = by_name[name]
        verdict = f", {recorded(item['noise'])}" if item["noise"] else ""
        label = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        lines.append(
            f"- {label.capitalize()} improvement: {code(item['name'])} {_score(item['previous'])} -> "
            f"{_score(item['score'])} ({_gain(item['gain'])} over {code(item['previous_name'])}{verdict})"
        )
    others = len(helped["improvements"]) - len({helped["first"], helped["final"], helped["largest"]})
    if others > 0:
        lines.append(f"- {others} more improvement(s) in the leaderboard")
    return lines


def _not_helped(data: dict) -> list[str]:
    lines = []
    failed = data["what_did_not_help"]
    for group in failed["discards"]:
        rep = group["representative"]
        key = recorded(group["key"])
        label = {GROUP_LITERATURE: f"literature event {key}", GROUP_FAMILY: f"family {key}"}.get(
            group["group"], GROUP_UNCLASSIFIED
        )
        reason = f"; {recorded(rep['reason'])}" if rep["reason"] else ""
        lines.append(
            f"- {label}: {group['count']} discard(s); closest {code(rep['name'])} {_score(rep['score'])} "
            f"({_gain(rep['gain'])} vs the best of its time{reason})"
        )
    for crash in failed["crashes"]:
        more = f" and {crash['count'] - len(crash['names'])} more" if crash["count"] > len(crash["names"]) else ""
        lines.append(
            f"- crashed {crash['count']}x ({joined(crash['names'], 'code')}{more}): {recorded(crash['reason'])}"
        )
    return lines or ["No discards or crashes."]


def _literature(data: dict) -> list[str]:
    if not data["literature"]:
        return ["Literature: none recorded."]
    lines = [
        "| event | outcome | candidates | family | hypothesis (as recorded) |",
        "|---|---|---|---|---|",
    ]
    for event in data["literature"]:
        candidates = joined(event["candidates"]) or "-"
        if event["required"]:
            candidates += f" ({event['scored']} scored of {event['required']} required)"
        lines.append(
            f"| {cell(event['event_id'] or '(unlabelled)')} | {cell(event['outcome'])} | {candidates} | "
            f"{cell(event['family'])} | {cell(event['hypothesis'])} |"
        )
    return lines + [
        "",
        "Source markers such as `[src: ...]` are kept as recorded; they are not verified citations.",
    ]


def _families(data: dict) -> list[str]:
    table = data["families"]
    if not table["families"] and not table["unclassified_attempts"]:
        return ["Families: none recorded (no candidate attempt yet)."]
    lines = [
        f"- {recorded(entry['family'])}: {recorded(entry['outcome'])} ({entry['attempts']} attempt(s), "
        f"{entry['improved']} improved, {entry['crashed']} crashed)"
        for entry in table["families"]
    ]
    if table["unclassified_attempts"]:
        lines.append(f"- unclassified: {table['unclassified_attempts']} attempt(s) without an algorithm family")
    return lines


def _trajectory(data: dict) -> list[str]:
    path = data["trajectory"]
    if not path["points"]:
        return ["Trajectory: no scored baseline or keep row yet."]
    lines = [
        f"Running best, {path['steps_total']} step(s), compressed to start, first, largest and final:",
        "",
    ]
    for point in path["points"]:
        gain = f" ({_gain(point['gain'])})" if point["gain"] is not None else ""
        lines.append(
            f"- row {point['row'] + 1} {code(point['name'])}: {_score(point['score'])}{gain} [{joined(point['marks'])}]"
        )
    return lines


def _noise(data: dict) -> list[str]:
    section = data["noise"]
    estimate = section["estimate"]
    lines = []
    if estimate is None or estimate["stdev"] is None:
        how = (
            "`run_job_campaign.py replicate` reruns it"
            if data["objective"]["env"] == "sim"
            else "`replicate` runs simulations only; rerunning the best on the real system is the user's call"
        )
        lines.append(
            f"Not measured: the best has no replicate runs ({how}), so gains "
            "below the metric's resolution or its typical run-to-run spread are marked `unverified`."
        )
        if section["metric_resolution"] is not None:
            lines.append(
                f"- Metric resolution: {_score(section['metric_resolution'])} (one sample; "
                f"{section['resolution_source']})"
            )
        if section["replicates_vary"] == IDENTICAL_RERUNS:
            lines.append(
                "- job.py has no seed option: replicates would be identical reruns, showing whether runs are "
                "deterministic, not how a gain holds up under another data order or initialisation."
            )
        return lines + _noise_sources(section)
    how = "with other seeds" if section["seeded"] else "as identical reruns"
    rule = (
        f"the keep rule is on ({estimate['sigmas']} sigmas: a keep needs more than {_score(estimate['margin'])})"
        if estimate["applied"]
        else "the keep rule is off (`--noise-sigmas`)"
    )
    return [
        f"- {estimate['replicates']} replicate(s) of {code(estimate['of'])} ({how}) plus its own run: mean "
        f"{_score(estimate['mean'])}, stdev {_score(estimate['stdev'])}, range {_score(estimate['min'])} .. "
        f"{_score(estimate['max'])}",
        f"- Noise band: best +- {_score(section['band'])}; gains inside it are marked `within noise`; {rule}",
        *_noise_sources(section),
    ]


def _warnings(data: dict) -> list[str]:
    return [f"- {code(w['code'])}: {recorded(w['message'])}" for w in data["warnings"]] or ["- none"]


def _compute(data: dict) -> list[str]:
    compute = data["compute"]
    parts = (
        ", ".join(f"{recorded(status)} {seconds:.1f} s" for status, seconds in compute["by_status"].items()) or "none"
    )
    wall = compute["wall_time_seconds"]
    lines = [f"- Compute spent (sum of run times): {compute['total_seconds']:.1f} s ({parts})"]
    if compute["rows_without_runtime"]:
        lines.append(f"- {compute['rows_without_runtime']} row(s) have no recorded runtime (external runs)")
    for batch in compute.get("batches") or []:
        members = ", ".join(recorded(name) for name in batch["members"])
        how = f"{batch['parallel']} at a time" if batch["parallel"] > 1 else "one by one"
        lines.append(f"- Ran together as one batch ({how}): {members}; runtimes measured in a batch share the machine")
    if wall is not None:
        lines.append(
            f"- Campaign wall time: {wall:.0f} s ({recorded(compute['started_at'])} to "
            f"{recorded(compute['last_activity_at'])})"
        )
    latest = data["sandbox"]["latest_trial"]
    return lines + _network_line(data["network"]) + _sandbox_line(latest) + _limits_line(latest)


def _network_line(network: dict) -> list[str]:
    latest = network["latest_trial"]
    if network["allow_network"]:
        return ["- Trial network: allowed (`--allow-network`): candidate code could reach the network"]
    if latest is None:
        return []
    if latest == "isolated":
        return ["- Trial network: isolated (loopback only)"]
    return [f"- Trial network: not isolated; the latest trial recorded {code(latest)}"]


def _sandbox_line(sandbox: dict | None) -> list[str]:
    if not sandbox:
        return []
    if sandbox.get("sealed"):
        return [
            "- Trial sandbox: sealed (own view of the job, user + mount + PID namespaces, read-only host): candidate "
            "code could not write the workspace or the campaign files"
        ]
    missing = ", ".join(recorded(name) for name in sandbox.get("missing") or []) or "the overlay view of the job"
    return [f"- Trial sandbox: not sealed; missing on this host: {missing} (campaign files checked after each trial)"]


def _noise_sources(section: dict) -> list[str]:
    """Where the job's source lets reruns differ, each with its file:line and the smallest fix."""
    return [
        f"- Reruns can differ: {code(str(item['file']) + ':' + str(item['line']))} {recorded(item['cause'])}; "
        "smallest fix: "
        f"{recorded(item['fix'])}"
        for item in section.get("sources") or []
    ]


def _limits_line(sandbox: dict | None) -> list[str]:
    """The latest trial's resource limits and how each held (enforced, watched, or not enforceable here)."""
    found = (sandbox or {}).get("limits")
    if not isinstance(found, dict):
        return []
    parts, unenforced = [], []
    for kind in ("memory", "disk", "processes"):
        entry = found.get(kind)
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), int):
            continue
        how = str(entry.get("enforcement") or "not set")
        parts.append(f"{kind} {trial_limits.show(kind, entry['value'])} ({recorded(how.split(':')[0])})")
        if how.startswith("unavailable"):
            unenforced.append(f"{kind} ({recorded(how.removeprefix('unavailable: '))})")
    line = "- Trial limits: " + ", ".join(parts)
    if unenforced:
        line += "; not enforceable on this host: " + ", ".join(unenforced)
    return [line] if parts else []


def _leaderboard(data: dict) -> list[str]:
    lines = [
        "| status | name | score | budget | changed files | manifest | artifacts | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    board = data["leaderboard"]
    for entry in board[:MAX_LEADERBOARD]:
        lines.append(
            f"| {cell(entry['status'])} | {cell(entry['name'])} | {cell(entry['score_text'])} "
            f"| {BUDGET_WORDS.get(entry['budget'], '-')} | {cell(entry['changed_files'])} "
            f"| {cell(entry['manifest'])} | {cell(entry['artifacts'])} | {cell(entry['notes'])} |"
        )
    if len(board) > MAX_LEADERBOARD:
        lines += ["", f"{len(board) - MAX_LEADERBOARD} more row(s) in autofl_report.json and results.tsv."]
    sites = [entry for entry in board if "sites" in entry]
    if sites:
        lines += ["", "Each site's value in the final round:", ""]
    for entry in sites:
        values = ", ".join(f"{recorded(site)} {_score(value)}" for site, value in entry["sites"].items())
        lines.append(f"- {recorded(entry['role'])} {code(entry['name'])}: {values or 'no per-site round records'}")
    return lines


def _friction(data: dict) -> list[str]:
    friction = [f"- {recorded(e['status'])} {code(e['name'])}: {recorded(e['notes'])}" for e in data["failures"]]
    friction += [f"- abandoned draft {code(name)} (not counted)" for name in data["abandoned"]]
    return friction or ["- none"]


def _changes(data: dict) -> list[str]:
    changes = [
        f"- cap {recorded(c['old'])} -> {recorded(c['new'])} ({recorded(c['source'])}, user approved: "
        f"{recorded(c['user_approved'])}) at {recorded(c['changed_at'])}"
        for c in data["cap_changes"]
    ]
    changes += [
        f"- {recorded(c['setting'])}: {recorded(c['old'])} -> {recorded(c['new'])} ({recorded(c['action'])}) at "
        f"{recorded(c['changed_at'])}"
        for c in data["setting_changes"]
    ]
    return changes or ["- none"]


def _artifacts(data: dict) -> list[str]:
    return [f"- {recorded(key)}: {code(value)}" for key, value in sorted(data["artifacts"].items())]


_BODIES = (  # one per `SECTIONS` heading, in its order; a body of None leaves the section out
    _score_source,
    _selected,
    _helped,
    _not_helped,
    _literature,
    _families,
    _trajectory,
    _noise,
    _warnings,
    _compute,
    _leaderboard,
    _friction,
    _changes,
    _artifacts,
)
