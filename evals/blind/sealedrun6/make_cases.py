"""Rebuild the evidence files of the sealedrun6 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun6/make_cases.py [--case NAME ...] [--timeout-scale X]

The builder of evals/blind/sealedrun2/make_cases.py (`Half`, its bounded runner and evidence writer): each case
copies `jobs/<case>/` (with `jobs/common_job.py` as job.py when the case has none) to a temporary folder and runs
`python job.py --name <job> --workspace <sim root> ...` (one neutral job name, so no path in the evidence names the
case) with the sanitized environment and path placeholders of evals/make_real_fixtures.py; afterwards the run and
every process naming the temporary folder are killed. It keeps what the case's `keep` names: `stdout.txt` and, from
the SimEnv workspace, log.txt and error_log.txt of the server and each site (`*` for all, or `<site>/<file>`),
written under `files/<case>/`. Exit 0 when every case ended as expected (fail, success or timeout), 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _second_half():
    spec = importlib.util.spec_from_file_location("sealedrun2_make_cases", HERE.parent / "sealedrun2" / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


second_half = _second_half()
Run = second_half.Run
ALL = ("stdout.txt", "*")

CASES = {
    "client-known-args-never-trains": Run(("--train_args", "--epochs 5"), expect="success"),
    "healthy-cache-miss-logged-error": Run(keep=ALL, expect="success"),
    "site2-fd-leak-too-many-open-files": Run(("--num_rounds", "5"), keep=ALL, timeout=300.0),
    "client-signal-alarm-timeout": Run(),
    "fedjob-persistor-npz-key": Run(keep=ALL, expect="success"),
    "site1-log-only-site2-failed": Run(keep=("site-1/log.txt",)),
    "server-end-run-report-needs-pandas": Run(keep=("server/log.txt",), expect="success"),
    "shared-cache-race": Run(keep=ALL),
    "site2-recursion-depth": Run(),
    "client-input-filter-no-return": Run(keep=ALL),
    "recipe-stale-warm-start-ckpt": Run(),
    "aggregator-trimmed-mean-two-sites": Run(keep=ALL),
    "site2-data-path-is-folder": Run(keep=ALL),
    "site2-eval-future-timeout": Run(keep=ALL),
    "client-hparams-json-trailing-comma": Run(),
    "site2-lr-decimal-comma": Run(),
    "site2-csv-cp1252-export": Run(keep=ALL),
    "recipe-loss-key-metric-default-max": Run(keep=ALL, expect="success"),
}


if __name__ == "__main__":
    sys.exit(second_half.main(half=second_half.Half(HERE, CASES), description=__doc__))
