"""A dry run's private folder in the temp directory (`autofl-dryrun-run-XXXXXXXX`): made with its owner's record,
swept once the owner is gone, by the rule of `trial/owned_folders.py`.
"""

from __future__ import annotations

from pathlib import Path

from ..trial import owned_folders

PREFIX = "autofl-dryrun-run-"
NAME = owned_folders.pattern(PREFIX)
OWNER = owned_folders.OWNER


def make(temp_root: Path) -> Path:
    """A new dry-run folder in `temp_root` carrying this process's owner record (dead owners' folders go first)."""
    return owned_folders.make(temp_root, PREFIX)


def sweep(temp_root: Path) -> list[str]:
    """Remove the dry-run folders of `temp_root` whose owner is gone; the names of those removed."""
    return owned_folders.sweep(temp_root, PREFIX)
