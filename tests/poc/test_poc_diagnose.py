"""nvflare-diagnose-job against a real local FLARE system: jobs whose client fails on a missing import or raises
in training, and a healthy job, diagnosed with `--collect --startup-kit`; then with the POC workspace as well;
every follow-up command of the reports runs when pasted into a shell."""

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

# real jobs on a real POC system: minutes each on a loaded machine, more than the suite-wide 300 s hang guard
pytestmark = [pytest.mark.integration, pytest.mark.poc, pytest.mark.slow, pytest.mark.timeout(1200)]
REPO = Path(__file__).resolve().parents[2]
DIAGNOSE = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
JOBS = {
    "import-error": REPO / "examples" / "failing" / "import-error",
    "user-code-exception": REPO / "examples" / "failing" / "user-code-exception",
    "hello-numpy": REPO / "examples" / "hello-numpy",
}


@pytest.fixture(scope="module")
def submitted(poc_system, tmp_path_factory):
    """Export, submit and wait for the three jobs, each in its own thread; {name: (job id, final status)}. The
    system runs them side by side (its scheduler takes up to four jobs at once). Then the six diagnoses the tests
    read (each job, without and with the POC workspace) start in the background, two at a time (one takes 13-15 s
    alone, a third of it CPU, the rest waiting on its `nvflare` calls); each test waits for the reports it reads."""
    exports = tmp_path_factory.mktemp("exports")

    def run(name: str, folder: Path) -> tuple[str, str]:
        work = exports / f"{name}-src"
        shutil.copytree(folder, work, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(
            [sys.executable, "job.py", "--export", "--export-dir", str(exports)],
            cwd=work,
            check=True,
            capture_output=True,
            env=poc_system.env,
            timeout=120,
        )
        done = poc_system.nvflare(
            "--format", "json", "job", "submit", "-j", str(exports / name), "--startup-kit", str(poc_system.kit)
        )
        job_id = json.loads(done.stdout)["data"]["job_id"]
        waited = poc_system.nvflare(
            "--format",
            "json",
            "job",
            "wait",
            job_id,
            "--timeout",
            "300",
            "--startup-kit",
            str(poc_system.kit),
            timeout=400,
        )
        return job_id, json.loads(waited.stdout)["data"]["status"]

    with ThreadPoolExecutor(len(JOBS)) as pool:
        runs = {name: pool.submit(run, name, folder) for name, folder in JOBS.items()}
        results = {name: job.result() for name, job in runs.items()}
    with ThreadPoolExecutor(2) as pool:
        for job_id, _status in results.values():
            for evidence in ((), (str(project(poc_system)),)):
                DIAGNOSED[(job_id, *evidence)] = pool.submit(_run_diagnose, poc_system, job_id, *evidence)
        yield results


DIAGNOSED: dict[tuple, Future] = {}  # (job id, evidence) -> its CLI run (stdout); each diagnosis runs once


def diagnose(poc_system, job_id, *evidence):
    """The JSON report of `diagnose_job.py EVIDENCE --job-id ID --collect` (a fresh copy; the CLI runs once for
    each job id and evidence, started by `submitted`: the failing-jobs test and the follow-up test read the same
    import-error report; one it did not start runs here). A failed run fails the test that reads its report."""
    started = DIAGNOSED.get((job_id, *evidence))
    return json.loads(started.result() if started else _run_diagnose(poc_system, job_id, *evidence))


def _run_diagnose(poc_system, job_id, *evidence) -> str:
    done = subprocess.run(
        [
            sys.executable,
            str(DIAGNOSE),
            *evidence,
            "--job-id",
            job_id,
            "--collect",
            "--startup-kit",
            str(poc_system.kit),
        ],
        capture_output=True,
        text=True,
        env=poc_system.env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def project(poc_system):
    return poc_system.kit.parent


def test_failing_jobs_get_their_pattern_and_category(poc_system, submitted):
    assert submitted["import-error"][1] == submitted["user-code-exception"][1] == "FINISHED:EXECUTION_EXCEPTION"
    for name in ("import-error", "user-code-exception"):
        report = diagnose(poc_system, submitted[name][0])
        seen = (
            name,
            report["matched_pattern"],
            report["likely_cause"],
            report["signals"][:3],
            report["missing_evidence"],
        )
        assert report["runtime_mode"] == "production" and report["recovery_category"] == "FIXABLE_BY_CODE", seen
        # the server's job log only echoes the client failure; the traceback went to the site console
        assert report["matched_pattern"] == "USER_CODE_EXCEPTION" and report["confidence"] in ("low", "medium")
        assert "CLIENT_TRACEBACK_MISSING" in report["findings"]
        assert any("poc_console.log" in item for item in report["missing_evidence"])
        assert any(str(project(poc_system)) in command for command in report["follow_up_commands"])


def test_with_the_poc_workspace_the_traceback_is_found(poc_system, submitted):
    expected = {"import-error": "IMPORT_ERROR", "user-code-exception": "USER_CODE_EXCEPTION"}
    for name, pattern in expected.items():
        report = diagnose(poc_system, submitted[name][0], str(project(poc_system)))
        seen = (name, report["likely_cause"], report["evidence_quality_note"], report["signals"][:3])
        assert (report["matched_pattern"], report["confidence"]) == (pattern, "high"), seen
        assert "CLIENT_TRACEBACK_MISSING" not in report["findings"]


def test_a_healthy_job_is_not_diagnosed_as_failed(poc_system, submitted):
    job_id, status = submitted["hello-numpy"]
    assert status == "FINISHED:COMPLETED"
    for evidence in ((), (str(project(poc_system)),)):
        report = diagnose(poc_system, job_id, *evidence)
        assert report["matched_pattern"] == "UNKNOWN" and "FINISHED:COMPLETED" in report["likely_cause"]
        assert "CLIENT_TRACEBACK_MISSING" not in report["findings"]


def test_follow_up_commands_work_when_pasted(poc_system, submitted):
    report = diagnose(poc_system, submitted["import-error"][0])
    commands = report["follow_up_commands"]
    assert commands and not any("<" in command.split("#")[0] for command in commands)  # no placeholder left
    for command in commands:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=poc_system.env, timeout=300)
        assert done.returncode == 0, (command, done.stdout[-500:], done.stderr[-500:])
        if command.startswith("nvflare --format json"):
            assert json.loads(done.stdout)["status"] == "ok", command
        else:
            assert json.loads(done.stdout)["matched_pattern"] == "IMPORT_ERROR"  # the suggested re-run finds it


def test_readme_poc_block_runs_as_written(poc_system, tmp_path):
    """The README's POC diagnose block, run by bash from a copy of the repository parts it names."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Running against POC and production", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2 and "poc start" in blocks[0], "the README section: start the system, then diagnose"
    for rel in ("examples/failing/import-error", "skills/nvflare-diagnose-job"):
        shutil.copytree(REPO / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", blocks[1]],
        cwd=tmp_path,
        env=poc_system.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = done.stdout.split("# NVFLARE job diagnosis")[1:]
    assert len(reports) == 2, done.stdout[-3000:]
    assert re.search(r"\*\*Matched pattern:\*\* `USER_CODE_EXCEPTION` \(confidence \*\*(low|medium)\*\*\)", reports[0])
    assert "CLIENT_TRACEBACK_MISSING" in reports[0]
    assert "**Matched pattern:** `IMPORT_ERROR` (confidence **high**)" in reports[1]
