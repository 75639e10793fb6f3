"""The final report's shell: lock, refusal rules, output checks, plot and report (the `report` action and
`campaign_report.py` share it). Reading only: the campaign's state, ledger and manifests are never rewritten.

Refused (CampaignError, exit 2, nothing written):
- a manifest whose status is not terminal (keep, discard, crash, abandoned), a ledger row naming a missing
  manifest, or an unfinished finalize (`finalize.json`): always;
- a trial of the campaign still alive (a process carrying the token of `running_trial.json`): always;
- `final_response_allowed=false`, unless `confirm_interrupted` (the user said the campaign was stopped; the
  checks above prove no runner or trial is alive; the report says so, the state is not touched);
- output paths that alias campaign evidence, job sources or each other, also through symbolic or hard links.
Usage::

    done = produce("ws/job.py", outputs=None, confirm_interrupted=False, generated_by="report", lock_mode="write")
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from ...campaign import vocabulary as v
from ...common import bounded
from .. import state as state_mod
from ..open_campaign import Campaign
from ..outcome import CampaignError
from ..recovery import marker_trials
from ..store import contract
from ..store.lock import shared_lock, workspace_lock
from ..store.paths import CampaignPaths
from . import build as report


@dataclass
class Produced:
    outputs: report.Outputs
    data: dict
    state: dict
    campaign: Campaign


def produce(
    job, *, outputs: report.Outputs | None, confirm_interrupted: bool, generated_by: str, lock_mode: str, now: str
) -> Produced:
    probe = CampaignPaths.for_job(job, {})
    holder = workspace_lock(probe.lock) if lock_mode == "write" else shared_lock(probe.lock)
    with holder as lock_state:
        campaign = replace(Campaign.open(job), lenient=True)  # an older ledger is reported, not rejected
        campaign.rows()  # read first: `missing_columns` are the columns such a ledger lacks
        stored = bounded.read_json_or_none(campaign.paths.state)
        state = state_mod.compute(campaign, now)
        notes = check_finished(campaign, state, confirm_interrupted=confirm_interrupted)
        chosen = outputs or report.outputs_of(campaign.paths)
        check_outputs(campaign, chosen)
        plotted = report.render_plot(campaign, chosen.progress, report.plot_options(campaign, state))
        context = report.Context(
            generated_by=generated_by,
            confirm_interrupted=confirm_interrupted and not state["final_response_allowed"],
            lock=lock_state or "held",
            missing_columns=campaign.missing_columns,
            stored_state=stored,
            stored_state_read=True,
            notes=notes,
        )
        data = report.build(campaign, state, plot_available=plotted, context=context, outputs=chosen)
        report.write(chosen, data)
    return Produced(outputs=chosen, data=data, state=state, campaign=campaign)


def check_finished(campaign, state: dict, *, confirm_interrupted: bool) -> list[str]:
    """Refuse an unfinished campaign; returns notes for the report's provenance."""
    paths = campaign.paths
    if paths.journal.exists():
        raise CampaignError(
            f"{paths.journal} shows an interrupted finalize; run the runner's status action to finish it, then report"
        )
    open_ones = [m for m in campaign.manifests() if m.status not in v.MANIFEST_TERMINAL]
    if open_ones:
        first = open_ones[0]
        raise CampaignError(
            f"candidate {first.candidate_id} is {first.status} (not terminal): evaluate, record or "
            "abandon it (a running one: run status to recover it) before the final report"
        )
    for row in campaign.rows():
        if row.status in v.ATTEMPTS and row.candidate_manifest and not paths.resolve(row.candidate_manifest).is_file():
            raise CampaignError(
                f"the manifest of {row.name} ({row.candidate_manifest}) is missing, so its "
                "outcome cannot be confirmed; restore it before the final report"
            )
    notes = _trial_notes(paths)
    if not state["final_response_allowed"]:
        if not confirm_interrupted:
            raise CampaignError(
                f"the campaign is not finished (reason {state['reason']}, next action "
                f"{state['next_action']}); follow next_action (to stop at the user's word: create the stop file "
                f"STOP_AUTOFL, then run status and report); --confirm-interrupted is only for a campaign whose "
                "runner was killed"
            )
        notes.append(
            f"reported as interrupted at the user's word while the state said {state['next_action']} "
            f"({state['reason']}); no runner held the lock and no trial process was alive"
        )
    return notes


def _trial_notes(paths) -> list[str]:
    """A left-over trial marker: refuse while any process of that trial lives, else note it."""
    try:
        record = bounded.read_json(paths.trial_marker)
    except bounded.BoundedReadError:
        record = {"token": None}
    if record is None:
        return []
    for entry in marker_trials(record):
        token = entry.get("token")
        if not isinstance(token, str) or not token:
            continue
        from ...trial import childenv, processes

        alive = processes.find_token_processes((childenv.TOKEN_VAR, token))
        if alive:
            raise CampaignError(
                f"a trial of this campaign is still running (pids {', '.join(map(str, alive[:5]))}); "
                "wait for it or stop it, then report"
            )
    return [
        f"{paths.rel(paths.trial_marker)} is left from an interrupted trial (no process of it is alive); the "
        "runner's next action cleans it up"
    ]


def check_outputs(campaign, outputs: report.Outputs) -> None:
    """Outputs may not alias campaign evidence, job sources or each other (symbolic and hard links included)."""
    paths = campaign.paths
    files = [
        paths.results,
        paths.autofl_yaml,
        paths.campaign,
        paths.state,
        paths.lock,
        paths.journal,
        paths.trial_marker,
        paths.job,
    ]
    files += [paths.workspace / rel for rel in contract.allowed_edit_paths(campaign.config)]
    files += [paths.manifest(m.candidate_id) for m in campaign.manifests()]
    folders = [paths.meta, paths.output_root]
    named = {
        "--report": outputs.report,
        "report json": outputs.report_json,
        "--progress": outputs.progress,
        "progress text note": outputs.progress.with_suffix(".txt"),
    }
    evidence = {_real(path): path for path in files}
    inodes = {ino: path for path in files if (ino := _inode(path))}
    seen: dict = {}
    for label, path in named.items():
        real = _real(path)
        if real.is_dir():
            raise CampaignError(f"{label} {path} is a folder; give a file path")
        hit = (
            evidence.get(real)
            or inodes.get(_inode(path))
            or next((folder for folder in folders if real.is_relative_to(_real(folder))), None)
        )
        if hit is not None:
            raise CampaignError(
                f"{label} {path} would overwrite campaign evidence or a job source ({hit}), directly or "
                "through a link; choose another output path"
            )
        key = _inode(path) or real
        if key in seen or real in seen:
            raise CampaignError(
                f"{label} {path} is the same file as the {seen.get(key) or seen.get(real)} output; give "
                "each output its own path"
            )
        seen[key] = seen[real] = label


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
