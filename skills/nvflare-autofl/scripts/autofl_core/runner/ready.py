"""Candidates ready for external execution (poc/prod): several may be ready at once.

The runner submits nothing; the user exports and submits each ready candidate, with an explicit yes for each
run. The live workspace holds a ready candidate only while it is the only one (what a single evaluate always
did: the job is exported from its own folder). As soon as a second one becomes ready, the first is taken out of
the workspace (the best source restored) and every ready candidate is exported from its own candidate folder
(`candidates/<id>/source/`: job.py, the train script and the local modules, exactly as evaluated).

`record` takes the ready candidates in any order and decides each against the best at that moment; a keep
installs the candidate's own source, the rule a batch in simulation follows (`evaluation.conclude`): siblings
from one best replace each other, they are never combined. Usage::

    drift = workspace_drift(campaign)            # managed files that differ from the best (+ the held candidate)
    take_out(campaign, now)                      # before a second candidate becomes ready
    entry(campaign, manifest)                    # the envelope entry of a ready candidate (export_from, job_argv)
    files = recordable(campaign, manifest)       # record: its files, checked unchanged since evaluate
    needs(manifest)                              # status: what a pending candidate still needs
"""

from __future__ import annotations

from ..campaign import vocabulary as v
from . import drafts
from .outcome import CampaignError
from .store import manifests, snapshots, sources


def ready_ones(campaign) -> list[manifests.CandidateManifest]:
    """Every candidate ready for external execution, in preparation order."""
    return manifests.in_preparation_order([m for m in campaign.manifests() if m.status == v.READY])


def held(campaign) -> manifests.CandidateManifest | None:
    """The ready candidate the live workspace holds (at most one), or None."""
    return next((m for m in ready_ones(campaign) if m.workspace_applied), None)


def workspace_drift(campaign) -> list[str]:
    """Managed files of the workspace that differ from the best source, with the held candidate's draft (when
    one is held) counted as expected."""
    paths = campaign.paths
    expected = dict(campaign.best().hashes)
    holder = held(campaign)
    if holder is not None:
        expected.update(sources.file_hashes(sources.read_files(source_folder(paths, holder), holder.touched)))
    return sources.differing(paths.workspace, expected)


def take_out(campaign, now: str) -> None:
    """Take the held ready candidate (if any) out of the workspace: best source restored, its created files
    removed; it stays ready, now exported from its candidate folder."""
    holder = held(campaign)
    if holder is None:
        return
    paths = campaign.paths
    snapshots.restore_workspace(paths, campaign.best(), remove=holder.created_files, candidate=holder.candidate_id)
    manifests.write(paths, holder.replace(workspace_applied=False, updated_at=now))


def source_folder(paths, manifest: manifests.CandidateManifest):
    return paths.candidate_dir(manifest.candidate_id) / "source"


def export_from(paths, manifest: manifests.CandidateManifest):
    """The folder a ready candidate is exported from: the job's own folder while it holds the candidate, else the
    candidate folder."""
    return paths.workspace if manifest.workspace_applied else source_folder(paths, manifest)


def entry(campaign, manifest: manifests.CandidateManifest) -> dict:
    """The envelope entry of a candidate made ready (the batch entry fields, with nothing scored yet)."""
    paths = campaign.paths
    return {
        "candidate_id": manifest.candidate_id,
        "candidate_manifest": str(paths.manifest(manifest.candidate_id)),
        "candidate_status": v.READY,
        "score": None,
        "reason": None,
        "runtime_seconds": None,
        "tampering": [],
        "compared_with": None,
        "compared_score": None,
        "delta": None,
        "noise_verdict": None,
        "export_from": str(export_from(paths, manifest)),
        "job_argv": campaign.job_argv(manifest.effective_run_args),
    }


def needs(manifest: manifests.CandidateManifest) -> str:
    """What a pending candidate still needs before it has a ledger result (one short sentence)."""
    if manifest.status == v.READY:
        return (
            "the user's explicit yes for this run, then submit --manifest (or export it from export_from, submit it "
            "by hand, then record --manifest with --artifacts, --score or --failure-reason)"
        )
    if manifest.status == v.RUNNING:
        return "an evaluate is under way"
    if manifest.run_args:
        return "evaluate (its run args were given at prepare)"
    return "an edit of its source folder, then evaluate"


def recordable(campaign, manifest: manifests.CandidateManifest) -> dict[str, bytes]:
    """The files of ready candidate `manifest`, as evaluated; refused when its folder changed since evaluate or
    when the workspace holds neither the best source nor this candidate."""
    paths = campaign.paths
    folder = source_folder(paths, manifest)
    files = drafts.source_files(folder)
    name = manifest.candidate_id
    if sources.source_digest(files) != manifest.candidate_source_sha256:
        raise CampaignError(
            f"the folder of candidate {name} ({folder}) changed since it was evaluated; what is recorded must be "
            "what was submitted: undo those changes (export jobs to a folder outside it), or abandon the candidate"
        )
    unlike_it = sources.differing(paths.workspace, sources.file_hashes(files))
    drift = snapshots.workspace_drift(paths, campaign.best())
    if drift and unlike_it:
        if manifest.workspace_applied:
            raise CampaignError(
                f"the workspace no longer holds candidate {name} as evaluated ({', '.join(unlike_it)} changed); "
                "restore it or abandon the candidate"
            )
        raise CampaignError(
            f"the workspace differs from the best snapshot ({', '.join(drift)}); undo those edits (ready candidates "
            "are exported from their own folders), then record again"
        )
    return files
