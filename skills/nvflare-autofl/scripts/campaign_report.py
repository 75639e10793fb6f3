#!/usr/bin/env python3
"""The final report of an Auto-FL campaign, read-only: works on a live workspace, a copy or a read-only archive.

Usage:
    python campaign_report.py CAMPAIGN [--output-dir DIR] [--report PATH] [--progress PATH] [--confirm-interrupted]

CAMPAIGN is the campaign's job.py or its folder (the workspace). Writes autofl_report.md, autofl_report.json
(beside the markdown) and progress.png: by default where the campaign keeps them, else into --output-dir (or
the exact --report / --progress paths; needed for a read-only archive). Never writes anything else: not the
state, the ledger, the manifests, the lock file or __pycache__.

Refused (exit 2, one line on stderr, nothing written): a candidate that is not terminal, a missing manifest, an
unfinished finalize, a trial process of the campaign still alive, a campaign whose state does not allow a final
answer (unless --confirm-interrupted: the user says it was stopped), output paths that alias campaign evidence,
job sources or each other (links included), the campaign lock held by a running action.
Prints one JSON object: the written paths, progress_plot_available, the selected candidate and warning codes.
Exit 0 when written, 2 when refused, 141 (quietly) when the reader of stdout went away.
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
from autofl_core.common import cli, stamps  # noqa: E402
from autofl_core.runner import pointers  # noqa: E402
from autofl_core.runner.outcome import CampaignError  # noqa: E402
from autofl_core.runner.report import build as report  # noqa: E402
from autofl_core.runner.report import gate as report_gate  # noqa: E402
from autofl_core.runner.store import metadata  # noqa: E402
from autofl_core.runner.store.paths import CampaignPaths  # noqa: E402

REPORT_NAME, PROGRESS_NAME = "autofl_report.md", "progress.png"


def build_parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        prog="campaign_report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("campaign", help="the campaign's job.py, or its folder")
    parser.add_argument(
        "--output-dir", metavar="DIR", help=f"write {REPORT_NAME}, autofl_report.json, {PROGRESS_NAME} here"
    )
    parser.add_argument("--report", metavar="PATH", help="the markdown report (the JSON goes beside it as .json)")
    parser.add_argument("--progress", metavar="PATH", help="the progress plot")
    parser.add_argument(
        "--confirm-interrupted",
        action="store_true",
        help="the user says the unfinished campaign was stopped (checked: no runner or trial alive)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        job = job_path(Path(args.campaign))
        outputs = chosen_outputs(job, args)
        now = stamps.now_text()
        done = report_gate.produce(
            job,
            outputs=outputs,
            confirm_interrupted=args.confirm_interrupted,
            generated_by="campaign_report.py",
            lock_mode="read",
            now=now,
        )
    except CampaignError as error:
        sys.stderr.write(f"campaign_report: {error}\n")
        return cli.EXIT_INVALID
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        sys.stderr.write(
            f"campaign_report: cannot write the report: {error.strerror or error}{where}; pass "
            "--output-dir with a writable folder\n"
        )
        return cli.EXIT_INVALID
    named, unavailable = pointers.checked(
        {
            "report": str(done.outputs.report),
            "report_json": str(done.outputs.report_json),
            "progress": str(done.outputs.progress),
        }
    )
    summary = {
        **named,
        **({"unavailable": unavailable} if unavailable else {}),
        "progress_plot_available": done.data["progress_plot_available"],
        "selected": (done.data["selected"] or {}).get("name"),
        "final_response_allowed": done.state["final_response_allowed"],
        "warnings": sorted({w["code"] for w in done.data["warnings"]}),
    }
    text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    return cli.EXIT_OK if cli.write_stdout(text) else cli.EXIT_STDOUT_CLOSED


def job_path(given: Path) -> Path:
    """The campaign's job.py: the given file, or for a folder the job named in its campaign.json."""
    if given.is_dir():
        meta = metadata.read(CampaignPaths.for_job(given / "job.py", {}))
        return given / Path(str(meta.get("job") or "job.py")).name
    if not given.is_file():
        raise CampaignError(f"{given} does not exist; pass the campaign's job.py or its folder")
    return given


def chosen_outputs(job: Path, args) -> report.Outputs | None:
    """--output-dir / --report / --progress, or None for the campaign's own report paths."""
    if not (args.output_dir or args.report or args.progress):
        return None
    folder = Path(os.path.abspath(args.output_dir)) if args.output_dir else None
    if folder is not None and not folder.is_dir():
        raise CampaignError(f"--output-dir {args.output_dir} is not an existing folder; create it first")
    own = _campaign_outputs(job)
    markdown = Path(os.path.abspath(args.report)) if args.report else (folder / REPORT_NAME if folder else own.report)
    progress = (
        Path(os.path.abspath(args.progress)) if args.progress else (folder / PROGRESS_NAME if folder else own.progress)
    )
    return report.Outputs(report=markdown, report_json=markdown.with_suffix(".json"), progress=progress)


def _campaign_outputs(job: Path) -> report.Outputs:
    settings = metadata.read(CampaignPaths.for_job(job, {}))["settings"]
    return report.outputs_of(CampaignPaths.for_job(job, {key: settings.get(key) for key in ("report", "progress")}))


if __name__ == "__main__":
    sys.exit(main())
