"""Holes left by session 11's confidence calibration, closed (session 14), in both directions.

Promises guarded:
- one ERROR record of NVFLARE's logger whose only hit is a phrase many libraries print (the OS's errno text, a
  Python exception class, gRPC's status words: the catalog's `generic` signals) is at most medium when nothing else
  supports the row; a second record, a failed job status, NVFLARE's peer-loss lines, a traceback or NVFLARE's own
  words on the same line keep it high (NVFLARE's ordinary shutdown lines end every run and do not: session 15);
- several consecutive records pasted into one file, all dated outside the span of the other files' records, are
  another run's excerpt (capped like one pasted record); a file whose records overlap the others' span is not;
- a `python x.py` line makes x.py the job's script only where it shows this job's run: a command line the user ran
  (a prompt, or the line is the command), the script setting of NVFLARE's launcher (`"script": "python3 -u
  custom/x.py"`), `script=` / `train_script=`; not prose, docs or another tool's log mentioning the command;
- the job-id shapes NVFLARE 2.4-2.8 print (`run (<id>)`, `job (<id>)`, `with ID: <id>`, `(ID: <id>)`) hint a
  running system and name the record's run, like 2.9's.

Message texts are NVFLARE's own (2.4-2.9 source: fuel/f3/drivers/grpc_driver.py, private/fed/server/job_runner.py,
private/fed/client/client_executor.py, recipe/session_mgr.py); paths, times and ids are written for the test.
"""

from __future__ import annotations

import builtins
import errno
import os

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match.jobframes import named_scripts
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TB = "Traceback (most recent call last):"
VALUE = "ValueError: operands could not be broadcast together with shapes (3,) (4,)"
OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
THIS_RUN = "8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11"
OTHER_RUN = "5f0c6a2e-8d1b-4c3a-9e7f-2b4d6a8c0e13"
PEER = "PEER_GONE_OR_TIMEOUT"


