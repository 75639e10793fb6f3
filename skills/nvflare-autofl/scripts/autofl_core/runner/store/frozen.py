"""The frozen evaluator in the trust contract: autofl.yaml's `evaluation` section and the runner's copies.

At initialize the evaluator file, the job-local modules it imports (static, transitive) and the files named with
`--evaluator-input` are hashed into `evaluation.frozen` of autofl.yaml (guarded evidence: a trial that changes it
is caught) and copied to `.nvflare/autofl/frozen/` (hidden from trials). The evaluator always runs from those
copies; a draft that edits a frozen file is refused; after every trial the live files are compared with the
hashes and restored from the copies when a trial changed them. Usage::

    section, files = build(workspace, "evaluate.py", inputs=["val.csv"])   # CampaignError naming the problem
    install(paths, files); config["evaluation"] = section
    refuse_edits(config, ["evaluate.py"])                                   # CampaignError (exit 2)
    files = copies(paths, config)                                           # verified bytes of every frozen file
    check_intact(paths, config)            # CampaignError when autofl.yaml's evaluation section was dropped or edited
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

from ...common import atomic, bounded
from ...importer.trust import safe_relative
from ..outcome import CampaignError
from . import sources

FOLDER = "frozen"
MAX_FROZEN_BYTES = 256 * 1024 * 1024  # all frozen files together (inputs may be validation data)
SECTION_DIGEST = "frozen_section.sha256"  # beside the copies: the evaluation section the campaign started with


def section(config: dict) -> dict | None:
    """The campaign's `evaluation` section, or None when the score is the job's own reported metric."""
    found = config.get("evaluation")
    return found if isinstance(found, dict) and found.get("script") else None


def frozen_paths(config: dict) -> list[str]:
    found = section(config)
    return sorted((found or {}).get("frozen") or {})


def build(workspace: Path, script: str, inputs: list[str], model: str | None = None) -> tuple[dict, dict[str, bytes]]:
    """The `evaluation` section and the frozen files' bytes for `script` (+ its local imports) and `inputs`."""
    script_rel = _relative(workspace, script, "--evaluator")
    if not script_rel.endswith(".py"):
        raise CampaignError(f"--evaluator {script} is not a Python file; pass the evaluator script (a .py file)")
    input_rels = [_relative(workspace, item, "--evaluator-input") for item in inputs]
    files = {script_rel: _read(workspace, script_rel, "--evaluator")}
    texts: dict[str, str | None] = {}

    def read(rel: str) -> str | None:
        if rel not in texts:
            data = sources.read_file(workspace, rel) if safe_relative(rel) == rel else None
            texts[rel] = data.decode("utf-8", errors="replace") if data is not None else None
        return texts[rel]

    from ...importer.evaluator_imports import local_imports  # the AST walk: only initialize needs it

    try:
        modules = local_imports(script_rel, read)
    except ValueError as error:
        raise CampaignError(f"--evaluator {script}: {error}; fix it so the runner can find what it imports") from None
    for rel in modules + input_rels:
        files[rel] = _read(workspace, rel, "--evaluator-input" if rel in input_rels else "--evaluator")
    if sum(len(data) for data in files.values()) > MAX_FROZEN_BYTES:
        raise CampaignError("the frozen evaluator files exceed 256 MiB together; keep large data outside the job")
    found = {
        "script": script_rel,
        "modules": modules,
        "inputs": sorted(set(input_rels)),
        "frozen": sources.file_hashes(files),
    }
    if model:
        found["model"] = model
    return found, files


def install(paths, files: dict[str, bytes]) -> None:
    """Write the runner's copies of the frozen files (hidden from trials with the rest of `.nvflare/autofl/`)."""
    for rel, data in sorted(files.items()):
        atomic.write_bytes(paths.meta / FOLDER / rel, data)


def copies(paths, config: dict) -> dict[str, bytes]:
    """The runner's copies of the frozen files, each checked against its hash in autofl.yaml."""
    found = section(config) or {}
    files = {}
    for rel, sha in sorted((found.get("frozen") or {}).items()):
        if sources.unsafe_relative(rel):
            raise CampaignError(f"autofl.yaml names a frozen file {rel!r} that is not a plain relative path")
        try:
            data = bounded.read_regular(paths.meta / FOLDER / rel, MAX_FROZEN_BYTES)
        except bounded.BoundedReadError as error:
            raise CampaignError(f"the runner's copy of the frozen file {rel} {error}") from None
        if data is None or sources.sha256_bytes(data) != sha:
            raise CampaignError(
                f"the runner's copy of the frozen file {rel} is missing or changed; start a fresh campaign"
            )
        files[rel] = data
    return files


