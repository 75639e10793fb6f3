"""The final global model a simulation's server persisted, and the sites that took part. Pure file lookups.

Where NVFLARE 2.9 writes the global model in a simulation result folder (`<result>/server/simulate_job/`, the
server's run dir; read in the installed 2.9.0 package and confirmed by running `examples/hello-numpy` and a
PyTorch `FedAvgRecipe` job, bench/fixtures/pt-fedavg):

| job | component that saves | file below `server/simulate_job/` | format |
|---|---|---|---|
| NumPy recipes (`NumpyFedAvgRecipe`), FedJob with `NPModelPersistor` | `NPModelPersistor.save_model` (result root + `models/server.npy`) | `models/server.npy` | `numpy` |
| PyTorch recipes (`FedAvgRecipe`, `FedOptRecipe`, ...), FedJob with `PTModel` | `PTFileModelPersistor` (app root + `FL_global_model.pt`) | `app_server/FL_global_model.pt` | `pytorch` |
| FedAvg controller with a model but no persistor | `FedAvg.save_model_file` (FOBS, run dir + `save_filename`) | `FL_global_model.pt` | `fobs` |

FedAvg saves after every round without a `stop_cond`, so the file is the model after the last aggregation; with
a `stop_cond` it is saved only when the round's model was better (then it is the best round's model). The
`best_*` files are never used. Usage::

    found = find_global_model(run_dir / "simulation")   # GlobalModel(path, format) or ModelNotFound
    sites = participating_sites(run_dir / "simulation")  # ["site-1", "site-2"]
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

RUN_DIR = ("server", "simulate_job")
LAYOUTS = (  # (path below the server's run dir, format), first match wins
    ("models/server.npy", "numpy"),
    ("app_server/FL_global_model.pt", "pytorch"),
    ("FL_global_model.pt", "fobs"),
)
NOT_SITES = frozenset({"server", "local", "startup", "simulate_job"})
SITE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_SITES = 1024


@dataclass(frozen=True)
class GlobalModel:
    path: Path
    format: str


class ModelNotFound(ValueError):
    """No persisted global model: str() names where the runner looked."""


def find_global_model(result_dir: Path, override: str | None = None) -> GlobalModel:
    """The persisted global model in a copied simulation result (regular files only, never through a link).

    `override`: a path below the server's run dir the campaign declared (e.g. a custom persistor's file), or the
    one the baseline's model was found at (a candidate may not swap the file or format the evaluator reads).
    """
    run_dir = Path(result_dir).joinpath(*RUN_DIR)
    layouts = [(override, _format_of(override))] if override else list(LAYOUTS)
    for rel, fmt in layouts:
        path = run_dir / rel
        if _regular_file(path, stop=Path(result_dir)):
            return GlobalModel(path=path, format=fmt)
    looked = ", ".join(f"server/simulate_job/{rel}" for rel, _fmt in layouts)
    raise ModelNotFound(
        f"the server persisted no global model (looked for {looked}); make the job save its final model with a "
        "persistor, or declare its file with evaluation.model in autofl.yaml"
    )


def download_places(folder: Path) -> list[Path]:
    """Where a downloaded job's server workspace may be: `folder`, its `workspace/`, or `<job id>/workspace/`."""
    folder = Path(folder)
    places = [folder, folder / "workspace"]
    try:
        places += sorted(entry / "workspace" for entry in folder.iterdir() if entry.is_dir() and not entry.is_symlink())
    except OSError:
        pass
    return places


def find_in_download(folder: Path, override: str | None = None) -> GlobalModel:
    """The global model of a job downloaded with `nvflare job download` (`<dir>/<job id>/workspace/` holds the
    server's run dir: `models/server.npy`, `app_server/FL_global_model.pt`), given that folder, the job id folder
    or its `workspace/`."""
    places = download_places(folder)
    layouts = [(override, _format_of(override))] if override else list(LAYOUTS)
    for place in places:
        for rel, fmt in layouts:
            if _regular_file(place / rel, stop=folder):
                return GlobalModel(path=place / rel, format=fmt)
    looked = ", ".join(f"<job id>/workspace/{rel}" for rel, _fmt in layouts)
    raise ModelNotFound(f"the downloaded job holds no global model (looked for {looked})")


def relative_model(result_dir: Path, path: Path) -> str | None:
    """`path` below the server's run dir of `result_dir` (the form `override` takes), None when it is not there."""
    try:
        return Path(path).relative_to(Path(result_dir).joinpath(*RUN_DIR)).as_posix()
    except ValueError:
        return None


def participating_sites(result_dir: Path) -> list[str]:
    """The sites whose folders a simulation result holds (every folder beside `server/` that is not NVFLARE's)."""
    try:
        entries = sorted(os.scandir(result_dir), key=lambda entry: entry.name)
    except OSError:
        return []
    sites = []
    for entry in entries:
        if entry.name in NOT_SITES or not SITE_RE.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        sites.append(entry.name)
        if len(sites) >= MAX_SITES:
            break
    return sites


def _format_of(rel: str) -> str:
    """The format of a declared or pinned model file: the layout table's where the path is one of its rows."""
    known = dict(LAYOUTS)
    if rel in known:
        return known[rel]
    suffix = Path(rel).suffix.lower()
    return {".npy": "numpy", ".pt": "pytorch", ".pth": "pytorch", ".safetensors": "safetensors"}.get(suffix, "")


def unlinked_mode(path: Path, *, stop: Path) -> int | None:
    """`path`'s st_mode when none of its parts below `stop` (nor itself) is a symlink; None otherwise or unreadable."""
    try:
        current = Path(path)
        while current != stop and current != current.parent:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return None
            current = current.parent
        return os.lstat(path).st_mode
    except OSError:
        return None


def _regular_file(path: Path, *, stop: Path) -> bool:
    mode = unlinked_mode(path, stop=stop)
    return mode is not None and stat.S_ISREG(mode)
