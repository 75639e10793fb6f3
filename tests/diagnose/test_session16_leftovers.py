"""Session 16's diagnose leftovers (h16dx), each closed by a general rule.

- A source that was given and read is never listed as missing or unavailable: a saved CLI error envelope (a TIMEOUT
  of `job wait`, any other code, a failed `agent inspect source`) and an empty stdin were; every kind of input the
  script reads is fed here and checked. A command that --collect ran and that failed is still listed (its result
  is truly missing).
- `handled.handled_blocks` does O(1) work per traceback and script file: the work on the exception classes is
  counted for 1x and 4x one chain of distinct classes, and its answers equal the rule's plain definition.
- A working folder that does not exist is told from a missing program by what CPython's launcher reports:
  `_execute_child` names either the `cwd=` it could not enter or the program (`executable=`, else the first
  argument, `/bin/sh` with `shell=True`); so a call that passes a `cwd=` and shows another program did not fail
  to start its program. Windows says a bad working folder as `[WinError 267]`.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from evidence_trees import JOB_UUID, build_simenv, log_line, write
from nvfdiag.match import catalog as cat
from nvfdiag.match import handled
from nvfdiag.match.tracebacks import chains, find_tracebacks, is_user_file
from nvfdiag.model import Line
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
POC = REPO / "tests" / "fixtures" / "diagnose_careful_reader_2.9" / "poc-min-clients-3"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
NOT_PRESENT = {"missing", "permission_denied", "unavailable"}


def report_of(paths, stdin_text=None, mode="auto", **limits):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, stdin_text=stdin_text, **{**LIMITS, **limits})
    return validated(diagnose(found, CATALOG, mode=mode, job_id=None))


def envelope(status="ok", **fields) -> str:
    return json.dumps({"schema_version": "1", "status": status, "exit_code": 0 if status == "ok" else 3, **fields})


# --- a given source is never missing ------------------------------------------------------------------------------

CLIENT_ERROR = log_line("ClientRunner", "ERROR", "task train failed on site-1: RuntimeError: boom") + "\n"


def _file(name, text):
    return lambda tmp: [write(tmp / name, text)]


def _simenv(tmp):
    return [build_simenv(tmp / "sim")]


def _job_download(tmp):
    job = tmp / "download" / JOB_UUID
    write(job / "meta.json", json.dumps({"job_id": JOB_UUID, "status": "FINISHED:EXECUTION_EXCEPTION", "name": "j"}))
    write(job / "workspace" / "log.txt", CLIENT_ERROR)
    return [tmp / "download"]


def _exported(tmp):
    job = tmp / "export" / "myjob"
    write(job / "meta.json", json.dumps({"name": "myjob", "deploy_map": {"app": ["@ALL"]}}))
    write(job / "app" / "config" / "config_fed_server.json", "{}")
    write(job / "app" / "config" / "config_fed_client.json", "{}")
    return [job]


INPUTS = {
    "plain log": _file("log.txt", CLIENT_ERROR),
    "empty log": _file("empty.txt", ""),
    "wrapped log": _file("docker.log", "server-1  | " + CLIENT_ERROR),
    "binary file": _file("blob.bin", b"\x00\x01\x02binary\x00"),
    "truncated log": _file("big.txt", CLIENT_ERROR * 4000),
    "bundle": _file("bundle.json", json.dumps({"job_id": "abc123", "logs": {"server": {"lines": [CLIENT_ERROR]}}})),
    "job meta envelope": _file(
        "meta.json", envelope(data={"job_id": "abc123", "status": "FINISHED:EXECUTION_EXCEPTION", "name": "j"})
    ),
    "job logs envelope": _file("logs.json", envelope(data={"job_id": "abc123", "logs": {"site-1": CLIENT_ERROR}})),
    "job download envelope": _file("dl.json", envelope(data={"job_id": "abc123", "artifacts": {"models": "m"}})),
    "system status envelope": _file("status.json", envelope(data={"server_status": "started"})),
    "TIMEOUT envelope (real)": lambda tmp: [POC / "job_wait.json"],
    "error envelope": _file("error.json", envelope("error", error_code="CONNECTION_FAILED", message="no server")),
    "inspect source": _file(
        "inspect.json", envelope(data={"capability": "source", "scan": {"findings": [], "files_read": 1}})
    ),
    "failed inspect source": _file(
        "inspect_failed.json", envelope("error", error_code="AGENT_INSPECT_PATH_NOT_FOUND", message="x", data=None)
    ),
    "metrics summary": _file(
        "metrics_summary.json",
        json.dumps({"schema_version": "1", "status": "metrics_reported", "final_round": 2, "key_metric": {}}),
    ),
    "round metrics": _file("round_metrics.jsonl", json.dumps({"round": 0, "aggregated_metrics": []}) + "\n"),
    "plain job meta": _file("job_meta.json", json.dumps({"job_id": "abc123", "status": "RUNNING", "name": "j"})),
    "SimEnv workspace": _simenv,
    "job download folder": _job_download,
    "exported job folder": _exported,
}


def _assert_present(report: dict, given: list[str]) -> None:
    for path in given:
        listed = [s for s in report["evidence_sources"] if s["path"] == path or s["path"].startswith(path + "/")]
        assert listed, f"{path} is not among the sources"
        assert not [s for s in listed if s["status"] in NOT_PRESENT], listed
        assert not [m for m in report["missing_evidence"] if path in m], report["missing_evidence"]


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_a_given_source_is_never_listed_as_missing_or_unavailable(tmp_path, kind):
    given = [str(p) for p in INPUTS[kind](tmp_path)]
    companion = write(tmp_path / "other" / "console.txt", CLIENT_ERROR)
    report = report_of([*given, companion], max_bytes=65536)
    _assert_present(report, [*given, str(companion)])
    assert report["missing_evidence"]  # the check above ran over a report that does name missing evidence


@pytest.mark.parametrize("stdin_text", [CLIENT_ERROR, ""], ids=["stdin", "empty stdin"])
def test_stdin_is_never_listed_as_missing(tmp_path, stdin_text):
    companion = write(tmp_path / "console.txt", CLIENT_ERROR)
    report = report_of(["-", companion], stdin_text=stdin_text)
    _assert_present(report, ["<stdin>", str(companion)])


def test_the_timeout_envelope_beside_its_server_log_names_only_the_job_status_as_missing():
    report = report_of([POC / "job_wait.json", POC / "job_submit.json", POC / "server_log.txt"])
    assert report["missing_evidence"] == ["the job status (terminal state of the job)"]
    assert {s["status"] for s in report["evidence_sources"]} == {"complete"}


IMPORT_FAILURE = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/nvflare/simulation/job/site-1/simulate_job/app_site-1/custom/client.py", line 3, in <module>\n'
    "    import torchvision\n"
    "ModuleNotFoundError: No module named 'torchvision'\n"
)


@pytest.mark.parametrize("kind", ["inspect source", "failed inspect source"])
def test_only_a_working_inspection_given_stops_the_follow_up_that_runs_one(tmp_path, kind):
    """IMPORT_ERROR's follow-up runs `nvflare agent inspect source`; a saved inspection that failed supplies no
    findings, so the follow-up stays."""
    given = INPUTS[kind](tmp_path)
    log = write(tmp_path / "stdout.txt", IMPORT_FAILURE)
    report = report_of([*given, log], mode="simulation")
    assert report["matched_pattern"] == "IMPORT_ERROR"
    asked = any("agent inspect source" in command for command in report["follow_up_commands"])
    assert asked == (kind == "failed inspect source")


def test_a_command_collect_ran_that_failed_is_still_missing():
    """The rule is about given sources: a --collect command that answered an error gave no result."""
    item = {
        "command": ["nvflare", "--format", "json", "job", "logs", "abc123"],
        "envelope": json.loads(envelope("error", error_code="CONNECTION_FAILED", message="x")),
        "error": "CONNECTION_FAILED: x",
        "reason": "CONNECTION_FAILED",
    }
    found = ev.evidence_from_envelopes([item])
    report = validated(diagnose(found, CATALOG, mode="auto", job_id=None))
    assert [s["status"] for s in report["evidence_sources"]] == ["unavailable"]
    assert "nvflare --format json job logs abc123: unavailable (CONNECTION_FAILED)" in report["missing_evidence"]


# --- handled_blocks: linear, same answers ----------------------------------------------------------------------------


class CountedName(str):
    """An exception class name that counts the comparisons and hashes made on it."""

    work = 0

    def __eq__(self, other):
        CountedName.work += 1
        return str.__eq__(self, other)

    def __ne__(self, other):
        CountedName.work += 1
        return str.__ne__(self, other)

    def __hash__(self):
        CountedName.work += 1
        return str.__hash__(self)


def _chain_text(classes: list[str], script: str = "/job/client.py") -> list[Line]:
    """One chained failure: a traceback per class, each raised through `script`, joined by Python's sentence."""
    text: list[str] = []
    for number, name in enumerate(classes):
        if number:
            text += ["", "During handling of the above exception, another exception occurred:", ""]
        text += ["Traceback (most recent call last):", f'  File "{script}", line {number + 1}, in step', "    x()"]
        text.append(f"{name}: failed {number}")
    return [Line("stdout.txt", None, n + 1, t) for n, t in enumerate(text)]


