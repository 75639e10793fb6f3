"""Attacks on session 16's diagnose leftovers (h16atd): each test failed on main dfae791.

- A saved CLI error envelope is a `complete` source, so nothing about it asks for evidence any more; its error line
  says why an nvflare command failed, not why the job did. Envelopes alone (two CONNECTION_FAILED answers, or one
  beside a failed job status) carried PEER_GONE_OR_TIMEOUT or IMPORT_ERROR at high; a refused command beside a
  failed job status or a server log of a job carried NVFLARE_COMMAND_ERROR ("no job failure to chase") at high.
- The working-folder rule read `cwd=` and a program literal on any line of the traceback: a wrapper of the job's
  own (`call("train", cwd=work)`) whose program is built inside it, or another thread's log record interleaved in
  the traceback, turned a missing program into a missing data folder.
- An empty stdin became a `complete` source, and the follow-up that adds a SimEnv workspace then left out the given
  files as if stdin that held text were among them.
- The went-on rule built the set of every progress keyword line of the text for each copy of each hit record and
  asked again for every file's last hit: many files holding copies of one error record cost files^2 x lines
  (100 files of 28 KB: 53 s, 0.6 s before).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from evidence_trees import write
from nvfdiag import textindex
from nvfdiag.match import calibration
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC_NOT_PREPARED = REPO / "evals" / "diagnose" / "files" / "real" / "poc-not-prepared" / "poc_start.json"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
PROGRAM_SAID = "program the run tried to start"


def report_of(paths, mode="auto", job_status=None, **limits):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **{**LIMITS, **limits})
    return validated(diagnose(found, CATALOG, mode=mode, job_id=None, job_status=job_status))


def error_envelope(code: str, message: str, exit_code: int = 2) -> str:
    """An error envelope as NVFLARE 2.9's cli_output.output_error prints it (`<registry message> — <detail>`)."""
    hint = "Check server status with 'nvflare system status'."
    return json.dumps(
        {
            "schema_version": "1",
            "status": "error",
            "exit_code": exit_code,
            "error_code": code,
            "message": message,
            "hint": hint,
        }
    )


REFUSED = "Could not connect to the FLARE server. \u2014 cannot connect to server: failed to connect to all addresses"
GRPC = "; last error: UNAVAILABLE: ipv4:127.0.0.1:8003: Failed to connect to remote host: Connection refused"


# --- a command's own error answer carries no job diagnosis at high ------------------------------------------------


def test_two_saved_connection_failures_are_not_a_peer_gone_at_high(tmp_path):
    """`job meta` and `job logs` saved while the server was down: the admin's CLI could not connect; nothing says
    why the job failed."""
    meta = write(tmp_path / "job_meta.json", error_envelope("CONNECTION_FAILED", REFUSED + GRPC))
    logs = write(tmp_path / "job_logs.json", error_envelope("CONNECTION_FAILED", REFUSED + " (Connection refused)"))
    report = report_of([meta, logs])
    assert {s["status"] for s in report["evidence_sources"]} == {"complete"}  # given, read: never missing
    assert report["confidence"] != "high", (report["matched_pattern"], report["confidence"])


def test_a_saved_connection_failure_beside_an_aborted_status_is_not_high(tmp_path):
    meta = write(tmp_path / "job_meta.json", error_envelope("CONNECTION_FAILED", REFUSED + GRPC))
    report = report_of([meta], job_status="FINISHED:ABORTED")
    assert report["confidence"] != "high", (report["matched_pattern"], report["confidence"])


def test_a_cli_internal_error_is_not_the_jobs_import_error_at_high(tmp_path):
    """The CLI's own INTERNAL_ERROR detail names a module the admin's Python lacks, not the sites'."""
    detail = "An unexpected error occurred. \u2014 No module named 'torch'"
    first = write(tmp_path / "submit.json", error_envelope("INTERNAL_ERROR", detail, 5))
    second = write(tmp_path / "submit_again.json", error_envelope("INTERNAL_ERROR", detail + " (retry)", 5))
    report = report_of([first, second])
    assert report["confidence"] != "high", (report["matched_pattern"], report["confidence"])


def test_a_refused_command_beside_a_failed_job_status_is_not_high():
    """The real refused `poc start`: "no job failure to chase" cannot be sure when the job's status says it ran and
    failed."""
    report = report_of([POC_NOT_PREPARED], job_status="FINISHED:ABORTED")
    assert report["matched_pattern"] == "NVFLARE_COMMAND_ERROR"
    assert report["confidence"] != "high"


