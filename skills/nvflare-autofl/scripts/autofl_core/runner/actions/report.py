"""report: the final autofl_report.md / autofl_report.json and a refreshed progress.png, behind the refusal
rules of `report/gate.py` (unfinished campaign without --confirm-interrupted, open candidates, a live trial,
aliased outputs). Writes nothing else: no recovery, no setting change, the state file is left as it is.
"""

from __future__ import annotations

from .. import settings as settings_mod
from .. import state as state_mod
from ..outcome import EXIT_OK, CampaignError
from ..report import gate as report_gate
from ..store import metadata
from ..store.paths import CampaignPaths


def run(options, given: dict, now: str) -> tuple[int, dict]:
    stored = metadata.read(CampaignPaths.for_job(options.job, {}))
    merged = settings_mod.merge_settings(
        stored["settings"],
        given,
        action="report",
        now=now,
        approved=bool(options.confirm_user_approved_cap_change),
        cap_history=stored["cap_changes"],
    )
    if merged.changed:
        flags = ", ".join(settings_mod.FLAGS.get(name, name) for name in merged.changed)
        raise CampaignError(f"report changes no setting; drop {flags} (or change it with status first)")
    done = report_gate.produce(
        options.job,
        outputs=None,
        confirm_interrupted=options.confirm_interrupted,
        generated_by="run_job_campaign.py report",
        lock_mode="write",
        now=now,
    )
    extras = {
        "report_json": str(done.outputs.report_json),
        "progress_plot_available": done.data["progress_plot_available"],
        "report_warnings": sorted({w["code"] for w in done.data["warnings"]}),
        "best_lives": done.data["best_lives"],
    }
    return EXIT_OK, state_mod.envelope(done.campaign.paths, done.state, extras)
