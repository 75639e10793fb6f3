"""Why a dry run settled nothing, in words that name job.py's line and the fix (pure): a raise, an exit, another
NVFLARE version's API, a module missing here, a second run; and whether the files the run read pin what it read.
"""

from __future__ import annotations

import re
from typing import Any

from . import recipes
from .recorded import After, DryRunRecord, Where
from .surface import FAMILY_LABELS

MAX_QUOTED = 200  # characters of the job's own text (a source line, an exception message) a reason quotes


def quoted(value: Any) -> str:
    """The job's own text as one printable line of at most MAX_QUOTED characters (a reason goes to stderr)."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 3] + "..."


def _at(where: Where) -> str:
    return f"{quoted(where.file)} line {where.line} ({quoted(where.text)})"


INSTALL_FIX = "this interpreter cannot import it: install what is missing, or import where it is installed"


NVFLARE_IMPORTS = (  # what an import from job.py's own line asks of NVFLARE that it lacks
    re.compile(r"cannot import name '(\w+)' from '(nvflare(?:\.\w+)*)'"),
    re.compile(r"No module named '(nvflare\.[\w.]+)'"),
)
BINDINGS = ("got an unexpected keyword argument", "positional argument", "got multiple values for argument")
STOOD_IN_BINDING = "missing"  # `Recipe(*stand_in)` unpacks nothing: a missing argument may be a stand-in's doing


def _version_lacks(record: DryRunRecord) -> str | None:
    """What NVFLARE lacks when job.py's run raised on its own line asking it for a module or name (ImportError), an
    attribute of its object or module (AttributeError), or calling it with arguments it does not take (TypeError):
    none is a stand-in's doing. None for any other run."""
    if record.status != "raised" or record.where is None or record.nvflare is not None:
        return None
    if record.exception in ("ImportError", "ModuleNotFoundError") and "circular import" not in record.message:
        found = [m.groups() for m in (p.search(record.message) for p in NVFLARE_IMPORTS) if m]
        return ".".join(reversed(found[0])) if found else None
    if record.exception == "AttributeError" and record.callee:  # `recipe.job`: an attribute of another version
        return record.callee
    if record.exception == "TypeError" and record.callee and any(b in record.message for b in BINDINGS):
        stood_in = record.stubbed and STOOD_IN_BINDING in record.message
        return None if stood_in else f"{record.callee}() taking these arguments"
    return None


def other_version(record: DryRunRecord, family: str | None = None) -> str | None:
    """Why job.py, written for another NVFLARE version, is refused (`_version_lacks`), else None; None too for a job
    the reading refuses by its `family` (a non-training job stays refused for what it is, the raise added to its
    reason by `dryrun_config.settle`)."""
    return raise_reason(record) if _version_lacks(record) and family not in FAMILY_LABELS else None


KEYLESS_FOLDERS = frozenset(  # the job folder's folders the dry run's cache key skips (`dryrun.job_digest`)
    {"__pycache__", ".git", ".autofl", "autofl_runs", "node_modules", ".venv", "venv"}
)


def unpinned_reads(record: DryRunRecord) -> list[str]:
    """The files and folders the run read before NVFLARE ran that its cache key does not hold: outside the job's
    folder, in a folder the key skips, or unseen ("...")."""

    def pinned(path: str) -> bool:
        return not path.startswith("/") and path != "..." and not KEYLESS_FOLDERS & set(path.split("/"))

    return [p for p in record.files_read if not pinned(p)]


def lacks_module(record: DryRunRecord) -> bool:
    """True when the run raised because this interpreter lacks a module (not something job.py decides)."""
    # "is not installed": NVFLARE's optional_import checks
    missing = record.exception in ("ModuleNotFoundError", "ImportError") or "is not installed" in record.message
    return missing and _version_lacks(record) is None


def raise_reason(record: DryRunRecord) -> str:
    """Why the dry run ended in a raise before anything ran, naming the job.py line (and NVFLARE's, when the raise
    came from there) and what to change."""
    what = f"{quoted(record.exception)}: {quoted(record.message)}"
    line = _at(record.where) if record.where else "job.py"
    inside = f", in NVFLARE's {quoted(record.nvflare.file)} line {record.nvflare.line}" if record.nvflare else ""
    lacks, version = _version_lacks(record), recipes.nvflare_version()
    if lacks:
        fix = f"NVFLARE {version} has no {lacks}: job.py was written for another NVFLARE version; use the {version} API"
    else:
        fix = (
            INSTALL_FIX if lacks_module(record) else "pass values in --base-args that get past it, or change that line"
        )
    return f"running job.py raises at {line}{inside}: {what}; {fix}"


def stop_reason(record: DryRunRecord) -> str:
    """Why job.py raised or exited before reaching NVFLARE (argparse's own message when its parser refused the
    arguments), else why no run was made ("" when the record says none)."""
    if record.status == "raised":
        return raise_reason(record)
    if record.status == "no_run" and record.stubbed:  # a package job.py runs NVFLARE through was stood in
        return (
            f"running job.py reaches no NVFLARE run with {', '.join(record.stubbed)} stood in (not installed here); "
            "install what is missing, or import where it is installed"
        )
    if record.status != "exited":
        return record.reason
    line = f" at {_at(record.where)}" if record.where else ""
    if record.parser_error:
        why = quoted(record.parser_error)
        return f"running job.py exits with code {record.code}{line}: {why}; pass what it needs in --base-args"
    return f"running job.py exits with code {record.code}{line} before NVFLARE runs; check its arguments"


def runs(record: DryRunRecord) -> str:
    """How many times job.py ran: "once" when it ended normally after its one recorded run, "twice" when it ran
    again, "unknown" otherwise (no run recorded, or it raised, exited or ran on after it: a run may be skipped)."""
    how = record.after.how if record.status == "recorded" and record.after is not None else None
    return {"ended": "once", "again": "twice"}.get(how, "unknown")


def runs_reason(record: DryRunRecord) -> str:
    """Why the record does not show job.py trains once: it ran twice (both lines), or how it went on after its run."""
    after, first = record.after or After("unfinished"), _at(record.call) if record.call else "job.py"
    where = _at(after.where) if after.where else "job.py"
    if after.how == "again":
        first = _at(after.first) if after.first else first
        return f"running job.py trains more than once: at {first} and again at {where}; run it once"
    went = {"raised": f"raises at {where}", "exited": f"exits at {where}", "spawned": f"starts a process at {where}"}
    went = went.get(after.how, "does not end")
    return (
        f"running job.py {went} ({quoted(after.what) or 'no end recorded'}) after its run at {first}, so it cannot "
        "show job.py trains once (the dry run's result is no trained job's); let job.py end without error after its run"
    )
