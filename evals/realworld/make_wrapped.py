"""Wrap real captures the way Docker, Kubernetes, the journal and a colour terminal deliver them (the harness's part).

Usage: python evals/realworld/make_wrapped.py [--check]

Reads the committed real captures under evals/realworld/files/real/ (make_captures.py) and writes wrapped copies
under evals/realworld/files/wrapped/: each line of the capture, unchanged, behind the prefix its delivery adds.
Deterministic (container timestamps are taken from the line's own NVFLARE timestamp, else the previous line's), so
`--check` (run by tests/diagnose/test_realworld_set.py) fails when a committed copy is stale.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "files"
REAL, WRAPPED = ROOT / "real", ROOT / "wrapped"
ESC = "\x1b"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})")


def _lines(name: str) -> list[str]:
    return (REAL / name).read_text(encoding="utf-8").splitlines()


def _rfc3339(lines: list[str], start: str) -> list[str]:
    """A container timestamp per line: the line's own NVFLARE time, else the one before."""
    out, last = [], start
    for line in lines:
        match = _STAMP.match(line)
        if match:
            last = f"{match.group(1)}T{match.group(2)}.{match.group(3)}000000Z"
        out.append(last)
    return out


def compose(lines: list[str], service: str, colour: str = "36") -> list[str]:
    return [f"{ESC}[{colour}m{service.ljust(10)}|{ESC}[0m {line}" for line in lines]


def kubectl(lines: list[str], pod: str, container: str, start: str) -> list[str]:
    return [
        f"[pod/{pod}/{container}] {stamp} {line}" for stamp, line in zip(_rfc3339(lines, start), lines, strict=True)
    ]


def journal(lines: list[str], host: str, unit: str, start: str) -> list[str]:
    out = []
    for stamp, line in zip(_rfc3339(lines, start), lines, strict=True):
        month = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()[int(stamp[5:7]) - 1]
        out.append(f"{month} {stamp[8:10]} {stamp[11:19]} {host} {unit}: {line}")
    return out


def stern(lines: list[str], pod: str, container: str) -> list[str]:
    return [f"{ESC}[32m{pod}{ESC}[0m {ESC}[34m{container}{ESC}[0m {line}" for line in lines]


def colour_console(lines: list[str]) -> list[str]:
    """A tee'd console of a colour log formatter: records coloured by level, other lines as printed."""
    colours = {" - ERROR - ": "31", " - WARNING - ": "33", " - INFO - ": "32", " - DEBUG - ": "37"}
    out = []
    for line in lines:
        code = next((c for level, c in colours.items() if level in line[:120]), None)
        out.append(f"{ESC}[{code}m{line}{ESC}[0m" if code and _STAMP.match(line) else line)
    return out


def outputs() -> dict[str, list[str]]:
    """Wrapped file (relative to files/wrapped) -> its lines."""
    kill9 = "poc-kill9-2.5"
    job = next(p.name for p in (REAL / kill9 / "site-1").iterdir() if p.is_dir())
    site_log = _lines(f"{kill9}/site-1/log.txt") + _lines(f"{kill9}/site-1/{job}/log.txt")
    start = "2026-12-01T00:00:00.000000000Z"
    return {
        "compose-sim-2.5-import-error/compose.log": compose(_lines("sim-2.5-import-error/stdout.txt"), "trainer-1"),
        "kubectl-poc-kill9-2.5/pods.log": kubectl(
            _lines(f"{kill9}/server/log.txt"), "nvflare-server-0", "server", start
        )
        + kubectl(site_log, "site-1-7f9c8d6b5-x2v4n", "site-1", start),
        "journal-sim-2.5-user-exception/journal.txt": journal(
            _lines("sim-2.5-user-exception/stdout.txt"), "ml-box", "python3[4242]", start
        ),
        "compose-poc-wrong-kit-2.5/compose.log": compose(_lines("poc-wrong-kit-2.5/site-1_console.txt"), "site-1-1"),
        "stern-poc-no-server-2.5/stern.log": stern(
            _lines("poc-no-server-2.5/site-1_log.txt"), "site-1-6d5f8c9b7-r8t2k", "site-1"
        ),
        "tee-colour-sim-2.4-import-error/console.txt": colour_console(_lines("sim-2.4-import-error/stdout.txt")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed wrapped copy is stale")
    args = parser.parse_args(argv)
    stale = []
    for name, lines in outputs().items():
        text = "\n".join(lines) + "\n"
        target = WRAPPED / name
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name in stale:
        print(f"stale: evals/realworld/files/wrapped/{name} (run python evals/realworld/make_wrapped.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
