"""Both skills follow the NVFLARE skill catalog's frontmatter conventions (where they do not conflict with the
Agent Skills spec): metadata.min-flare-version names the NVFLARE release the skill was built against, and
metadata.blast-radius says what running it may change (read_only for diagnose, edits_files for Auto-FL)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
EXPECTED = {"nvflare-diagnose-job": "read_only", "nvflare-autofl": "edits_files"}


def frontmatter(skill: str) -> dict:
    text = (REPO / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{skill}/SKILL.md has no frontmatter"
    meta = yaml.safe_load(match.group(1))
    assert isinstance(meta, dict)
    return meta


@pytest.mark.parametrize("skill", sorted(EXPECTED))
def test_metadata_names_the_flare_version_and_the_blast_radius(skill):
    metadata = frontmatter(skill).get("metadata")
    assert isinstance(metadata, dict), f"{skill}: frontmatter has no metadata mapping"
    version = metadata.get("min-flare-version")
    assert isinstance(version, str) and version == "2.9.0", f"{skill}: min-flare-version must be the string 2.9.0"
    assert metadata.get("blast-radius") == EXPECTED[skill]
    assert all(isinstance(value, str) for value in metadata.values()), "Agent Skills metadata values are strings"


def test_the_pinned_nvflare_is_the_minimum_version_the_skills_name():
    pins = (REPO / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^nvflare==2\.9\.0\b", pins, re.MULTILINE)
