#!/usr/bin/env python3
"""Diagnose a failed, stalled or timed-out NVFLARE job from bounded, read-only evidence.

Usage:
    python diagnose_job.py EVIDENCE [EVIDENCE ...] [--mode auto|simulation|production|poc]
        [--job-id ID] [--job-status STATUS] [--format json|markdown]
        [--max-bytes N] [--max-total-bytes N] [--max-files N]
        [--collect] [--startup-kit PATH | --kit-id ID]

EVIDENCE is `-` (stdin), a log file, a folder (SimEnv workspace, job download, POC workspace, exported job),
a JSON evidence bundle or a saved nvflare CLI JSON envelope. stdout carries the report (JSON by default).
Exit 0 whenever a report is produced (UNKNOWN included); exit 2 with one line on stderr for usage errors or
when no evidence could be read at all; 130 when interrupted; 141, quietly, when the reader of stdout went away.
Nothing is ever written; nvflare is not imported.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
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


try:
    _load_private_package("nvfdiag")
    from nvfdiag import pipeline  # noqa: E402
    from nvfdiag.match import catalog  # noqa: E402
    from nvfdiag.read import evidence, sites  # noqa: E402
    from nvfdiag.report import render  # noqa: E402
except Exception as _exc:  # a broken or partial skill copy: one line, no traceback
    print(
        f"diagnose_job.py: error: cannot load the nvfdiag package ({type(_exc).__name__}: {_exc}); "
        "reinstall the skill folder",
        file=sys.stderr,
    )
    sys.exit(2)

EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_STDOUT_CLOSED = 0, 2, 130, 141
PROG = "diagnose_job.py"
STDIN_HEAD = 16 * 1024
STDIN_BLOCK = 1024 * 1024


class UsageError(Exception):
    """A one-line usage problem (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise UsageError(f"{message} (see --help)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Diagnose a failed NVFLARE job from bounded, read-only evidence.")
    parser.add_argument(
        "evidence", nargs="*", metavar="EVIDENCE", help="log file, folder, bundle, envelope, or - for stdin"
    )
    parser.add_argument("--mode", default="auto", choices=("auto", "simulation", "production", "poc"))
    parser.add_argument("--job-id", help="job id (production/POC); read that job's folders first")
    parser.add_argument("--job-status", help="reported job status, e.g. FINISHED:EXECUTION_EXCEPTION")
    parser.add_argument("--format", default="json", choices=("json", "markdown"))
    parser.add_argument("--max-bytes", type=_positive, default=262144, help="per evidence file (head + tail)")
    parser.add_argument("--max-total-bytes", type=_positive, default=4194304, help="for the whole run")
    parser.add_argument("--max-files", type=_positive, default=200)
    parser.add_argument("--collect", action="store_true", help="run the bounded read-only nvflare CLI commands itself")
    kit = parser.add_mutually_exclusive_group()
    kit.add_argument("--startup-kit", metavar="PATH", help="admin startup kit for --collect")
    kit.add_argument("--kit-id", help="registered startup-kit id for --collect")
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if not args.evidence and not args.collect:
        raise UsageError("no EVIDENCE given: pass a log file, folder, bundle, envelope or - (stdin), or use --collect")
    if args.evidence.count("-") > 1:
        raise UsageError("stdin (-) can be given only once")
    if args.job_id is not None and not sites.valid_job_id(args.job_id):
        raise UsageError("--job-id must be letters, digits, '.', '_' or '-' (at most 128 characters)")
    if args.job_status is not None and not sites.valid_job_status(args.job_status):
        raise UsageError("--job-status must look like FINISHED:EXECUTION_EXCEPTION (letters, '_' and one ':')")
    if (args.startup_kit or args.kit_id) and not args.collect:
        raise UsageError("--startup-kit / --kit-id only make sense with --collect")
    if args.collect and not args.job_id:
        raise UsageError("--collect needs --job-id (the job to collect evidence for)")
    if args.collect and args.mode == "simulation":
        raise UsageError("--collect queries a running POC/production system; drop it (or --mode simulation)")
    if args.kit_id is not None and not sites.valid_kit_id(args.kit_id):
        raise UsageError("--kit-id must be letters, digits, '.', '_', '@' or '-'")
    return args


def read_stdin_bounded(stream, max_bytes: int) -> str:
    """Read stdin keeping at most the first 16 KiB plus the last `max_bytes` bytes (memory stays bounded)."""
    head = bytearray()
    tail = bytearray()
    skipped = False
    while block := stream.read(STDIN_BLOCK):
        if len(head) < STDIN_HEAD:
            take = STDIN_HEAD - len(head)
            head += block[:take]
            block = block[take:]
        tail += block
        if len(tail) > max_bytes:
            del tail[: len(tail) - max_bytes]
            skipped = True
    data = bytes(head) + (b"\n" if skipped else b"") + bytes(tail)
    return data.decode("utf-8", errors="replace")


def merge_evidence(parts: list) -> evidence.Evidence:
    """One Evidence from several (collected CLI envelopes plus local files); earlier parts win on scalars."""
    merged = evidence.Evidence()
    for part in parts:
        merged.sources += part.sources
        merged.lines += part.lines
        merged.mode_hints += [hint for hint in part.mode_hints if hint not in merged.mode_hints]
        merged.not_read += part.not_read
        for site, state in part.site_status.items():
            merged.site_status.setdefault(site, state)
        merged.job_id = merged.job_id or part.job_id
        merged.job_status = merged.job_status or part.job_status
        merged.metrics = merged.metrics or part.metrics
    return merged


def gather(args: argparse.Namespace, stdin) -> evidence.Evidence:
    """Collect the Evidence the arguments point at (files, stdin and/or the bounded CLI collection)."""
    parts = []
    if args.collect:
        from nvfdiag.read import collect  # only needed (and only imported) for --collect

        items = collect.collect_from_cli(
            args.job_id, startup_kit=args.startup_kit, kit_id=args.kit_id
        )  # CollectError is an EvidenceError
        parts.append(evidence.evidence_from_envelopes(items, job_id=args.job_id, max_bytes=args.max_bytes))
    if args.evidence:
        stream = getattr(stdin, "buffer", stdin)
        stdin_text = read_stdin_bounded(stream, args.max_bytes) if "-" in args.evidence else None
        parts.append(
            evidence.collect_evidence(
                args.evidence,
                job_id=args.job_id,
                max_bytes=args.max_bytes,
                max_total_bytes=args.max_total_bytes,
                max_files=args.max_files,
                stdin_text=stdin_text,
            )
        )
    return parts[0] if len(parts) == 1 else merge_evidence(parts)


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        args = parse_args(argv)
        known = catalog.load_catalog()
        found = gather(args, stdin)
        report = pipeline.diagnose(
            found,
            known,
            mode=args.mode,
            job_id=args.job_id,
            job_status=args.job_status,
            script=rerun_command(),
            kit=kit_option(args),
            poc_root=poc_project_of(args),
        )
        text = render.to_markdown(report) if args.format == "markdown" else render.to_json(report)
    except (UsageError, catalog.CatalogError, evidence.EvidenceError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # last guard: one line, never a traceback
        print(f"{PROG}: error: unexpected {type(exc).__name__}: {exc}; please report this bug", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if write_report(stdout, text) else EXIT_STDOUT_CLOSED


def kit_option(args: argparse.Namespace) -> str | None:
    """The startup-kit option --collect used, for follow-up commands that must work when pasted."""
    if not args.collect:
        return None
    if args.startup_kit:
        return f"--startup-kit={shlex.quote(args.startup_kit)}"
    return f"--kit-id={args.kit_id}" if args.kit_id else None


def poc_project_of(args: argparse.Namespace) -> str | None:
    """The POC project folder an admin kit of `nvflare poc prepare` lies in (it holds the sites' poc_console.log).

    Only names are checked (never a file under the kit's startup/ folder is opened).
    """
    if not (args.collect and args.startup_kit):
        return None
    project = Path(args.startup_kit).expanduser().resolve().parent
    participants = [p for p in project.iterdir() if p.is_dir()] if project.is_dir() else []
    return str(project) if any((p / "poc_console.log").is_file() for p in participants[:64]) else None


def rerun_command() -> str:
    """How to run this very copy of the script again (absolute path, shell-quoted) for follow-up commands."""
    return f"python {shlex.quote(str(Path(__file__).resolve()))}"


def write_report(stdout, text: str) -> bool:
    """Write the report as UTF-8 whatever the locale says; False when the reader already closed the pipe."""
    try:
        if hasattr(stdout, "buffer"):
            stdout.buffer.write(text.encode("utf-8"))
        else:
            stdout.write(text)
        stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit and would print that error: send what is left to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
