"""The noise floor of a campaign: the spread of the best configuration, the keep margin, the job's seed option.

Replicate rows (`replicate` action) rerun the best configuration; their scores plus the best's own form the
noise estimate (`guard.noise_estimate`, the same numbers the state shows). Usage::

    margin = keep_margin(campaign)   # None unless --noise-sigmas > 0 and >= 3 scores of the best exist
    seed = seed_option(campaign)     # ("--seed", "0") when replicates pass seeds, else None (identical reruns)
    known = facts(campaign)          # the guard's noise_facts: metric resolution and how replicates vary
    replicate_seed(3, current="0")   # "3": the n-th positive seed other than the configuration's own
    sources(campaign)                # where the best's source lets reruns differ: [{file, line, cause, fix}]
"""

from __future__ import annotations

import re

from ..campaign import gains, guard
from ..campaign import vocabulary as v
from ..campaign.ledger import LedgerRow
from ..common import bounded
from ..importer import noise_sources
from . import runargs
from . import settings as settings_mod
from .outcome import CampaignError
from .store import snapshots

SEED_DEST_RE = re.compile(r"(random_)?seed")
RUN_LOG_TAIL = 256 * 1024  # where the evaluation-set size is looked for in the baseline's run.log


def facts(campaign) -> dict:
    """What the guard cannot read from the ledger: the metric's resolution (one sample of the evaluation set,
    when the baseline's output reports the set's size) and whether replicates pass seeds or are identical."""
    known = {"metric_resolution": None, "resolution_source": None}
    baseline = next((r for r in campaign.rows() if r.status == v.BASELINE and r.score is not None), None)
    if baseline and baseline.artifacts:
        log = campaign.paths.resolve(baseline.artifacts) / "run.log"
        try:
            data = bounded.read_tail(log, RUN_LOG_TAIL)
        except bounded.BoundedReadError:
            data = None
        size = gains.eval_size(data.decode("utf-8", errors="replace")) if data else None
        resolution = gains.resolution_of(campaign.settings.metric, size)
        if resolution is not None:
            known["metric_resolution"] = resolution
            known["resolution_source"] = f"{campaign.paths.rel(log)}: an evaluation set of {size} samples"
    seeded = seed_option(campaign) is not None
    known["replicates"] = gains.SEEDED_RERUNS if seeded else gains.IDENTICAL_RERUNS
    return known


def estimate(campaign) -> dict | None:
    """`noise{...}` of the current best (None without a scored best)."""
    best = campaign.best_row()
    return None if best is None else estimate_of(campaign, best)


def estimate_of(campaign, row: LedgerRow) -> dict:
    """`noise{...}` of the configuration of the retained ledger row `row` (its score plus its replicates')."""
    scores = [
        other.score
        for other in campaign.rows()
        if other.status == v.REPLICATE and other.score is not None and other.base_candidate == row.name
    ]
    settings = guard.GuardSettings.from_mapping(settings_mod.guard_settings(campaign.settings))
    return guard.noise_estimate((row.score, None, row.name), scores, settings)


def latest_measured(campaign) -> dict | None:
    """The noise of the current best when measured, else of the latest retained row that has scored replicates
    (the spread of a configuration the campaign kept); None when nothing was replicated (`guard.latest_measured`)."""
    rows = campaign.rows()
    retained = [(r.score, i, r.name) for i, r in enumerate(rows) if r.status in v.RETAINED and r.score is not None]
    replicates: dict[str, list[float]] = {}
    for row in rows:
        if row.status == v.REPLICATE and row.score is not None:
            replicates.setdefault(row.base_candidate, []).append(row.score)
    settings = guard.GuardSettings.from_mapping(settings_mod.guard_settings(campaign.settings))
    return guard.latest_measured(estimate(campaign), retained, replicates, settings)


def keep_margin(campaign) -> float | None:
    """The gain a keep must exceed now (the noise margin when the rule applies), else None."""
    return guard.keep_margin(estimate(campaign))


def seed_option(campaign) -> tuple[str, str] | None:
    """(job.py's seed option, the best configuration's seed) when replicates should pass seeds, else None.

    An integer option named `--seed`/`--random_seed` (any alias) that the fixed budget does not pin, and that the
    best configuration sets (a default, `--base-args` or the best's run args): a seed the job leaves unset
    usually selects a different code path (no shuffling, or an unseeded random run), so seeding it would
    measure another configuration.
    """
    from ..importer import runner_view as importer

    config = campaign.config
    pinned = set(importer.fixed_budget_options(config))
    best_args = dict(runargs.pairs_from_tokens(config, campaign.best_run_args()))
    for record in (config.get("argparse") or {}).get("flags") or []:
        longs = [option for option in record.get("option_strings") or [] if option.startswith("--")]
        if not longs or not SEED_DEST_RE.fullmatch(str(record.get("dest"))) or not record.get("takes_value"):
            continue
        if record.get("positional") or record.get("type") not in ("int", None) or pinned & set(longs):
            continue
        current = next((best_args[flag] for flag in longs if best_args.get(flag) is not None), record.get("value"))
        if current is not None:
            return longs[0], str(current)
    return None


def replicate_seed(n: int, *, current: str) -> str:
    """The seed of replicate n: the n-th positive integer other than the configuration's own seed (so seeds
    1..K when the best ran with seed 0, and no replicate repeats the best's own run)."""
    seeds = [value for value in range(1, n + 2) if str(value) != str(current).strip()]
    return str(seeds[n - 1])


def sources(campaign) -> list[dict]:
    """Where the best's source lets reruns differ (unseeded model construction, shuffles, loaders), read
    statically from the best snapshot's Python files ([] when it cannot be read)."""
    try:
        files = snapshots.files_of(campaign.paths, campaign.best())
    except (CampaignError, OSError):
        return []
    return noise_sources.scan({rel: data.decode("utf-8", "replace") for rel, data in files.items()})
