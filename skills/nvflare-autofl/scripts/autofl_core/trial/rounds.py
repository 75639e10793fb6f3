"""The metric per round of a finished trial and each site's value per round, from NVFLARE's round records.

NVFLARE 2.9 appends one record per aggregated round to the server's `round_metrics.jsonl`:
`{"round": 0, "aggregated_metrics": [{"name", "value"}], "sites": [{"name": "site-1", "metrics": [{"name",
"value"}]}, ...]}`. Only finite numbers count; a round without the metric is left out. Usage::

    curve = read_rounds(run_dir, "accuracy")       # [Round(round=0, value=0.26, sites={"site-1": 0.26, ...}), ...]
    as_records(curve)                              # [{"round": 0, "value": 0.26, "sites": {...}}, ...] (trial.json)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..common import bounded
from .what_ran import round_records

MAX_ROUNDS = 10000  # more records than this are not one run's rounds: the first ones are kept


@dataclass(frozen=True)
class Round:
    """One round's aggregated value (None when only sites reported it) and each site's value."""

    round: int
    value: float | None
    sites: dict[str, float] = field(default_factory=dict)


def read_rounds(result_dir: Path, metric: str) -> list[Round]:
    """The rounds under `result_dir` that carry `metric`, in round order (a repeated round: the last record)."""
    return from_records(round_records(Path(result_dir)), metric)


def from_records(records: list, metric: str) -> list[Round]:
    """Pure: parsed round records -> rounds carrying `metric`."""
    found: dict[int, Round] = {}
    for record in records[:MAX_ROUNDS]:
        if not isinstance(record, dict):
            continue
        number = record.get("round")
        if not bounded.is_integer(number) or number < 0:
            continue
        value = _value(record.get("aggregated_metrics"), metric)
        sites = {}
        for site in record.get("sites") or [] if isinstance(record.get("sites"), list) else []:
            if isinstance(site, dict) and isinstance(site.get("name"), str):
                site_value = _value(site.get("metrics"), metric)
                if site_value is not None:
                    sites[site["name"]] = site_value
        if value is not None or sites:
            found[number] = Round(number, value, dict(sorted(sites.items())))
    return [found[number] for number in sorted(found)]


def as_records(rounds: list[Round]) -> list[dict]:
    """The rounds as JSON records (what the runner stores in a trial's trial.json)."""
    return [{"round": entry.round, "value": entry.value, "sites": dict(entry.sites)} for entry in rounds]


def _value(entries: object, metric: str) -> float | None:
    """The finite value named `metric` in NVFLARE's `[{"name", "value"}]` list (a plain `{name: value}` map too)."""
    if isinstance(entries, dict):
        entries = [{"name": key, "value": value} for key, value in entries.items()]
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == metric:
            value = entry.get("value")
            if bounded.is_finite(value):
                return float(value)
    return None
