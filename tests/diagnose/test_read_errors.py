"""A file that opens but fails to read (EIO from a bad disk, /proc files) is one unavailable source, not a crash."""

import json
import os
import subprocess

import pytest
from nvfdiag.read import bounded


def test_read_error_becomes_an_unavailable_read_failure(tmp_path, monkeypatch):
    path = tmp_path / "log.txt"
    path.write_text("ERROR boom\n")
    real_read = os.read

    def failing_read(fd, count):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(bounded.os, "read", failing_read)
    with pytest.raises(bounded.ReadFailure) as caught:
        bounded.read_head_tail(str(path), 1024)
    assert (caught.value.status, caught.value.reason) == ("unavailable", "Input/output error")
    monkeypatch.setattr(bounded.os, "read", real_read)
    assert bounded.read_head_tail(str(path), 1024).head == b"ERROR boom\n"


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc/self/mem (reads fail with EIO)")
def test_cli_reports_the_other_evidence_when_one_file_fails_to_read(tmp_path, python_exe, repo_root):
    log = tmp_path / "job_output.txt"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "client.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'not_a_real_module'\n"
    )
    script = repo_root / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    done = subprocess.run(
        [python_exe, str(script), "/proc/self/mem", str(log)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    statuses = {source["path"]: source["status"] for source in report["evidence_sources"]}
    assert statuses["/proc/self/mem"] == "unavailable" and statuses[str(log)] == "complete"
    assert report["matched_pattern"] == "IMPORT_ERROR"
