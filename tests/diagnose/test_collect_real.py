"""--collect against the real nvflare 2.9 CLI (no server: every command must fail cleanly into error entries),
and the process-group runner's timeout cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from nvfdiag.read import collect
from nvfdiag.read.evidence import evidence_from_envelopes


@pytest.mark.slow
def test_real_nvflare_without_server_becomes_error_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.nvflare config: the CLI has no active startup kit
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "must-not-leak")
    kit = tmp_path / "not-a-kit"
    kit.mkdir()
    items = collect.collect_from_cli("abc123", startup_kit=str(kit), timeout=60)
    assert [item["command"][3:5] for item in items] == [
        ["job", "meta"],
        ["job", "logs"],
        ["job", "stats"],
        ["system", "status"],
        ["system", "resources"],
    ]
    for item in items:
        assert item["envelope"]["status"] == "error" and item["envelope"]["error_code"] == "STARTUP_KIT_MISSING"
        assert item["error"].startswith("STARTUP_KIT_MISSING")
    ev = evidence_from_envelopes(items)
    assert {s.status for s in ev.sources} == {"unavailable"}
    assert all("STARTUP_KIT_MISSING" in line.text for line in ev.lines)
    assert sorted(os.listdir(tmp_path)) == ["not-a-kit"]  # the CLI wrote nothing into HOME


def test_sanitized_env_drops_secrets(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("NVFLARE_STARTUP_KIT_DIR", "/kits/admin")
    env = collect.sanitized_env()
    assert "AWS_SECRET_ACCESS_KEY" not in env and env["NVFLARE_STARTUP_KIT_DIR"] == "/kits/admin"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        collect.run_in_process_group([sys.executable, "-c", code], timeout=2, stdin=subprocess.DEVNULL)
    assert time.monotonic() - started < 10
    pid = int(marker.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("grandchild survived the timeout")


def test_timeout_and_garbage_output_become_error_entries():
    def slow(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    def garbage(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 1, b"Traceback (most recent call last):\n boom", b"fatal: boom\n")

    items = collect.collect_from_cli("abc123", runner=slow, timeout=5)
    assert all(item["error"] == "timed out after 5 s" and item["envelope"] is None for item in items)
    items = collect.collect_from_cli("abc123", runner=garbage)
    assert items[0]["error"] == "exit 1, no JSON envelope: fatal: boom"
    assert len(items) == 5  # no job status known: no download
