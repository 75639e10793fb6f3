"""The root cause of a crashed trial, read from the copied simulator logs instead of the wrapper line.

A real SimEnv run whose client failed exits with `RuntimeError: Simulation failed with return code N` on
stdout, while the cause (e.g. `torch.OutOfMemoryError: CUDA out of memory ...`) is only in the site logs of
the copied result. `root_cause` reads, bounded, `site-*/error_log.txt` (then `site-*/log.txt`), then the job's own output (an
import error in a client shows only there), then the server's error log, and returns the first user-level
exception line with its site, or None. Wrapper lines (`Simulation failed with return code`) and the server's
echo of a failed client (`the shareable is not a valid DXO`) are never the cause.
Usage: `root_cause(run_dir / "simulation", output_tail)` -> "site-1: ValueError: matmul: ..." | None
"""

from __future__ import annotations

import os
import re
from pathlib import Path

EXCEPTION_LINE_RE = re.compile(r"^\s*((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)): (.+)$")
WRAPPERS = ("Simulation failed with return code", "the shareable is not a valid DXO")
# A FedJob run whose client failed can still exit 0 (NVFLARE 2.9): the server log says it aborted.
ABORT_MARKERS = ("Aborting current RUN due to", "exiting at round None")
ABORT_READ_BYTES = 4 * 1024 * 1024
READ_BYTES = 256 * 1024
MAX_SITES = 64
MESSAGE_CHARS = 240


def root_cause(simulation: Path | None, output: str = "") -> str | None:
    """The first user-level exception: site error logs, site logs, the job's own output, the server error log.

    Returns `<site>: <Exception>: <message>` (no prefix when it came from the output), or None.
    """
    sites = []
    if simulation is not None and Path(simulation).is_dir():
        sites = sorted(p for p in _children(Path(simulation)) if p.name.startswith("site-"))[:MAX_SITES]
    for names in (("error_log.txt",), ("log.txt",)):
        for site in sites:
            found = _first_exception(_read(site, names))
            if found:
                return f"{site.name}: {found}"
    found = _first_exception(output[:READ_BYTES])
    if found:
        return found
    server = Path(simulation) / "server" if simulation is not None else None
    found = _first_exception(_read(server, ("error_log.txt",))) if server is not None and server.is_dir() else None
    return f"server: {found}" if found else None


def aborted_run(simulation: Path | None) -> str | None:
    """The server's abort line when NVFLARE aborted the run (even though the job exited 0), else None."""
    if simulation is None:
        return None
    for name in ("log.txt", "error_log.txt"):
        for line in _read(Path(simulation) / "server", (name,), tail=ABORT_READ_BYTES).splitlines():
            if any(marker in line for marker in ABORT_MARKERS):
                return _cut(one_line(line.rsplit(" - ", 1)[-1]))
    return None


def one_line(text: str) -> str:
    """`text` as one printable line: whitespace collapsed, zero-width and bidi controls dropped."""
    printable = "".join(" " if ch.isspace() else ch for ch in text if ch.isprintable() or ch.isspace())
    return " ".join(printable.split())


def _first_exception(text: str) -> str | None:
    for line in text.splitlines():
        match = EXCEPTION_LINE_RE.match(line)
        if match and not any(wrapper in line for wrapper in WRAPPERS):
            return f"{match.group(1)}: {_cut(one_line(match.group(2)))}"
    return None


def _cut(message: str) -> str:
    return message[: MESSAGE_CHARS - 3] + "..." if len(message) > MESSAGE_CHARS else message


def _read(folder: Path, names: tuple[str, ...], *, tail: int = 0) -> str:
    """The head of the first readable regular file among `names` in `folder` (bounded), or its last `tail` bytes."""
    for name in names:
        path = folder / name
        if not path.is_file() or path.is_symlink():
            continue
        try:
            with open(path, "rb") as handle:
                if tail:
                    handle.seek(max(0, path.stat().st_size - tail))
                return handle.read(tail or READ_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
    return ""


def _children(folder: Path) -> list[Path]:
    try:
        return [Path(entry.path) for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []
