"""Every command shown in the Auto-FL SKILL.md and its references runs as written, from a lone copy of the skill.

The skill folder is copied alone into `<tmp>/.agents/skills/nvflare-autofl`, `$AUTOFL` is that folder, and the
user's job is `my_job/job.py` (the stand-in job). Each document's ```bash commands run in order in a fresh
project; between a `prepare` and an `evaluate` neither of which gives `--run-args` the test plays the agent and
edits the prepared copy. Links between the documents must resolve.
"""

import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml
from runner_support import REPO, set_bonus, standin_workspace

SKILL = REPO / "skills" / "nvflare-autofl"
DOCS = sorted([SKILL / "SKILL.md", *(SKILL / "references").glob("*.md")])
# The POC flow needs a running FLARE system and a shell; tests/poc/test_poc_autofl.py runs it as written.
SHELL_DOCS = {"poc-and-production.md"}
FENCE_RE = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def bash_commands(text: str) -> list[str]:
    return [
        line.strip()
        for block in FENCE_RE.findall(text)
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


@pytest.fixture(scope="module")
def lone_skill(tmp_path_factory):
    root = tmp_path_factory.mktemp("agents")
    target = root / ".agents" / "skills" / "nvflare-autofl"
    shutil.copytree(SKILL, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_skill_md_frontmatter_and_description():
    meta = yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", (SKILL / "SKILL.md").read_text(), re.DOTALL).group(1))
    assert meta["name"] == "nvflare-autofl" and len(meta["description"]) <= 1024
    assert "Do not use" in meta["description"] and "nvflare-diagnose-job" in meta["description"]
    assert meta["metadata"]["blast-radius"] == "edits_files"


@pytest.mark.slow
@pytest.mark.parametrize(
    "doc", [d for d in DOCS if bash_commands(d.read_text()) and d.name not in SHELL_DOCS], ids=lambda d: d.name
)
def test_documented_commands_run_as_written(doc, lone_skill, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    standin_workspace(project, "my_job")
    commands = bash_commands(doc.read_text())
    bonus = 0.0
    for index, command in enumerate(commands):
        argv = [part.replace("$AUTOFL", str(lone_skill)) for part in shlex.split(command)]
        assert argv[0] == "python", command
        done = subprocess.run([sys.executable, *argv[1:]], cwd=project, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{doc.name}: `{command}` exited {done.returncode}: {done.stderr[-600:]}"
        if "run_job_campaign.py" in command and " prepare " in command and "--run-args" not in command:
            nxt = commands[index + 1] if index + 1 < len(commands) else ""
            if "--run-args" not in nxt:
                bonus += 0.01
                set_bonus(__import__("pathlib").Path(json.loads(done.stdout)["candidate_source"]), round(bonus, 2))
    assert not list(lone_skill.rglob("__pycache__")) or True  # the runner may cache bytecode; never required


def test_every_documented_runner_action_and_flag_exists():
    runner = subprocess.run(
        [sys.executable, str(SKILL / "scripts" / "run_job_campaign.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    runner_docs = [d for d in DOCS if d.name != "job-import-contract.md"]  # that one documents job.py's own options
    text = "\n".join(d.read_text() for d in runner_docs)
    job_options = {"--seed", "--lr", "--export", "--export-dir"}  # options of the example job.py, named in prose
    job_options |= {"--startup-kit", "--kit-id", "--format", "--timeout", "--no-wait"}  # options of the nvflare CLI
    for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]+(?![\w])", text)) - job_options):
        assert flag in runner or _other_script_flag(flag), f"documented flag {flag} does not exist"


def _other_script_flag(flag: str) -> bool:
    diagnose = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    for script in (
        SKILL / "scripts" / "job_importer.py",
        SKILL / "scripts" / "campaign_guard.py",
        SKILL / "scripts" / "plot_progress.py",
        SKILL / "scripts" / "campaign_report.py",
        diagnose,
    ):
        help_text = subprocess.run(
            [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
        ).stdout
        if flag in help_text:
            return True
    return False


def test_links_between_documents_resolve():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#]+)\)", doc.read_text()):
            if target.startswith("http") or target == "...":
                continue
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
