#!/usr/bin/env python3
"""Import an NVFLARE job.py into an Auto-FL campaign config (statically; `--dry-run` also runs it, sealed).

Usage:
    python job_importer.py JOB [--metric M] [--base-args "ARGS"] [--format json|yaml] [--dry-run]

--dry-run also runs job.py in the trial sandbox up to NVFLARE's entry point (no network, every write private,
stopped before anything trains) and folds what it built into the config, as the campaign runner does. Without
it nothing is run. Where the host cannot seal a dry run, the static reading stands.

--base-args takes one string, split like a shell would: "--lr 0.1", "--num_rounds=5", "-r5" and
--base-args=VALUE all work (the token after --base-args is always its value).

Prints the imported config plus `admission_errors` ([{code, message}]) on stdout. `--format yaml` is the view for
a human: long literal values are shortened there (`[0.0] x 210`); `--format json` is the complete data.
Exit codes: 0 admissible; 2 not admissible, or the job/arguments could not be read (one line on stderr);
129/130/131/143 interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM (one line; a dry run under way is ended and nothing
of it is cached); 141, quietly, when the reader of stdout went away.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
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
from autofl_core.common import cli  # noqa: E402
from autofl_core.importer import admission, api, display  # noqa: E402
from autofl_core.importer.files import JobImportError  # noqa: E402

EXIT_OK, EXIT_REJECTED = cli.EXIT_OK, cli.EXIT_INVALID


def build_parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        prog="job_importer", description=__doc__.splitlines()[1], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("job", help="path to an existing NVFLARE job.py")
    parser.add_argument("--metric", default=None, help="objective metric (default: the job's key metric)")
    parser.add_argument("--base-args", default="", help='job arguments for every trial, e.g. "--lr 0.1" or "-r5"')
    parser.add_argument("--format", choices=("json", "yaml"), default="json", help="output format (default json)")
    parser.add_argument(
        "--dry-run", action="store_true", help="also run job.py sealed up to NVFLARE's entry point (as the runner does)"
    )
    return parser


def render(config: dict, fmt: str) -> str:
    if fmt == "yaml":
        import yaml  # deferred: json output must not pay for PyYAML

        # Through JSON first: shared sub-objects become copies, so the YAML a human reviews has no &id anchors.
        # The YAML is the human's view: long literal values are shortened (`[0.0] x 210`); JSON keeps them all.
        plain = display.elide(json.loads(json.dumps(config, allow_nan=False)))
        return yaml.safe_dump(plain, sort_keys=True, allow_unicode=True, default_flow_style=False)
    return json.dumps(config, indent=2, sort_keys=True, allow_nan=False) + "\n"


ARGUMENT_STRING_OPTIONS = ("--base-args",)


def main(argv: list[str] | None = None) -> int:
    cli.install_interrupt_handlers()  # a dry run under way is ended on the way out, never left running
    try:
        return _import(sys.argv[1:] if argv is None else argv)
    except cli.Interrupted as stop:
        sys.stderr.write(f"job_importer: interrupted by {stop.signal_name}; nothing was imported or cached\n")
        return stop.exit_code


def _import(argv: list[str]) -> int:
    options = build_parser().parse_args(cli.attach_values(argv, ARGUMENT_STRING_OPTIONS))
    cli.restore_dashes(options, ARGUMENT_STRING_OPTIONS)
    if options.metric is not None and not options.metric.strip():
        sys.stderr.write("job_importer: --metric is empty; omit it to use the job's key metric\n")
        return EXIT_REJECTED
    try:
        base_args = shlex.split(options.base_args)
    except ValueError as exc:
        sys.stderr.write(f"job_importer: --base-args cannot be split ({exc}); balance the quotes\n")
        return EXIT_REJECTED
    try:
        config = api.import_job(options.job, metric=options.metric, base_args=base_args, dry_run=options.dry_run)
        if not options.dry_run:
            config["admission_errors"] = admission.with_dry_run_hint(config["admission_errors"])
        text = render(config, options.format)
    except JobImportError as exc:
        sys.stderr.write(f"job_importer: {exc}\n")
        return EXIT_REJECTED
    except Exception as exc:  # noqa: BLE001  (contract: one line, never a traceback)
        sys.stderr.write(
            f"job_importer: internal error importing {options.job} ({type(exc).__name__}: {exc}); "
            "please report it with the job.py\n"
        )
        return EXIT_REJECTED
    if not cli.write_stdout(text):
        return cli.EXIT_STDOUT_CLOSED
    errors = config["admission_errors"]
    if errors:
        sys.stderr.write(f"job_importer: not admissible: {errors[0]['code']}: {errors[0]['message']}\n")
        return EXIT_REJECTED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
