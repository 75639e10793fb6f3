"""Rebuild the evidence files of the sealedrun3 blind half by running its jobs under the installed NVFLARE.

Usage:
    python evals/blind/sealedrun3/make_cases.py [--case NAME ...] [--timeout-scale X]

The builder of evals/blind/sealedrun2/make_cases.py (with sealedrun's bounded runner and evidence writer): each
case copies `jobs/<case>/` (with `jobs/common_job.py` as job.py when the case has none) to a temporary folder and
runs `python job.py --name <job> --workspace <sim root> ...` (one neutral job name, so no path in the evidence names
the case; a case whose folder is a job folder runs `nvflare simulator <folder> -w <sim root>/<job> -n 2 -t 2`) with
the sanitized environment and path placeholders of evals/make_real_fixtures.py; afterwards the run and every process
naming the temporary folder are killed. It keeps what the case's `keep` names: `stdout.txt` and, from
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

CASES = {
    "client-params-not-dict": Run(),
    "client-metric-name-mismatch": Run(keep=("stdout.txt", "*"), expect="success"),
    "client-returns-received-weights": Run(expect="success"),
    "recipe-initial-ckpt-missing-at-runtime": Run(keep=("*",)),
    "recipe-stop-cond-no-spaces": Run(),
    "server-event-handler-raises": Run(expect="success"),
    "server-input-filter-raises": Run(keep=("server/log.txt", "server/error_log.txt")),
    "client-exits-when-converged": Run(keep=("stdout.txt", "*")),
    "eval-argmax-axis-on-1d-probs": Run(keep=("*",)),
    "site2-raw-units-math-overflow": Run(keep=("stdout.txt", "*")),
    "external-site1-single-class-assert": Run(("--external",)),
    "lr-decay-inverted-nan-late-round": Run(
        ("--num_rounds", "6", "--train_args", "--lr_decay 10"), ("stdout.txt", "*")
    ),
    "client-receive-without-init": Run(),
    "simenv-min-clients-above-sites": Run(("--min_clients", "3"), expect="success"),
    "client-final-round-lazy-import": Run(),
    "job-folder-fedavg-min-clients-arg": Run(keep=("stdout.txt", "*"), simulator=True),
}


if __name__ == "__main__":
    sys.exit(second_half.main(half=second_half.Half(HERE, CASES), description=__doc__))
