"""Campaign settings: what a new campaign starts with, and how a later action may change them.

Immutable (metric, mode, env, output paths, base_args, python) are fixed at `initialize`; giving a different
value later is rejected. Mutable ones (cap, thresholds, stop files, timeouts) change only with an audit entry
(`setting_changes`; the cap in `cap_changes`), and raising a finite cap or going uncapped needs the user's
approval flag. Environment variables seed thresholds and the no-progress timeout of a *new* campaign when
the flag is absent; the cap never comes from the environment. Pure apart from reading `environ`.

Usage::

    given = requested_settings(options)                      # only what the command line set
    settings = new_settings(given, os.environ, config)       # initialize of a new campaign
    merged = merge_settings(stored, given, action="evaluate", approved=False, now=ts)
    typed = CampaignSettings.from_json(meta["settings"])      # what every action reads: typed.metric, ...
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from dataclasses import dataclass, field, fields

from ..campaign import guard_inputs
from ..common import trial_limits
from .outcome import CampaignError
from .store.paths import DEFAULT_OUTPUTS, OUTPUT_KEYS

THRESHOLD_KEYS = tuple(guard_inputs.THRESHOLDS)
NO_PROGRESS_ENV = "AUTOFL_SIMULATOR_NO_PROGRESS_TIMEOUT_SECONDS"
DEFAULT_TIMEOUT = 900.0
DEFAULT_NO_PROGRESS = 240.0
IMMUTABLE = ("metric", "mode", "env", *OUTPUT_KEYS, "base_args", "python")
# Trial resource limits: bytes (memory, disk) and a count (processes); None takes the machine's default per trial.
LIMIT_KEYS = {"trial_memory": "memory", "trial_disk": "disk", "trial_processes": "processes"}
MUTABLE = (
    *THRESHOLD_KEYS,
    "stop_files",
    "timeout",
    "simulator_no_progress_timeout",
    "allow_network",
    "prune",
    *LIMIT_KEYS,
)
FLAGS = {  # each setting's command-line option: its name with dashes, except these
    **{key: "--" + key.replace("_", "-") for key in (*IMMUTABLE, "max_candidates", *MUTABLE) if key != "mode"},
    "stop_files": "--stop-file",
    **{key: trial_limits.FLAGS[kind] for key, kind in LIMIT_KEYS.items()},
}
UNCAPPED = "uncapped"
# Settings a campaign of an earlier runner may lack: read as these defaults, never written back by `to_json`.
OPTIONAL = {
    "allow_network": False,
    "prune": False,
    **{key: spec[1] for key, spec in guard_inputs.THRESHOLDS.items()},
    **dict.fromkeys(LIMIT_KEYS),  # None: the machine's default per trial
}


@dataclass(frozen=True)
class CampaignSettings:
    """campaign.json's `settings` object, typed. `from_json` is the one place its keys are read; `to_json` gives
    the same JSON object back (keys it does not know kept in `extra`, defaults of `OPTIONAL` keys it lacked not
    added)."""

    metric: str
    mode: str
    env: str
    max_candidates: int | None
    autofl_yaml: str
    results: str
    state: str
    progress: str
    report: str
    output_root: str
    stop_files: tuple[str, ...]
    base_args: tuple[str, ...]
    timeout: float
    simulator_no_progress_timeout: float
    python: str
    allow_network: bool
    prune: bool  # a candidate whose per-round metric trails the best's is stopped (runner/pruning)
    plateau_threshold: int
    plateau_min_delta: float
    hard_crash_threshold: int
    exploration_batch_size: int
    family_repeat_limit: int
    noise_sigmas: float
    trial_memory: int | None = None  # per-trial limits (bytes, bytes, a count); None: the machine's default
    trial_disk: int | None = None
    trial_processes: int | None = None
    absent: tuple[str, ...] = ()  # OPTIONAL keys the document lacked
    extra: tuple[tuple[str, object], ...] = ()  # keys this runner does not know, as read

    @classmethod
    def from_json(cls, document: dict) -> CampaignSettings:
        """The typed settings of campaign.json (already checked against its schema by `store/metadata.read`)."""
        known = {f.name for f in fields(cls)} - {"absent", "extra"}
        missing = sorted(known - set(document) - set(OPTIONAL))
        if missing:
            raise CampaignError(
                f"campaign.json settings lack {', '.join(missing)}; restore campaign.json from a backup"
            )
        values = {key: document.get(key, OPTIONAL.get(key)) for key in known}
        values["stop_files"], values["base_args"] = tuple(values["stop_files"]), tuple(values["base_args"])
        return cls(
            **values,
            absent=tuple(sorted(key for key in OPTIONAL if key not in document)),
            extra=tuple((key, value) for key, value in document.items() if key not in known),
        )

    def to_json(self) -> dict:
        """The settings object as campaign.json holds it (key order aside: documents are written sorted)."""
        document = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("absent", "extra")}
        document["stop_files"], document["base_args"] = list(self.stop_files), list(self.base_args)
        for key in self.absent:
            del document[key]
        return {**document, **dict(self.extra)}


@dataclass
class Merged:
    """Settings after a later action's flags were applied, with the audit entries to persist."""

    settings: dict
    setting_changes: list[dict] = field(default_factory=list)
    cap_change: dict | None = None

    @property
    def changed(self) -> list[str]:
        names = [entry["setting"] for entry in self.setting_changes]
        return names + (["max_candidates"] if self.cap_change else [])


