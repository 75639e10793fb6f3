"""What an envelope points at: the paths it names (each one exists, or is null with the reason in `unavailable`),
and where the best configuration lives (the command that reruns it, and whether `python job.py` alone does).

Usage::

    named, unavailable = pointers.checked(paths.envelope_paths())
    # named["progress"] is None and unavailable["progress"] says why (no matplotlib, AUTOFL_PLOT_RENDERER=text, ...)
    # and where the text summary is, when progress.png was not drawn
    best_lives(campaign)   # {"name", "command", "run_args", "plain_job_py_reruns_it", "note"} or None
"""

from __future__ import annotations

import shlex
from pathlib import Path

NOT_WRITTEN = "not written yet"


def checked(named: dict[str, str]) -> tuple[dict[str, str | None], dict[str, str]]:
    """`named` with every path that is not an existing regular file replaced by None, and the reason for each."""
    kept: dict[str, str | None] = {}
    unavailable: dict[str, str] = {}
    for key, text in named.items():
        kept[key] = text if Path(text).is_file() else None
        if kept[key] is None:
            unavailable[key] = progress_reason(Path(text)) if key == "progress" else NOT_WRITTEN
    return kept, unavailable


def progress_reason(path: Path) -> str:
    """Why progress.png is not there, and where its text summary is when there is one."""
    from ..campaign import plot

    reason = plot.unavailable_reason() or "no picture drawn (matplotlib failed or the campaign has not plotted yet)"
    summary = path.with_suffix(".txt")
    return f"{reason}; text summary: {summary}" if summary.is_file() else reason


def best_lives(campaign) -> dict | None:
    """Where the best configuration lives: the exact command that reruns it (source plus run args), whether a plain
    `python job.py` (with the fixed budget) reruns it, and that in words (None before a scored best)."""
    best = campaign.best_row()
    if best is None:
        return None
    run_args = campaign.best_run_args()
    base_args = list(campaign.settings.base_args)
    workspace = campaign.paths.workspace
    command = f"cd {shlex.quote(str(workspace))} && {shlex.join(campaign.job_argv(run_args))}"
    budget = shlex.join(campaign.job_argv([])[2 : len(campaign.job_argv([])) - len(base_args)])
    job = campaign.paths.job.name
    files = f"{job} and the files beside it in {workspace} hold the best's source ({best.name})"
    if run_args:
        note = (
            f"{files}, but the best also needs the run arguments {shlex.join(run_args)}: a plain `python {job}` "
            "runs job.py's own defaults, a configuration that was never measured as the best. Rerun it with the "
            "command above, or write those arguments into job.py's argparse defaults: `run_job_campaign.py status "
            "JOB --write-best-defaults` (after the campaign has finished; job.py is backed up first)."
        )
    elif base_args:
        note = (
            f"{files} and it takes no run arguments of its own, but every run of this campaign passed the base "
            f"arguments {shlex.join(base_args)}: rerun it with the command above, not a bare `python {job}`."
        )
    else:
        note = f"{files} and it takes no run arguments of its own: `python {job} {budget}` reruns it."
    return {
        "name": best.name,
        "command": command,
        "run_args": run_args,
        "plain_job_py_reruns_it": not (run_args or base_args),
        "note": note,
    }
