"""Rebuild the evidence files of the sealedrun5 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun5/make_cases.py [--case NAME ...] [--timeout-scale X]

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
EXTERNAL = ("--external",)

CASES = {
    "external-relative-import": Run(EXTERNAL),
    "external-helper-shadows-stdlib": Run(EXTERNAL),
    "external-site2-sample-grows": Run((*EXTERNAL, "--num_rounds", "4"), keep=ALL),
    "external-main-not-called": Run(EXTERNAL, expect="success"),
    "external-round2-helper-not-shipped": Run((*EXTERNAL, "--num_rounds", "4")),
    "noisy-retries-untyped-arg": Run(("--train_args", "--clip 1.0")),
    "loader-thread-dies-hang": Run(keep=ALL, expect="success"),
    "client-metrics-lock-deadlock": Run(timeout=240.0, expect="success"),
    "fedjob-controller-sample-grows": Run(keep=ALL, expect="success"),
    "fedjob-controller-metric-key": Run(keep=("*",), expect="success"),
    "fedjob-site1-dp-filter-epsilon-zero": Run(expect="success"),
    "fedjob-executor-swallows-error": Run(expect="success"),
    "fedjob-executor-tilde-data-path": Run(keep=ALL, expect="success"),
    "fedjob-task-name-mismatch": Run(expect="success"),
    "site2-event-handler-raises": Run(keep=("site-2/log.txt",), expect="success"),
    "client-breakpoint-left-in": Run(),
    "client-object-array-params": Run(),
    "recipe-aggregator-reset-stats-list": Run(keep=ALL),
}


if __name__ == "__main__":
    sys.exit(second_half.main(half=second_half.Half(HERE, CASES), description=__doc__))
