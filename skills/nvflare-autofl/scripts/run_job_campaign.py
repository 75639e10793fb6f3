#!/usr/bin/env python3
"""The Auto-FL campaign runner: the one authoritative lifecycle of an optimization campaign on an NVFLARE job.py.

Usage:
    python run_job_campaign.py ACTION JOB [options]
    ACTION: initialize | prepare | evaluate | abandon | record | submit | suggest | status | replicate | report
    JOB:    an existing job.py; its folder is the workspace (relative output paths resolve against it)

Typical flow: initialize (import, admission, baseline) -> prepare --name N --hypothesis H -> edit only the
returned candidate_source folder -> evaluate [--run-args "..."] -> read campaign_state.json -> repeat while
final_response_allowed is false. Independent candidates prepared from the same best can run as one batch:
`evaluate --manifest A --manifest B [--parallel K]` or `evaluate --all-prepared` (concurrent sealed trials,
decided in the order given; in poc/prod each becomes ready for external execution, recorded in any order).
In poc/prod, `submit (--baseline | --manifest M) --confirm-user-authorized --startup-kit KIT` exports, submits,
waits for, downloads and records one run (each with the user's explicit yes; a repeat never submits twice).
With a frozen evaluator the downloaded run awaits its evaluation: the same submit with `--evaluation` submits the
evaluation job of its global model to the sites and records the measured score (keep/discard waits for it).
`replicate [--count K]` reruns the best configuration to measure run-to-run
noise (never counted); `report` writes the final autofl_report.md/.json and progress.png (read-only otherwise).

Every action prints one JSON envelope on stdout (sorted keys) and progress on stderr.
Exit codes: 0 success; 1 an execution finished without a score (unscored baseline, crashed candidate);
2 rejected request, invalid contract or busy workspace (nothing changed; one line on stderr);
75 the host sandbox denied the simulation (never counted; needs the human-approved execution scope);
129/130/131/143 interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM (each handled alike: the trial tree is ended
and the candidate is pending again);
141 (quietly) the reader of stdout went away.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path


def _load_private_package(name: str):
    """Load the sibling package `name` by file path, never from site-packages."""
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(__file__).resolve().parent / name
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_load_private_package("autofl_core")
from autofl_core.campaign import guard_inputs  # noqa: E402
from autofl_core.common import cli  # noqa: E402
from autofl_core.runner import lifecycle  # noqa: E402
from autofl_core.runner.outcome import (  # noqa: E402
    EXIT_INVALID,
    CampaignError,
    Interrupted,
)

ACTIONS = (
    "initialize",
    "prepare",
    "evaluate",
    "abandon",
    "record",
    "submit",
    "suggest",
    "status",
    "replicate",
    "report",
)
ARGUMENT_STRING_OPTIONS = ("--base-args", "--run-args", "--score")  # values may start with "-"


def build_parser() -> argparse.ArgumentParser:
    """The one parser of every action: ACTION JOB, then the options grouped below, in the order --help lists them."""
    parser = cli.OneLineParser(
        prog="run_job_campaign",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(),
    )
    parser.add_argument("action", choices=ACTIONS, help="lifecycle action")
    parser.add_argument("job", help="path to an existing NVFLARE job.py")
    for add_options in (
        _campaign_options,
        _guard_options,
        _trial_options,
        _evaluator_options,
        _candidate_options,
        _record_options,
        _submit_options,
        _count_and_confirm_options,
    ):
        add_options(parser)
    return parser


def _campaign_options(parser: argparse.ArgumentParser) -> None:
    """The objective, where trials run, the candidate cap and the campaign's file paths."""
    add = parser.add_argument
    add("--metric", help="objective metric (default: the job's key metric)")
    add("--env", choices=("sim", "poc", "prod"), help="where trials run (default sim)")
    cap = parser.add_mutually_exclusive_group()
    cap.add_argument("--max-candidates", type=_positive_int, metavar="N", help="candidate cap (attempts)")
    cap.add_argument("--uncapped", action="store_true", help="no candidate cap")
    for flag, default in (
        ("--autofl-yaml", "autofl.yaml"),
        ("--results", "results.tsv"),
        ("--state", ".nvflare/autofl/campaign_state.json"),
        ("--progress", "progress.png"),
        ("--report", "autofl_report.md"),
        ("--output-root", "autofl_runs"),
    ):
        add(flag, metavar="PATH", help=f"default {default}")


