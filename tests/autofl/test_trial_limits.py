"""Per-trial resource limits (spec autofl.md "Trial resources", quality bar R10).

A leaking, disk-filling or forking candidate on the stand-in job ends as a crash naming the limit, within 10 s of
crossing it, while a process outside the trial keeps answering; the settings are persisted and shown; the report
says how each limit held. The real NVFLARE trial under a cap it fits in is in test_trial_real.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from autofl_core.common import trial_limits as limits
from autofl_core.common.trial_limits import GIB, MIB, TrialLimits
from autofl_core.runner.report import markdown
from autofl_core.trial import execute, seal
from autofl_core.trial.execute import run_trial
from autofl_core.trial.processes import find_token_processes
from runner_support import WITHOUT_NAMESPACES, initialized_standin, ledger_rows, run_cli, run_inproc
from test_trial_standin import STANDIN, spec

CROSSING_SECONDS = 10.0  # R10: a limit crossed ends the trial within this


@pytest.fixture
def job(tmp_path):
    """A workspace holding the stand-in job."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "job.py").write_text(STANDIN.read_text())
    return folder


# --- sizes, defaults and reasons (pure) --------------------------------------------------------------------------


def test_sizes_parse_as_people_write_them_and_show_in_binary_units():
    assert limits.parse_size("6G", "--trial-memory") == 6 * GIB
    assert limits.parse_size("200M", "--trial-disk") == 200 * MIB
    assert limits.parse_size("1.5GiB", "--trial-memory") == int(1.5 * GIB)
    assert limits.parse_size("268435456", "--trial-memory") == 256 * MIB
    for bad in ("", "6X", "-1G", "1e9", "G"):
        with pytest.raises(ValueError, match="--trial-memory must be a size like 6G"):
            limits.parse_size(bad, "--trial-memory")
    with pytest.raises(ValueError, match="--trial-memory must be at least 64 MiB"):
        limits.parse_size("1M", "--trial-memory")
    with pytest.raises(ValueError, match="--trial-processes must be at least 16"):
        limits.parse_count("3", "--trial-processes")
    assert [limits.show_size(v) for v in (6 * GIB, int(1.5 * GIB), 200 * MIB, 512 * 1024)] == [
        "6 GiB",
        "1.5 GiB",
        "200 MiB",
        "512 KiB",
    ]


