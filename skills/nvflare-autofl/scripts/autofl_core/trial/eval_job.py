"""The evaluation job of a model for a real FLARE system (poc/prod), and the per-site answers it leaves.

The job is made of what NVFLARE 2.9 ships for evaluation only, written as the job folder its `FedJob` API exports
(one app, `app`, deployed to `@ALL`): on the server `GlobalModelEval` (the evaluation-only workflow: it sends the
model a `ModelLocator` finds once to every site as the `validate` task and collects each site's result),
`NPModelLocator` (the NumPy model placed in the app's `custom/` folder, read from the server's run dir as
`app_server/custom/autofl_model.npy`) and `ValidationJsonGenerator` (writes every site's result to
`cross_site_val/cross_val_results.json` in the server's run dir, which `nvflare job download` brings back); on each
site the Client API executor runs `autofl_site_eval.py` (`job_files/`, the runner's own client script), which runs
the frozen evaluator on the model and returns its output. The app's `custom/` folder holds only that script, the
frozen files at their job-relative paths and the model. Pure file work (no NVFLARE import). Usage::

    folder = materialize(EvalJobSpec(name=..., script="evaluate.py", files={...}, model=path, model_format="numpy",
                                     min_clients=2, timeout=600), destination)
    answers = read_answers(download_folder)   # {"site-1": {"autofl_stdout": ..., "autofl_exit": 0, ...}, ...}
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..common import atomic, bounded, trees
from . import global_model

APP = "app"
CUSTOM = (APP, "custom")
WRAPPER = "autofl_site_eval.py"
WRAPPER_SOURCE = Path(__file__).resolve().parent / "job_files" / WRAPPER
MODEL_FILES = {"numpy": "autofl_model.npy"}  # the formats NVFLARE ships a file model locator for without torch
RESULTS = ("cross_site_val", "cross_val_results.json")
META, SERVER_CONFIG, CLIENT_CONFIG = (
    "meta.json",
    f"{APP}/config/config_fed_server.json",
    f"{APP}/config/config_fed_client.json",
)
CONFIG_FILES = (META, SERVER_CONFIG, CLIENT_CONFIG)  # the job's configuration: JSON documents
SERVER_MODEL = "SRV_server"  # GlobalModelEval's name of the NPModelLocator's "server" model in the results
SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # one folder name: the job folder is written there
MAX_RESULTS_BYTES = 4 * 1024 * 1024


class EvalJobError(ValueError):
    """The evaluation job cannot be built or read: str() names the problem and the fix."""


@dataclass(frozen=True)
class EvalJobSpec:
    """`files` {job-relative path: bytes} are the frozen files (`script` one of them); `model` the model file."""

    name: str
    script: str
    files: dict[str, bytes]
    model: Path
    model_format: str
    min_clients: int
    timeout: int = 600


def job_files(spec: EvalJobSpec) -> dict[str, bytes]:
    """Every file of the job folder {path below it: bytes}. EvalJobError for a job name that is not one folder
    name, a format without a locator or a frozen path the job cannot hold."""
    if not JOB_NAME.fullmatch(spec.name):
        raise EvalJobError(f"the job name {spec.name!r} is not a plain folder name (letters, digits, ._-)")
    model_name = MODEL_FILES.get(spec.model_format)
    if model_name is None:
        raise EvalJobError(
            f"the global model is in {spec.model_format or 'an unknown'} format; the evaluation job is built for "
            "NumPy models (NVFLARE's NPModelLocator), so this model's evaluation is not automated: run the frozen "
            "evaluator at each site by hand"
        )
    if spec.script not in spec.files:
        raise EvalJobError(f"the frozen evaluator {spec.script} is not among the frozen files")
    custom = "/".join(CUSTOM)
    files = {}
    for rel, data in spec.files.items():
        if not SAFE_PATH.fullmatch(rel) or rel.startswith("/") or ".." in rel.split("/"):
            raise EvalJobError(f"the frozen file {rel!r} cannot be named in the evaluation job (letters, digits, ._-/)")
        if rel in (WRAPPER, model_name):
            raise EvalJobError(f"the frozen file {rel} has the name of the evaluation job's own file; rename it")
        files[f"{custom}/{rel}"] = data
    files[f"{custom}/{WRAPPER}"] = WRAPPER_SOURCE.read_bytes()
    files[f"{custom}/{model_name}"] = Path(spec.model).read_bytes()
    files[META] = _json(
        {"name": spec.name, "resource_spec": {}, "min_clients": spec.min_clients, "deploy_map": {APP: ["@ALL"]}}
    )
    files[SERVER_CONFIG] = _json(_server_config(model_name, spec.timeout))
    files[CLIENT_CONFIG] = _json(_client_config(spec, model_name))
    return files


def materialize(spec: EvalJobSpec, destination: Path) -> Path:
    """Write the job folder as `destination/<name>` (replacing an earlier one); its path. EvalJobError (nothing
    removed or written) as `job_files`."""
    files = job_files(spec)
    folder = Path(destination) / spec.name
    trees.remove_tree(folder)
    for rel, data in sorted(files.items()):
        atomic.write_bytes(folder / rel, data)
    return folder


def read_answers(download: Path) -> dict[str, dict]:
    """{site: the metrics it returned} from a downloaded evaluation job (`<dir>/<job id>/workspace/` layout, the job
    id folder or its workspace). EvalJobError when the results file is missing or not the expected shape."""
    for place in global_model.download_places(download):
        path = place.joinpath(*RESULTS)
        if path.is_symlink() or not path.is_file():
            continue
        try:
            document = bounded.read_json(path, MAX_RESULTS_BYTES)
        except bounded.BoundedReadError as error:
            raise EvalJobError(f"{path} {error}") from None
        if not isinstance(document, dict):
            raise EvalJobError(f"{path} is not a JSON object of sites")
        answers = {}
        for site, by_model in document.items():
            answer = by_model.get(SERVER_MODEL) if isinstance(by_model, dict) else None
            if isinstance(site, str) and isinstance(answer, dict):
                answers[site] = answer
        return answers
    raise EvalJobError(
        f"the downloaded evaluation job holds no {'/'.join(RESULTS)} (the server writes it when the job ends); "
        "was it an evaluation job built by submit --evaluation?"
    )


def _server_config(model_name: str, timeout: int) -> dict:
    return {
        "format_version": 2,
        "workflows": [
            {
                "id": "controller",
                "path": "nvflare.app_common.workflows.global_model_eval.GlobalModelEval",
                "args": {"validation_timeout": int(timeout), "model_locator_id": "model_locator"},
            }
        ],
        "components": [
            {
                "id": "model_locator",
                "path": "nvflare.app_common.np.np_model_locator.NPModelLocator",
                "args": {"model_dir": "app_server/custom", "model_name": {"server": model_name}},
            },
            {
                "id": "validation_json_generator",
                "path": "nvflare.app_common.widgets.validation_json_generator.ValidationJsonGenerator",
                "args": {},
            },
        ],
        "task_data_filters": [],
        "task_result_filters": [],
    }


def _client_config(spec: EvalJobSpec, model_name: str) -> dict:
    args = [
        "--script",
        spec.script,
        "--model",
        model_name,
        "--format",
        spec.model_format,
        "--timeout",
        str(int(spec.timeout)),
    ]
    return {
        "format_version": 2,
        "executors": [
            {
                "tasks": ["validate"],
                "executor": {
                    "path": "nvflare.app_common.executors.client_api_executor.ClientAPIExecutor",
                    "args": {
                        "execution_mode": "in_process",
                        "task_script_path": WRAPPER,
                        "task_script_args": shlex.join(args),
                        "params_exchange_format": "numpy",
                    },
                },
            }
        ],
        "components": [],
        "task_data_filters": [],
        "task_result_filters": [],
    }


def _json(document: dict) -> bytes:
    return (json.dumps(document, indent=4) + os.linesep).encode("utf-8")
