"""Is a gain real? The noise verdict of an improvement, shared by the state's advice, the envelope and the report.

- `beyond noise` / `within noise`: the gain against a measured noise band (replicates of the best exist);
- `unverified`: nothing was measured yet and the gain is smaller than the metric's resolution (one sample of the
  evaluation set, when the job reports its size) or than the run-to-run spread typical for the metric
  (`typical_spread`: a rule of thumb, never a measurement);
- None: no gain, or a gain large enough that nothing suggests luck.

Pure. Usage::

    verdict(0.002, band=None, metric="accuracy", reference=0.81, resolution=None)   # "unverified"
    eval_size("Accuracy of the network on the 180 test images: 79 %")               # 180
    resolution_of("accuracy", 180)                                                   # 0.005556
"""

from __future__ import annotations

import re

BEYOND, WITHIN, UNVERIFIED = "beyond noise", "within noise", "unverified"
SEEDED_RERUNS, IDENTICAL_RERUNS = "seeded", "identical"  # how replicates vary: other seeds, or identical reruns
# Metrics in [0, 1] whose federated run-to-run spread is typically around a percentage point; a gain below that,
# with nothing measured, is unverified. Other metrics (losses, errors in units): 2% of the previous best.
UNIT_METRIC_RE = re.compile(r"acc|auc|f1|precision|recall|dice|iou|jaccard|top[-_]?\d|map\b", re.IGNORECASE)
UNIT_SPREAD = 0.01
RELATIVE_SPREAD = 0.02
# Metrics that count samples (accuracy, error rate, precision, recall): one sample of an evaluation set of n
# samples moves them by 1/n, their resolution.
COUNTING_METRIC_RE = re.compile(r"acc|precision|recall|top[-_]?\d|error_rate", re.IGNORECASE)
EVAL_SIZE_RES = (
    re.compile(
        r"\bon (?:the )?(\d+) (?:test|validation|valid|val|eval|evaluation|held-out)\w* (?:images|samples|examples)"
    ),
    re.compile(
        r"\b(?:val|valid|validation|eval|evaluation|test)[_ ](?:set[_ ])?(?:size|samples|examples|count)\s*[=:]\s*(\d+)",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:n|num)_(?:val|valid|validation|eval|test)(?:_samples)?\s*[=:]\s*(\d+)", re.IGNORECASE),
)
MAX_EVAL_SIZE = 10**9


def band(noise: dict | None) -> float | None:
    """The half-width of the noise band gains are judged by, or None (not measured): the keep margin when the
    noise rule applies, otherwise max(margin, 2 stdev), the "twice the spread" rule of thumb SKILL.md gives."""
    if noise is None or noise["stdev"] is None:
        return None
    if noise["applied"]:
        return noise["margin"]
    return round(max(noise["margin"], 2 * noise["stdev"]), 6)


def typical_spread(metric: str | None, reference: float | None) -> float | None:
    """The run-to-run spread typical for `metric` (None when there is no basis for a guess)."""
    if metric and UNIT_METRIC_RE.search(metric):
        return UNIT_SPREAD
    if reference is not None and reference != 0:
        return round(abs(reference) * RELATIVE_SPREAD, 6)
    return None


def verdict(
    gain: float | None,
    band: float | None,
    *,
    metric: str | None = None,
    reference: float | None = None,
    resolution: float | None = None,
) -> str | None:
    """The verdict of a direction-adjusted `gain` (see the module docstring); `reference` is the score it beat."""
    if gain is None or gain <= 0:
        return None
    if band is not None:
        return BEYOND if gain > band else WITHIN
    return UNVERIFIED if unverified_because(gain, metric=metric, reference=reference, resolution=resolution) else None


def unverified_because(
    gain: float, *, metric: str | None, reference: float | None, resolution: float | None
) -> str | None:
    """Why an unmeasured gain is unverified (a clause for a sentence), or None when it is not."""
    if resolution is not None and gain < resolution:
        return f"smaller than one evaluation sample (resolution {resolution:.6f})"
    spread = typical_spread(metric, reference)
    if spread is not None and gain < spread:
        return f"smaller than the run-to-run spread typical for {metric or 'the metric'} (about {spread:g})"
    return None


def eval_size(text: str) -> int | None:
    """The evaluation-set size a job reports in its output (the last report wins), or None."""
    found = None
    for pattern in EVAL_SIZE_RES:
        for match in pattern.finditer(text):
            size = int(match.group(1))
            if 0 < size <= MAX_EVAL_SIZE:
                found = (match.start(), size) if found is None or match.start() > found[0] else found
    return found[1] if found else None


def resolution_of(metric: str | None, size: int | None) -> float | None:
    """1/size for a sample-counting metric (accuracy, error rate, precision, recall), else None."""
    if not size or not metric or not COUNTING_METRIC_RE.search(metric):
        return None
    return round(1.0 / size, 6)