def _work(count: int) -> int:
    lines = _chain_text([f"Step{n}Error" for n in range(count)])
    blocks = find_tracebacks(lines)
    assert len(blocks) == count and len(chains(blocks, lines)) == 1
    for block in blocks:
        block.exc_type = CountedName(block.exc_type)
    CountedName.work = 0
    assert handled.handled_blocks(blocks, lines) == []  # one chain: the failure going on, nothing handled
    return CountedName.work


def test_handled_blocks_work_grows_linearly_with_the_classes_of_one_chain():
    small, large = _work(500), _work(2000)
    assert large <= 5 * small, f"4x the classes cost {large / small:.1f}x the work"
    assert large <= 20 * 2000


def _reference(blocks, lines) -> list:
    """The rule's plain definition, pair by pair."""
    chain_of = {id(b): n for n, chain in enumerate(chains(blocks, lines)) for b in chain}
    users = [b for b in blocks if b.user_frame is not None and b.exc_type is not None]

    def files(block):
        return {path for path, _, _ in block.frames if is_user_file(path)}

    return [
        block
        for i, block in enumerate(users)
        if block.end is not None
        and not handled._ended_worker(block)
        and any(
            later.source == block.source
            and files(later) & files(block)
            and later.exc_type != block.exc_type
            and chain_of[id(later)] != chain_of[id(block)]
            for later in users[i + 1 :]
        )
    ]