def test_defaults_divide_the_machine_among_the_batch_slots(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       25165824 kB\nMemFree: 1 kB\n")  # 24 GiB
    one = limits.machine_defaults(1, tmp_path, meminfo=str(meminfo))
    two = limits.machine_defaults(2, tmp_path, meminfo=str(meminfo))
    assert one.memory == 18 * GIB and two.memory == 9 * GIB  # three quarters of RAM, divided among the slots
    info = os.statvfs(tmp_path)
    assert abs(one.disk - info.f_bavail * info.f_frsize // 2) < 256 * MIB  # half the free disk (it moves a bit)
    assert abs(two.disk - one.disk // 2) < 256 * MIB
    assert 16 <= two.processes <= one.processes <= limits.MAX_DEFAULT_PROCESSES
    given = limits.resolve({"memory": 3 * GIB, "disk": None, "processes": 99}, slots=2, folder=tmp_path)
    assert (given.memory, given.processes) == (3 * GIB, 99) and given.disk > 0


def test_a_breach_record_becomes_a_reason_naming_the_limit_the_process_and_the_fix():
    memory = {"limit": "memory", "value": 6 * GIB, "used": 7 * GIB, "by": "site-2 (python client.py)"}
    assert limits.breach_reason(memory) == (
        "memory limit 6 GiB exceeded by site-2 (python client.py); lower the candidate's memory use (model size, "
        "batch size, data kept per round), or raise --trial-memory (now 6 GiB)"
    )
    disk = {"limit": "disk", "value": GIB, "used": 2 * GIB, "by": "/tmp"}
    assert limits.breach_reason(disk).startswith("disk limit 1 GiB exceeded (2 GiB written, most under /tmp); ")
    procs = {"limit": "processes", "value": 64, "used": 64, "by": "python job.py"}
    assert limits.breach_reason(procs).startswith("process limit 64 reached, most started by python job.py; ")
    assert limits.breach_reason({"limit": "cpu", "value": 1}) is None
    assert limits.breach_reason({"limit": "memory", "value": "6G"}) is None


# --- the stand-in job over each limit ------------------------------------------------------------------------------


class Probe:
    """A process outside the trial answering a line per request: the machine must keep answering it."""

    def __init__(self):
        code = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.slowest, self.answers, self.stop = 0.0, 0, threading.Event()
        self.thread = threading.Thread(target=self._ping, daemon=True)
        self.thread.start()

    def _ping(self):
        while not self.stop.wait(0.2):
            started = time.monotonic()
            self.proc.stdin.write("ping\n")
            if self.proc.stdout.readline() != "ping\n":
                return
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.answers += 1

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run_over_limit(job, short_tmp, mode, trial_limits, *, sealed, monkeypatch):
    made = []  # the trial folder's name is its pids cgroup's
    real_mkdtemp = execute.tempfile.mkdtemp
    monkeypatch.setattr(execute.tempfile, "mkdtemp", lambda **kw: made.append(real_mkdtemp(**kw)) or made[-1])
    probe = Probe()
    try:
        result = run_trial(spec(job, short_tmp, mode=mode, limits=trial_limits, stage_files={} if sealed else None))
    finally:
        probe.close()
    assert probe.answers >= 1 and probe.slowest < 5.0, (probe.answers, probe.slowest)
    assert result.outcome == "crash" and result.score is None
    assert result.runtime_seconds < CROSSING_SECONDS + 20, result.runtime_seconds  # it crossed within seconds
    assert find_token_processes(("AUTOFL_TRIAL_TOKEN", result.token)) == []
    assert list(short_tmp.iterdir()) == []  # the trial folder and its writes are gone
    assert made and not (seal.PIDS_CGROUP / os.path.basename(made[0])).exists()  # its pids cgroup removed
    return result


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "contained"])
def test_a_leaking_candidate_ends_on_the_memory_limit_naming_the_process(job, short_tmp, sealed, monkeypatch):
    result = run_over_limit(
        job, short_tmp, "leak", TrialLimits(memory=300 * MIB), sealed=sealed, monkeypatch=monkeypatch
    )
    assert result.failure_reason.startswith("memory limit 300 MiB exceeded by python job.py; "), result.failure_reason
    assert "raise --trial-memory (now 300 MiB)" in result.failure_reason
    assert result.sandbox["limits"]["memory"] == {"value": 300 * MIB, "enforcement": "watched"}


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "contained"])
def test_a_disk_filler_ends_on_the_disk_limit(job, short_tmp, sealed, monkeypatch):
    result = run_over_limit(
        job, short_tmp, "fill_disk", TrialLimits(disk=200 * MIB), sealed=sealed, monkeypatch=monkeypatch
    )
    assert result.failure_reason.startswith("disk limit 200 MiB exceeded ("), result.failure_reason
    assert "raise --trial-disk (now 200 MiB)" in result.failure_reason


def test_a_fork_bomb_ends_on_the_process_limit(job, short_tmp, monkeypatch):
    result = run_over_limit(
        job, short_tmp, "fork_bomb", TrialLimits(memory=4 * GIB, processes=64), sealed=True, monkeypatch=monkeypatch
    )
    assert result.failure_reason.startswith("process limit 64 reached, most started by python job.py; "), (
        result.failure_reason
    )
    assert result.sandbox["limits"]["processes"]["enforcement"] in ("enforced", "watched")


def test_a_trial_within_its_limits_scores_as_without_them(job, short_tmp):
    free = run_trial(spec(job, short_tmp, extra=["--lr", "0.05"]))
    capped = run_trial(
        spec(job, short_tmp, extra=["--lr", "0.05"], limits=TrialLimits(memory=GIB, disk=GIB, processes=256))
    )
    assert (free.outcome, capped.outcome) == ("success", "success"), capped.failure_reason
    assert capped.score == free.score
    assert "limits" not in free.sandbox and capped.sandbox["limits_unenforced"] == []


# --- settings, status and report -----------------------------------------------------------------------------------