def run(files: dict[str, list[str]], mode="production", job_id=None, job_status=None):
    """Diagnose text files given as {source name: lines}; a name `site-1/...` or `server/...` is that site's."""
    sources, lines = [], []
    for name, texts in files.items():
        site = name.split("/")[0] if name.startswith(("site-", "server/")) else None
        sources.append(Source(name, "log", site, "complete", 100))
        lines += [Line(name, site, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=sources, lines=lines)
    return validated(diagnose(evidence, CATALOG, mode=mode, job_id=job_id, job_status=job_status))


def verdict(done):
    return done["matched_pattern"], done["confidence"]


def record(level, logger, message, at="21:15:03,120", day="2026-12-06"):
    return f"{day} {at} - {logger} - {level} - {message}"


def healthy(count=4, day="2026-12-06"):
    """INFO records of this run's client (the run's own log around the error)."""
    return [
        record(
            "INFO", "ClientRunner", f"[identity=site-1, run={THIS_RUN}] - finished task train", f"21:15:0{i},000", day
        )
        for i in range(count)
    ]


# -- 1. one record with a phrase many libraries print ---------------------------------------------------------------

GENERIC_RECORDS = {
    "refused": record(
        "ERROR", "GrpcDriver", "Connection closed due to error: ConnectionRefusedError: [Errno 111] Connection refused"
    ),
    "reset": record(
        "ERROR", "ConnManager", "Connection 'CN00002' closed due to error: [Errno 104] Connection reset by peer"
    ),
    "deadline": record(
        "ERROR",
        "CoreCell",
        "exception sending request: <_InactiveRpcError of RPC that terminated with: "
        'status = StatusCode.DEADLINE_EXCEEDED details = "Deadline Exceeded">',
    ),
    "unavailable": record(
        "ERROR",
        "GrpcDriver",
        'Connection closed due to error: status = StatusCode.UNAVAILABLE details = "failed to connect to all '
        'addresses; last error: UNKNOWN: ipv4:10.0.0.5:8002: Failed to connect to remote host: Connection refused"',
    ),
}


@pytest.mark.parametrize("line", GENERIC_RECORDS.values(), ids=GENERIC_RECORDS)
def test_one_error_record_with_a_generic_connection_phrase_is_not_high(line):
    done = run({"site-1/log.txt": [*healthy(), line]})
    assert verdict(done) == (PEER, "medium"), done["other_candidates"]


SPECIFIC_RECORDS = {
    "get-task-2.4": record(
        "WARNING", "Communicator", "Failed to get_task from example_project server. Will try it again."
    ),
    "task-check": record(
        "ERROR",
        "ClientRunner",
        f"[identity=site-1, run={THIS_RUN}] - failed task_check with server: COMMUNICATION_ERROR",
    ),
    "stalled-stream": record("ERROR", "ByteStreamer", "TxTask(T12) ACK made no progress for 60.0 seconds"),
    "nvflare-words-and-a-generic-phrase": record(
        "ERROR",
        "ClientRunner",
        f"[identity=site-1, run={THIS_RUN}] - failed task_check with server: COMMUNICATION_ERROR "
        "(ConnectionRefusedError: [Errno 111] Connection refused)",
    ),
}


@pytest.mark.parametrize("line", SPECIFIC_RECORDS.values(), ids=SPECIFIC_RECORDS)
def test_one_error_record_in_nvflares_own_words_stays_high(line):
    assert verdict(run({"site-1/log.txt": [*healthy(), line]})) == (PEER, "high")


def test_a_second_record_corroborates_the_generic_phrase():
    first = GENERIC_RECORDS["refused"]
    second = record("ERROR", "GrpcDriver", first.split(" - ERROR - ")[1], at="21:15:33,120")
    assert verdict(run({"site-1/log.txt": [*healthy(), first, second]})) == (PEER, "high")


def test_a_failed_job_status_corroborates_the_generic_phrase():
    done = run({"site-1/log.txt": [*healthy(), GENERIC_RECORDS["reset"]]}, job_status="FINISHED:EXECUTION_EXCEPTION")
    assert verdict(done) == (PEER, "high")


@pytest.mark.parametrize(
    "gone",
    [
        record("ERROR", "FedServer", "Client site-2 is deemed disconnected!", at="21:15:05,000"),
        record("INFO", "WFCommServer", "client ['site-2'] is dead - set task train to TIMEOUT", at="21:15:05,000"),
        record("WARNING", "ServerEngine", f"notified SJ of dead-job: job_id='{THIS_RUN}'", at="21:15:05,000"),
    ],
    ids=["client-deemed-disconnected", "client-dead-task-timeout", "dead-job"],
)
def test_nvflares_peer_loss_lines_corroborate_the_generic_phrase(gone):
    assert verdict(run({"site-1/log.txt": [*healthy(), GENERIC_RECORDS["refused"], gone]})) == (PEER, "high")


@pytest.mark.parametrize(
    "shutdown",
    [
        record("INFO", "FederatedServer", "FL server shutdown.", at="21:15:01,000"),
        record("INFO", "FederatedClient", "Client shutdown...", at="21:15:05,000"),
        record("INFO", "FederatedClient", "Shutting down client run: site-1", at="21:15:05,000"),
        record("INFO", "FederatedServer", "shutting down server", at="21:15:05,000"),
    ],
    ids=["server-shutdown", "client-shutdown", "client-run-shutdown", "shutting-down-server"],
)
def test_nvflares_ordinary_shutdown_lines_do_not_corroborate_the_generic_phrase(shutdown):
    """Every run ends with them, failed or not (a client's connection refused as the server stops is common)."""
    assert verdict(run({"site-1/log.txt": [*healthy(), GENERIC_RECORDS["refused"], shutdown]})) == (PEER, "medium")


def test_a_traceback_under_the_record_corroborates_the_generic_phrase():
    grpc = "/usr/local/lib/python3.10/dist-packages/nvflare/fuel/f3/drivers/grpc_driver.py"
    lines = [
        *healthy(),
        record("ERROR", "GrpcDriver", "Connection closed due to error:"),
        TB,
        f'  File "{grpc}", line 140, in read_loop',
        "    for f in self.oq:",
        "ConnectionRefusedError: [Errno 111] Connection refused",
    ]
    assert verdict(run({"site-1/log.txt": lines})) == (PEER, "high")


def test_catalog_generic_signals_are_the_ones_matching_os_and_python_words():
    """Every PEER_GONE signal matching the OS's words (each errno's text and name, as Python formats them) or a
    Python exception class, or gRPC's status words, is `generic`; NVFLARE's own return codes and messages are
    matched by signals that are not."""
    row = CATALOG.row(PEER)
    errnos = [f"[Errno {n}] {os.strerror(n)}" for n in errno.errorcode] + list(errno.errorcode.values())
    classes = [name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, OSError)]
    grpc = ["StatusCode.DEADLINE_EXCEEDED", "StatusCode.UNAVAILABLE", "Deadline Exceeded", "grpc_status:14"]
    matched = 0
    for words in errnos + classes + grpc:
        matching = [sig for sig in row.signals if sig.regex.search(words)]
        assert all(sig.generic for sig in matching), words
        matched += bool(matching)
    assert matched >= 12  # the rule reads these words at all (refused, reset, broken pipe, timed out, ...)
    for words in ("TARGET_UNREACHABLE", "PEER_GONE", "failed task_check: COMMUNICATION_ERROR"):
        assert not any(sig.generic for sig in row.signals if sig.regex.search(words)), words


