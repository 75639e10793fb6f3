"""Whether a downloaded job is the evaluation job the runner builds: the check before its answers may score.

`nvflare job download` (NVFLARE 2.9) leaves `<dir>/<job id>/` holding `meta.json` (the server's record of the
job), `workspace/` (the server's run dir, where the answers are) and `job/<folder>/`, the job definition as it was
submitted and run (the server's job.zip unzipped; `<folder>` is the temporary copy `nvflare job submit` made).
`nvflare job submit` writes the job's JSON configuration files (`meta.json`, `app/config/*.json`) again (the same
documents, laid out anew) and, with a kit that signs, adds its signature files to every folder.

So the definition is the runner's job when it holds exactly the files `eval_job.job_files` builds from the
runner's own sources: the configuration files equal as JSON documents, every other file (the runner's client
script, the frozen copies, the model) byte for byte, nothing else but NVFLARE's signature files, no link. The job
name, `min_clients` and the timeout are taken from the definition itself (they name and bound the job; what runs
and on which model is what is checked). Usage::

    check(download_folder, spec)   # EvalJobError naming the first difference (or the missing definition)
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path
from typing import NoReturn

from ..common import bounded
from . import eval_job

DEFINITION = "job"
SIGNATURE_FILES = frozenset({".__nvfl_sig.json", ".__nvfl_submitter.crt"})  # nvflare.lighter.tool_consts
MAX_CONFIG_BYTES = 1024 * 1024
MAX_ENTRIES = 10_000
NOT_SCORED = "its answers are not scored (only the job submit --evaluation builds and submits counts)"


def check(download: Path, spec: eval_job.EvalJobSpec) -> None:
    """EvalJobError unless the job definition in `download` (the `<job id>` folder) is the evaluation job `spec`
    builds, with the name, min_clients and timeout the definition declares."""
    root = definition_root(Path(download))
    expected = eval_job.job_files(dataclasses.replace(spec, **_declared(root)))
    found = _files(root, expected)
    for rel, data in sorted(expected.items()):
        if rel not in found:
            _differs(f"it lacks {rel}")
        if rel in eval_job.CONFIG_FILES:
            if _canonical(_parse(found[rel], rel)) != _canonical(_parse(data, rel)):
                _differs(f"its {rel} is another configuration")
        elif found[rel] != data:
            _differs(f"its {rel} differs")


def definition_root(download: Path) -> Path:
    """The one folder below `<job id>/job/`; EvalJobError when the download holds no such job definition."""
    folder = download / DEFINITION
    entries = _listing(folder) if _is_real_dir(folder) else None
    if not entries or len(entries) != 1 or not _is_real_dir(folder / entries[0]):
        raise eval_job.EvalJobError(
            f"the downloaded job holds no job definition ({DEFINITION}/<folder>/ with its meta.json and app/, as "
            f"nvflare job download leaves it) to compare with the evaluation job the runner builds; {NOT_SCORED}"
        )
    return folder / entries[0]


def _declared(root: Path) -> dict:
    """{name, min_clients, timeout} as the definition's meta.json and server configuration state them."""
    meta = _parse(_read(root / eval_job.META, MAX_CONFIG_BYTES, eval_job.META), eval_job.META)
    server = _parse(
        _read(root / eval_job.SERVER_CONFIG, MAX_CONFIG_BYTES, eval_job.SERVER_CONFIG), eval_job.SERVER_CONFIG
    )
    try:
        name, min_clients = meta["name"], meta["min_clients"]
        timeout = server["workflows"][0]["args"]["validation_timeout"]
    except (KeyError, IndexError, TypeError):
        _differs("its meta.json or server configuration is not the evaluation job's")
    if not isinstance(name, str) or not eval_job.JOB_NAME.fullmatch(name):
        _differs("its meta.json names no plain job name")
    if not all(bounded.is_integer(value) and value >= 1 for value in (min_clients, timeout)):
        _differs("its min_clients or validation_timeout is not a positive whole number")
    return {"name": name, "min_clients": min_clients, "timeout": timeout}


def _files(root: Path, expected: dict[str, bytes]) -> dict[str, bytes]:
    """{path below root: bytes} of every file but NVFLARE's signature files; EvalJobError for a link, a file the
    runner's job does not hold, one larger than the runner's, a folder that cannot be listed (it could hold any
    file), or a tree too large to be the runner's job."""
    found, entries = {}, 0
    for folder, dirs, names in os.walk(root, onerror=_unlisted):
        entries += len(dirs) + len(names)
        if entries > MAX_ENTRIES:
            _differs(f"it holds more than {MAX_ENTRIES} entries")
        for name in dirs:
            if not _is_real_dir(Path(folder) / name):
                _differs(f"{Path(folder, name).relative_to(root).as_posix()} is a link")
        for name in names:
            if name in SIGNATURE_FILES:
                continue
            rel = Path(folder, name).relative_to(root).as_posix()
            if rel not in expected:
                _differs(f"it holds {rel}, which the runner's evaluation job does not")
            limit = MAX_CONFIG_BYTES if rel in eval_job.CONFIG_FILES else len(expected[rel])
            found[rel] = _read(Path(folder, name), limit, rel)
    return found


def _unlisted(error: OSError) -> NoReturn:
    _differs(f"a folder of it cannot be listed ({error.strerror or error})")


def _read(path: Path, limit: int, rel: str) -> bytes:
    """The bytes of the regular file `path` (never through a link); EvalJobError when it is anything else."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        _differs(f"it lacks {rel}")
    if not stat.S_ISREG(mode):
        _differs(f"its {rel} is not a regular file")
    try:
        data = bounded.read_regular(path, limit, through_link=False)  # a link swapped in after lstat too
    except bounded.BoundedReadError:
        _differs(f"its {rel} differs")
    if data is None:
        _differs(f"it lacks {rel}")
    return data


def _parse(data: bytes, rel: str) -> object:
    try:
        return bounded.parse_json(data)
    except bounded.BoundedReadError:
        _differs(f"its {rel} is not valid JSON")


def _canonical(document: object) -> str:
    """One text per JSON document: key order and layout aside, 2, 2.0 and true stay different."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _listing(folder: Path) -> list[str] | None:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return None


def _differs(detail: str) -> NoReturn:
    raise eval_job.EvalJobError(
        f"the downloaded job is not the evaluation job the runner builds from the frozen evaluator and this run's "
        f"model ({detail}); {NOT_SCORED}"
    )
