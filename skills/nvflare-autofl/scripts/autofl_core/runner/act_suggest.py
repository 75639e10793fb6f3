"""suggest: deterministic argument-only seeds centred on the best configuration (see `suggest`); writes nothing
but the refreshed state."""

from __future__ import annotations

from . import runargs, suggest
from .errors import CampaignError
from .outcome import ActionResult

DEFAULT_LIMIT = 10


def run(campaign, options, now: str) -> ActionResult:
    limit = DEFAULT_LIMIT if options.limit is None else options.limit
    if limit < 1:
        raise CampaignError("--limit must be a positive number of suggestions")
    config = campaign.config
    space = list((config.get("search_space") or {}).get("suggested") or [])
    current = dict(runargs.pairs_from_tokens(config, campaign.best_run_args()))
    best = campaign.best()
    tried = [
        dict(runargs.pairs_from_tokens(config, m["effective_run_args"]))
        for m in campaign.manifests()
        if m["base_source_sha256"] == best.digest
        and not m.get("patch_sha256")
        and m["status"] not in ("abandoned", "prepared")
    ]
    seeds = suggest.suggestions(
        space,
        current=current,
        tried=tried,
        used_names=campaign.used_names(),
        limit=limit,
        mode=campaign.settings["mode"],
        metric=campaign.settings["metric"],
    )
    return ActionResult(extras={"suggestions": seeds})
