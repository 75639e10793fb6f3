"""The campaign objective: which metric, which direction, where it comes from, what must not change.

Direction of the job's key metric (NVFLARE 2.9 semantics): explicit `key_metric_mode`, else a
`stop_cond` on the same metric (`>=`/`>` max, `<=`/`<` min), else NVFLARE's default `max`
(`core_default`). A custom model selector makes the direction unresolved. A requested metric other
than the key metric needs a bridge in mutation_schema.yaml, which may set the bridged metric's
direction but never the job's own key-metric direction.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import recipes
from .inputs import NO_INPUTS, Input
from .values import Val, known

if TYPE_CHECKING:
    from ..campaign.ledger import LedgerRow

DEFAULT_KEY_METRIC = "accuracy"
LOWER_IS_BETTER = frozenset(
    "loss error err mse mae rmse msle rmsle mape smape nll perplexity ppl wer cer ter bce ce crossentropy "
    "logloss kl divergence regret latency fid".split()
)
HIGHER_IS_BETTER = frozenset(
    "accuracy acc auc auroc auprc roc f1 precision recall dice iou miou map bleu rouge r2 ndcg "
    "sensitivity specificity top1 top5 psnr ssim".split()
)
DIRECTION = {"max": "higher is better", "min": "lower is better"}  # what each mode means, in words
_STOP_MODES = {">=": "max", ">": "max", "<=": "min", "<": "min"}
SELECTOR_NAMES = ("IntimeModelSelector",)


def _tokens(metric: str) -> list[str]:
    """The words of a metric name: `val_top1Error` -> ["val", "top", "1error"] (split at digits after letters)."""
    return [t for t in re.split(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])", metric.lower()) if t]


def is_lower_better_name(metric: str) -> bool:
    """True for names that are obviously lower-is-better (loss, val_mse, top1_error, ...)."""
    tokens = _tokens(metric)
    if tokens and tokens[0] in ("neg", "negative", "minus"):
        return False
    return any(t in LOWER_IS_BETTER or t.endswith("loss") for t in tokens)


def is_higher_better_name(metric: str) -> bool:
    """True for names that are obviously higher-is-better (accuracy, val_auc, f1_score, ...), never a loss."""
    return not is_lower_better_name(metric) and any(t in HIGHER_IS_BETTER for t in _tokens(metric))


def direction_warning(metric: str | None, mode: str | None) -> str | None:
    """One line when `mode` contradicts an obvious metric name (`--mode min` on accuracy), else None."""
    if not metric or mode not in ("min", "max"):
        return None
    if mode == "min" and is_higher_better_name(metric):
        return f"warning: --mode min treats lower '{metric}' as better, but the name looks higher-is-better; use --mode max unless lower really is better"
    if mode == "max" and is_lower_better_name(metric):
        return f"warning: --mode max treats higher '{metric}' as better, but the name looks lower-is-better; use --mode min unless higher really is better"
    return None


def ledger_metric(rows: list[LedgerRow], fallback: str | None = "score") -> str | None:
    """The metric named by the first scored ledger row, else `fallback`."""
    return next((row.metric_name for row in rows if row.score is not None and row.metric_name), fallback)


def parse_stop_cond(text: str) -> tuple[str, str] | None:
    """`"accuracy >= 0.9"` -> ("accuracy", "max"); None when not of NVFLARE's `<key> <op> <value>` form."""
    tokens = text.split(" ")
    return None if len(tokens) != 3 or tokens[1] not in _STOP_MODES else (tokens[0], _STOP_MODES[tokens[1]])


def _text(val: Any) -> str | None:
    return val.value if known(val, str) else None


def _given(val: Any) -> bool:
    """Passed, and not as an explicit None."""
    return val is not None and not (isinstance(val, Val) and val.resolved and val.value is None)


def _settings(surface: Any) -> tuple[dict, Any]:
    """Where the key-metric settings live: (recipe kwargs, or FedJob + its controllers' stop_cond; the selector)."""
    kwargs, selector = dict(surface.target.kwargs), None
    if surface.pattern == "fedjob":
        for comp in surface.components:
            if "stop_cond" in comp.kwargs:
                kwargs["stop_cond"] = comp.kwargs["stop_cond"]
            if "Selector" in comp.name:
                selector = comp
    given = kwargs.get("model_selector")
    return kwargs, (given if _given(given) else selector)


def job_key_metric(surface: Any) -> dict:
    """The job's own key metric and direction: {metric, mode, metric_source, mode_source, reasons}."""
    (kwargs, selector), owner = _settings(surface), surface.target.name
    reasons: dict[str, str] = {}
    metric, metric_source = _default_key_metric(surface), "core_default"
    if "key_metric" in kwargs:
        metric, metric_source = _text(kwargs["key_metric"]), f"{owner}(key_metric=...)"
        if metric is None:
            reasons["job_key_metric"] = "key_metric is not a literal string or argparse value"
    selector_mode, known_selector = None, getattr(selector, "name", "") in SELECTOR_NAMES
    if known_selector:
        if "key_metric" in selector.kwargs:
            metric, metric_source = _text(selector.kwargs["key_metric"]), f"{selector.name}(key_metric=...)"
        elif "key_metric" not in kwargs:
            metric, metric_source = "val_accuracy", f"{selector.name} default"
        negate = selector.kwargs.get("negate_key_metric")
        if isinstance(negate, Val) and negate.resolved:
            selector_mode = "min" if negate.value is True else "max"
    mode, mode_source = _direction(kwargs, metric, reasons)
    if selector is not None and not known_selector:
        mode, mode_source = None, "unresolved"
        reasons["mode"] = "a custom model_selector decides what 'best' means; its direction cannot be read statically"
    elif selector_mode is not None and mode_source == "core_default":
        mode, mode_source = selector_mode, f"{selector.name}(negate_key_metric=...)"
    return {
        "metric": metric,
        "metric_source": metric_source,
        "mode": mode,
        "mode_source": mode_source,
        "reasons": reasons,
    }


