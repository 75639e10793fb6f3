"""Private modules of the nvflare-autofl skill, loaded by file path from the sibling scripts.

Packages, in pipeline order (see docs/architecture.md):
- `importer/` - static import of job.py into the campaign config, with admission (never runs the job);
- `runner/` - the campaign runner: the lifecycle shell, one module per action, the campaign files, the report;
- `trial/` - everything that runs one child: argv, environment, process tree, watchdogs, result, metric;
- `campaign/` - the campaign's rules over the ledger: vocabulary, ledger format, comparison, guard, plot;
- `common/` - small shared utilities: atomic writes, bounded reads, fault points, command-line helpers.

Every `__init__.py` here imports nothing: lifecycle actions must stay cheap (no matplotlib, no nvflare).
"""
