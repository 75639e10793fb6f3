"""One module per campaign file: where it lives, how it is read (bounded, damaged -> CampaignError) and written
(atomically). Imports nothing.

- `paths` - where every campaign file lives; workspace-relative storage;
- `lock` - the lifecycle lock (flock on the lock file and its folder, never through a symlink; fallback);
- `contract` - autofl.yaml: the imported config (`import_config`), the trust contract, the budget digest;
- `metadata` - campaign.json: settings (validated against the shipped schema copy), best fields, audit trail;
- `manifests` - candidate manifests: the typed record (`CandidateManifest`), read with checks, write, list;
- `snapshots` - the live best source: stage, swap, restore the workspace;
- `created` - created.json and installed.json: the files and folders the runner creates in the workspace (for a
  candidate; as part of a kept best), recorded first (the only things it ever removes there);
- `external` - external runs (poc/prod): the external baseline's evidence and `submit`'s progress, per run name;
- `sources` - managed source files: read, write (never through a symlinked folder), hash, compare.
- `frozen` - the frozen evaluator in the trust contract: autofl.yaml's `evaluation` hashes and the runner's copies.
"""