def _default_key_metric(surface: Any) -> str:
    """NVFLARE's key metric when job.py names none: the recipe class's own default (SVMFedAvgRecipe: AUC)."""
    if surface.pattern == "recipe":
        default = recipes.default_of(surface.target.cls, "key_metric")
        if default.status == "value" and isinstance(default.value, str) and default.value:
            return default.value
    return DEFAULT_KEY_METRIC


def objective_inputs(surface: Any) -> frozenset[Input]:
    """The run-time inputs behind the values that decide the job's key metric and its direction."""
    kwargs, selector = _settings(surface)
    chosen = getattr(selector, "kwargs", {})
    deciding = [kwargs.get(k) for k in ("key_metric", "key_metric_mode", "stop_cond")]
    deciding += [chosen.get("key_metric"), chosen.get("negate_key_metric")]
    return NO_INPUTS.union(*(getattr(v, "inputs", NO_INPUTS) for v in deciding))


def _direction(kwargs: dict, metric: str | None, reasons: dict) -> tuple[str | None, str]:
    explicit = kwargs.get("key_metric_mode")
    stop = kwargs.get("stop_cond")
    stop_mode = None
    if _given(stop):
        text = _text(stop)
        if text is None:
            reasons["mode"] = "stop_cond is not resolved statically, so its direction is unknown"
            return None, "unresolved"
        parsed = parse_stop_cond(text)
        if parsed is not None and parsed[0] == metric:
            stop_mode = parsed[1]
    if _given(explicit):
        mode = _text(explicit)
        if mode not in ("min", "max"):
            reasons["mode"] = "key_metric_mode is not a literal 'min' or 'max'"
            return None, "unresolved"
        if stop_mode is not None and stop_mode != mode:
            reasons["mode"] = f"key_metric_mode={mode!r} conflicts with stop_cond {_text(stop)!r} (NVFLARE rejects it)"
            return None, "unresolved"
        return mode, "key_metric_mode"
    return (stop_mode, "stop_cond") if stop_mode is not None else ("max", "core_default")


def build_objective(surface: Any, requested: str | None, schema: dict | None, train_script: str | None) -> dict:
    """The `objective` block; `schema` is the normalized `schema` section (`_reasons` is popped by the caller)."""
    job = job_key_metric(surface)
    contract = _schema_contract(schema, requested, job["metric"])
    metric = contract["metric"]
    bridged = metric is not None and metric != job["metric"] and metric in ((schema or {}).get("bridged_metrics") or [])
    if metric is not None and metric == job["metric"]:
        mode, mode_source = job["mode"], job["mode_source"]
    elif bridged:
        schema_mode = contract["schema_mode"]
        mode, mode_source = (schema_mode, "mutation_schema") if schema_mode else ("max", "core_default")
    else:
        mode, mode_source = None, "undeclared"
    invariants = _invariants(surface, metric, mode, mode_source, train_script, bridged)
    return {**_block(contract, job, bool(bridged), invariants, mode, mode_source), "_reasons": job["reasons"]}


def empty_objective(metric: str | None, schema: dict) -> dict:
    """The objective of a job the reading cannot follow: the schema's contract (requested metric, extraction order,
    mode) and nothing of the job's own, so a dry run's record is held to the schema like a reading's."""
    unknown = {"metric": None, "mode": None, "metric_source": None}
    return _block(_schema_contract(schema, metric, None), unknown, False, {}, None, "unresolved")


def _schema_contract(schema: dict | None, requested: str | None, job_metric: str | None) -> dict:
    """The objective's keys the schema's `objective` section decides: the requested metric (the caller's, else the
    schema's), else the job's."""
    sobj = (schema or {}).get("objective") or {}
    requested = requested or sobj.get("requested_metric") or None
    metric = requested or job_metric
    return {
        "metric": metric,
        "metric_extraction_order": list(sobj.get("metric_extraction_order") or ([metric] if metric else [])),
        "metric_source": sobj.get("metric_source") or "auto",
        "requested_metric": requested,
        "schema_mode": sobj.get("mode") if sobj.get("mode") in ("min", "max") else None,
    }


def _block(contract: dict, job: dict, bridged: bool, invariants: dict, mode: str | None, source: str) -> dict:
    return {
        **contract,
        "bridged": bridged,
        "job_key_metric": job["metric"],
        "job_key_metric_mode": job["mode"],
        "job_key_metric_source": job["metric_source"],
        "metric_invariants": invariants,
        "mode": mode,
        "mode_contract_source": source,
    }


def _invariants(surface: Any, metric: Any, mode: Any, source: str, script: str | None, bridged: bool) -> dict:
    owner = surface.target.name
    where = script or "the client code"
    better = DIRECTION.get(mode, "direction unresolved")
    definition = f"'{metric}' as reported by {where} to NVFLARE"
    if bridged:
        definition += " (bridged by mutation_schema.yaml, not the job's key metric)"
    return {
        "aggregation": f"server-side aggregation of site-reported metrics by {owner} (same sites every trial)",
        "definition": definition,
        "evaluation_data": f"the validation data and split {where} evaluates on; must not change between candidates",
        "scale_units_direction": f"{metric}: {mode} ({better}; from {source}); same scale and units every trial",
        "timing": "the global model at the end of the fixed num_rounds (final checkpoint preferred over best)",
    }
