"""Everything that runs one child: a trial of job.py, from its argv to its score (imports nothing).

Knows nothing of the campaign (no ledger, no manifests); the runner's `campaign_trial` builds the TrialSpec.
- `execute` - `run_trial(TrialSpec) -> TrialResult`: the trial folder, supervision, classification;
- `argv` - the trial's argv (budget once, injected --name, conflicts) and `TrialError`;
- `childenv` - the allowlisted child environment and the trial token;
- `sandbox/` - the trial's first program: user, mount, PID (+ network) namespaces, the sealed view (a package run
  by path, `sandbox/__main__.py`);
- `seal` - the runner's side of the sandbox: probe, plan (staged files, hidden folders, mapped paths), status;
- `owned_folders` - private temp folders carrying their owner's record (the probe's, the dry run's), swept once the
  owner is gone;
- `what_ran` - rounds and clients a trial ran, from NVFLARE's artifacts, checked against the fixed budget;
- `rounds` - the metric per round and each site's value per round, from NVFLARE's round records;
- `export` - export a job folder through the recipe's own `--export --export-dir`, run like a trial (poc/prod);
- `flare_cli` - the `nvflare` admin CLI steps of an external run: system status, submit, wait, list, download;
- `job_meta` - a submitted job's id, status and duration from NVFLARE's job metadata (poc/prod);
- `processes` - the child's process tree: new session, streamed output, whole-tree termination;
- `watchdog` - total timeout, stall and no-progress watchdogs, and the simulator log watcher;
- `monitor` - the hooks that watch a running trial: watchdog, live progress, printed result paths, pruning;
- `folders` - sub-folders of the simulator root, listed again only when a folder changed;
- `progress` - the live progress line on stderr (round k/N, elapsed, last metric);
- `resultdir` - find the simulator result folder in the trial root and copy it out;
- `metrics` - the objective metric from the copied artifacts, with its source;
- `rootcause` - the root cause of a crash from the copied site and server logs.
- `global_model` - the final global model the server persisted in a simulation result, and the sites that took part;
- `evaluator` - the frozen evaluator run on that model once per site, sealed like a trial; the n-weighted score;
- `eval_job` - the evaluation job of a model for a real FLARE system (poc/prod) and the per-site answers it leaves
  (its client script, `job_files/autofl_site_eval.py`, is a file of the job, never imported here);
- `eval_job_match` - whether a downloaded job's definition is the evaluation job the runner builds (else no score).
"""