def _guard_options(parser: argparse.ArgumentParser) -> None:
    """The guard's thresholds (each also an environment variable) and the stop files."""
    for flag, name, note in (
        ("--plateau-threshold", "plateau_threshold", ">=1"),
        ("--plateau-min-delta", "plateau_min_delta", ">=0"),
        ("--hard-crash-threshold", "hard_crash_threshold", "0 disables"),
        ("--exploration-batch-size", "exploration_batch_size", "0 disables"),
        ("--family-repeat-limit", "family_repeat_limit", "0 disables"),
        ("--noise-sigmas", "noise_sigmas", "0 = off; keep needs a gain above X stdev of the best"),
    ):
        variable, default = guard_inputs.THRESHOLDS[name][:2]
        parser.add_argument(
            flag, dest=name, type=_threshold(name), metavar="N", help=f"env {variable}, default {default}; {note}"
        )
    parser.add_argument(
        "--stop-file",
        action="append",
        dest="stop_files",
        metavar="PATH",
        help="repeatable; default STOP_AUTOFL and .nvflare/autofl/STOP",
    )


def _trial_options(parser: argparse.ArgumentParser) -> None:
    """How every trial runs: the job's base arguments, timeouts, per-trial limits, interpreter and network."""
    add = parser.add_argument
    add("--base-args", metavar="ARGS", help='job arguments for the baseline and every candidate, e.g. "--lr 0.1"')
    add("--timeout", type=float, metavar="SECONDS", help="total trial timeout (default 900)")
    add(
        "--simulator-no-progress-timeout",
        type=float,
        metavar="SECONDS",
        help="env AUTOFL_SIMULATOR_NO_PROGRESS_TIMEOUT_SECONDS, default 240; 0 disables",
    )
    for flag, dest, what in (
        ("--trial-memory", "trial_memory", "memory (e.g. 6G; default: 3/4 of RAM divided among a batch's trials)"),
        ("--trial-disk", "trial_disk", "disk written (e.g. 20G; default: half the free disk divided among trials)"),
        ("--trial-processes", "trial_processes", "processes and threads (default 2048)"),
    ):
        add(flag, dest=dest, metavar="SIZE" if dest != "trial_processes" else "N", help=f"per-trial limit: {what}")
    add("--python", metavar="PATH", help="interpreter with nvflare for trials (default $PYTHON or this one)")
    add(
        "--allow-network",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let trials reach the network (default: each trial runs in its own network namespace, loopback only)",
    )


def _evaluator_options(parser: argparse.ArgumentParser) -> None:
    """initialize's frozen evaluator and fixed options, and pruning of trailing candidates."""
    add = parser.add_argument
    add(
        "--evaluator",
        metavar="FILE",
        help="initialize: Python file in the job folder that measures the score on the final global model "
        '(python FILE --model PATH --site NAME [--format F] prints {"<metric>": v, "n": samples}); frozen',
    )
    add(
        "--evaluator-input",
        action="append",
        metavar="FILE",
        help="initialize: a file the evaluator reads (data, config), frozen with it; repeatable",
    )
    add(
        "--fixed-args",
        nargs="+",
        metavar="NAME",
        help="initialize: job options that shape the data, the validation split or the metric: never tuned",
    )
    add(
        "--prune",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stop a candidate whose per-round metric trails the best's for 2 rounds after half the budget "
        "(recorded as a discard; never the baseline or replicates; default off)",
    )


def _candidate_options(parser: argparse.ArgumentParser) -> None:
    """prepare's candidate, evaluate's manifests, batch and run args, status's best defaults."""
    add = parser.add_argument
    add("--name", help="prepare: candidate name (also its id); record --literature: row name")
    add("--hypothesis", help="prepare: what changes and why; record --literature: sources and decision")
    add("--family", help="algorithm family (prepare, record --literature)")
    add("--literature-event", metavar="ID", help="prepare: the lit-NNNN event this candidate implements")
    add(
        "--manifest",
        action="append",
        metavar="PATH",
        help="evaluate/record/abandon: candidate manifest (default: the pending one); evaluate: repeat for a batch",
    )
    add("--all-prepared", action="store_true", help="evaluate: every prepared candidate as one batch")
    add(
        "--write-best-defaults",
        action="store_true",
        help="status, after the campaign finished: write the best's run args into job.py's argparse defaults "
        "(job.py backed up under .nvflare/autofl/backups first)",
    )
    add(
        "--parallel",
        type=_positive_int,
        metavar="K",
        help="evaluate (batch), replicate: trials at a time (default: one per visible GPU, else 2 per CPU core; <= the batch)",
    )
    add("--run-args", metavar="ARGS", help='evaluate: candidate run args, canonical long options, e.g. "--lr 0.1"')


