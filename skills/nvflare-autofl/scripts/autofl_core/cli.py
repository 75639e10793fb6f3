"""What every Auto-FL command line shares: exit codes and an argparse that fails with one line."""

from __future__ import annotations

import argparse

EXIT_OK = 0
EXIT_UNSCORED = 1
EXIT_INVALID = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one stderr line naming the problem and pointing at --help, exit 2."""

    def error(self, message: str) -> None:
        self.exit(EXIT_INVALID, f"{self.prog}: {message}; see --help\n")
