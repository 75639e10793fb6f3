"""One module per campaign file: where it lives, how it is read (bounded, damaged -> CampaignError) and written
(atomically). Imports nothing.

- `paths` - where every campaign file lives; workspace-relative storage;
- `lock` - the lifecycle lock (flock; exclusive-create fallback);
- `contract` - autofl.yaml: the imported config (`import_config`), the trust contract, the budget digest;
- `metadata` - campaign.json: settings, best fields, audit trail;
- `manifests` - candidate manifests: read with checks, write, list;
- `snapshots` - the live best source: stage, swap, restore the workspace;
- `sources` - managed source files: read, write, hash, compare.
"""
