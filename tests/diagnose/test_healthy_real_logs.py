"""R6, other half: logs of healthy real NVFLARE 2.9 runs produce zero suspicious-content findings."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
from autofl_core.trial import childenv, processes  # the runner's whole-tree cleanup, reused for the simulation
from module_loader import load_by_path
from nvfdiag.model import Line
from nvfdiag.untrusted.injection import scan_lines
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "healthy_real"
RUNS = sorted(p for p in (REPO / "tests" / "fixtures" / "healthy_runs").iterdir() if p.is_dir())
HEALTHY_RUNS = load_by_path("make_healthy_runs", REPO / "evals" / "make_healthy_runs.py")
CLI = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
LOG_NAMES = ("log.txt", "log_fl.txt", "error_log.txt", "log.json")


def read_lines(path: Path, site: str | None) -> list[Line]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [Line(str(path), site, number, line) for number, line in enumerate(text.splitlines(), 1)]


def run_logs(root: Path) -> list[Line]:
    """Every line of the job stdout and of each site's log files under `root`, in a stable order."""
    lines: list[Line] = []
    for stdout in sorted(root.glob("job_std*.txt")):
        lines += read_lines(stdout, None)
    for site_dir in sorted(path for path in root.iterdir() if path.is_dir()):
        for name in LOG_NAMES:
            if (site_dir / name).is_file():
                lines += read_lines(site_dir / name, site_dir.name)
    return lines


def test_fixture_is_a_real_run_with_the_tricky_vocabulary():
    text = "\n".join(line.text for line in run_logs(FIXTURE))
    assert len(text.splitlines()) > 500
    for word in ("execute for task", "downloaded", "Sent token", "tcp://", "task_id=", '"message"'):
        assert word in text, word
    assert (FIXTURE / "server" / "log.json").is_file() and (FIXTURE / "site-2" / "log_fl.txt").is_file()
    assert not list(FIXTURE.rglob("startup")) and not list(FIXTURE.rglob("*.key")) and not list(FIXTURE.rglob("*.pem"))


def test_real_healthy_logs_have_zero_findings_as_one_stream():
    lines = run_logs(FIXTURE)
    assert scan_lines(lines) == []


@pytest.mark.parametrize(
    "name", ["job_stdout.txt", "server/log.txt", "server/log.json", "site-1/log.txt", "site-2/log.json"]
)
def test_each_real_log_file_has_zero_findings(name):
    assert scan_lines(read_lines(FIXTURE / name, name.split("/")[0])) == []


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_more_real_runs_with_other_interleavings_have_zero_findings(run):
    """6 sites in one process, 4 sites as separate processes: other orders of interleaved site records."""
    lines = run_logs(run)
    assert len(lines) > 600 and len({line.site for line in lines}) >= 5
    assert scan_lines(lines) == []
    for log in sorted(run.rglob("*.txt")):
        assert scan_lines(read_lines(log, log.parent.name)) == [], log


