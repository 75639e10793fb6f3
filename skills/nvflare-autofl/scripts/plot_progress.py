#!/usr/bin/env python3
"""Render the Auto-FL progress plot (progress.png) from a results.tsv ledger.

Usage:
    python plot_progress.py [RESULTS=results.tsv] [--output PATH] [--metric NAME] [--mode max|min]

--output defaults to progress.png beside the ledger; --metric to the ledger's metric_name (else "score");
--mode to the mode stored in the sibling .nvflare/autofl/campaign_state.json (else max).
Draws with matplotlib (Agg); without it (or with AUTOFL_PLOT_RENDERER=text) writes a text summary (.txt) beside
the output instead. Prints one JSON object: backend (matplotlib or text), output (the file written), reason (why
there is no picture, or null), scored count and the best point. The round curves of the runner's picture need
the campaign's run folders (the runner draws them after every action that changes the ledger). Exit 0 on success, 2 on a corrupt ledger, bad arguments or an unwritable output
(141, quietly, when the reader of stdout went away).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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
from autofl_core.campaign import compare, guard_inputs, ledger, plot  # noqa: E402
from autofl_core.common import cli  # noqa: E402
from autofl_core.importer.objective import direction_warning, ledger_metric  # noqa: E402

EXIT_OK, EXIT_INVALID = cli.EXIT_OK, cli.EXIT_INVALID


def build_parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        prog="plot_progress", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="?", default="results.tsv", help="ledger path (default results.tsv)")
    parser.add_argument("--output", help="PNG path (default progress.png beside the ledger)")
    parser.add_argument("--metric", help="metric label (default: the ledger's metric_name)")
    parser.add_argument("--mode", choices=compare.MODES, help="objective direction (default: stored state, max)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    results = Path(os.path.abspath(args.results))
    output = Path(os.path.abspath(args.output)) if args.output else results.parent / "progress.png"
    if not results.parent.is_dir():  # a mistyped path must not create folders for an empty plot
        print(
            f"plot_progress: folder {results.parent} does not exist; pass the path of a results.tsv ledger",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        mode = args.mode or guard_inputs.stored_mode(results.parent) or "max"
        if not results.exists():
            print(f"plot_progress: note: {results} does not exist; plotting an empty ledger", file=sys.stderr)
        rows = ledger.read_rows(results)
        metric = args.metric or ledger_metric(rows)
        _warn_direction(metric, args.mode)
        summary = plot.render(rows, output, metric=metric, mode=mode)
    except (ledger.LedgerError, guard_inputs.InputError) as exc:
        print(f"plot_progress: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except OSError as exc:
        print(
            f"plot_progress: cannot write {output} ({exc.strerror or exc}); choose a writable --output", file=sys.stderr
        )
        return EXIT_INVALID
    return EXIT_OK if cli.write_stdout(json.dumps(summary, indent=2, sort_keys=True) + "\n") else cli.EXIT_STDOUT_CLOSED


def _warn_direction(metric: str | None, mode: str | None) -> None:
    """Warn (stderr, one line) when an explicit --mode contradicts an obvious metric name."""
    warning = direction_warning(metric, mode)
    if warning:
        print(f"plot_progress: {warning}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
