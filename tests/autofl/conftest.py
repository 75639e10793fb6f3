"""Fixtures shared by the trial-executor tests."""

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def short_tmp():
    """A short temp parent (Unix socket paths under the private TMPDIR must stay short)."""
    folder = Path(tempfile.mkdtemp(prefix="a3-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
