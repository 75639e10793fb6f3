"""Extract the objective metric of a finished trial from its artifacts, with evidence.

For each metric name in `metric_extraction_order`, in order:
1. structured `metrics_summary.json` (server copies first): `final_aggregated_metrics`,
   then `best_metrics`, then `metrics`, then a direct key, then a nested search (NVFLARE 2.9
   stores lists of `{"name", "value"}`; plain `{name: value}` maps work too);
2. structured `cross_val_results.json`: server global-model entries (owner keys containing
   `FL_global_model`), final-checkpoint entries preferred over `best_` ones, the unweighted
   mean across the evaluating sites;
3. text logs `run.log`, `log.txt`, `log_fl.txt`, `error_log.txt`: the last matching line of
   the first file that has one (`accuracy: 0.91`, `"accuracy": 0.91`, `final accuracy=0.91`,
   `accuracy of the received model ...: 91`; the number is taken as printed, no rescaling).
A non-finite value (NaN, inf) is never a score: the source that reported it yields nothing
for that metric, and the rejection is named in the not-found reason.

Usage: found = extract_metric(run_dir, ["accuracy"]); found.value / found.reason
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..common import bounded

SUMMARY = "metrics_summary.json"
CROSS_VAL = "cross_val_results.json"
TEXT_LOGS = ("run.log", "log.txt", "log_fl.txt", "error_log.txt")
SUMMARY_FIELDS = ("final_aggregated_metrics", "best_metrics", "metrics")
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_TEXT_BYTES = 512 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_WALK_ENTRIES = 20000
MAX_DEPTH = 8
NUMBER = rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)\b"


@dataclass(frozen=True)
class MetricResult:
    """A finite score with its evidence, or `value=None` and the not-found `reason`."""

    value: float | None
    metric_name: str = ""
    metric_source: str = ""
    metric_artifact: str = ""
    detail: str = ""
    reason: str = ""
    searched: list[str] = field(default_factory=list)


def extract_metric(base: Path, metric_order: list[str]) -> MetricResult:
    """Search `base` (a run dir holding run.log and simulation/) for the first metric that has a finite value."""
    base = Path(base)
    files = _collect_files(base)
    rejected: list[str] = []
    for metric in metric_order:
        for finder in (_from_summaries, _from_cross_val, _from_text):
            found = finder(base, files, metric, rejected)
            if found is not None:
                return found
    searched = [_rel(base, path) for name in (SUMMARY, CROSS_VAL, *TEXT_LOGS) for path in files.get(name, [])]
    return MetricResult(value=None, reason=not_found_reason(metric_order, searched, rejected), searched=searched)


def not_found_reason(metrics: list[str], searched: list[str], rejected: list[str]) -> str:
    """The crash reason `matching metric not found; metrics=[...]; searched=[...]` (+ rejected values)."""
    shown = searched[:20] + ([f"+{len(searched) - 20} more"] if len(searched) > 20 else [])
    reason = f"matching metric not found; metrics=[{', '.join(metrics)}]; searched=[{', '.join(shown)}]"
    if rejected:
        reason += f"; rejected non-finite=[{', '.join(rejected[:10])}]"
    return reason


def _collect_files(base: Path) -> dict[str, list[Path]]:
    """Bounded walk: artifact files by name, server copies first, then by path."""
    wanted = {SUMMARY, CROSS_VAL, *TEXT_LOGS}
    found: dict[str, list[Path]] = {name: [] for name in wanted}
    seen = 0
    for folder, dirs, names in os.walk(base, followlinks=False):
        depth = len(Path(folder).relative_to(base).parts)
        dirs[:] = sorted(dirs) if depth < MAX_DEPTH else []
        seen += len(names) + len(dirs)
        for name in names:
            path = Path(folder, name)
            if name in wanted and path.is_file() and not path.is_symlink():
                found[name].append(path)
        if seen > MAX_WALK_ENTRIES:
            break
    for paths in found.values():
        paths.sort(key=lambda p: (0 if "server" in p.relative_to(base).parts else 1, len(p.parts), str(p)))
    return found


def _from_summaries(base, files, metric, rejected) -> MetricResult | None:
    for path in files[SUMMARY]:
        document = _load_json(path)
        if document is None:
            continue
        for label, value in _summary_candidates(document, metric):
            if bounded.is_finite(value):
                return _found(base, path, metric, float(value), f"structured:{SUMMARY}", label)
            rejected.append(f"structured:{SUMMARY}#{label} {value}")
            break
    return None


def _summary_candidates(document: object, metric: str):
    """(field label, raw value) pairs in precedence order; the first one is decisive."""
    if not isinstance(document, dict):
        return
    for name in SUMMARY_FIELDS:
        value = _lookup(document.get(name), metric)
        if value is not None:
            yield name, value
            return
    if bounded.is_number(document.get(metric)):
        yield "direct_key", document[metric]
        return
    value = _nested(document, metric, 0)
    if value is not None:
        yield "nested", value


def _lookup(collection: object, metric: str) -> float | None:
    """A metric value from `{name: value}` or `[{"name": name, "value": value}, ...]`."""
    if isinstance(collection, dict):
        value = collection.get(metric)
        return value if bounded.is_number(value) else None
    if isinstance(collection, list):
        for item in collection:
            if isinstance(item, dict) and item.get("name") == metric and bounded.is_number(item.get("value")):
                return item["value"]
    return None


def _nested(node: object, metric: str, depth: int) -> float | None:
    if depth > MAX_DEPTH:
        return None
    direct = _lookup(node, metric)
    if direct is not None:
        return direct
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        if isinstance(child, dict | list):
            value = _nested(child, metric, depth + 1)
            if value is not None:
                return value
    return None


def _from_cross_val(base, files, metric, rejected) -> MetricResult | None:
    for path in files[CROSS_VAL]:
        document = _load_json(path)
        if not isinstance(document, dict):
            continue
        for kind in ("final", "best"):
            values = _global_model_values(document, metric, kind)
            if not values:
                continue
            source = f"structured:{CROSS_VAL}#server_{kind}"
            if all(bounded.is_finite(v) for v in values):
                mean = math.fsum(float(v) for v in values) / len(values)
                return _found(base, path, metric, mean, source, f"mean of {len(values)} site(s)")
            rejected.append(f"{source} non-finite")
            break
    return None


def _global_model_values(document: dict, metric: str, kind: str) -> list[float]:
    """One value per evaluating site for the server's final (or best_) global model."""
    values = []
    for site in sorted(document):
        results = document[site]
        if not isinstance(results, dict):
            continue
        owners = sorted(k for k in results if "FL_global_model" in k and (("best" in k.lower()) == (kind == "best")))
        for owner in owners:
            value = _lookup(results[owner], metric)
            if value is not None:
                values.append(value)
                break
    return values


