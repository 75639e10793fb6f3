"""What every Auto-FL command line shares: exit codes, an argparse that fails with one line, stdout output.

`write_stdout` is how a CLI delivers its one document: when the reader has closed the pipe (`| head -0`, a
cancelled tool call) the CLI exits EXIT_STDOUT_CLOSED quietly, like any Unix tool, instead of a traceback.
`install_interrupt_handlers()` turns SIGTERM, SIGINT, SIGHUP and SIGQUIT into `Interrupted` (exit 128 + the signal's
number), so `with` blocks end their child processes on the way out and the CLI says so in one line; inside
`with interrupts_held():` (a child being started and registered for cleanup) one is raised when the block ends.
`attach_values(argv, ("--base-args",))` lets an option that holds a job's argument string take a value that
starts with "-" (`--base-args "--num_rounds=5"`, `--base-args -r5`), which argparse would otherwise refuse.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Collection, Sequence

EXIT_OK = 0
EXIT_UNSCORED = 1
EXIT_INVALID = 2
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away
EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGQUIT, EXIT_SIGTERM = 129, 130, 131, 143  # 128 + the signal: the shell convention
INTERRUPT_CODES = {
    signal.SIGTERM: EXIT_SIGTERM,
    signal.SIGINT: EXIT_SIGINT,
    signal.SIGHUP: EXIT_SIGHUP,
    signal.SIGQUIT: EXIT_SIGQUIT,
}


class Interrupted(BaseException):
    """SIGTERM, SIGINT, SIGHUP or SIGQUIT arrived: unwind (ending child processes, restoring files) and exit
    128 + the signal number (`exit_code`)."""

    def __init__(self, signal_name: str, exit_code: int):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_code = exit_code


_HOLD: dict = {"depth": 0, "pending": None}  # open `interrupts_held` blocks, the interrupt they hold


def install_interrupt_handlers() -> None:
    """SIGTERM, SIGINT, SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\\) all raise `Interrupted` (at the end of an
    `interrupts_held` block when one is open); after the first one the rest do nothing, so a second Ctrl-C cannot
    cut the cleanup short. They are caught by a handler that does nothing rather than set to SIG_IGN: an ignored
    signal stays ignored in every child started afterwards, a caught one is reset to its default at exec."""

    def handler(signum, _frame):
        for sig in INTERRUPT_CODES:
            signal.signal(sig, _after_the_first)
        stop = Interrupted(signal.Signals(signum).name, INTERRUPT_CODES[signum])
        if _HOLD["depth"]:
            _HOLD["pending"] = stop
            return
        raise stop

    for sig in INTERRUPT_CODES:
        signal.signal(sig, handler)


def _after_the_first(_signum, _frame) -> None:
    """An interrupt after the first: the cleanup the first one started goes on."""


@contextlib.contextmanager
def interrupts_held():
    """Hold an interrupt that arrives inside the block and raise it as the block ends (after an error of the block
    too): a child process started inside is registered for its cleanup before anything unwinds."""
    _HOLD["depth"] += 1
    try:
        yield
    finally:
        _HOLD["depth"] -= 1
        if not _HOLD["depth"] and _HOLD["pending"] is not None:
            stop, _HOLD["pending"] = _HOLD["pending"], None
            raise stop


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one stderr line naming the problem and pointing at --help, exit 2."""

    def error(self, message: str) -> None:
        self.exit(EXIT_INVALID, f"{self.prog}: {message}; see --help\n")


def attach_values(argv: Sequence[str], options: Collection[str]) -> list[str]:
    """Rewrite `OPTION VALUE` into `OPTION=VALUE` for the argument-string `options`, before argparse parses.

    argparse reads a token that starts with "-" as an option, so `--base-args "--num_rounds=5"` fails with
    "expected one argument". After this rewrite the token following such an option is always its value (an
    empty string included); `--base-args=VALUE` is left as it is, and nothing after a bare `--` is touched.
    """
    out: list[str] = []
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            return out + tokens[index:]
        if token in options and index + 1 < len(tokens):
            out.append(f"{token}={tokens[index + 1]}")
            index += 2
            continue
        out.append(token)
        index += 1
    return out


def restore_dashes(options: argparse.Namespace, names: Collection[str]) -> argparse.Namespace:
    """argparse drops a value that is exactly `--` (`--run-args=--` parses as `[]`): put the text back, so the
    argument-string `names` are always strings and a `--` reaches the check that names it."""
    for name in names:
        attr = name.lstrip("-").replace("-", "_")
        if isinstance(getattr(options, attr, None), list):
            setattr(options, attr, "--")
    return options


def write_stdout(text: str) -> bool:
    """Write `text` to stdout and flush; False when the reader already closed the pipe."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit and would print that error: send what is left to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return False
    return True
