"""A new user's first hour (issue 14, diagnose items): the SKILL.md workflow followed literally, and the advice
given on the failures a newcomer hits first."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml
from nvfdiag import pipeline
from nvfdiag.match import catalog as cat
from nvfdiag.read import evidence
from report_schema import SCHEMA

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "nvflare-diagnose-job"
SKILL_MD = (SKILL / "SKILL.md").read_text(encoding="utf-8")
EVIDENCE_MD = (SKILL / "references" / "evidence-collection.md").read_text(encoding="utf-8")
REAL = REPO / "evals" / "diagnose" / "files" / "real"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}


def diagnose(paths, **options):
    found = evidence.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return pipeline.diagnose(found, cat.load_catalog(), **options)


# ---- SKILL.md, read literally ----


def test_skill_md_runs_the_script_by_its_path_inside_the_skill_folder():
    assert "`<skill>` below is the folder that holds this SKILL.md" in SKILL_MD
    for match in re.finditer(r"python (\S*)diagnose_job\.py", SKILL_MD):
        bare_warning = SKILL_MD[max(0, match.start() - 8) : match.start()] == "a bare `"
        assert match.group(1) == "<skill>/scripts/" or bare_warning, match.group(0)


def test_the_documented_command_works_from_the_project_root(tmp_path, python_exe):
    project = tmp_path / "project"
    skill = project / ".agents" / "skills" / SKILL.name
    shutil.copytree(SKILL, skill, ignore=shutil.ignore_patterns("__pycache__"))
    command = "python <skill>/scripts/diagnose_job.py".replace("<skill>", str(skill.relative_to(project)))
    argv = [python_exe, *command.split()[1:], str(REAL / "import-error" / "stdout.txt")]
    result = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["matched_pattern"] == "IMPORT_ERROR"
    scripted = [c for c in report["follow_up_commands"] if "diagnose_job.py" in c]
    assert scripted, report["follow_up_commands"]
    for command in scripted:  # usable as printed: this copy's script, by absolute path
        assert f"python {skill / 'scripts' / 'diagnose_job.py'}" in command


def test_follow_up_templates_never_name_the_script_without_its_path():
    templates = yaml.safe_load((REPO / "shared/catalog/failure_patterns.yaml").read_text())["follow_up_templates"]
    for name, template in templates.items():
        assert "diagnose_job.py" not in template, name  # always {diagnose}, filled with the running script's path
    report = diagnose([REAL / "import-error" / "workspace" / "import-error"])
    assert any(c.startswith("python <skill>/scripts/diagnose_job.py ") for c in report["follow_up_commands"])


def test_skill_md_tells_the_agent_to_report_fields_the_report_has():
    paragraph = SKILL_MD[SKILL_MD.index("Tell the user") :].split("\n\n")[0]
    named = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert "runtime_mode" in named and named <= set(SCHEMA["properties"]), named - set(SCHEMA["properties"])
    assert "`mode`" not in SKILL_MD


# ---- what a SimEnv workspace holds ----


def test_workspace_with_site_tracebacks_is_enough_for_high_confidence():
    report = diagnose([REAL / "user-code-exception" / "workspace"])
    assert report["matched_pattern"] == "USER_CODE_EXCEPTION" and report["confidence"] == "high"
    assert "CLIENT_TRACEBACK_MISSING" not in report["findings"]
    relative = diagnose([REAL / "relative-data-path" / "workspace" / "relative-data-path"])
    assert relative["matched_pattern"] == "DATA_PATH_NOT_FOUND" and relative["confidence"] == "high"


def test_workspace_without_the_client_traceback_still_says_so():
    report = diagnose([REAL / "import-error" / "workspace" / "import-error"])
    assert "CLIENT_TRACEBACK_MISSING" in report["findings"]


def test_evidence_reference_describes_real_simenv_workspaces():
    assert "A diagnosis\n   from the workspace alone reports `CLIENT_TRACEBACK_MISSING`" not in EVIDENCE_MD
    assert "the\n   client's traceback is in `site-N/log.txt`" in EVIDENCE_MD
    assert "only the\n   stdout above holds the traceback" in EVIDENCE_MD


# ---- follow-ups and advice ----


def test_inspect_source_is_not_suggested_again_once_its_output_is_supplied():
    alone = diagnose([REAL / "import-error" / "stdout.txt"])
    assert any("agent inspect source" in c for c in alone["follow_up_commands"])
    with_inspection = diagnose([REAL / "import-error" / "stdout.txt", REAL / "inspect-source" / "healthy.json"])
    assert with_inspection["matched_pattern"] == "IMPORT_ERROR"
    assert not any("agent inspect source" in c for c in with_inspection["follow_up_commands"])


def test_relative_data_path_sends_the_user_to_the_clients_working_directory():
    report = diagnose([REAL / "relative-data-path" / "stdout.txt"])
    assert report["matched_pattern"] == "DATA_PATH_NOT_FOUND"
    assert "working directory" in report["likely_cause"] and "site-N" in report["likely_cause"]
    assert "<workspace root>/<job name>/site-N rather than the folder of job.py" in report["next_action"]


def test_absolute_missing_path_gets_no_relative_path_explanation(tmp_path):
    log = tmp_path / "stdout.txt"
    log.write_text("FileNotFoundError: [Errno 2] No such file or directory: '/data/site-1/train.csv'\n")
    report = diagnose([log], mode="simulation")
    assert report["matched_pattern"] == "DATA_PATH_NOT_FOUND" and "working directory" not in report["likely_cause"]


def test_absolute_data_path_finding_on_a_non_path_is_not_relayed():
    report = diagnose([REAL / "inspect-source" / "separator_redact_off.json"], mode="simulation")
    assert report["matched_pattern"] == "UNKNOWN"
    assert "ABSOLUTE_DATA_PATH" not in {c["pattern"] for c in report["other_candidates"]}
    redacted = diagnose([REAL / "inspect-source" / "absolute_path.json"], mode="simulation")
    # issue 25: a static finding alone adds no pattern (it used to be ABSOLUTE_DATA_PATH, low); it is only supporting
    assert redacted["matched_pattern"] == "UNKNOWN" and redacted["confidence"] == "low"
    assert "ABSOLUTE_DATA_PATH" in {c["pattern"] for c in redacted["other_candidates"]}
    assert "confirm it is a data path before relaying" in redacted["likely_cause"]


def test_pydantic_validation_error_quotes_what_is_wrong():
    report = diagnose([REAL / "simenv-fractional-clients" / "stdout.txt"])
    excerpts = " ".join(s["excerpt"] for s in report["signals"])
    assert "Input should be a valid integer, got a number with a fractional part" in excerpts
    assert "argument `num_clients`" in report["next_action"]