# -- 2. an excerpt of several records pasted from another run -----------------------------------------------------

PASTED_EXCERPT = [
    record("INFO", "ClientRunner", "[identity=site-1, run=r1] - got task train", "09:12:40,003", "2025-03-02"),
    record("INFO", "ClientRunner", "[identity=site-1, run=r1] - invoking execution", "09:12:40,010", "2025-03-02"),
    record("ERROR", "ClientRunner", f"[identity=site-1, run=r1] - {OOM}", "09:12:44,120", "2025-03-02"),
    record("INFO", "ClientRunner", "[identity=site-1, run=r1] - aborting task", "09:12:44,130", "2025-03-02"),
]


@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_several_records_pasted_from_another_day_are_not_high(mode):
    done = run({"site-1/log.txt": healthy(), "notes.txt": PASTED_EXCERPT}, mode)
    assert verdict(done) == ("CUDA_OOM", "medium")


def test_a_pasted_excerpt_holding_a_traceback_is_not_high():
    excerpt = [
        PASTED_EXCERPT[1],
        TB,
        '  File "/tmp/nvflare/simulation/m/site-1/simulate_job/app_site-1/custom/client.py", line 41, in main',
        "    x = torch.ones(10**12, device='cuda')",
        OOM,
        PASTED_EXCERPT[3],
    ]
    done = run({"site-1/log.txt": healthy(), "notes.txt": excerpt}, "simulation")
    assert verdict(done) == ("CUDA_OOM", "medium")


def test_several_records_of_the_same_hours_as_the_other_logs_stay_high():
    same_day = [line.replace("2025-03-02 09:12", "2026-12-06 21:15") for line in PASTED_EXCERPT]
    done = run({"site-1/log.txt": healthy(), "notes.txt": same_day}, "simulation")
    assert verdict(done) == ("CUDA_OOM", "high")


def test_a_site_log_whose_span_overlaps_the_servers_stays_high():
    """The site's own log starts hours before the error the server's log ends near: one run, not an excerpt."""
    site = [
        record("INFO", "ClientRunner", "[identity=site-1] - got task train", "18:00:00,000"),
        record("ERROR", "ClientRunner", f"[identity=site-1] - {OOM}", "23:30:00,000"),
    ]
    server = [record("INFO", "ServerRunner", "round 3 started", "19:00:00,000")]
    done = run({"site-1/log.txt": site, "server/log.txt": server}, "simulation")
    assert verdict(done) == ("CUDA_OOM", "high")