def _from_text(base, files, metric, rejected) -> MetricResult | None:
    pattern = _text_pattern(metric)
    for name in TEXT_LOGS:
        for path in files[name]:
            hit = _last_match(path, pattern)
            if hit is None:
                continue
            number, raw = hit
            source = f"text:{name}:line={number}"
            value = float(raw)
            if math.isfinite(value):
                return _found(base, path, metric, value, source, "last matching line")
            rejected.append(f"{source} {raw.decode()}")
    return None


def _text_pattern(metric: str) -> re.Pattern[bytes]:
    name = re.escape(metric.encode("utf-8"))
    return re.compile(
        rb"(?<![\w.])\"?" + name + rb"\"?(?:\s+of\s+[^:=\n]{0,200}?)?\s*[:=]\s*\"?(" + NUMBER + rb")(?![\w.])",
        re.IGNORECASE,
    )


def _last_match(path: Path, pattern: re.Pattern[bytes]) -> tuple[int, bytes] | None:
    """(1-based line number, number text) of the last matching line, reading at most MAX_TEXT_BYTES.

    Lines are read in pieces of at most MAX_LINE_BYTES, so a huge line never sits in memory whole.
    """
    hit = None
    consumed = 0
    number = 1
    try:
        with open(path, "rb") as handle:
            for piece in iter(lambda: handle.readline(MAX_LINE_BYTES), b""):
                consumed += len(piece)
                matches = pattern.findall(piece)
                if matches:
                    hit = (number, matches[-1])
                if piece.endswith(b"\n"):
                    number += 1
                if consumed > MAX_TEXT_BYTES:
                    break
    except OSError:
        return None
    return hit


def _load_json(path: Path) -> object | None:
    """The JSON value at `path` (NaN allowed: json.dump writes it), or None when it cannot be read as JSON."""
    try:
        return bounded.read_json_value(path, MAX_JSON_BYTES, allow_nan=True)
    except bounded.BoundedReadError:
        return None


def _found(base: Path, path: Path, metric: str, value: float, source: str, detail: str) -> MetricResult:
    return MetricResult(
        value=value, metric_name=metric, metric_source=source, metric_artifact=_rel(base, path), detail=detail
    )


def _rel(base: Path, path: Path) -> str:
    return path.relative_to(base).as_posix()
