"""One open campaign: its paths, metadata, config, ledger rows, manifests and best snapshot.

Reads are cached, each keyed on what it read: the identity, size and times of the files (the ledger; the
candidates folder and every manifest; snapshot.json, the best folder and its copies) and the count of files this
process has replaced (`atomic.writes`). A write, by this action or anyone else, makes the next read fresh; no
caller has to drop the cache.

Usage::

    campaign = Campaign.open(job_path)          # existing campaign; CampaignError when there is none
    campaign.settings.metric; campaign.rows(); campaign.manifests(); campaign.best()
    campaign.best_row(); campaign.best_run_args(); campaign.job_argv(run_args)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..campaign import ledger
from ..campaign import vocabulary as v
from ..campaign.ledger import LedgerRow
from ..common import atomic
from .outcome import CampaignError
from .settings import CampaignSettings
from .store import contract, frozen, manifests, metadata, snapshots
from .store.paths import CampaignPaths


@dataclass
class Campaign:
    paths: CampaignPaths
    meta: dict
    config: dict
    lenient: bool = False  # read an older ledger too (the report); its missing columns are `missing_columns`
    missing_columns: tuple[str, ...] = ()
    _reads: dict = field(default_factory=dict, repr=False)  # what -> (key, value): see `_cached`
    plot_worker: object = field(default=None, repr=False)  # plot_worker.PlotWorker started with a trial, or None

    @classmethod
    def open(cls, job: str, paths: CampaignPaths | None = None) -> Campaign:
        """Open the campaign of `job` (its persisted output paths apply)."""
        probe = paths or CampaignPaths.for_job(job, {})
        meta = metadata.read(probe)
        settings = meta["settings"]
        paths = CampaignPaths.for_job(
            job,
            {
                key: settings.get(key)
                for key in ("autofl_yaml", "results", "state", "progress", "report", "output_root")
            },
        )
        config = contract.read(paths.autofl_yaml)
        frozen.check_intact(paths, config)  # a measured campaign stays measured by the evaluator it started with
        return cls(paths=paths, meta=meta, config=config)

    @property
    def settings(self) -> CampaignSettings:
        """campaign.json's settings, typed (read again whenever `meta` holds another settings object)."""
        document = self.meta["settings"]
        held = self._reads.get("settings")
        if held is None or held[0] is not document:
            held = self._reads["settings"] = (document, CampaignSettings.from_json(document))
        return held[1]

    def rows(self) -> list[dict]:
        return self._cached("rows", _file_keys([self.paths.results]), self._read_rows)

    def _read_rows(self) -> list[dict]:
        try:
            if not self.lenient:
                return ledger.read_rows(self.paths.results)
            rows, self.missing_columns = ledger.read_rows_any_version(self.paths.results)
            return rows
        except ledger.LedgerError as error:
            raise CampaignError(f"{error}; repair that line (the ledger is append-only evidence)") from None

    def manifests(self) -> list[manifests.CandidateManifest]:
        root = self.paths.candidates
        try:
            names = sorted(entry.name for entry in os.scandir(root))
        except OSError:
            names = []
        files = [root, *(root / name / "candidate_manifest.json" for name in names)]
        return self._cached("manifests", _file_keys(files), lambda: manifests.all_manifests(self.paths))

    def best(self) -> snapshots.Snapshot:
        best = self.paths.best

        def key(before: tuple, snapshot: snapshots.Snapshot) -> tuple:
            return before + _file_keys([best / "source" / rel for rel in snapshot.hashes])[1:]

        held = self._reads.get("best")
        before = _file_keys([best, best / "snapshot.json"])
        if held is None or held[0] != key(before, held[1]):
            snapshot = snapshots.load(self.paths)
            held = self._reads["best"] = (key(before, snapshot), snapshot)
        return held[1]

    def _cached(self, what: str, key: tuple, read):
        """`read()`, or what it returned last time when `key` (what the read depends on) is unchanged."""
        held = self._reads.get(what)
        if held is None or held[0] != key:
            held = self._reads[what] = (key, read())
        return held[1]

    def manifest_of(self, name: str) -> manifests.CandidateManifest | None:
        return next((m for m in self.manifests() if m.candidate_id == name), None)

    def best_row(self) -> LedgerRow | None:
        """The best scored baseline/keep row (a tie never replaces the earlier one): `vocabulary.best_row`."""
        rows = self.rows()
        return self._cached("best_row", self._reads["rows"][0], lambda: v.best_row(rows, self.settings.mode))

    def best_run_args(self) -> list[str]:
        """Run args of the live best configuration (the best candidate's effective args; none for a baseline)."""
        row = self.best_row()
        manifest = self.manifest_of(row.name) if row and row.status == v.KEEP else None
        return list(manifest.effective_run_args) if manifest else []

    def job_argv(self, run_args: list[str]) -> list[str]:
        """job.py's command line for a configuration: interpreter, job file, fixed budget, base args, `run_args`
        (run in the job's folder; the report's best command, the export command of a ready candidate)."""
        return [
            self.settings.python,
            self.paths.job.name,
            *contract.budget_args(self.config),
            *self.settings.base_args,
            *run_args,
        ]

    def pending(self) -> list[manifests.CandidateManifest]:
        return manifests.pending(self.manifests())

    def used_names(self) -> set[str]:
        return {row.name for row in self.rows()} | {m.candidate_id for m in self.manifests()}


def _file_keys(paths) -> tuple:
    """What identifies the current content of `paths` (None for a missing one), and this process's write count."""
    keys = [atomic.writes()]
    for path in paths:
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            keys.append(None)
            continue
        keys.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    return tuple(keys)
