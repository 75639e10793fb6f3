"""The launcher's arguments: `--probe [SCRATCH]`, or `--plan PLAN.json -- COMMAND...` (the plan read here)."""

from __future__ import annotations

import json
import sys

from .launch import run
from .probe import probe
from .protections import EXIT_NOT_RUN


def main(argv: list[str]) -> int:
    """The probe (0: fully sealed, 1: a protection missing), or one plan's run; 2: bad arguments, 126: bad plan."""
    if argv[:1] == ["--probe"] and len(argv) <= 2:
        document = probe(*argv[1:])
        print(json.dumps(document, sort_keys=True))
        return 0 if not document["missing"] else 1
    if len(argv) < 3 or argv[0] != "--plan" or argv[2] != "--":
        sys.stderr.write("usage: sandbox/__main__.py --plan PLAN.json -- COMMAND [ARGS...] | --probe [SCRATCH]\n")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            plan = json.load(handle)
    except (OSError, ValueError) as error:
        sys.stderr.write(f"autofl: cannot read the trial plan {argv[1]}: {error}\n")
        return EXIT_NOT_RUN
    run(plan, argv[3:])
    return EXIT_NOT_RUN
