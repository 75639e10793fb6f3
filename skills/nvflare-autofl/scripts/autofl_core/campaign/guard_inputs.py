"""The thin I/O around the campaign guard: threshold defaults from the environment, stop files, stored mode.

Shared by `campaign_guard.py` and the campaign runner so both see the same inputs. Usage::

    thresholds = threshold_settings({"plateau_threshold": None, ...}, os.environ)   # flag None -> env -> default
    present = present_stop_files(workspace, ["STOP_AUTOFL", ".nvflare/autofl/STOP"])
    mode = stored_mode(workspace)   # "max"/"min" from .nvflare/autofl/campaign_state.json, or None
    known = stored_noise_facts(workspace)   # the runner's noise facts recorded there (resolution, replicates)
    stored = stored_settings(workspace, results)   # the campaign's thresholds, cap and stop files (campaign.json)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from ..common import bounded
from .compare import MODES
from .gains import IDENTICAL_RERUNS, SEEDED_RERUNS

DEFAULT_STOP_FILES = ("STOP_AUTOFL", ".nvflare/autofl/STOP")
STATE_RELATIVE_PATH = Path(".nvflare") / "autofl" / "campaign_state.json"
CAMPAIGN_RELATIVE_PATH = Path(".nvflare") / "autofl" / "campaign.json"
# setting -> (environment variable, default, type, minimum)
THRESHOLDS = {
    "plateau_threshold": ("AUTOFL_PLATEAU_THRESHOLD", 8, int, 1),
    "plateau_min_delta": ("AUTOFL_PLATEAU_MIN_DELTA", 0.0005, float, 0.0),
    "hard_crash_threshold": ("AUTOFL_HARD_CRASH_THRESHOLD", 6, int, 0),
    "exploration_batch_size": ("AUTOFL_EXPLORATION_BATCH_SIZE", 3, int, 0),
    "family_repeat_limit": ("AUTOFL_FAMILY_REPEAT_LIMIT", 6, int, 0),
    "noise_sigmas": ("AUTOFL_NOISE_SIGMAS", 0.0, float, 0.0),
}


class InputError(ValueError):
    """An unusable guard input; the message is one line naming the problem and the fix."""


def threshold_settings(
    flags: Mapping[str, object], environ: Mapping[str, str], stored: Mapping[str, object] | None = None
) -> dict:
    """Each threshold from its flag when given (not None), else the campaign's (`stored`, from `stored_settings`),
    else its environment variable, else the default.

    The candidate cap is deliberately absent: it is never read from the environment.
    """
    settings = {}
    for name, (variable, default, kind, minimum) in THRESHOLDS.items():
        value = flags.get(name)
        if value is None and stored:
            value = stored.get(name)
        if value is None and environ.get(variable, "").strip():
            value = _parse_number(environ[variable], kind, f"environment variable {variable}")
        settings[name] = default if value is None else _check_minimum(value, minimum, name)
    return settings


def parse_threshold(name: str, text: str) -> int | float:
    """Parse a threshold given on the command line (`name` is the setting, e.g. plateau_threshold)."""
    _variable, _default, kind, minimum = THRESHOLDS[name]
    return parse_bounded(text, kind, minimum, name)


def parse_bounded(text: str, kind: type, minimum: int | float, label: str) -> int | float:
    """`text` as an int or finite float (`kind`) of at least `minimum`; InputError naming `label` otherwise."""
    return _check_minimum(_parse_number(text, kind, label), minimum, label)


def resolve_stop_files(base: Path, stop_files: list[str] | None) -> list[Path]:
    """Absolute stop-file paths: relative ones resolve against `base` (the workspace / results folder)."""
    names = list(stop_files) if stop_files else list(DEFAULT_STOP_FILES)
    if any(not str(name).strip() for name in names):
        raise InputError("a stop-file path is empty; pass a file name such as STOP_AUTOFL")
    return [path if path.is_absolute() else base / path for path in (Path(name).expanduser() for name in names)]


def present_stop_files(base: Path, stop_files: list[str] | None) -> list[str]:
    """The stop files that exist, shown relative to `base` when inside it (so a moved campaign reads the same)."""
    base = Path(os.path.abspath(base))
    present = []
    for path in resolve_stop_files(base, stop_files):
        if os.path.lexists(path):
            absolute = Path(os.path.abspath(path))
            present.append(absolute.relative_to(base).as_posix() if absolute.is_relative_to(base) else str(absolute))
    return list(dict.fromkeys(present))


def stored_mode(workspace: Path) -> str | None:
    """The `mode` recorded in the workspace's campaign_state.json, or None when there is no state file."""
    path = Path(workspace) / STATE_RELATIVE_PATH
    try:
        document = bounded.read_json(path)
    except bounded.BoundedReadError as exc:
        raise InputError(f"{path} {exc}; pass --mode max|min or repair it with the runner's status") from None
    if document is None:
        return None
    mode = document.get("mode")
    if mode not in MODES:
        raise InputError(f"{path} has no valid 'mode' (max|min); pass --mode max|min")
    return mode


def stored_settings(workspace: Path, results: Path) -> dict:
    """The campaign's own thresholds, cap and stop files from the sibling campaign.json, when `results` is that
    campaign's ledger; {} without one. A damaged file or setting is an InputError (pass the flags instead)."""
    path = Path(workspace) / CAMPAIGN_RELATIVE_PATH
    try:
        document = bounded.read_json(path)
    except bounded.BoundedReadError as exc:
        raise InputError(f"{path} {exc}; pass the thresholds as flags or repair it with the runner's status") from None
    settings = document.get("settings") if isinstance(document, dict) else None
    if not isinstance(settings, dict):
        return {}
    ledger = settings.get("results")
    if not isinstance(ledger, str) or os.path.abspath(Path(workspace) / ledger) != os.path.abspath(results):
        return {}
    stored = {}
    for name, (_variable, _default, kind, minimum) in THRESHOLDS.items():
        if name in settings:
            stored[name] = _stored_number(path, name, settings[name], kind, minimum)
    cap = settings.get("max_candidates")
    stored["max_candidates"] = None if cap is None else _stored_number(path, "max_candidates", cap, int, 1)
    stop_files = settings.get("stop_files")
    if isinstance(stop_files, list) and stop_files and all(isinstance(name, str) for name in stop_files):
        stored["stop_files"] = list(stop_files)
    return stored


def _stored_number(path: Path, name: str, value: object, kind: type, minimum):
    valid = bounded.is_finite(value) if kind is float else bounded.is_integer(value)
    if not valid or value < minimum:
        raise InputError(f"{path} has an invalid {name} ({value!r}); pass it as a flag or repair the campaign")
    return value


def stored_noise_facts(workspace: Path) -> dict | None:
    """The runner's noise facts (`noise_context` of campaign_state.json: metric resolution and its source, how
    replicates vary), so the read-only guard gives the runner's advice; None without a usable state file."""
    document = bounded.read_json_or_none(Path(workspace) / STATE_RELATIVE_PATH)
    context = (document or {}).get("noise_context")
    if not isinstance(context, dict):
        return None
    resolution = context.get("metric_resolution")
    if not bounded.is_number(resolution) or not 0 < resolution <= 1:
        resolution = None
    source, replicates = context.get("resolution_source"), context.get("replicates")
    return {
        "metric_resolution": resolution,
        "resolution_source": source if resolution is not None and isinstance(source, str) else None,
        "replicates": replicates if replicates in (SEEDED_RERUNS, IDENTICAL_RERUNS) else None,
    }


def _parse_number(text: str, kind: type, label: str) -> int | float:
    try:
        value = kind(str(text).strip())
    except ValueError:
        expected = "an integer" if kind is int else "a number"
        raise InputError(f"{label} must be {expected}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{label} must be finite, got {text!r}")
    return value


def _check_minimum(value, minimum, name: str):
    if value < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {value}")
    return value
