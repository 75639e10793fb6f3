"""suggest: deterministic, never-executed argument-only candidate seeds, centred on the current best configuration;
writes nothing but the refreshed state.

For each tunable option job.py defines (the importer's `search_space.suggested`, which already leaves out the
fixed budget and plumbing), propose values around the best configuration's current value: learning rates
x2, x1/2, x4, x1/4; other floats x2, x1/2 (a zero becomes a small typical value); integers such as steps,
epochs and batch sizes x2 and x1/2; booleans flipped; the other choices of a choice option. Values outside
the schema bounds are dropped, and an argument set already tried from the same best source is never
suggested again. Each seed's hypothesis says what the change does (`--local_steps 20`: twice the local compute
per round, within the fixed budget, which counts rounds and clients), and `family` is its conventional
`--family` value (`FAMILIES`). `suggestions` is pure. Usage::

    seeds = suggestions(space, current={"--lr": "0.05"}, tried=[{"--lr": "0.1"}], used_names={"baseline"}, limit=10)
"""

from __future__ import annotations

import math
import re

from ...campaign import vocabulary as v
from .. import data_fixed, runargs
from ..outcome import ActionResult, CampaignError

LR_RE = re.compile(r"(^|_)(lr|learning_rate|eta|step_size)($|_)")
LOCAL_WORK_RE = re.compile(r"(^|_)(local_)?(steps|epochs|epoch|iters|iterations|updates)($|_)|aggregation_epochs")
BATCH_RE = re.compile(r"batch")
WORKERS_RE = re.compile(r"(^|_)(num_)?workers($|_)")
AGGREGATOR_RE = re.compile(r"aggregat")
ZERO_DEFAULTS = {
    "mu": ["0.01", "0.1"],
    "weight_decay": ["0.0001", "0.0005"],
    "momentum": ["0.9", "0.5"],
    "dropout": ["0.1", "0.3"],
}
ZERO_EFFECTS = {  # dest -> (what turning it on does, its family)
    "mu": (
        "a FedProx proximal term: pulls each local model toward the global one, against client drift",
        "regularization",
    ),
    "weight_decay": ("weight decay: shrinks the weights of the local models, against overfitting", "regularization"),
    "momentum": ("SGD momentum: smoother, faster local updates", "optimizer"),
    "dropout": ("dropout: regularizes the model, usually a little slower to fit in few rounds", "regularization"),
}
UNIT_INTERVAL = ("momentum", "dropout")  # values outside [0, 1) make no sense
FAMILIES = (  # the conventional --family values (SKILL.md); any slug is accepted
    "tuning",
    "preprocessing",
    "optimizer",
    "loss",
    "aggregation",
    "architecture",
    "regularization",
    "data-sampling",
)
NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")
DEFAULT_LIMIT = 10


def run(campaign, options, now: str) -> ActionResult:
    limit = DEFAULT_LIMIT if options.limit is None else options.limit
    if limit < 1:
        raise CampaignError("--limit must be a positive number of suggestions")
    config = campaign.config
    untouchable = data_fixed.untouchable(config)  # options that shape the data, and those the importer could not read
    space = [s for s in (config.get("search_space") or {}).get("suggested") or [] if s["flag"] not in untouchable]
    current = dict(runargs.pairs_from_tokens(config, campaign.best_run_args()))
    best = campaign.best()
    tried = [
        dict(runargs.pairs_from_tokens(config, m.effective_run_args))
        for m in campaign.manifests()
        if m.base_source_sha256 == best.digest and not m.patch_sha256 and m.status not in (v.ABANDONED, v.PREPARED)
    ]
    seeds = suggestions(
        space,
        current=current,
        tried=tried,
        used_names=campaign.used_names(),
        limit=limit,
        mode=campaign.settings.mode,
        metric=campaign.settings.metric,
    )
    return ActionResult(extras={"suggestions": seeds})


def suggestions(
    space: list[dict],
    *,
    current: dict,
    tried: list[dict],
    used_names: set[str],
    limit: int,
    mode: str = "max",
    metric: str = "the metric",
) -> list[dict]:
    """Up to `limit` seeds `{name, run_args, hypothesis}`, interleaved across options (first idea of each first)."""
    per_flag = [_ideas(item, current) for item in space]
    seen = [dict(args) for args in tried]
    base = dict(current)
    out, names = [], set(used_names)
    for rank in range(max((len(ideas) for ideas in per_flag), default=0)):
        for item, ideas in zip(space, per_flag, strict=True):
            if rank >= len(ideas) or len(out) >= limit:
                continue
            value, label = ideas[rank]
            if not _within(item, value):
                continue
            candidate = dict(base, **{item["flag"]: value})
            if candidate in seen or candidate == base:
                continue
            seen.append(candidate)
            name = _unique(NAME_RE.sub("-", f"{item['dest']}-{label}").strip("-.")[:64], names)
            names.add(name)
            old = base.get(item["flag"], _text(item.get("default")))
            run_args = [item["flag"]] if value is None else [item["flag"], value]
            effect, family = what_it_changes(item, old, value, label)
            out.append(
                {
                    "name": name,
                    "run_args": run_args,
                    "family": family,
                    "hypothesis": f"`{' '.join(run_args)}`: {effect} ("
                    + (f"{item['flag']} {old} -> {value}; " if value is not None else "")
                    + f"everything else as in the best configuration; {metric}, "
                    f"{'higher' if mode == 'max' else 'lower'} is better).",
                }
            )
    return out