def _record_options(parser: argparse.ArgumentParser) -> None:
    """record's external run or literature event, and the user's approval of a cap change."""
    add = parser.add_argument
    add("--score", type=float, help="record: the external run's score")
    add("--artifacts", metavar="DIR", help="record: downloaded result folder to extract the metric from")
    add("--job-id", help="record: the external job id")
    add("--failure-reason", metavar="TEXT", help="record: the external run crashed, with this reason")
    add("--baseline", action="store_true", help="record: an external baseline; submit: submit the baseline")
    add("--literature", action="store_true", help="record: a literature event")
    add(
        "--confirm-user-approved-cap-change",
        action="store_true",
        help="the user approved raising the cap (or going uncapped)",
    )


def _submit_options(parser: argparse.ArgumentParser) -> None:
    """poc/prod: the startup kit, the user's authorization and the evaluation job."""
    add = parser.add_argument
    add("--startup-kit", metavar="KIT", help="initialize (preflight), submit: the admin startup kit folder (poc/prod)")
    add("--kit-id", metavar="ID", help="initialize (preflight), submit: a registered startup-kit id (poc/prod)")
    add(
        "--confirm-user-authorized",
        action="store_true",
        help="submit: the user explicitly authorized this run on this system",
    )
    add("--authorization", metavar="TEXT", help="submit: the user's approval in their words (recorded)")
    add(
        "--evaluation",
        action="store_true",
        help="submit: the frozen evaluator's evaluation job of the downloaded run (poc/prod with --evaluator)",
    )


def _count_and_confirm_options(parser: argparse.ArgumentParser) -> None:
    """suggest's and replicate's counts, report's confirmation of an interrupted campaign."""
    add = parser.add_argument
    add("--limit", type=int, help="suggest: how many seeds (default 10)")
    add("--count", type=int, metavar="K", help="replicate: reruns of the best configuration (1..10, default 3)")
    add(
        "--confirm-interrupted",
        action="store_true",
        help="report: the user says the unfinished campaign was stopped (checked: no runner or trial alive)",
    )


def main(argv: list[str] | None = None) -> int:
    args = join_argument_strings(sys.argv[1:] if argv is None else argv)
    options = cli.restore_dashes(build_parser().parse_args(args), ARGUMENT_STRING_OPTIONS)
    cli.install_interrupt_handlers()  # SIGTERM, SIGINT, SIGHUP, SIGQUIT unwind the action alike
    try:
        code, envelope = lifecycle.run(options.action, options)
    except CampaignError as error:
        sys.stderr.write(f"Auto-FL {options.action} failed: {error}\n")
        return error.exit_code
    except OSError as error:  # a full disk, a read-only folder, permissions: one line, then `status` repairs
        where = f" ({error.filename})" if error.filename else ""
        sys.stderr.write(
            f"Auto-FL {options.action} failed: {error.strerror or error}{where}; fix the disk or "
            "permissions, then run status: it finishes or undoes the interrupted step\n"
        )
        return EXIT_INVALID
    except Interrupted as stop:
        sys.stderr.write(
            f"Auto-FL {options.action} interrupted by {stop.signal_name}: any running trial was ended "
            "and a candidate under evaluation is pending again\n"
        )
        return stop.exit_code
    text = json.dumps(envelope, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return code if cli.write_stdout(text) else cli.EXIT_STDOUT_CLOSED


def join_argument_strings(argv: list[str]) -> list[str]:
    """`--base-args "--num_rounds=5"` -> `--base-args=--num_rounds=5`: argparse would read the value as an option."""
    return cli.attach_values(argv, ARGUMENT_STRING_OPTIONS)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _threshold(name: str):
    def parse(text: str):
        try:
            return guard_inputs.parse_threshold(name, text)
        except guard_inputs.InputError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = name
    return parse


def _epilog() -> str:
    return (
        "Exit codes: 0 ok, 1 unscored execution, 2 rejected (nothing changed), 75 sandbox denial, "
        "129/130/131/143 interrupted (SIGHUP/SIGINT/SIGQUIT/SIGTERM)."
    )


if __name__ == "__main__":
    sys.exit(main())
