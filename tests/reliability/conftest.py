"""The reliability catalogue (R1-R4, R7, R9 of the quality bars) reuses the runner test helpers of tests/autofl."""

import sys
import tempfile
from pathlib import Path

import pytest

AUTOFL_TESTS = Path(__file__).resolve().parents[1] / "autofl"
if str(AUTOFL_TESTS) not in sys.path:
    sys.path.insert(0, str(AUTOFL_TESTS))

from autofl_core.importer import dryrun  # noqa: E402  (after the path set-up above)


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    """A dry-run cache folder and memo of the test's own."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(dryrun, "_MEMO", {})
    return tmp_path / "tmp"