def requested_settings(options) -> dict:
    """The settings the command line gave explicitly (argparse namespace with None for absent flags).

    The cap is returned as an int, or the string "uncapped" for `--uncapped`.
    """
    given: dict = {}
    for key in (
        "metric",
        "env",
        *OUTPUT_KEYS,
        "python",
        *THRESHOLD_KEYS,
        "timeout",
        "simulator_no_progress_timeout",
        "allow_network",
        "prune",
    ):
        value = getattr(options, key, None)
        if value is not None:
            given[key] = value
    if getattr(options, "stop_files", None):
        given["stop_files"] = list(options.stop_files)
    if getattr(options, "base_args", None) is not None:
        given["base_args"] = split_args(options.base_args, "--base-args")
    given.update(_limit_settings(options))
    if getattr(options, "uncapped", False):
        given["max_candidates"] = UNCAPPED
    elif getattr(options, "max_candidates", None) is not None:
        given["max_candidates"] = options.max_candidates
    _check_values(given)
    return given


def _limit_settings(options) -> dict:
    """--trial-memory / --trial-disk (sizes like 6G) and --trial-processes (a count), as bytes and a count."""
    given = {}
    for key, kind in LIMIT_KEYS.items():
        text = getattr(options, key, None)
        if text is None:
            continue
        parse = trial_limits.parse_count if kind == "processes" else trial_limits.parse_size
        try:
            given[key] = parse(text, FLAGS[key])
        except ValueError as error:
            raise CampaignError(str(error)) from None
    return given


def limits_of(settings: CampaignSettings, *, slots: int, folder) -> trial_limits.TrialLimits:
    """The limits of one trial of a batch of `slots`: the campaign's settings, else the machine's defaults."""
    given = {kind: getattr(settings, key) for key, kind in LIMIT_KEYS.items()}
    return trial_limits.resolve(given, slots=slots, folder=folder)


def split_args(text: str, flag: str) -> list[str]:
    """An argument string as argv tokens (shell-like quoting, never a shell)."""
    try:
        return shlex.split(text)
    except ValueError as error:
        raise CampaignError(f"{flag} cannot be split ({error}); balance the quotes") from None


def new_settings(given: dict, environ, config: dict) -> dict:
    """Settings of a new campaign: flags, then environment variables (thresholds, no-progress), then defaults."""
    objective = config.get("objective") or {}
    try:
        thresholds = guard_inputs.threshold_settings(given, environ)
    except guard_inputs.InputError as error:
        raise CampaignError(str(error)) from None
    no_progress = given.get("simulator_no_progress_timeout")
    if no_progress is None and str(environ.get(NO_PROGRESS_ENV, "")).strip():
        no_progress = _number(environ[NO_PROGRESS_ENV], f"environment variable {NO_PROGRESS_ENV}", minimum=0.0)
    cap = given.get("max_candidates")
    settings = {
        "metric": given.get("metric") or objective.get("metric"),
        "mode": objective.get("mode"),
        "env": given.get("env") or "sim",
        "max_candidates": None if cap in (None, UNCAPPED) else cap,
        **{key: given.get(key) or DEFAULT_OUTPUTS[key] for key in OUTPUT_KEYS},
        **thresholds,
        "stop_files": list(given.get("stop_files") or guard_inputs.DEFAULT_STOP_FILES),
        "base_args": list(given.get("base_args") or []),
        "timeout": float(given.get("timeout") or DEFAULT_TIMEOUT),
        "simulator_no_progress_timeout": float(DEFAULT_NO_PROGRESS if no_progress is None else no_progress),
        "python": given.get("python") or environ.get("PYTHON") or sys.executable,
        "allow_network": bool(given.get("allow_network", False)),
        **{key: given.get(key) for key in LIMIT_KEYS},
        "prune": bool(given.get("prune", False)),
    }
    return settings