@pytest.mark.parametrize("seed", range(40))
def test_handled_blocks_answers_the_rules_definition(seed):
    rng = random.Random(seed)
    text: list[str] = []
    for number in range(rng.randint(2, 14)):
        chained = text and rng.random() < 0.4
        text += ["", "The above exception was the direct cause of the following exception:", ""] if chained else []
        text += [] if chained else [log_line("Runner", "INFO", f"step {number}")]
        script = rng.choice(["/job/client.py", "/job/train.py", "/usr/lib/python3.11/threading.py"])
        text += ["Traceback (most recent call last):", f'  File "{script}", line {number + 1}, in run', "    x()"]
        if rng.random() < 0.5:
            text += ['  File "/job/model.py", line 9, in fit', "    y()"]
        text.append(f"{rng.choice(['ValueError', 'KeyError', 'IndexError'])}: step {number}")
    for source in ("a.txt", "b.txt"):
        lines = [Line(source, None, n + 1, t) for n, t in enumerate(text)]
        blocks = find_tracebacks(lines)
        assert handled.handled_blocks(blocks, lines) == _reference(blocks, lines)


# --- a working folder is told from a program by what the call shows ------------------------------------------------


def run_script(tmp_path: Path, code: str) -> Path:
    """Run `code` as tmp_path/client.py with real Python; its stderr as a log file."""
    script = tmp_path / "client.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "_execute_child" in done.stderr  # a real traceback of Python's launcher
    return write(tmp_path / "stdout.txt", done.stderr)


MISSING = "/h16dx/no/such/site-1/data"
PROGRAM_SAID = "program the run tried to start"


@pytest.mark.parametrize(
    "call",
    [
        "subprocess.run('ls -l', shell=True, cwd=data_dir)",
        "subprocess.Popen(['ls'], executable='/bin/ls', cwd=data_dir).wait()",
        "subprocess.check_call(('ls', '-l'), cwd=data_dir)",
    ],
    ids=["shell", "executable", "tuple"],
)
def test_a_missing_working_folder_beside_a_shown_program_is_not_a_missing_program(tmp_path, call):
    log = run_script(tmp_path, f"import subprocess\ndata_dir = {MISSING!r}\n{call}\n")
    assert f"'{MISSING}'" in log.read_text()
    report = report_of([log], mode="simulation")
    assert PROGRAM_SAID not in report["likely_cause"]


@pytest.mark.parametrize(
    "call",
    [
        "subprocess.run(['h16dx-no-such-tool'], cwd=work)",
        "subprocess.run(command, cwd=work)",  # neither value shown: Python names the program, as before
        "subprocess.run(['ignored'], executable='/h16dx/no/such/tool', cwd=work)",
    ],
    ids=["literal", "both in variables", "executable"],
)
def test_a_missing_program_beside_a_working_folder_stays_a_program(tmp_path, call):
    code = f"import subprocess\nwork = {str(tmp_path)!r}\ncommand = ['h16dx-no-such-tool']\n{call}\n"
    report = report_of([run_script(tmp_path, code)], mode="simulation")
    assert PROGRAM_SAID in report["likely_cause"]
    assert report["matched_pattern"] != "DATA_PATH_NOT_FOUND"


def test_a_windows_bad_working_folder_is_not_a_missing_program(tmp_path):
    """CreateProcess answers ERROR_DIRECTORY (267) for a working folder that is not one; Python raises
    NotADirectoryError without a name."""
    log = write(
        tmp_path / "stdout.txt",
        "Traceback (most recent call last):\n"
        '  File "C:\\job\\client.py", line 3, in <module>\n'
        "    subprocess.run(cmd, cwd=data_dir)\n"
        '  File "C:\\Python311\\Lib\\subprocess.py", line 1538, in _execute_child\n'
        "    hp, ht, pid, tid = _winapi.CreateProcess(executable, args,\n"
        "NotADirectoryError: [WinError 267] The directory name is invalid\n",
    )
    report = report_of([log], mode="simulation")
    assert PROGRAM_SAID not in report["likely_cause"]