def test_a_refused_command_beside_a_server_log_of_a_job_is_not_high():
    """The real refused `poc start` beside the real server log of a POC that ran and held a job back
    (min_sites): the refusal does not explain the job the log shows."""
    server_log = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9" / "poc-min-clients-3" / "server_log.txt"
    report = report_of([POC_NOT_PREPARED, server_log])
    assert report["confidence"] != "high", (report["matched_pattern"], report["confidence"])


def test_the_refused_poc_start_alone_stays_high():
    """Guard: the command error is what the envelope says; h16dx's effect on the dev case stands."""
    report = report_of([POC_NOT_PREPARED])
    assert (report["matched_pattern"], report["confidence"]) == ("NVFLARE_COMMAND_ERROR", "high")


def test_a_log_beside_an_error_envelope_still_reaches_high(tmp_path):
    """Guard: the cap is for a diagnosis resting on error answers alone; a log's own evidence is not capped."""
    meta = write(tmp_path / "job_meta.json", error_envelope("CONNECTION_FAILED", REFUSED + GRPC))
    stdout = write(
        tmp_path / "stdout.txt",
        "Traceback (most recent call last):\n"
        '  File "/tmp/nvflare/simulation/job/site-1/simulate_job/app_site-1/custom/client.py", line 3, in <module>\n'
        "    import torchvision\n"
        "ModuleNotFoundError: No module named 'torchvision'\n",
    )
    report = report_of([meta, stdout], mode="simulation")
    assert (report["matched_pattern"], report["confidence"]) == ("IMPORT_ERROR", "high")


# --- the working folder is read from the launcher's own call ------------------------------------------------------


def run_script(tmp_path: Path, code: str) -> str:
    """Run `code` as tmp_path/client.py with real Python; its stderr (a traceback of Python's launcher)."""
    script = tmp_path / "client.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "_execute_child" in done.stderr
    return done.stderr


WRAPPER = (
    "import subprocess\n\n\n"
    "def call(tool, cwd):\n"
    "    return subprocess.run(['/h16atd/no/such/bin/' + tool], cwd=cwd, check=True)\n\n\n"
    "work = {work!r}\n"
    "call('train', cwd=work)\n"
)


def test_a_wrapper_call_with_cwd_does_not_make_a_missing_program_a_folder(tmp_path):
    """The job's own `call('train', cwd=work)` builds the program inside: its literal is not the program."""
    text = run_script(tmp_path, WRAPPER.format(work=str(tmp_path)))
    assert "No such file or directory: '/h16atd/no/such/bin/train'" in text
    report = report_of([write(tmp_path / "stdout.txt", text)], mode="simulation")
    assert PROGRAM_SAID in report["likely_cause"]
    assert report["matched_pattern"] != "DATA_PATH_NOT_FOUND"


def test_a_log_record_interleaved_in_the_traceback_does_not_make_a_program_a_folder(tmp_path):
    """Another thread's record lands between the traceback's lines; its words are not the failed call."""
    text = run_script(
        tmp_path,
        f"import subprocess\ncommand = ['/h16atd/no/such/tool']\nsubprocess.run(command, cwd={str(tmp_path)!r})\n",
    )
    lines = text.splitlines()
    record = "2026-12-07 10:00:01,000 - Prepare - INFO - cache ready: subprocess.run('prepare', cwd='/srv/cache')"
    lines.insert(2, record)  # after the job's frame line
    report = report_of([write(tmp_path / "stdout.txt", "\n".join(lines) + "\n")], mode="simulation")
    assert PROGRAM_SAID in report["likely_cause"]
    assert report["matched_pattern"] != "DATA_PATH_NOT_FOUND"


def test_a_program_built_from_a_literal_prefix_is_not_a_shown_program(tmp_path):
    """`['/opt/bin/' + tool]` shows a literal that is only part of the program."""
    code = (
        f"import subprocess\ntool = 'train'\nsubprocess.run(['/h16atd/no/such/bin/' + tool], cwd={str(tmp_path)!r})\n"
    )
    report = report_of([write(tmp_path / "stdout.txt", run_script(tmp_path, code))], mode="simulation")
    assert PROGRAM_SAID in report["likely_cause"]


