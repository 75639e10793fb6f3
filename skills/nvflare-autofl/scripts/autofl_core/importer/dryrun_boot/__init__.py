"""The dry run's boot: run by path inside the trial sandbox (`__main__`), it runs job.py up to the point where
NVFLARE would start training and records what NVFLARE was asked to build. Standard library (and nvflare) only: no
module here imports the rest of autofl_core.
- `__main__` - the program run by path (`python -I`): loads this package by location, leaves no module of it behind;
- `serve` - the requests on stdin: set up once, then one forked child per run, at most PARALLEL at a time;
- `run` - one run of job.py as `python job.py ARGS` would run it, and the record it writes;
- `entry_points` - NVFLARE's FedJob, recipe and env entry points, replaced to record the job instead of running it;
- `records` - the record of the job NVFLARE was asked to run: exported configs, recipe and env, JSON-safe values;
- `parsers` - job.py's argparse parsers: their actions and the values each parse gave;
- `env_reads` - the environment variables job.py reads and the strings it compares their values with;
- `file_reads` - the files and folders job.py reads before its run, by path (inside its folder or not);
- `stand_ins` - inert modules and classes for modules this interpreter lacks, and the finder that makes them;
- `processes` - process control: signals, the audit hook, `os._exit`, forks, threads and atexit after the run;
- `frames` - whose code runs (the boot's, job.py's, NVFLARE's), read from the stack, and the line a record names;
- `state` - what the modules share while job.py runs: the run's state and the `Stop` that ends a run.
"""
