"""The CLIs' interrupt handlers: the first interrupt unwinds, later ones do nothing, and children started after the
first one still end on SIGTERM/SIGINT/SIGHUP/SIGQUIT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from autofl_core.common import cli

CHILD_REPORTS_IGNORED = (
    "import signal\n"
    "names = ('SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT')\n"
    "print(' '.join(n for n in names if signal.getsignal(getattr(signal, n)) == signal.SIG_IGN))\n"
)


def test_the_first_interrupt_raises_and_a_second_does_nothing(interrupt_handlers):
    with pytest.raises(cli.Interrupted) as raised:
        os.kill(os.getpid(), signal.SIGTERM)
    assert raised.value.exit_code == cli.EXIT_SIGTERM
    os.kill(os.getpid(), signal.SIGINT)  # during the cleanup: no second Interrupted, no KeyboardInterrupt
    os.kill(os.getpid(), signal.SIGTERM)


def test_a_child_started_after_the_first_interrupt_does_not_inherit_ignored_signals(interrupt_handlers):
    with pytest.raises(cli.Interrupted):
        os.kill(os.getpid(), signal.SIGHUP)
    out = subprocess.run(
        [sys.executable, "-c", CHILD_REPORTS_IGNORED], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == ""
