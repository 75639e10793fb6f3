"""Small utilities every stage shares, trial/ included (standard library only; imports nothing else).

- `atomic` - crash-safe writes: temp file, fsync, os.replace (loaded alone by path by the build scripts too);
- `bounded` - bounded reads of regular files, and the one reader of campaign JSON (`read_json`);
- `trees` - `remove_tree`: the one remover of folder trees (iterative, never raises; trials may leave deep trees);
- `schema_check` - a small JSON Schema checker (the subset the published schemas use) for the settings file;
- `faults` - test-only fault injection at named lifecycle points (`AUTOFL_FAULT_AT`);
- `trial_limits` - per-trial memory, disk and process limits: sizes, machine defaults, the reason of a breach;
- `cli` - exit codes, the one-line-error argparse, stdout delivery of a CLI's document;
- `stamps` - the campaign's UTC time stamps: written, read, now.
"""
