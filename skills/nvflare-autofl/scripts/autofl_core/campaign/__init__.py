"""The campaign's rules over the ledger: pure functions of ledger rows and settings, plus the ledger file and the
progress plot (imports nothing).

- `vocabulary` - every closed value set as an enum (statuses, kinds, outcomes, state words), the sets derived
  from them, the running best, the row builders;
- `ledger` - results.tsv: parse, validate, format, append atomically;
- `compare` - "better" at ledger precision (a tie never wins);
- `gains` - is a gain real: `beyond noise` / `within noise` / `unverified`, the metric's resolution;
- `guard` - the state machine: ledger rows + settings -> campaign state (decision, next action, plateau, noise);
- `guard_inputs` - the guard's inputs: thresholds from flags/environment, stop files, the stored mode and noise
  facts;
- `instructions` - the sentences an agent reads in the state;
- `prune` - the pruning rule: a running candidate's per-round metric against the best's at the same round;
- `plot` - progress.png from the ledger: the plot data, the renderer choice, the text note;
- `plot_picture` - the matplotlib picture itself (the progress panel above the round curves);
- `plot_worker` - the process that draws progress.png while a trial runs (run by path), and its handle.
"""