def test_the_extra_runs_are_what_the_generator_says():
    assert [run.name for run in RUNS] == sorted(HEALTHY_RUNS.COMMITTED)
    sites = {run.name: {p.name for p in run.iterdir() if p.is_dir()} for run in RUNS}
    assert sites["sites6"] == {"server", *(f"site-{i}" for i in range(1, 7))}
    assert sites["external4"] == {"server", *(f"site-{i}" for i in range(1, 5))}


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_cli_on_more_real_runs_reports_nothing(run, python_exe):
    result = subprocess.run(
        [python_exe, str(CLI), str(run / "job_stdout.txt"), str(run)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout)
    assert (report["matched_pattern"], report["suspicious_content"], report["signals"]) == ("UNKNOWN", [], [])


@pytest.mark.integration
@pytest.mark.slow
def test_fresh_verbose_run_with_three_sites_has_zero_findings(tmp_path):
    """Verbose logging (DEBUG records of every component) is too big to commit: run it live."""
    assert HEALTHY_RUNS.main(["--variant", "verbose3", "--out", str(tmp_path)]) == 0
    lines = run_logs(tmp_path / "verbose3")
    assert len(lines) > 5000
    assert scan_lines(lines) == []


def test_cli_on_the_real_healthy_run_reports_no_suspicious_content(python_exe):
    assert CLI.is_file(), "diagnose_job.py (D1) is missing"
    result = subprocess.run(
        [python_exe, str(CLI), str(FIXTURE / "job_stdout.txt"), str(FIXTURE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout)
    assert report["suspicious_content"] == []
    assert "SUSPICIOUS_LOG_CONTENT" not in report["findings"]


STALLED_AFTER = 90.0  # seconds without a new line of output: NVFLARE's simulator stalled (seen at load 10 on 2 cores)
RUN_WITHIN = 280.0


def _run_example(
    python_exe: str, out: Path, *, command: tuple[str, ...] = ("job.py",), stalled_after: float = STALLED_AFTER
) -> str:
    """Run the NumPy example (`command` in its folder) into `out` (stdout in job_stdout.txt): "ok", or "stalled"
    when its output stopped growing for `stalled_after` seconds. Fails on an exit code other than 0, and when a
    process of the run outlives it: the whole tree is ended however the run ends (the simulator starts each client
    in a session of its own, out of reach of its process group), found by a token in its environment as the
    runner ends a trial's tree (`trial/processes.terminate_tree`)."""
    token = (childenv.TOKEN_VAR, secrets.token_hex(16))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "NVFLARE"))}
    env["NVFLARE_SIMULATOR_WORKSPACE_ROOT"] = str(out / "ws")
    env[token[0]] = token[1]  # every process the run starts inherits it (NVFLARE copies os.environ to its clients)
    log = out / "job_stdout.txt"
    with open(log, "wb") as stdout:
        process = subprocess.Popen(
            [python_exe, *command],
            cwd=EXAMPLE,
            env=env,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            outcome = _watch(process, log, stalled_after)
        finally:
            survivors = processes.terminate_tree(process.pid if process.poll() is None else None, token)
            process.wait()
    assert survivors == [], f"processes of the simulation outlived it: {survivors}"
    return outcome


def _watch(process: subprocess.Popen, log: Path, stalled_after: float) -> str:
    """Wait for the run: "ok" once it exited 0, "stalled" once its output stopped growing for `stalled_after` s."""
    started = last_change = time.monotonic()
    size = 0
    while process.poll() is None and time.monotonic() - started < RUN_WITHIN:
        time.sleep(1.0)
        if log.stat().st_size != size:
            size, last_change = log.stat().st_size, time.monotonic()
        elif time.monotonic() - last_change > stalled_after:
            return "stalled"
    assert process.poll() == 0, log.read_text(errors="replace")[-2000:]
    return "ok"


STALLING = """import os
import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]], preexec_fn=os.setsid)
print("client started", flush=True)
time.sleep(60)  # silent from here on: a stall
"""


def _carrying(marker: str) -> list[int]:
    """Live processes whose argv holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if marker.encode() in argv and processes.state_and_start(int(entry.name))[0] not in (None, "Z", "X"):
            found.append(int(entry.name))
    return found


@pytest.mark.timeout(30)
def test_a_stalled_runs_cleanup_ends_a_client_in_a_session_of_its_own(python_exe, tmp_path):
    """What the simulator does (a client started with setsid) and then a stall: the cleanup ends the client too."""
    script = tmp_path / "stalling_job.py"
    script.write_text(STALLING, encoding="utf-8")
    marker = str(tmp_path / "client-marker")
    try:
        assert _run_example(python_exe, tmp_path, command=(str(script), marker), stalled_after=2.0) == "stalled"
        assert "client started" in (tmp_path / "job_stdout.txt").read_text()  # it stalled after starting its client
        assert _carrying(marker) == [], "the client outlived the stalled run's cleanup"
    finally:
        for pid in _carrying(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_WITHIN + 60)
def test_fresh_real_simulation_has_zero_findings(python_exe, tmp_path):
    """Run the NumPy example for real (new ports, ids and paths every time) and scan everything it logged. A run whose
    simulator stalls (no output for STALLED_AFTER s: NVFLARE under heavy load, what the runner's infrastructure retry
    is for) is run once more in a fresh folder; a second stall fails."""
    outcome = _run_example(python_exe, tmp_path)
    if outcome == "stalled":
        tmp_path = tmp_path / "again"
        tmp_path.mkdir()
        outcome = _run_example(python_exe, tmp_path)
    assert outcome == "ok", "the simulator stalled twice"
    workspace = next((tmp_path / "ws").iterdir())
    lines = read_lines(tmp_path / "job_stdout.txt", None) + run_logs(workspace)
    assert len(lines) > 500
    assert scan_lines(lines) == []
    # the whole diagnosis of the healthy run (stdout + full SimEnv workspace): no pattern, no finding, no signal
    result = subprocess.run(
        [python_exe, str(CLI), str(tmp_path / "job_stdout.txt"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = validated(result.stdout)
    assert (report["matched_pattern"], report["findings"], report["signals"]) == ("UNKNOWN", [], [])
    assert report["runtime_mode"] == "simulation" and report["metrics"]["non_finite"] == []