# -- 3. which `python x.py` lines name the job's script --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "To reproduce, run python train.py with --epochs 1 on a fresh clone.",
        "2026-12-06 21:15:03,120 - pre-commit - INFO - hook calls python train.py --check",
        "See README: `python train.py --data /data` trains the model locally.",
        "#   python train.py   (example usage in the docstring of the tool)",
    ],
    ids=["prose", "another-tool-log", "docs-inline", "comment"],
)
def test_a_line_merely_mentioning_python_x_py_names_no_script(text):
    assert named_scripts([text]) == frozenset()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$ python3 -u train.py --epochs 2", "train.py"),
        ("(fl) user@host:~/fl$ python train.py", "train.py"),
        ("python train.py --epochs 2", "train.py"),
        (">>> !python train.py", "train.py"),
        ("CUDA_VISIBLE_DEVICES=0 /opt/venv/bin/python3 custom/train.py", "train.py"),
        ("+ cd /work/fl && python train.py --epochs 2", "train.py"),
        ('"args": {"script": "python3 -u custom/train.py --epochs 2", "launch_once": true}', "train.py"),
        ('recipe = FedAvgRecipe(train_script="src/train.py")', "train.py"),
    ],
    ids=[
        "prompt",
        "shell-prompt",
        "bare-command",
        "notebook",
        "env-and-path",
        "shell-trace",
        "launcher",
        "train-script",
    ],
)
def test_a_command_the_user_ran_or_nvflare_launched_names_the_script(text, expected):
    assert named_scripts([text]) == {expected}


def test_a_library_frame_named_only_by_prose_is_not_the_jobs_code():
    frames = [TB, '  File "/opt/mylibs/train.py", line 12, in load', "    return reader(path)", VALUE]
    mentioned = run({"console.txt": ["Tip: run python train.py to try the library alone.", *frames]}, "simulation")
    ran = run({"console.txt": ["$ python train.py", *frames]}, "simulation")
    assert verdict(mentioned) == ("USER_CODE_EXCEPTION", "medium")
    assert verdict(ran) == ("USER_CODE_EXCEPTION", "high")


# -- 4. job-id shapes of NVFLARE 2.4-2.8 -------------------------------------------------------------------------

OLD_JOB_ID_LINES = {
    "client-executor": f"2026-12-06 21:15:03,120 - INFO - run ({OTHER_RUN}): child worker process finished with RC 1",
    "abort-job": f"2026-12-06 21:15:03,120 - INFO - Try to abort job ({OTHER_RUN}) on clients ...",
    "session-mgr": f"Submitted job 'hello-numpy' with ID: {OTHER_RUN}",
    "start-job": f"RuntimeError: start job ({OTHER_RUN}): required client site-2 timed out",
}


@pytest.mark.parametrize("line", OLD_JOB_ID_LINES.values(), ids=OLD_JOB_ID_LINES)
def test_the_job_id_shapes_of_older_releases_hint_a_running_system(line):
    done = run({"console.txt": [line, "RuntimeError: the training loop stopped"]}, mode="auto")
    assert done["runtime_mode"] == "production", done["mode_reason"]


@pytest.mark.parametrize(
    "message",
    [f"run ({OTHER_RUN}): {OOM}", f"Failed to abort run ({OTHER_RUN}) on the clients: {OOM}"],
    ids=["run-in-parentheses", "abort-run"],
)
def test_a_record_naming_another_run_in_an_older_shape_is_not_this_jobs(message):
    files = {"site-1/log.txt": [record("ERROR", "ClientExecutor", message, day="2026-01-01")]}
    assert verdict(run(files, job_id=THIS_RUN)) == ("CUDA_OOM", "medium")
    assert verdict(run(files, job_id=OTHER_RUN)) == ("CUDA_OOM", "high")


@pytest.mark.parametrize(
    "line",
    [
        f"2026-12-06 21:15:03,120 - INFO - loaded dataset shard ({OTHER_RUN})",
        f"wandb: run tracker job_id={OTHER_RUN} (offline)",
    ],
    ids=["a-uuid-in-parentheses", "tracker"],
)
def test_a_uuid_in_other_words_hints_no_running_system(line):
    done = run({"console.txt": [line, "RuntimeError: the training loop stopped"]}, mode="auto")
    assert done["runtime_mode"] == "ambiguous", done["mode_reason"]
