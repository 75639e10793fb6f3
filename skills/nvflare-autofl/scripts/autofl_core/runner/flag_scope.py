"""Which action-specific options each runner action takes: every other one is refused, so no flag is silently
dropped (a `prepare --run-args` that did nothing was how agents lost their arguments).

Campaign settings (`--metric`, `--timeout`, `--max-candidates`, ... : `settings.FLAGS`) are not listed here: the
lifecycle shell applies them to every action (immutable ones must match, mutable ones are audited; `report`
refuses any change). The action options below are taken only by the actions named; `record` takes different
ones per kind of record. Pure. Usage::

    check("evaluate", options)   # CampaignError "--limit does not apply to evaluate (...); drop it"
"""

from __future__ import annotations

from .outcome import CampaignError

RECORD_LITERATURE = ("--literature", "--name", "--hypothesis", "--family")
RECORD_BASELINE = ("--baseline", "--score", "--artifacts", "--job-id", "--failure-reason")
RECORD_CANDIDATE = ("--manifest", "--score", "--artifacts", "--job-id", "--failure-reason")
KIT = ("--startup-kit", "--kit-id")  # poc/prod: the admin startup kit the `nvflare` CLI uses
TAKES = {  # action -> the action options it takes, as typed
    "initialize": (*KIT, "--evaluator", "--evaluator-input", "--fixed-args"),
    "prepare": ("--name", "--hypothesis", "--family", "--literature-event", "--run-args"),
    "evaluate": ("--manifest", "--run-args", "--all-prepared", "--parallel"),
    "abandon": ("--manifest",),
    "record": tuple(dict.fromkeys(RECORD_LITERATURE + RECORD_BASELINE + RECORD_CANDIDATE)),
    "suggest": ("--limit",),
    "status": ("--write-best-defaults",),
    "replicate": ("--count", "--parallel"),
    "report": ("--confirm-interrupted",),
    "submit": ("--manifest", "--baseline", "--evaluation", "--confirm-user-authorized", "--authorization", *KIT),
}
OPTIONS = tuple(dict.fromkeys(flag for takes in TAKES.values() for flag in takes))  # every action option


def dest(flag: str) -> str:
    """argparse's attribute name of an option: `--job-id` -> `job_id`."""
    return flag[2:].replace("-", "_")


def given(options) -> list[str]:
    """The action options the command line set, in OPTIONS order."""
    values = {flag: getattr(options, dest(flag), None) for flag in OPTIONS}
    return [flag for flag, value in values.items() if value is not None and value is not False]  # 0 is given


def check(action: str, options) -> None:
    """Refuse (exit 2, nothing done) an action option that `action` (or this kind of record) does not take."""
    present = given(options)
    allowed, what = TAKES[action], action
    if action == "record":
        allowed, what = _record_kind(options)
    for flag in present:
        if flag not in allowed:
            raise CampaignError(f"{flag} does not apply to {what} ({_where(flag)}); drop it")


def _record_kind(options) -> tuple[tuple[str, ...], str]:
    literature, baseline = (
        bool(getattr(options, dest(kind[0]), False)) for kind in (RECORD_LITERATURE, RECORD_BASELINE)
    )
    if literature and baseline:
        raise CampaignError(f"{RECORD_LITERATURE[0]} and {RECORD_BASELINE[0]} are separate records; pass one of them")
    if literature:
        return RECORD_LITERATURE, f"record {RECORD_LITERATURE[0]}"
    if baseline:
        return RECORD_BASELINE, f"record {RECORD_BASELINE[0]}"
    return RECORD_CANDIDATE, "record of a candidate's external result"


def _where(flag: str) -> str:
    """Where the option does apply, for the refusal message."""
    places = [action for action, takes in TAKES.items() if flag in takes and action != "record"]
    for kind, label in (
        (RECORD_LITERATURE, f"record {RECORD_LITERATURE[0]}"),
        (RECORD_BASELINE, f"record {RECORD_BASELINE[0]}"),
        (RECORD_CANDIDATE, "record of a candidate"),
    ):
        if flag in kind:
            places.append(label)
    return "it is an option of " + ", ".join(dict.fromkeys(places))
