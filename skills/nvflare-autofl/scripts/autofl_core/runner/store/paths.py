"""Where every campaign file lives, and how paths are stored: relative to the workspace when inside it.

The workspace is the folder of job.py. Campaign files store workspace-relative POSIX paths so a copied or
moved campaign keeps working; envelopes show absolute paths. Usage::

    paths = CampaignPaths.for_job("ws/job.py", results="results.tsv", ...)
    paths.rel(paths.results)        # "results.tsv"
    paths.resolve("autofl_runs/x")  # absolute Path
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

META_DIR = Path(".nvflare") / "autofl"
DEFAULT_OUTPUTS = {
    "autofl_yaml": "autofl.yaml",
    "results": "results.tsv",
    "state": str(META_DIR / "campaign_state.json"),
    "progress": "progress.png",
    "report": "autofl_report.md",
    "output_root": "autofl_runs",
}
OUTPUT_KEYS = tuple(DEFAULT_OUTPUTS)
TRIAL_TEMP_PREFIX = "afl-"  # short: a trial's private TMPDIR must keep Unix socket paths under ~108 bytes


@dataclass(frozen=True)
class CampaignPaths:
    """Absolute paths of one campaign's files."""

    workspace: Path
    job: Path
    autofl_yaml: Path
    results: Path
    state: Path
    progress: Path
    report: Path
    output_root: Path

    @classmethod
    def for_job(cls, job: str | os.PathLike, outputs: dict[str, str]) -> CampaignPaths:
        """Paths for `job` (a job.py) with the output settings `outputs` (relative to the workspace)."""
        job_path = Path(os.path.abspath(job))
        workspace = job_path.parent
        resolved = {key: _under(workspace, outputs.get(key) or default) for key, default in DEFAULT_OUTPUTS.items()}
        return cls(workspace=workspace, job=job_path, **resolved)

    @cached_property
    def meta(self) -> Path:
        return self.workspace / META_DIR

    @property
    def campaign(self) -> Path:
        return self.meta / "campaign.json"

    @property
    def lock(self) -> Path:
        return self.meta / "campaign.lock"

    @property
    def snapshots(self) -> Path:
        return self.meta / "snapshots"

    @property
    def best(self) -> Path:
        return self.snapshots / "best"

    @cached_property
    def candidates(self) -> Path:
        return self.meta / "candidates"

    @property
    def journal(self) -> Path:
        """Finalize journal: present only while a decided outcome is being written."""
        return self.meta / "finalize.json"

    @property
    def trial_marker(self) -> Path:
        """Present only while a trial runs: its token and temp folder, for orphan recovery."""
        return self.meta / "running_trial.json"

    @property
    def report_json(self) -> Path:
        return self.report.with_suffix(".json")

    def candidate_dir(self, candidate_id: str) -> Path:
        return self.candidates / candidate_id

    def manifest(self, candidate_id: str) -> Path:
        return self.candidate_dir(candidate_id) / "candidate_manifest.json"

    def run_dir(self, name: str) -> Path:
        return self.output_root / name

    def rel(self, path: str | os.PathLike) -> str:
        """Workspace-relative POSIX path when `path` is inside the workspace, else the absolute path."""
        absolute = Path(os.path.abspath(path))
        try:
            return absolute.relative_to(self.workspace).as_posix()
        except ValueError:
            return absolute.as_posix()

    def resolve(self, stored: str) -> Path:
        """The absolute path of a stored (workspace-relative or absolute) path."""
        return _under(self.workspace, stored)

    def envelope_paths(self) -> dict[str, str]:
        """Each output file's absolute path, as envelopes show them (the runs folder is not a file)."""
        return {key: str(getattr(self, key)) for key in OUTPUT_KEYS if key != "output_root"}


def _under(workspace: Path, stored: str | os.PathLike) -> Path:
    path = Path(os.path.expanduser(str(stored)))
    return Path(os.path.abspath(path if path.is_absolute() else workspace / path))
