"""One open campaign: its paths, metadata, config, ledger rows, manifests and best snapshot, read once per action.

Usage::

    campaign = Campaign.open(job_path)          # existing campaign; CampaignError when there is none
    campaign.settings["metric"]; campaign.rows(); campaign.manifests(); campaign.best()
    campaign.best_row(); campaign.best_run_args(); campaign.job_argv(run_args)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..campaign import ledger
from ..campaign import vocabulary as v
from .outcome import CampaignError
from .store import contract, frozen, manifests, metadata, snapshots
from .store.paths import CampaignPaths


@dataclass
class Campaign:
    paths: CampaignPaths
    meta: dict
    config: dict
    _rows: list | None = field(default=None, repr=False)
    _manifests: list | None = field(default=None, repr=False)
    _best: snapshots.Snapshot | None = field(default=None, repr=False)
    _best_row: tuple | None = field(default=None, repr=False)  # (row or None,), cached until forget()
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
    def settings(self) -> dict:
        return self.meta["settings"]

    @property
    def mode(self) -> str:
        return self.settings["mode"]

    def rows(self) -> list[dict]:
        if self._rows is None:
            try:
                self._rows = ledger.read_rows(self.paths.results)
            except ledger.LedgerError as error:
                raise CampaignError(f"{error}; repair that line (the ledger is append-only evidence)") from None
        return self._rows

    def manifests(self) -> list[dict]:
        if self._manifests is None:
            self._manifests = manifests.all_manifests(self.paths)
        return self._manifests

    def best(self) -> snapshots.Snapshot:
        if self._best is None:
            self._best = snapshots.load(self.paths)
        return self._best

    def forget(self) -> None:
        """Drop cached reads after this action wrote campaign files."""
        self._rows = self._manifests = self._best = self._best_row = None

    def manifest_of(self, name: str) -> dict | None:
        return next((m for m in self.manifests() if m["candidate_id"] == name), None)

    def best_row(self) -> dict | None:
        """The best scored baseline/keep row (a tie never replaces the earlier one): `vocabulary.best_row`."""
        if self._best_row is None:
            self._best_row = (v.best_row(self.rows(), self.mode),)
        return self._best_row[0]

    def best_run_args(self) -> list[str]:
        """Run args of the live best configuration (the best candidate's effective args; none for a baseline)."""
        row = self.best_row()
        manifest = self.manifest_of(row["name"]) if row and row["status"] == v.KEEP else None
        return list(manifest["effective_run_args"]) if manifest else []

    def job_argv(self, run_args: list[str]) -> list[str]:
        """job.py's command line for a configuration: interpreter, job file, fixed budget, base args, `run_args`
        (run in the job's folder; the report's best command, the export command of a ready candidate)."""
        return [
            self.settings["python"],
            self.paths.job.name,
            *contract.budget_args(self.config),
            *self.settings["base_args"],
            *run_args,
        ]

    def pending(self) -> list[dict]:
        return manifests.pending(self.manifests())

    def used_names(self) -> set[str]:
        return {row["name"] for row in self.rows()} | {m["candidate_id"] for m in self.manifests()}
