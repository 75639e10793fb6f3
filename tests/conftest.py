"""Test-wide setup: make the skills' private packages importable and expose common paths."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DIAGNOSE_SCRIPTS = REPO / "skills" / "nvflare-diagnose-job" / "scripts"
AUTOFL_SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

for scripts in (DIAGNOSE_SCRIPTS, AUTOFL_SCRIPTS, REPO):
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def python_exe() -> str:
    """The interpreter that has nvflare installed (the project venv when present)."""
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable
