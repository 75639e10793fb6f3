"""Export a job folder for `nvflare job submit` through the recipe's own export path, in the trial sandbox.

NVFLARE 2.9 recipes take `--export --export-dir DIR` themselves: `nvflare.recipe.spec` strips both from argv when
it is imported (before job.py's own parser runs; it warns that it did) and `recipe.execute(env)` then writes the
job folder `DIR/<recipe name>` instead of running. So the export is job.py's trial command line (fixed budget,
base args, the injected job name, the run args; `argv.build_trial_argv`) plus those two flags, started like a
trial: the sandbox launcher with the sealed view of the files given (or contained in the live job), the
allowlisted environment, its own process tree ended whatever happens, a bound on its time. The export folder lies
in the trial's one writable folder and is copied out (no symlink followed) before the trial folder goes. Usage::

    job_folder = export_job(request)      # request: ExportRequest; raises ExportError naming what went wrong
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..common import trees
from . import childenv, processes, seal

EXPORT_FLAGS = ("--export", "--export-dir")
META_FILE = "meta.json"


class ExportError(Exception):
    """The export wrote no job folder; str() names why (exit code, timeout, the last lines of its log)."""


@dataclass
class ExportRequest:
    """One export: `argv` is job.py's trial command line (without the export flags)."""

    python: str
    argv: list[str]
    workspace: Path
    destination: Path  # the exported job folder is copied to destination/<its name>
    log_path: Path
    temp_parent: Path
    timeout: float
    stage_files: dict[str, bytes] | None = None  # sealed view of these files; None: contained in the live job
    hide: list[Path] = field(default_factory=list)
    isolate_network: bool = True
    env_passthrough: list[str] = field(default_factory=list)


def export_job(request: ExportRequest) -> Path:
    token = secrets.token_hex(16)
    trial_dir = Path(tempfile.mkdtemp(prefix="autofl-export-", dir=request.temp_parent))
    try:
        out = trial_dir / "out"
        exported, root, private_tmp = out / "export", out / "sim", out / "tmp"
        for folder in (exported, root, private_tmp):
            folder.mkdir(parents=True)
        env = childenv.build_child_env(
            os.environ, passthrough=request.env_passthrough, simulator_root=root, token=token, temp_dir=private_tmp
        )
        plan = seal.write_plan(
            trial_dir,
            workspace=request.workspace,
            network="isolated" if request.isolate_network else "allowed",
            writable=[out],
            home=env.get("HOME"),
            stage_files=request.stage_files,
            hide=list(request.hide),
        )
        argv = [*request.argv, EXPORT_FLAGS[0], EXPORT_FLAGS[1], str(exported)]
        deadline = time.monotonic() + request.timeout
        outcome = processes.run_process(
            seal.launcher_argv(request.python, plan, argv),
            cwd=trial_dir,
            env=env,
            log_path=request.log_path,
            token=(childenv.TOKEN_VAR, token),
            tick=lambda now: "timeout" if now >= deadline else None,
            due=lambda: deadline,
        )
        if outcome.stop_reason:
            raise ExportError(f"the export ran past {request.timeout:g} s and was ended (log: {request.log_path})")
        found = _job_folder(exported)
        if outcome.returncode != 0 or found is None:
            tail = " ".join(outcome.tail.decode("utf-8", "replace").split())[-300:]
            raise ExportError(
                f"job.py wrote no job folder (exit {outcome.returncode}; a job that calls recipe.execute(env) exports "
                f"with --export --export-dir; log {request.log_path}): {tail}"
            )
        target = request.destination / found.name
        trees.remove_tree(target)
        request.destination.mkdir(parents=True, exist_ok=True)
        shutil.copytree(found, target, symlinks=True)
        _refuse_links(target)
        return target
    finally:
        trees.remove_tree(trial_dir)


def _job_folder(exported: Path) -> Path | None:
    """The one job folder the recipe wrote (a folder with meta.json), or None."""
    found = [
        entry
        for entry in sorted(exported.iterdir())
        if entry.is_dir() and not entry.is_symlink() and (entry / META_FILE).is_file()
    ]
    return found[0] if len(found) == 1 else None


def _refuse_links(folder: Path) -> None:
    """An exported job holds plain files and folders; a symlink in it (from a candidate) is refused."""
    for current, folders, files in os.walk(folder):
        for name in folders + files:
            if os.path.islink(os.path.join(current, name)):
                trees.remove_tree(folder)
                raise ExportError(f"the exported job holds a symlink ({name}); a job folder to submit may not")
