"""Pure classification helpers of trial.py: sandbox socket denial and result-path hygiene."""

import subprocess
from pathlib import Path

import pytest
from autofl_core.trial.execute import _last_error, _version_tuple, _without_temp_paths, sandbox_denied

SANDBOXED = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/socket.py", line 232, in __init__\n'
    "    _socket.socket.__init__(self, family, type, proto, fileno)\n"
    "PermissionError: [Errno 1] Operation not permitted\n"
)


@pytest.mark.parametrize(
    ("output", "denied"),
    [
        (SANDBOXED, True),
        ("PermissionError: [Errno 1] Operation not permitted: bind to tcp://localhost:8002", True),
        ("PermissionError: [Errno 13] Permission denied: '/data/train.csv'", False),
        ("PermissionError: [Errno 1] Operation not permitted: '/etc/shadow'", False),
        ("Operation not permitted while connecting socket", False),
        ("", False),
        (
            "Connection [CN00002 127.0.0.1:32858 => 127.0.0.1:56925] is created\n"
            + "x\n" * 20
            + "PermissionError: [Errno 1] Operation not permitted: '/data/x'",
            False,
        ),
    ],
)
def test_sandbox_denial_needs_permission_error_errno_text_and_socket_context(output, denied):
    assert sandbox_denied(output) is denied


def test_paths_inside_the_deleted_trial_root_point_at_the_copy():
    root = Path("/tmp/autofl-sim-abc")
    reason = f"RuntimeError: Logs are in {root}/job-1, e.g. server/log.txt; also {root}/other"
    cleaned = _without_temp_paths(reason, root, "job-1", {"simulation": "autofl_runs/c1/simulation"})
    assert cleaned == (
        "RuntimeError: Logs are in autofl_runs/c1/simulation, e.g. server/log.txt; also <trial simulator root>/other"
    )


@pytest.mark.parametrize(("text", "expected"), [("2.9.0", (2, 9, 0)), ("2.8.1rc2", (2, 8, 1)), ("2.10", (2, 10))])
def test_version_tuple(text, expected):
    assert _version_tuple(text) == expected


def test_last_error_is_one_printable_line_without_hidden_characters():
    output = "noise\nValueError: first\nRuntimeError: bad\u200b value\u202e\there\n"
    assert _last_error(output) == "; last error: RuntimeError: bad value here"
    assert _last_error("all good\n") == ""


def test_trial_module_imports_no_heavy_packages(repo_root, python_exe):
    scripts = repo_root / "skills" / "nvflare-autofl" / "scripts"
    code = (
        f"import sys; sys.path.insert(0, {str(scripts)!r}); from autofl_core.trial import execute as trial; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'nvflare', 'matplotlib', 'numpy', 'yaml', 'PIL'}))"
    )
    done = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_a_failed_result_copy_is_a_reason_not_a_traceback(tmp_path, monkeypatch):
    from autofl_core.trial import execute as trial
    from autofl_core.trial import resultdir

    def disk_full(*_args):
        raise OSError(28, "No space left on device")

    root = tmp_path / "sim"
    (root / "hello" / "server").mkdir(parents=True)
    spec = trial.TrialSpec(
        python="python",
        job_path=tmp_path / "job.py",
        workspace=tmp_path,
        run_dir=tmp_path / "run",
        trial_name="t",
        metric_order=["accuracy"],
        expected_result_names=["hello"],
    )
    monkeypatch.setattr(resultdir, "collect_result", disk_full)
    artifacts = {}
    name, reason = trial._copy_result(spec, root, [], {}, artifacts)
    assert name is None and artifacts == {}
    assert "hello could not be copied" in reason and "No space left on device" in reason