def test_limits_are_persisted_settings_shown_in_status_and_the_report(tmp_path):
    workspace = initialized_standin(tmp_path, "--trial-memory", "2G", "--trial-processes", "512")
    done = run_inproc(workspace, "status")
    shown = done.envelope["trial_limits"]
    assert shown["memory"] == {"value": 2 * GIB, "shown": "2 GiB", "source": "setting"}
    assert shown["processes"]["value"] == 512 and shown["disk"]["source"].startswith("machine default")
    report = (workspace / "autofl_report.md").read_text()
    assert "- Trial limits: memory 2 GiB (watched), disk " in report and "processes 512 (" in report
    changed = run_inproc(workspace, "status", "--trial-memory", "3G")
    assert changed.code == 0 and changed.envelope["trial_limits"]["memory"]["value"] == 3 * GIB


def test_a_bad_limit_is_one_line_and_changes_nothing(tmp_path):
    workspace = initialized_standin(tmp_path)
    before = (workspace / ".nvflare/autofl/campaign.json").read_bytes()
    done = run_cli(workspace, "status", "--trial-disk", "lots")
    assert done.code == 2 and done.stderr.strip().splitlines() == [
        "Auto-FL status failed: --trial-disk must be a size like 6G, 200M or 1.5GiB, got 'lots'"
    ]
    assert (workspace / ".nvflare/autofl/campaign.json").read_bytes() == before


def test_the_launcher_names_the_limits_it_cannot_enforce_on_a_host_without_namespaces(tmp_path):
    """In a container that forbids user namespaces no PID 1 can watch the trial: memory and disk are named
    unenforceable in the status the envelope and the report carry (the pids cgroup is not reachable either)."""
    plan = {
        "status_file": str(tmp_path / seal.STATUS),
        "cwd": str(tmp_path),
        "network": "allowed",
        "limits": {"memory": GIB, "disk": GIB, "processes": 256, "reason_file": str(tmp_path / seal.LIMITS)},
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    command = [*WITHOUT_NAMESPACES, *seal.launcher_argv(sys.executable, tmp_path / "plan.json", ["true"])]
    assert subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    status = seal.read_status(tmp_path, sealed=False)
    assert status["limits_unenforced"] == ["disk", "memory", "processes"], status
    assert status["limits"]["memory"]["enforcement"] == "unavailable: no PID namespace with its own /proc"
    report = markdown._limits_line(status)
    assert report == [
        "- Trial limits: memory 1 GiB (unavailable), disk 1 GiB (unavailable), processes 256 (unavailable); not "
        "enforceable on this host: memory (no PID namespace with its own /proc), disk (no PID namespace with its "
        "own /proc), processes (no PID namespace with its own /proc)"
    ]


LEAK = """
import time as _time
_kept = []
for _ in range(4000):  # 16 MiB written every 10 ms, far past the campaign's 200 MiB
    _kept.append(b"\\x01" * (16 * 1024 * 1024))
    _time.sleep(0.01)
"""


def test_a_leaking_candidate_of_a_campaign_is_a_crash_and_harms_nothing(tmp_path):
    """Through the runner: the crash row names the limit and the fix; the ledger, the live job and a later
    honest candidate are unharmed."""
    workspace = initialized_standin(tmp_path, "--trial-memory", "200M")
    live = {name: (workspace / name).read_bytes() for name in ("job.py", "client.py", "standin_flare.py")}
    assert run_inproc(workspace, "prepare", "--name", "leak", "--hypothesis", "bigger model").code == 0
    client = workspace / ".nvflare/autofl/candidates/leak/source/client.py"
    client.write_text(client.read_text() + LEAK)
    done = run_cli(workspace, "evaluate", "--run-args", "--lr 0.2")
    assert done.code == 1 and done.envelope["candidate_status"] == "crash", done.stderr
    rows = ledger_rows(workspace)
    assert [(r["name"], r["status"]) for r in rows] == [("baseline", "baseline"), ("leak", "crash")]
    assert rows[-1]["failure_reason"].startswith("memory limit 200 MiB exceeded by python job.py; "), rows[-1]
    assert "raise --trial-memory (now 200 MiB)" in rows[-1]["failure_reason"]
    assert done.envelope["sandbox"]["limits"]["memory"] == {"value": 200 * MIB, "enforcement": "watched"}
    assert {name: (workspace / name).read_bytes() for name in live} == live
    assert run_inproc(workspace, "prepare", "--name", "honest", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    honest = run_cli(workspace, "evaluate")
    assert honest.code == 0 and honest.envelope["candidate_status"] == "keep", honest.stderr