def check_intact(paths, config: dict) -> None:
    """CampaignError (exit 2) when autofl.yaml's `evaluation` section is not the one the campaign started with
    (recorded at initialize in `frozen_section.sha256`): dropped (later scores would be the job's own reports,
    compared with measured ones), edited (another script, model file or inputs) or added later."""
    try:
        recorded = bounded.read_regular(paths.meta / SECTION_DIGEST, 1024)
    except bounded.BoundedReadError:
        recorded = b"unreadable"
    found = section(config)
    if recorded is None and found is None:
        return
    if recorded is None or found is None or recorded.decode("ascii", "replace").strip() != section_digest(found):
        what = {True: "lost its evaluation section", False: "has another evaluation section"}[found is None]
        raise CampaignError(
            f"{paths.autofl_yaml} {what} than the campaign started with; the evaluator that measures the score is "
            "fixed for the whole campaign: restore autofl.yaml, or start a fresh campaign"
        )


def section_digest(found: dict) -> str:
    return sources.sha256_bytes(json.dumps(found, sort_keys=True).encode("utf-8"))


def refuse_edits(config: dict, touched: list[str]) -> None:
    """A draft may import a frozen file but never change or create one (exit 2, nothing changed)."""
    frozen = set(frozen_paths(config))
    hit = [rel for rel in touched if rel in frozen]
    if hit:
        raise CampaignError(
            f"the draft changes {', '.join(hit)}, frozen with the evaluator that measures the score "
            "(the evaluator, the modules it imports and its inputs); revert those files"
        )


def install_from_workspace(paths, config: dict) -> None:
    """Copy the frozen files from the job into the runner's folder, each checked against its hash, and record the
    section's digest (a stale record is removed when the campaign has no evaluator)."""
    found = section(config)
    if found is None:
        (paths.meta / SECTION_DIGEST).unlink(missing_ok=True)
        return
    files = {}
    for rel, sha in sorted((found.get("frozen") or {}).items()):
        data = _read(paths.workspace, rel, "--evaluator")
        if sources.sha256_bytes(data) != sha:
            raise CampaignError(f"{rel} changed while initialize ran; run initialize again")
        files[rel] = data
    install(paths, files)
    atomic.write_bytes(paths.meta / SECTION_DIGEST, (section_digest(found) + "\n").encode("ascii"))


def changed_live(paths, config: dict) -> list[str]:
    """Frozen files whose live copy in the job differs from the frozen hash (missing ones included)."""
    found = section(config) or {}
    return sources.differing(paths.workspace, dict(found.get("frozen") or {}))


def restore_live(paths, config: dict, rels: list[str]) -> None:
    """Put the frozen content back in the job for `rels` (from the runner's copies)."""
    saved = copies(paths, config)
    sources.write_files(paths.workspace, {rel: saved[rel] for rel in rels if rel in saved})


def _relative(workspace: Path, given: str, flag: str) -> str:
    """`given` (absolute or relative to the job folder) as a plain job-relative path of a regular file."""
    path = Path(given)
    absolute = path if path.is_absolute() else Path(workspace) / path
    try:
        rel = absolute.resolve(strict=False).relative_to(Path(workspace).resolve()).as_posix()
    except ValueError:
        raise CampaignError(f"{flag} {given} is outside the job folder {workspace}; put it inside the job") from None
    if safe_relative(rel) != rel:
        raise CampaignError(f"{flag} {given} is in a reserved folder or not a plain path; move it into the job")
    sources.check_inside(Path(workspace), rel)
    try:
        info = (Path(workspace) / rel).lstat()
    except OSError:
        raise CampaignError(f"{flag} {given} does not exist; pass an existing file inside the job folder") from None
    if not stat.S_ISREG(info.st_mode):
        raise CampaignError(f"{flag} {given} is not a regular file (a link or folder); pass a plain file")
    return rel


def _read(workspace: Path, rel: str, flag: str) -> bytes:
    try:
        data = bounded.read_regular(Path(workspace) / rel, MAX_FROZEN_BYTES)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{flag} {rel} {error}") from None
    if data is None:
        raise CampaignError(f"{flag} {rel} does not exist; pass an existing file inside the job folder")
    return data
