"""Read NVFLARE metrics artifacts (`metrics_summary.json`, `round_metrics.jsonl`) into the report's `metrics`.

Usage:
    part = summary_part(json.loads(text), source)            # from metrics_summary.json
    part = rounds_part(["{...}", "{...}"], source)            # from round_metrics.jsonl lines
    metrics = combine([part, ...])                           # {final_round, key_metric, final_aggregated_metrics, non_finite}

Non-finite values (NaN/inf, literal or as strings, and NVFLARE's own `skipped_metrics` entries with reason
`non_finite_number`) are listed in `non_finite` as
{"metric", "round", "site", "source", "value"}; in `final_aggregated_metrics` they appear as the strings
"NaN" / "Infinity" / "-Infinity" so the report stays valid JSON.
"""

from __future__ import annotations

import json
import math

from . import jsontext

MAX_NON_FINITE = 50
_NON_FINITE_WORDS = {
    "nan": "NaN",
    "inf": "Infinity",
    "+inf": "Infinity",
    "infinity": "Infinity",
    "-inf": "-Infinity",
    "-infinity": "-Infinity",
}
SKIPPED_NON_FINITE = "skipped:non_finite_number"


def non_finite_label(value: object) -> str | None:
    """'NaN' / 'Infinity' / '-Infinity' for a non-finite number or such a string, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return _NON_FINITE_WORDS.get(value.strip().lower())
    return None


def _metric_items(metrics: object) -> list[tuple[str, object]]:
    """Accept NVFLARE's [{"name", "value"}] list or a plain {name: value} mapping."""
    if isinstance(metrics, dict):
        return [(str(name), value) for name, value in metrics.items()]
    if isinstance(metrics, list):
        return [(str(item.get("name")), item.get("value")) for item in metrics if isinstance(item, dict)]
    return []


def _scan(metrics: object, *, source: str, round_no: object, site: object, found: list[dict]) -> dict:
    """Return {name: json-safe value} and append non-finite entries to `found`."""
    clean = {}
    for name, value in _metric_items(metrics):
        label = non_finite_label(value)
        if label is not None:
            found.append(_entry(name, round_no, site, source, label))
            value = label
        clean[name] = value if _json_safe(value) else str(value)
    return clean


def _entry(metric: str, round_no: object, site: object, source: str, value: str) -> dict:
    return {
        "metric": metric,
        "round": round_no if isinstance(round_no, int) else None,
        "site": site if isinstance(site, str) else None,
        "source": source,
        "value": value,
    }


def _json_safe(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def summary_part(obj: object, source: str) -> dict | None:
    """Metrics facts from a parsed metrics_summary.json, or None when it does not look like one."""
    if not isinstance(obj, dict) or not ({"final_aggregated_metrics", "final_round", "key_metric"} & obj.keys()):
        return None
    found: list[dict] = []
    final_round = obj.get("final_round")
    final = _scan(obj.get("final_aggregated_metrics"), source=source, round_no=final_round, site=None, found=found)
    _scan(obj.get("best_metrics"), source=source, round_no=obj.get("best_round"), site=None, found=found)
    key = obj.get("key_metric")
    key_metric = (
        {k: key.get(k) for k in ("name", "mode") if isinstance(key.get(k), str)} if isinstance(key, dict) else None
    )
    return {
        "origin": "summary",
        "final_round": final_round if isinstance(final_round, int) else None,
        "key_metric": key_metric or None,
        "final_aggregated_metrics": final or None,
        "non_finite": found,
    }


def rounds_part(texts: list[str], source: str) -> dict | None:
    """Metrics facts from round_metrics.jsonl lines (unparsable lines, e.g. cut by truncation, are ignored)."""
    found: list[dict] = []
    last_round, last_final = None, None
    for text in texts:
        record = jsontext.parse(text)
        if not isinstance(record, dict):
            continue
        round_no = record.get("round")
        final = _scan(record.get("aggregated_metrics"), source=source, round_no=round_no, site=None, found=found)
        for site in record.get("sites") or []:
            if isinstance(site, dict):
                _scan(site.get("metrics"), source=source, round_no=round_no, site=site.get("name"), found=found)
        for skipped in record.get("skipped_metrics") or []:
            if isinstance(skipped, dict) and skipped.get("reason") == "non_finite_number":
                found.append(
                    _entry(str(skipped.get("name")), round_no, skipped.get("site"), source, SKIPPED_NON_FINITE)
                )
        if isinstance(round_no, int) and (last_round is None or round_no >= last_round):
            last_round, last_final = round_no, final
    if last_round is None and not found:
        return None
    return {
        "origin": "rounds",
        "final_round": last_round,
        "key_metric": None,
        "final_aggregated_metrics": last_final or None,
        "non_finite": found,
    }


def combine(parts: list[dict]) -> dict | None:
    """Merge parts: summary facts win over per-round facts; non-finite entries are unioned, sorted, capped."""
    if not parts:
        return None
    ordered = sorted(parts, key=lambda part: part["origin"] != "summary")
    result = {"final_round": None, "key_metric": None, "final_aggregated_metrics": None}
    for part in ordered:
        for field in result:
            if result[field] is None and part.get(field) is not None:
                result[field] = part[field]
    unique = {json.dumps(entry, sort_keys=True): entry for part in parts for entry in part["non_finite"]}
    entries = sorted(unique.values(), key=_entry_key)
    result["non_finite"] = entries[:MAX_NON_FINITE]
    return result


def _entry_key(entry: dict) -> tuple:
    round_no = entry["round"] if entry["round"] is not None else -1
    return (entry["source"], round_no, entry["site"] or "", entry["metric"], entry["value"])
