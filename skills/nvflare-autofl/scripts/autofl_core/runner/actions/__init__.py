"""One module per lifecycle action, loaded lazily by the shell (`lifecycle`), so cheap actions never import the
trial machinery. Each is a leaf: it imports no other action and not the shell (imports nothing here).

Each exposes `run(campaign, options, now) -> ActionResult`, called under the lock after recovery; `status` has no
module (the shell's refresh is the whole action).
- `initialize` - a new campaign (`admit`, `create`, `start`: import, admission, files, baseline) or a baseline retry;
- `prepare` - copy the best snapshot into a candidate folder, write its manifest;
- `evaluate` - one candidate or a batch: validate every draft, re-import, run the trials (sim; sealed ones
  concurrently) and finalize in the order given, or mark them ready for external execution;
- `abandon` - a pending candidate becomes abandoned (never counted);
- `record` - a literature event, an external baseline, or an external candidate result;
- `submit` - poc/prod: export, submit, wait for and download one run, then record it as `record` does (its `run`
  takes record's `run` from the shell);
- `suggest` - argument-only seeds around the best configuration;
- `replicate` - rerun the best configuration to measure noise;
- `report` - the final report (`run(options, given, now)`: its own lock and refusal rules, no recovery).
"""
