"""One run of job.py (in a forked child): run it as `python job.py ARGS` would, and write the run's record.

OUT.json gets one record: `{status: recorded|raised|exited|no_run|sandbox_failed, ...}`, with how job.py went on
after its run (`after`), its parsers, the stand-ins it used, the environment it read and what the run imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import signal
import sys
import types

from .frames import in_job_folder, job_frame, nvflare_frame
from .parsers import parser_record
from .processes import Exited, exit_as_python, wait_forked
from .records import FORKED_RUN
from .stand_ins import stand_in_module
from .state import STATE, Stop


def run_once(out: str, job: str, args: list[str], before: set, env: dict) -> None:
    """Run job.py once with `args` and `env` (in a forked child) and write its record to `out`."""
    os.environ.update(env)
    sys.argv = [job, *args]
    STATE.parser_error, STATE.out = None, out
    _consume_export_flags()
    STATE.in_job = True
    try:
        try:
            runpy.run_path(job, run_name="__main__")
        except Exited:
            raise
        except SystemExit:
            exit_as_python()
            raise
        exit_as_python()
        ending = {"status": "no_run"}
    except Stop:
        ending = STATE.after
    except KeyboardInterrupt:  # a SIGINT job.py turned into a raise: an interrupted run, never the job's failure
        return _write(out, {"status": "sandbox_failed", "reason": "the dry run was interrupted"})
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        ending = {"status": "exited", "code": code, "where": job_frame(job, stop.__traceback__)}
        if STATE.parser_error:
            ending["parser_error"] = STATE.parser_error
    except BaseException as error:  # job.py raised: name its line
        ending = {"status": "raised", "exception": type(error).__name__, "message": str(error)[:500]}
        ending.update(where=job_frame(job, error.__traceback__), nvflare=nvflare_frame(error.__traceback__))
        ending["callee"] = _nvflare_callee(error)
    finally:
        STATE.in_job = False  # the time after the run is job.py's only
        signal.setitimer(signal.ITIMER_REAL, 0)
    first = STATE.record or STATE.exported  # job.py ran (else exported), then went on: how
    wait_forked()
    if (forked := _forked_run(out)) and first is not None:
        STATE.after = {**forked, "first": STATE.first}
    record = ending if first is None else {**first, "after": _after(ending)}
    record["parsers"] = [parser_record(p, values) for p, values in STATE.parsers]
    record["stubbed"] = sorted(STATE.stubbed)
    record["stood_in_at"] = list(STATE.stood_in_at.values())
    record["env_read"] = sorted(STATE.env_read)
    record["files_read"] = sorted(STATE.files_read)
    record["env_compared"] = sorted(f"{name}={value}" for name, kept in STATE.env_compared.items() for value in kept)
    record["unreadable"] = STATE.unreadable[:16]
    if STATE.absent and record["status"] != "recorded":  # asks for a rerun with them stood in (`serve`)
        record["absent"] = sorted(STATE.absent)
    record["imported"] = _imported(before)
    record["installed"] = STATE.nvflare_install
    _write(out, record)


def _after(ending: dict) -> dict:
    """How job.py went on after its first run (or export): "again" or "unfinished" when a stop said so (also one
    job.py caught), else from how it ended: "ended" (it returned or exited with code 0), "raised" or "exited"."""
    if STATE.after:
        return STATE.after
    if ending["status"] == "no_run" or (ending["status"] == "exited" and ending["code"] == 0):
        return {"how": "ended"}
    what = f"{ending['exception']}: {ending['message']}" if ending["status"] == "raised" else f"code {ending['code']}"
    return {"how": ending["status"], "where": ending["where"], "what": what}


def _nvflare_callee(error: BaseException) -> str | None:
    """What of NVFLARE's the job's own line asked for and did not get: the callable a TypeError names
    (`FedAvgRecipe.__init__() got ...`, looked up where the raise happened: an argument that does not bind raises at
    the call), or the public attribute an AttributeError names on an NVFLARE object or module (`recipe.job`)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not in_job_folder(tb.tb_frame.f_code.co_filename):
        return None
    if isinstance(error, AttributeError):
        return _nvflare_attribute(error)
    if not isinstance(error, TypeError):
        return None
    name = str(error).partition("(")[0]
    found = tb.tb_frame.f_locals.get(name.partition(".")[0], tb.tb_frame.f_globals.get(name.partition(".")[0]))
    module = getattr(found, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) and module.partition(".")[0] == "nvflare" else None


def _nvflare_attribute(error: AttributeError) -> str | None:
    """`module.Class.attr` (or `module.attr`) for a public attribute NVFLARE's object or module lacks."""
    owner, name = getattr(error, "obj", None), getattr(error, "name", None)
    if owner is None or not isinstance(name, str) or name.startswith("_"):
        return None
    if isinstance(owner, types.ModuleType):
        where = owner.__name__
    else:
        cls = owner if isinstance(owner, type) else type(owner)
        where = f"{cls.__module__}.{cls.__qualname__}"
    return f"{where}.{name}" if where.partition(".")[0] == "nvflare" else None


def _imported(before: set) -> list[str]:
    """Modules this run imported that live outside the job's folder (safe to import again in the parent)."""
    folder = os.path.dirname(STATE.job)
    names = []
    for name in sorted(set(sys.modules) - before):
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None) or ""
        if stand_in_module(module) or (where and not where.startswith(folder + os.sep)):
            names.append(name)
    return names


def _consume_export_flags() -> None:
    """NVFLARE strips `--export`/`--export-dir` from sys.argv when nvflare.recipe.spec is imported, which here
    happened before job.py's arguments were set: do it again for them, as `python job.py ARGS` would."""
    spec = sys.modules["nvflare.recipe.spec"]  # imported by `install_recipes`
    if hasattr(spec, "_CONSUMED") and hasattr(spec, "_consume_recipe_args"):
        spec._CONSUMED = False
        spec._RECIPE_EXPORT, spec._RECIPE_EXPORT_DIR = spec._consume_recipe_args()


def _forked_run(out: str) -> dict:
    """How a child job.py forked ran the job (its note beside `out`, removed here); {} when none did, and in the
    child itself (its parent reads the note)."""
    if STATE.forked:
        return {}
    forked = read_record(out + FORKED_RUN)
    with contextlib.suppress(OSError):
        os.remove(out + FORKED_RUN)
    return forked


def _write(path: str, record: dict) -> None:
    """Write a run's record to `path` (in a process job.py forked: nothing)."""
    if STATE.forked:  # a process job.py forked: its parent writes the run's record
        return
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True, default=repr)


def read_record(path: str) -> dict:
    """The record a run wrote at `path` ({} when it wrote none)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}
