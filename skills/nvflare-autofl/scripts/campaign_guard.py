#!/usr/bin/env python3
"""Read-only campaign diagnostics: compute the Auto-FL campaign state from a results.tsv ledger.

Usage:
    python campaign_guard.py [RESULTS=results.tsv] [--max-candidates N] [--stop-file PATH]...
        [--plateau-threshold N] [--min-delta X] [--hard-crash-threshold N] [--exploration-batch-size N]
        [--family-repeat-limit N] [--noise-sigmas X] [--mode max|min] [--pending-manifests N] [--format json|text]

Beside a campaign (a sibling .nvflare/autofl/campaign.json whose ledger is RESULTS), every threshold, the cap and
the stop files are the campaign's; a flag overrides. Without a campaign, thresholds left out come from AUTOFL_*
environment variables, else the defaults shown below; the cap never comes from the environment (no
--max-candidates = uncapped). Without --mode the mode is read from the sibling .nvflare/autofl/campaign_state.json
(default max). Relative stop files resolve against the results folder (default STOP_AUTOFL and
.nvflare/autofl/STOP). Prints the state as one JSON object (default) or a short
text summary. Never writes anything. Exit 0 on success, 2 on a corrupt ledger or invalid arguments
(141, quietly, when the reader of stdout went away).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # read-only tool: not even __pycache__ files


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
from autofl_core.campaign import compare, guard, guard_inputs, ledger  # noqa: E402
from autofl_core.common import cli, stamps  # noqa: E402
from autofl_core.importer.objective import direction_warning, ledger_metric  # noqa: E402

EXIT_OK, EXIT_INVALID = cli.EXIT_OK, cli.EXIT_INVALID


def build_parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        prog="campaign_guard", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="?", default="results.tsv", help="ledger path (default results.tsv)")
    parser.add_argument(
        "--max-candidates", type=_count(1), metavar="N", help="candidate cap (default: the campaign's, else uncapped)"
    )
    parser.add_argument(
        "--stop-file",
        action="append",
        dest="stop_files",
        metavar="PATH",
        help="repeatable; relative to the results folder; default STOP_AUTOFL and .nvflare/autofl/STOP",
    )
    for flag, name, metavar, note in (
        ("--plateau-threshold", "plateau_threshold", "N", ""),
        ("--min-delta", "plateau_min_delta", "X", ""),
        ("--hard-crash-threshold", "hard_crash_threshold", "N", "; 0 disables"),
        ("--exploration-batch-size", "exploration_batch_size", "N", "; 0 disables"),
        ("--family-repeat-limit", "family_repeat_limit", "N", "; 0 disables"),
        ("--noise-sigmas", "noise_sigmas", "X", "; 0 = off"),
    ):
        variable, default = guard_inputs.THRESHOLDS[name][:2]
        parser.add_argument(
            flag,
            dest=name,
            type=_threshold(name),
            metavar=metavar,
            help=f"default: the campaign's, else ${variable} or {default}{note}",
        )
    parser.add_argument("--mode", choices=compare.MODES, help="objective direction (default: stored state, else max)")
    parser.add_argument(
        "--pending-manifests",
        type=_count(0),
        default=0,
        metavar="N",
        help="number of prepared candidate manifests (default 0)",
    )
    parser.add_argument("--format", choices=("json", "text"), default="json", help="default json")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    results = Path(os.path.abspath(args.results))
    folder = results.parent
    try:
        mode = args.mode or guard_inputs.stored_mode(folder) or "max"
        stored = guard_inputs.stored_settings(folder, results)
        thresholds = guard_inputs.threshold_settings(vars(args), os.environ, stored)
        cap = args.max_candidates if args.max_candidates is not None else stored.get("max_candidates")
        settings = guard.GuardSettings(mode=mode, max_candidates=cap, **thresholds)
        stop_files = guard_inputs.present_stop_files(folder, args.stop_files or stored.get("stop_files"))
        if not results.exists():
            print(f"campaign_guard: note: {results} does not exist; treating the ledger as empty", file=sys.stderr)
        rows = ledger.read_rows(results)
    except (ledger.LedgerError, guard_inputs.InputError, ValueError) as exc:
        print(f"campaign_guard: {exc}", file=sys.stderr)
        return EXIT_INVALID
    warning = direction_warning(ledger_metric(rows, None), args.mode)
    if warning:
        print(f"campaign_guard: {warning}", file=sys.stderr)
    state = guard.compute_state(
        rows,
        settings,
        stop_files_present=stop_files,
        pending_manifests=args.pending_manifests,
        noise_facts=guard_inputs.stored_noise_facts(folder),
    )
    now = stamps.now_text()
    state = guard.with_runner_fields(state, results=str(results), mode=mode, updated_at=now)
    text = render_text(state) if args.format == "text" else json.dumps(state, indent=2, sort_keys=True) + "\n"
    return EXIT_OK if cli.write_stdout(text) else cli.EXIT_STDOUT_CLOSED


def render_text(state: dict) -> str:
    """A short human summary of `state`."""
    plateau, batch = state["plateau"], state["exploration_batch"]
    cap = (
        "uncapped"
        if state["candidate_cap"] is None
        else f"{state['remaining_candidates']} of {state['candidate_cap']} left"
    )
    lines = [
        f"decision: {state['decision']} ({state['reason']}); next action: {state['next_action']}",
        f"final answer allowed: {'yes' if state['final_response_allowed'] else 'no'}",
        f"attempts: {state['candidate_attempts']} ({state['scored_attempts']} scored; {cap}); "
        f"pending: {state['pending_candidates']}",
        f"baseline: {state['baseline_status']} {_num(state['baseline_score'])}; best: {_num(state['best_score'])}; "
        f"improvement: {_num(state['improvement'])} ({state['mode']})",
        f"plateau: {plateau['recommendation']}; {plateau['scored_since_reset']} of {plateau['threshold']} scored "
        f"since row {_num(plateau['reset_row_index'])} (min delta {plateau['min_delta']}); best "
        f"{plateau['best_name'] or '-'} (retained scored row {_num(plateau['best_scored_index'])}); last literature "
        f"event row {_index(plateau['last_literature_event_index'])}, last batch completion row "
        f"{_index(plateau['last_batch_completion_index'])}",
    ]
    if batch:
        lines.append(
            f"literature batch {batch['literature_event_id'] or '(unlabelled)'}: {batch['completed']} of "
            f"{batch['required']} source-backed candidates"
        )
    lines.append(noise_line(state["noise"]))
    if state["stop_files"]:
        lines.append(f"stop files: {', '.join(state['stop_files'])}")
    lines.append(f"instruction: {state['agent_instruction']}")
    return "\n".join(lines) + "\n"


def noise_line(noise: dict | None) -> str:
    """One line on the measured run-to-run spread of the best (replicate rows)."""
    if noise is None:
        return "noise: no scored best yet"
    if noise["stdev"] is None:
        return f"noise: not measured ({noise['of']} has no replicate rows; run the runner's replicate action)"
    rule = f"keep needs > {noise['margin']} ({noise['sigmas']} sigmas)" if noise["applied"] else "keep rule off"
    return (
        f"noise: {noise['replicates']} replicate(s) of {noise['of']}: mean {noise['mean']}, stdev {noise['stdev']}, "
        f"range {noise['min']}..{noise['max']}; margin {noise['margin']}; {rule}"
    )


def _num(value) -> str:
    return "-" if value is None else str(value)


def _index(value: int) -> str:
    return "none" if value < 0 else str(value)


def _count(minimum: int):
    """argparse type: an integer of at least `minimum`."""
    return _argument_type(lambda text: guard_inputs.parse_bounded(text, int, minimum, "the value"), f"int>={minimum}")


def _threshold(name: str):
    """argparse type: the threshold `name`, parsed and bounded as guard_inputs.THRESHOLDS says."""
    return _argument_type(lambda text: guard_inputs.parse_threshold(name, text), name)


def _argument_type(parse_text, name: str):
    def parse(text: str):
        try:
            return parse_text(text)
        except guard_inputs.InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = name
    return parse


if __name__ == "__main__":
    sys.exit(main())
