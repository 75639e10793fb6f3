"""The campaign runner (`run_job_campaign.py` is its thin CLI; imports nothing).

- `lifecycle` - the shell of every action: lock, recovery, settings audit, the action, the refresh;
- `actions/` - one module per action, each a leaf (it imports no other action and not the shell);
- `refresh` - after an action: best fields, campaign state, and on a ledger change progress.png and the report;
- `recovery` - finish or undo what a killed runner left behind (run first, under the lock);
- `checks` - checks several actions share (which candidate, is the campaign open);
- `flag_scope` - which action options each action takes (any other one is refused, never silently dropped);
- `outcome` - ActionResult, CampaignError, Interrupted and the exit codes;
- `open_campaign` - `Campaign`: one open campaign, its files read once per action;
- `store/` - one module per campaign file (paths, lock, autofl.yaml, campaign.json, manifests, snapshot, sources);
- `settings` - campaign settings: defaults, immutable vs audited changes, the cap rule;
- `state` - the campaign state the runner writes and the envelope every action prints;
- `pointers` - the paths an envelope names (each exists, or is null with the reason) and where the best lives;
- `job_defaults` - the best's run args written into job.py's argparse defaults, on request (`status`);
- `drafts` - a candidate draft's deterministic diff against the best, within the trust contract;
- `runargs` - candidate run args: canonical options, bounds, merge with the best configuration's;
- `campaign_trial` - one trial of this campaign: TrialSpec from the contract, sealed or contained, the orphan
  marker, trial.json;
- `batch_trials` - several trials at once (a batch): slots, GPUs, one marker for all, every trial ended on a stop;
- `evaluation` - the steps a single evaluate and a batch share: validate, materialize, decide and finalize, undo;
- `preflight` - a real FLARE system checked before poc/prod runs: the kit, `system status`, sites = clients;
- `ready` - several candidates ready for external execution (poc/prod): which one the live job folder holds,
  where each is exported from, its job command line;
- `tamper` - the campaign's evidence copied before a trial and restored after it (tampering is reported);
- `finalize` - keep / discard / crash, written crash-safely through a journal;
- `noise` - the noise floor: the best's spread, the keep margin, the seed option;
- `pruning` - the round judge of a candidate's trial when `--prune` is on (the best's curves, the margin);
- `what_happened` - what an evaluate, record or replicate did, for its envelope (score, best, gain, noise verdict);
- `frozen_eval` - the score measured by the frozen evaluator on the final global model; the score's provenance;
- `frozen_submit` - poc/prod: the evaluation job of a downloaded run, the runs awaiting it, the measured score;
- `data_fixed` - options that shape the data, the validation split or the metric: fixed like the budget;
- `frozen_request` - what initialize freezes (`--evaluator`, `--evaluator-input`, or autofl.yaml's `evaluation`);
- `report/` - autofl_report.md / .json: facts, warnings, markdown, and the final report's refusal rules.
"""