def test_a_missing_folder_passed_through_a_wrapper_is_still_a_folder(tmp_path):
    """Guard: a `cwd='<the missing name>'` literal on a frame's code line names the folder, whichever frame."""
    missing = "/h16atd/no/such/site-1/data"
    code = (
        "import subprocess\n\n\n"
        "def call(cmd, cwd):\n"
        "    return subprocess.run(cmd, cwd=cwd)\n\n\n"
        f"call(['ls'], cwd={missing!r})\n"
    )
    text = run_script(tmp_path, code)
    assert f"'{missing}'" in text
    report = report_of([write(tmp_path / "stdout.txt", text)], mode="simulation")
    assert PROGRAM_SAID not in report["likely_cause"]


# --- the went-on rule's work grows with the input, not with files x lines -----------------------------------------

RUN = "5f0c6a2e-8d1b-4c3a-9e7f-2b4d6a8c0e13"
OOM = f"2026-12-07 10:00:00,000 - ClientRunner - ERROR - [identity=site-1, run={RUN}, peer=server] - RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
DONE = f"2026-12-07 10:00:59,000 - ClientRunner - INFO - [identity=site-1, run={RUN}, peer=server] - finished processing task train"
FILL = f"2026-12-07 10:00:59,000 - ClientRunner - INFO - [identity=site-1, run={RUN}, peer=server] - waiting for the next task now."


def _copies(root: Path, files: int, progress: int) -> Path:
    """`files` logs of one size, each with a copy of one error record and `progress` records of another site's
    course; only the file read last says that site-1's work went on."""
    assert len(FILL) == len(DONE)
    for number in range(files):
        text = [OOM]
        text += [
            f"2026-12-07 10:00:{1 + p % 50:02d},000 - ServerRunner - INFO - [identity=site-2, run={RUN}, peer=server]"
            f" - Received result from client site-2 round {p:05d}"
            for p in range(progress)
        ]
        text.append(DONE if number == 0 else FILL)
        write(root / f"log{number:03d}.txt", "\n".join(text) + "\n")
    return root


LINES_WITH, COURSE = textindex.TextIndex.lines_with, calibration._course


class CountedList(list):
    """Line numbers that count how many are looked at."""

    seen = 0

    def __iter__(self):
        for item in list.__iter__(self):
            CountedList.seen += 1
            yield item


def _work(tmp_path: Path, files: int, monkeypatch) -> int:
    root = _copies(tmp_path / f"f{files}", files, 30)
    found = ev.collect_evidence([str(root)], job_id=None, max_bytes=1 << 20, max_total_bytes=1 << 26, max_files=1000)
    monkeypatch.setattr(textindex.TextIndex, "lines_with", lambda self, needle: CountedList(LINES_WITH(self, needle)))
    course = COURSE
    calls = []
    monkeypatch.setattr(calibration, "_course", lambda lines, index: calls.append(index) or course(lines, index))
    CountedList.seen = 0
    report = diagnose(found, CATALOG, mode="auto", job_id=None)
    assert (report["matched_pattern"], report["confidence"]) == ("CUDA_OOM", "medium")  # it went on: site-1's task
    return CountedList.seen + len(calls)


def test_the_went_on_rule_work_grows_linearly_with_files_holding_copies_of_a_record(tmp_path, monkeypatch):
    small, large = _work(tmp_path, 20, monkeypatch), _work(tmp_path, 40, monkeypatch)
    assert large <= 2.5 * small, f"2x the files cost {large / small:.1f}x the work ({small} -> {large})"


# --- an empty stdin is given and read, but holds nothing to name ----------------------------------------------------

PER_SITE_DATA_PATH = REPO / "evals" / "diagnose" / "files" / "real" / "per-site-data-path"


def test_an_empty_stdin_does_not_drop_the_given_stdout_from_the_follow_up(tmp_path):
    """The follow-up that adds the SimEnv workspace re-runs diagnose on the files given; stdin that held text
    cannot be given again, an empty one has nothing to give."""
    shutil.copytree(PER_SITE_DATA_PATH / "workspace", tmp_path / "sim")
    text = (PER_SITE_DATA_PATH / "stdout.txt").read_text(encoding="utf-8")
    stdout = write(tmp_path / "job_stdout.txt", text.replace("/tmp/nvflare/simulation", str(tmp_path / "sim")))
    found = ev.collect_evidence([str(stdout), "-"], job_id=None, stdin_text="", **LIMITS)
    report = validated(diagnose(found, CATALOG, mode="auto", job_id=None))
    adds = [c for c in report["follow_up_commands"] if str(tmp_path / "sim") in c]
    assert adds and all(f"{stdout} {tmp_path / 'sim'}" in c for c in adds), adds
