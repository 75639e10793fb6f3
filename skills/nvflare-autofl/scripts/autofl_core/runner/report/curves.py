"""The runs whose metric per round the plot and the report show, read from each run's round records, and what the
curves show in words.

Chosen (`chosen_runs`, pure): the baseline, the best, and the latest candidates: the batch the last attempt ran
in, else the last few attempts (at most MAX_CANDIDATES). Each run's records are NVFLARE's `round_metrics.jsonl` in
its run folder (recorded in the run's trial.json by the runner, `trial/rounds`). Usage::

    curves = read_curves(campaign)                 # [{"name", "role", "rounds", "values", "sites"}, ...]
    describe(curves, "max")                        # ["best (lr-x2): still rising at the last round (+0.012)", ...]
    site_values(campaign, row)                     # {"site-1": 0.84, "site-2": 0.81}: the run's last round
"""

from __future__ import annotations

from ...campaign import vocabulary as v
from ...campaign.compare import format_score
from ...campaign.ledger import LedgerRow
from ...common import bounded
from . import facts

MAX_CANDIDATES = 4
FLAT = 0.002  # a last-round change smaller than this share of the curves' value range counts as flat
DIVERGED = 0.25  # falling from its peak by more than this share of its own rise counts as diverging


def chosen_runs(rows: list[LedgerRow], walk: facts.Walk, batches: list[dict]) -> list[tuple[int, str]]:
    """(row index, role) of the runs to show: baseline, best, then the latest candidates (pure)."""
    chosen: list[tuple[int, str]] = []
    if walk.baseline is not None:
        chosen.append((walk.baseline, v.BASELINE))
    if walk.best is not None and walk.best != walk.baseline:
        chosen.append((walk.best, "best"))
    attempts = [index for index, row in enumerate(rows) if row.status in v.ATTEMPTS]
    if not attempts:
        return chosen
    last = rows[attempts[-1]].name
    members = next((batch["members"] for batch in reversed(batches) if last in batch["members"]), None)
    latest = [index for index in attempts if rows[index].name in members] if members else attempts
    taken = {index for index, _ in chosen}
    for index in [i for i in latest if i not in taken][-MAX_CANDIDATES:]:
        chosen.append((index, "candidate"))
    return chosen


def read_curves(campaign, rows: list[LedgerRow] | None = None) -> list[dict]:
    """The chosen runs' metric per round and last-round site values (runs without round records are left out)."""
    rows = campaign.rows() if rows is None else rows
    walk = facts.walk_rows(rows, campaign.settings.mode)
    curves = []
    for index, role in chosen_runs(rows, walk, facts.batches(campaign.manifests())):
        row = rows[index]
        found = [entry for entry in _rounds(campaign, row.name, row.metric_name) if entry["value"] is not None]
        if found:
            curves.append(
                {
                    "name": row.name,
                    "role": role,
                    "rounds": [entry["round"] for entry in found],
                    "values": [entry["value"] for entry in found],
                    "sites": final_sites(found),
                }
            )
    return curves


def site_values(campaign, row: LedgerRow | None) -> dict[str, float]:
    """Each site's value of the metric in the run's last round ({} without site records)."""
    if row is None or not row.name:
        return {}
    return final_sites(_rounds(campaign, row.name, row.metric_name))


def sites_of_run(campaign, name: str | None) -> dict[str, float]:
    """`site_values` of the run called `name` (its ledger row's metric; the campaign's when it has no row)."""
    if not name:
        return {}
    row = next((row for row in reversed(campaign.rows()) if row.name == name), None)
    return final_sites(_rounds(campaign, name, row.metric_name if row else ""))


def _rounds(campaign, name: str, metric_name: str) -> list[dict]:
    """The run's rounds (`{"round", "value", "sites"}`): as its trial.json recorded them, else read from its
    round records (a run the runner did not execute, such as a recorded external result)."""
    folder = campaign.paths.run_dir(name)
    if folder.is_symlink() or not folder.is_dir():
        return []
    trial = bounded.read_json_or_none(folder / "trial.json")
    if trial is not None and isinstance(trial.get("rounds"), list):
        return [entry for entry in trial["rounds"] if _round_record(entry)]
    from ...trial import rounds  # only for a run without trial.json: actions that run nothing never import trial/

    return rounds.as_records(rounds.read_rounds(folder, metric_name or campaign.settings.metric))


def _round_record(entry: object) -> bool:
    """A stored round record of the expected shape (anything else in a hand-edited trial.json is skipped)."""
    if not isinstance(entry, dict) or type(entry.get("round")) is not int or not isinstance(entry.get("sites"), dict):
        return False
    numbers = [entry.get("value"), *entry["sites"].values()]
    return all(value is None or type(value) in (int, float) for value in numbers)


def final_sites(found: list[dict]) -> dict[str, float]:
    """Each site's value in the last round that has site values ({} when none has)."""
    for entry in reversed(found):
        if entry["sites"]:
            return dict(entry["sites"])
    return {}


def describe(curves: list[dict], mode: str) -> list[str]:
    """What the curves show, one sentence per run (pure): the trend at the last round, a fall after a peak,
    and for the best the round at which it reached the baseline's final value."""
    sign = 1.0 if mode == "max" else -1.0
    values = [value for curve in curves for value in curve["values"]]
    if not values:
        return []
    scale = (max(values) - min(values)) or abs(max(values)) or 1.0
    baseline = next((curve for curve in curves if curve["role"] == v.BASELINE), None)
    sentences = []
    for curve in curves:
        label = curve["name"] if curve["role"] in ("candidate", curve["name"]) else f"{curve['role']} ({curve['name']})"
        words = [_trend(curve, sign, scale), _fall_after_peak(curve, sign)]
        if curve["role"] == "best" and baseline and baseline["values"]:
            words.append(_reached(curve, baseline, sign))
        sentences.append(f"{label}: " + "; ".join(word for word in words if word))
    return sentences


def _trend(curve: dict, sign: float, scale: float) -> str:
    values, rounds = curve["values"], curve["rounds"]
    if len(values) < 2:
        return f"one round recorded (round {rounds[0]}: {format_score(values[0])})"
    step = values[-1] - values[-2]
    better = "rising" if sign > 0 else "falling"
    worse = "falling" if sign > 0 else "rising"
    if abs(step) <= FLAT * scale:
        return f"flat at the last round ({format_score(values[-1])} at round {rounds[-1]})"
    if sign * step > 0:
        return f"still {better} at the last round ({step:+.4g} to {format_score(values[-1])} at round {rounds[-1]})"
    return f"{worse} (worse) at the last round ({step:+.4g} to {format_score(values[-1])} at round {rounds[-1]})"


def _fall_after_peak(curve: dict, sign: float) -> str:
    values, rounds = curve["values"], curve["rounds"]
    peak = max(range(len(values)), key=lambda i: (sign * values[i], -i))
    rise = sign * (values[peak] - values[0])
    drop = sign * (values[peak] - values[-1])
    if peak == len(values) - 1 or rise <= 0 or drop <= DIVERGED * rise:
        return ""
    return f"diverged after round {rounds[peak]} (peak {format_score(values[peak])}, ends {format_score(values[-1])})"


def _reached(best: dict, baseline: dict, sign: float) -> str:
    target = baseline["values"][-1]
    for rnd, value in zip(best["rounds"], best["values"], strict=True):
        if sign * (value - target) >= 0:
            return f"reached the baseline's final value ({format_score(target)}) at round {rnd} of {best['rounds'][-1]}"
    return f"never reached the baseline's final value ({format_score(target)})"
