"""The reliability catalogue (R1-R4, R7, R9 of the quality bars) reuses the runner test helpers of tests/autofl."""

import sys
from pathlib import Path

AUTOFL_TESTS = Path(__file__).resolve().parents[1] / "autofl"
if str(AUTOFL_TESTS) not in sys.path:
    sys.path.insert(0, str(AUTOFL_TESTS))
