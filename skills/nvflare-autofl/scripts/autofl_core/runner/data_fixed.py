"""Options that shape the data, the validation split or the metric: fixed within a campaign, like the budget.

The importer classifies them (`importer/data_shaping`, autofl.yaml `data_shaping.fixed` / `.unclassified`);
`initialize --fixed-args NAME...` pins more. Run args may not set a fixed option, a draft may not change its
default in job.py, and `suggest` proposes neither fixed nor unclassified options. Pure. Usage::

    config = with_fixed_args(config, ["alpha", "--val_ratio"])   # CampaignError naming an unknown option
    refuse_in_run_args(config, "--alpha", "--alpha=0.6")          # CampaignError (exit 2)
    problems = reimport_problems(campaign.config, candidate_config)
    untouchable(config)                                           # fixed + unclassified flags
"""

from __future__ import annotations

from .outcome import CampaignError
from .store import contract

PINNED = "pinned with --fixed-args"


def fixed(config: dict) -> dict[str, str]:
    return dict((config.get("data_shaping") or {}).get("fixed") or {})


def untouchable(config: dict) -> set[str]:
    """Flags `suggest` never proposes: the fixed ones and those whose flow the importer could not read."""
    shaping = config.get("data_shaping") or {}
    return set(shaping.get("fixed") or {}) | set(shaping.get("unclassified") or {})


def with_fixed_args(config: dict, names: list[str]) -> dict:
    """`config` with `names` (option names with or without dashes) pinned as fixed data-shaping options."""
    if not names:
        return config
    by_name = {}
    for flag, record in contract.long_options(config):
        for name in [*record.get("option_strings"), str(record.get("dest"))]:
            by_name[name] = flag
    shaping = {
        "fixed": fixed(config),
        "unclassified": dict((config.get("data_shaping") or {}).get("unclassified") or {}),
    }
    for name in names:
        flag = by_name.get(name) or by_name.get(name.lstrip("-"))
        if flag is None:
            raise CampaignError(f"--fixed-args {name}: job.py defines no such option; name one of its options")
        shaping["fixed"].setdefault(flag, PINNED)
        shaping["unclassified"].pop(flag, None)
    space = (config.get("search_space") or {}).get("suggested") or []
    summary = dict(config.get("summary") or {})
    if "allowed" in summary:
        summary["allowed"] = [flag for flag in summary["allowed"] if flag not in shaping["fixed"]]
    return {
        **config,
        "data_shaping": shaping,
        "search_space": {
            **(config.get("search_space") or {}),
            "suggested": [s for s in space if s["flag"] not in shaping["fixed"]],
        },
        "summary": summary,
    }


def refuse_in_run_args(config: dict, canonical: str, token: str) -> None:
    reason = fixed(config).get(canonical)
    if reason is not None:
        raise CampaignError(
            f"run args set {canonical} ({token!r}), which shapes the data, the validation split or the metric "
            f"({reason}); it is fixed within a campaign like the budget"
        )


def reimport_problems(campaign_config: dict, candidate_config: dict) -> list[str]:
    """A draft that changes a fixed option's default in job.py (or drops the option) is refused."""
    before, after = _defaults(campaign_config), _defaults(candidate_config)
    return [
        f"it changes the data-shaping option {flag} (default {before[flag]!r} -> {after.get(flag, 'removed')!r})"
        for flag in sorted(fixed(campaign_config))
        if flag in before and before[flag] != after.get(flag, "<removed>")
    ]


def _defaults(config: dict) -> dict:
    return {flag: record.get("value", record.get("default")) for flag, record in contract.long_options(config)}
