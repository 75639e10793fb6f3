"""Rebuild the evidence files of the sealedrun4 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun4/make_cases.py [--case NAME ...] [--timeout-scale X]

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
    "client-sends-under-weights-key": Run(),
    "client-metric-per-class-list": Run(keep=ALL, expect="success"),
    "client-stale-flare-agent-import": Run(),
    "site2-missing-values-nan-model": Run(expect="success"),
    "client-sends-plain-dict": Run(keep=("*",)),
    "client-sends-list-params": Run(keep=ALL),
    "client-pool-map-lambda": Run(),
    "site2-prints-error-and-exits": Run(),
    "helper-import-name-renamed": Run(keep=ALL),
    "site2-npz-object-labels": Run(keep=("site-2/log.txt", "site-2/error_log.txt")),
    "fedjob-no-initial-model": Run(expect="success"),
    "fedjob-script-runner-default-framework": Run(keep=ALL, expect="success"),
    "fedjob-custom-controller-sends-dict": Run(keep=("server/log.txt", "server/error_log.txt"), expect="success"),
    "controller-targets-wrong-site-names": Run(timeout=120.0, expect="timeout"),
    "server-component-relative-config": Run(expect="success"),
    "recipe-aggregator-class-not-instance": Run(),
    "fedjob-executor-returns-dxo": Run(keep=ALL, expect="success"),
    "client-early-stop-reads-global-metrics": Run(),
}


if __name__ == "__main__":
    sys.exit(second_half.main(half=second_half.Half(HERE, CASES), description=__doc__))