def merge_settings(stored: dict, given: dict, *, action: str, approved: bool, now: str, cap_history: list) -> Merged:
    """Apply a later action's flags to the stored settings; reject immutable changes and unapproved cap raises."""
    for key in IMMUTABLE:
        if key in given and _normal(key, given[key]) != _normal(key, stored.get(key)):
            raise CampaignError(
                f"{FLAGS.get(key, key)} cannot change within a campaign (it is {_show(stored.get(key))}, given "
                f"{_show(given[key])}); omit it, or start a fresh campaign in a new workspace"
            )
    merged = Merged(settings=dict(stored))
    for key in MUTABLE:
        if key in given and given[key] != stored.get(key):
            merged.setting_changes.append(
                {"changed_at": now, "action": action, "setting": key, "old": stored.get(key), "new": given[key]}
            )
            merged.settings[key] = given[key]
    merged.cap_change = _cap_change(stored.get("max_candidates"), given, approved, now, action, cap_history)
    if merged.cap_change:
        merged.settings["max_candidates"] = merged.cap_change["new"]
    return merged


def _cap_change(old, given: dict, approved: bool, now: str, action: str, history: list) -> dict | None:
    if "max_candidates" not in given:
        if approved:
            raise CampaignError(
                "--confirm-user-approved-cap-change needs --max-candidates N or --uncapped with the approved new cap"
            )
        return None
    requested = given["max_candidates"]
    new = None if requested == UNCAPPED else requested
    if new == old:
        if approved and not (history and history[-1].get("new") == new and history[-1].get("user_approved")):
            raise CampaignError(f"the cap is already {_cap_text(old)}; there is no increase to approve")
        return None
    increase = old is not None and (new is None or new > old)
    if increase and not approved:
        raise CampaignError(
            f"raising the candidate cap from {_cap_text(old)} to {_cap_text(new)} needs the user's approval; ask "
            "them, then repeat with --confirm-user-approved-cap-change"
        )
    if approved and not increase:
        raise CampaignError(
            f"{_cap_text(old)} -> {_cap_text(new)} is not a cap increase; drop --confirm-user-approved-cap-change"
        )
    source = f"{action} {'--uncapped' if new is None else '--max-candidates'}"
    return {"changed_at": now, "old": old, "new": new, "source": source, "user_approved": bool(approved)}


def guard_settings(settings: CampaignSettings) -> dict:
    """The subset the campaign guard takes (a setting newer than the campaign takes its default)."""
    return {
        "mode": settings.mode,
        "max_candidates": settings.max_candidates,
        **{key: getattr(settings, key) for key in THRESHOLD_KEYS},
    }


def _check_values(given: dict) -> None:
    for key in ("timeout",):
        if key in given and not (math.isfinite(given[key]) and given[key] > 0):
            raise CampaignError(f"{FLAGS[key]} must be a positive number of seconds, got {given[key]}")
    key = "simulator_no_progress_timeout"
    if key in given and not (math.isfinite(given[key]) and given[key] >= 0):
        raise CampaignError(f"{FLAGS[key]} must be >= 0 seconds (0 disables), got {given[key]}")
    for key in OUTPUT_KEYS + ("python", "metric"):
        if key in given and not str(given[key]).strip():
            raise CampaignError(f"{FLAGS[key]} is empty; omit it to use the default")


def _number(text: str, label: str, minimum: float) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise CampaignError(f"{label} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < minimum:
        raise CampaignError(f"{label} must be a finite number >= {minimum:g}, got {text!r}")
    return value


def _normal(key: str, value):
    if key in OUTPUT_KEYS and isinstance(value, str):
        return os.path.normpath(value)
    return value


def _show(value) -> str:
    if isinstance(value, list):
        return repr(shlex.join(value))
    return repr(value)


def _cap_text(cap) -> str:
    return "uncapped" if cap is None else str(cap)
