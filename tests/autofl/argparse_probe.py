"""Test helper (run as a script): execute job.py files only up to their parse_args() and dump the real parsers.

Usage: python argparse_probe.py JOB [JOB ...] -- ARGV...
Prints {job: {"actions": [...], "values": {dest: value} | {"error": message}}} as JSON. The real
argparse parses ARGV; the job stops right there (SystemExit), so nothing else in job.py runs.
"""

import argparse
import contextlib
import io
import json
import runpy
import sys


class _Captured(Exception):
    pass


def probe(job: str, argv: list[str]) -> dict:
    seen = {}

    def capture(self, args=None, namespace=None):
        seen["parser"] = self
        raise _Captured()

    originals = (argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args)
    argparse.ArgumentParser.parse_args = capture
    argparse.ArgumentParser.parse_known_args = capture
    try:
        with contextlib.suppress(_Captured):
            runpy.run_path(job, run_name="__main__")
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = originals
    parser = seen["parser"]
    actions = [
        {
            "options": a.option_strings,
            "dest": a.dest,
            "default": a.default,
            "choices": a.choices,
            "takes_value": a.nargs != 0,
        }
        for a in parser._actions
        if a.option_strings and a.dest != "help"
    ]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            values = vars(parser.parse_args(argv))
    except SystemExit:
        values = {"error": True}
    return {"actions": actions, "values": values}


if __name__ == "__main__":
    split = sys.argv.index("--")
    jobs, argv = sys.argv[1:split], sys.argv[split + 1 :]
    print(json.dumps({job: probe(job, argv) for job in jobs}, default=str))
