"""SKILL.md and references say what the code does: valid frontmatter, every flag, exit code, finding and source
kind is documented, links resolve, and the recommended nvflare commands are the ones --collect may run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from nvfdiag.model import SOURCE_KINDS, SOURCE_STATUSES
from nvfdiag.read import collect
from report_schema import SCHEMA

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "nvflare-diagnose-job"
SKILL_MD = (SKILL / "SKILL.md").read_text(encoding="utf-8")
EVIDENCE_MD = (SKILL / "references" / "evidence-collection.md").read_text(encoding="utf-8")


def frontmatter() -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", SKILL_MD, re.DOTALL)
    assert match, "SKILL.md has no frontmatter"
    return yaml.safe_load(match.group(1))


def test_agentskills_validate_passes():
    tool = REPO / ".venv" / "bin" / "agentskills"
    result = subprocess.run([str(tool), "validate", str(SKILL)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_frontmatter_says_when_to_use_and_when_not():
    meta = frontmatter()
    assert meta["name"] == SKILL.name and meta["license"] == "Apache-2.0"
    description = meta["description"]
    assert len(description) <= 1024
    assert "failure" in description and "Do NOT use it" in description
    for excluded in ("create or convert jobs", "monitor healthy runs", "download results of a successful job"):
        assert excluded in description


def test_every_cli_flag_is_documented():
    import diagnose_job

    flags = {opt for action in diagnose_job.build_parser()._actions for opt in action.option_strings} - {"-h", "--help"}
    assert flags  # the parser really has options
    for flag in sorted(flags):
        assert flag in SKILL_MD, flag
    for mode in ("auto", "simulation", "production", "poc"):
        assert mode in SKILL_MD


def test_exit_codes_match_the_script():
    import diagnose_job

    assert (diagnose_job.EXIT_OK, diagnose_job.EXIT_USAGE, diagnose_job.EXIT_INTERRUPTED) == (0, 2, 130)
    for text in ("Exit 0", "exit 2", "exit 130"):
        assert text in SKILL_MD


def test_every_finding_the_schema_allows_is_explained():
    for finding in SCHEMA["properties"]["findings"]["items"]["enum"]:
        assert f"`{finding}`" in SKILL_MD, finding
    assert "`omitted`" in SKILL_MD


def test_schema_enums_equal_the_model():
    source = SCHEMA["$defs"]["source"]["properties"]
    assert tuple(source["kind"]["enum"]) == SOURCE_KINDS
    assert tuple(source["status"]["enum"]) == SOURCE_STATUSES


@pytest.mark.parametrize("name", ["job_meta", "job_logs", "job_stats", "system_status", "system_resources"])
def test_documented_collect_commands_are_the_allowed_ones(name):
    shown = " ".join(collect.build_argv(name, "JOBID")).replace("JOBID", "<job_id>")
    assert shown in SKILL_MD and shown in EVIDENCE_MD


def test_evidence_reference_states_the_reader_rules():
    for rule in (
        "job download",
        "log.json` is not read when `log.txt` sits beside it",
        "everything** under a `startup/`",
        "metrics artifacts",
        "inspect source finding",
        "exported job folder",
        "`job_download`",
        "timeout",
        "argv lists",
    ):
        assert rule in EVIDENCE_MD, rule


def test_relative_links_resolve():
    for text, base in ((SKILL_MD, SKILL), (EVIDENCE_MD, SKILL / "references")):
        for target in re.findall(r"\]\(([^)#:]+)\)", text):
            assert (base / target).is_file(), target


def test_skill_md_says_when_the_agent_may_overrule_the_script_and_how_to_report_it():
    section = SKILL_MD.split("### When you may overrule the script", 1)[1].split("\n## ", 1)[0]
    for needed in ("match_basis", "loose", "peeled", "I overrule it with", "<file>:<line>", "suspicious_content"):
        assert needed in SKILL_MD if needed == "match_basis" else needed in section, needed
    assert "relay them verbatim" not in SKILL_MD.lower()