def what_it_changes(item: dict, old: str | None, new: str | None, label: str) -> tuple[str, str]:
    """(what the change does, in plain words, its conventional --family) for one suggestion."""
    dest, kind = item["dest"], item.get("type")
    factor = _factor(old, new)
    more = factor is not None and factor > 1
    if item.get("choices"):
        return f"uses {dest} {new} instead of {old}", "aggregation" if AGGREGATOR_RE.search(dest) else "tuning"
    if kind == "bool":
        return f"turns {item['flag']} on (it was off)", "tuning"
    if LR_RE.search(dest):
        if more:
            return f"{_times(factor)} the step size: faster progress in the fixed rounds, or divergence", "optimizer"
        return f"{_times(factor)} the step size: steadier updates, slower progress in the fixed rounds", "optimizer"
    if LOCAL_WORK_RE.search(dest):
        per_round = (
            f"{_times(factor)} the local compute per round (within the fixed budget, which counts rounds and clients)"
        )
        drift = "more progress per round, more client drift" if more else "less client drift, less progress per round"
        return f"{per_round}: {drift}", "tuning"
    if BATCH_RE.search(dest):
        if more:
            return (
                f"{_times(factor)} the batch size: fewer, smoother local steps per epoch (may want a larger lr)",
                "tuning",
            )
        return f"{_times(factor)} the batch size: more, noisier local steps per epoch", "tuning"
    if WORKERS_RE.search(dest):
        return "data-loading workers only: speed, not the score (expect the same result)", "tuning"
    known = ZERO_EFFECTS.get(dest)
    if known:
        return (known[0] if old in (None, "0", "0.0") else f"{dest} {old} -> {new}: {known[0]}"), known[1]
    if factor is not None:
        return f"{_times(factor)} {item['flag']}", "tuning"
    return f"sets {item['flag']} to {new} ({label})", "tuning"


def _factor(old: str | None, new: str | None) -> float | None:
    a, b = _float(old), _float(new)
    if a in (None, 0) or b is None:
        return None
    return b / a


def _times(factor: float) -> str:
    names = {2.0: "twice", 0.5: "half", 4.0: "four times", 0.25: "a quarter of"}
    return names.get(round(factor, 6), f"{factor:g}x")


def _ideas(item: dict, current: dict) -> list[tuple[str | None, str]]:
    """(value, label) pairs for one option, best first."""
    kind, flag = item.get("type"), item["flag"]
    value = current.get(flag, _text(item.get("default")))
    choices = item.get("choices")
    if choices:
        return [(_text(choice), _text(choice)) for choice in choices if _text(choice) != value]
    if kind == "bool":
        return [(None, "on")] if value in (None, "False", "false", "0", "") else []
    number = _float(value)
    if number is None:
        return []
    if kind == "int":
        return [
            (str(v), label)
            for v, label in ((int(number * 2), "x2"), (max(int(number // 2), 1), "x0.5"))
            if v != int(number) and v >= 1
        ]
    if kind != "float":
        return []
    if number == 0:
        return [(v, v) for v in ZERO_DEFAULTS.get(item["dest"], [])]
    factors = (2, 0.5, 4, 0.25) if LR_RE.search(item["dest"]) else (2, 0.5)
    return [(_format(number * factor), f"x{factor:g}") for factor in factors]


def _within(item: dict, value: str | None) -> bool:
    number = _float(value)  # None for a switch (no value) or a value that is no number: nothing to bound
    if number is None:
        return True
    if item["dest"] in UNIT_INTERVAL and not 0 <= number < 1:
        return False
    return not ("min" in item and number < float(item["min"])) and not ("max" in item and number > float(item["max"]))


def _unique(name: str, used: set[str]) -> str:
    name = name or "seed"
    if name not in used:
        return name
    index = 2
    while f"{name}-{index}" in used:
        index += 1
    return f"{name}-{index}"


def _format(number: float) -> str:
    return f"{number:.6g}"


def _float(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, float):
        return _format(value)
    return str(value)
