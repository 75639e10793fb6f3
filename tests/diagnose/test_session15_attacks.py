"""Attacks on session 15's cap for progress after an error (calibration._went_on), in both directions.

Promises guarded:
- NVFLARE writes each ERROR record to log.txt and again to error_log.txt (which holds no INFO record): the copy in
  error_log.txt does not hide the progress log.txt shows after the same record;
- progress counts only as the erring participant's and run's: a record naming another participant (`identity=`,
  unless its `peer=` is the erring one: the server accepting its contribution) or another run (`run=<id>`, or
  another run than the job being diagnosed) is not the erring one going on (the simulator's console and a POC's
  combined console hold every participant's records in one file);
- progress is NVFLARE's record of work completed: a line NVFLARE echoes from an external script (SubprocessLauncher,
  ExternalProcessBackend) is the script's print; `aggregating 0 update(s)` and `task result sent to server` (sent
  for an error reply too) are no work completed;
- an identical record of another site is no copy; NVFLARE's echo of a script's peer-loss words supports nothing;
- limits that hold: errors repeated every round and ending the file stay high; the same participant's progress
  in a mixed file, and progress with no participant named (the concise console), still cap;
- printed job ids: a record of the root or __main__ logger (the job's own `logging`) is no record of NVFLARE's
  logger; PocEnv's own records (NVFLARE's words) say production beside the recipe's printed `Submitted
  job ... with ID:`; a record of NVFLARE's logger under a line wrapper (journal, kubectl, docker compose, ANSI
  colours) keeps its run id a strong hint (the reader peels the wrapper first).

Message texts are NVFLARE 2.9's own (private/fed/client/client_runner.py, app_common/workflows/
scatter_and_gather.py, app_common/aggregators/dxo_aggregator.py, apis/impl/wf_comm_server.py,
fuel/f3/drivers/grpc_driver.py, recipe/poc_env.py; the record layout of fuel/utils/log_config.json: `<time> -
<logger> - <LEVEL> - [<fl_ctx>] - <message>`, the fl_ctx part absent in the concise console); times, ids and paths
are the test's.
"""

from __future__ import annotations

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.pipeline import diagnose
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated
from test_calibration_holes import OOM, OTHER_RUN, PEER, THIS_RUN, record, run, verdict
from test_session15_lifecycle_and_job_ids import SIMULATION

CATALOG = cat.load_catalog()
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}

SERVER_CTX = f"[identity=server, run={THIS_RUN}, wf=scatter_and_gather]"
REFUSED = "Connection closed due to error: ConnectionRefusedError: [Errno 111] Connection refused"


def ctx(site: str = "site-1", run_id: str = THIS_RUN) -> str:
    return f"[identity={site}, run={run_id}, peer=server, peer_run={run_id}, task_name=train, task_id=51aa]"


def oom(site: str = "site-1", at: str = "21:14:59,000") -> str:
    """A participant's ERROR record naming it (no traceback under it)."""
    return record("ERROR", "ClientRunner", f"{ctx(site)} - {OOM}", at=at)


def refused(at: str) -> str:
    return record("ERROR", "GrpcDriver", REFUSED, at=at)


def client_round(site: str = "site-1", start: int = 10, run_id: str = THIS_RUN) -> list[str]:
    """A participant's healthy round in NVFLARE 2.9's words, from second `start` of 21:15."""
    words = ["got task assignment: name=train, id=51ab", "finished processing task", "task result sent to server"]
    return [
        record("INFO", "ClientRunner", f"{ctx(site, run_id)} - {w}", at=f"21:15:{start + i:02},000")
        for i, w in enumerate(words)
    ]


# -- error_log.txt holds a copy of each ERROR record, and nothing after it ------------------------------------------


@pytest.mark.parametrize(
    "errors",
    [[refused("21:14:58,000"), refused("21:14:59,000")], [oom()]],
    ids=["refused-twice", "oom-record"],
)
def test_the_error_log_copy_does_not_hide_the_progress_after_the_record(errors):
    done = run({"site-1/log.txt": [*errors, *client_round()], "site-1/error_log.txt": errors})
    alone = run({"site-1/log.txt": [*errors, *client_round()]})
    assert verdict(done) == verdict(alone)
    assert done["confidence"] == "medium"


def test_an_error_log_copy_of_errors_after_the_last_progress_stays_high():
    errors = [refused("21:15:40,000"), refused("21:15:50,000")]
    done = run({"site-1/log.txt": [*client_round(), *errors], "site-1/error_log.txt": errors})
    assert verdict(done) == (PEER, "high")


# -- progress of another participant or another run in the same file -------------------------------------------------


def test_other_participants_progress_in_a_shared_console_does_not_cap_a_sites_failure():
    """The simulator's console: site-1 fails, site-2 and the server go on (as in separate files, which stay high)."""
    server = record("INFO", "ScatterAndGather", f"{SERVER_CTX} - Round 0 finished.", at="21:15:30,000")
    console = [oom(), *client_round("site-2"), server]
    assert verdict(run({"console.txt": console}, "simulation")) == ("CUDA_OOM", "high")
    apart = run({"site-1/log.txt": [oom()], "site-2/log.txt": client_round("site-2")}, "simulation")
    assert verdict(apart) == ("CUDA_OOM", "high")


def test_the_same_participants_progress_in_a_shared_console_still_caps():
    console = [oom(), *client_round("site-2"), *client_round("site-1", start=20)]
    assert verdict(run({"console.txt": console}, "simulation")) == ("CUDA_OOM", "medium")


def test_progress_naming_no_participant_still_caps_in_the_concise_console():
    """The concise console drops the fl_ctx: whose progress it is cannot be told, so it counts (a limit)."""
    concise = "2026-12-06 21:15:30,000 - INFO - Round 0 finished."
    assert verdict(run({"console.txt": [oom(), concise]}, "simulation")) == ("CUDA_OOM", "medium")


@pytest.mark.parametrize("job_id", [None, THIS_RUN], ids=["no-job-id", "job-id"])
def test_a_later_runs_progress_in_the_same_log_does_not_cap(job_id):
    """The site's log holds the failed run, then the next job (the user's re-run) going well."""
    lines = [oom(), *client_round(run_id=OTHER_RUN)]
    assert verdict(run({"site-1/log.txt": lines}, job_id=job_id)) == ("CUDA_OOM", "high")


def test_another_runs_progress_does_not_cap_the_diagnosed_jobs_unnamed_errors():
    lines = [refused("21:14:58,000"), refused("21:14:59,000"), *client_round(run_id=OTHER_RUN)]
    assert verdict(run({"site-1/log.txt": lines}, job_id=THIS_RUN)) == (PEER, "high")
    assert verdict(run({"site-1/log.txt": lines}, job_id=OTHER_RUN))[1] != "high"


# -- progress words that are not NVFLARE's record of completed work -------------------------------------------------

NOT_PROGRESS = {
    "script-echo-2.4": record("INFO", "SubprocessLauncher", "Round 1 finished."),
    "script-echo-full-name": record(
        "INFO", "nvflare.app_common.launchers.subprocess_launcher.SubprocessLauncher", "finished processing task"
    ),
    "script-echo-2.9": record("INFO", "ExternalProcessBackend", "Round 1 finished."),
    "zero-updates": record("INFO", "DXOAggregator", f"{SERVER_CTX} - aggregating 0 update(s) at round 1"),
}


@pytest.mark.parametrize("after", NOT_PROGRESS.values(), ids=NOT_PROGRESS)
def test_words_that_are_no_completed_work_do_not_cap(after):
    lines = [refused("21:14:58,000"), refused("21:14:59,000"), after.replace("21:15:03,120", "21:15:30,000")]
    assert verdict(run({"server/log.txt": lines})) == (PEER, "high")


def test_the_error_reply_sent_after_a_failed_task_is_no_completed_work():
    """ClientRunner sends the executor's error reply (EXECUTION_EXCEPTION) and logs `task result sent to server`
    for it as for a result; the server then ends the run."""

    def client(level, words, at):
        return record(level, "ClientRunner", f"{ctx()} - {words}", at=at)

    lines = [
        client("INFO", "got task assignment: name=train, id=51aa", "21:15:00,000"),
        client("ERROR", f"Processing error from executor train_exec: {OOM}", "21:15:01,000"),
        client("INFO", "start to send task result to server", "21:15:02,000"),
        client("INFO", "task result sent to server", "21:15:02,100"),
        client("INFO", "server asked to end the run", "21:15:04,000"),
    ]
    assert verdict(run({"site-1/log.txt": lines})) == ("CUDA_OOM", "high")


def test_one_update_aggregated_is_completed_work():
    after = record("INFO", "DXOAggregator", f"{SERVER_CTX} - aggregating 1 update(s) at round 1", at="21:15:30,000")
    lines = [refused("21:14:58,000"), refused("21:14:59,000"), after]
    assert verdict(run({"server/log.txt": lines})) == (PEER, "medium")


# -- a failure repeated every round ---------------------------------------------------------------------------------


def test_an_error_every_round_ending_the_log_stays_high():
    lines = []
    for second in (0, 20, 40):
        lines += [oom(at=f"21:15:{second:02},000"), *client_round(start=second + 1)]
    lines.append(oom(at="21:15:59,000"))
    assert verdict(run({"site-1/log.txt": lines})) == ("CUDA_OOM", "high")


def test_an_error_every_round_the_site_recovers_from_is_not_high():
    lines = []
    for second in (0, 20, 40):
        lines += [oom(at=f"21:15:{second:02},000"), *client_round(start=second + 1)]
    assert verdict(run({"site-1/log.txt": lines})) == ("CUDA_OOM", "medium")


# -- printed job ids: PocEnv's records, and NVFLARE's records under line wrappers -----------------------------------


def test_pocenvs_own_records_beside_the_printed_job_id_say_production():
    """The recipe's `Submitted job '<name>' with ID: <id>` is a print (weak); PocEnv's records are NVFLARE's."""
    for starting in (
        record("INFO", "PocEnv", "Preparing and starting fresh POC services...", at="21:15:00,000"),
        "2026-12-06 21:15:09,000 - INFO - POC services started successfully",
    ):
        console = ["$ python job.py", starting, f"Submitted job 'hello-pt' with ID: {OTHER_RUN}", "RuntimeError: boom"]
        done = run({"console.txt": console}, mode="auto")
        assert done["runtime_mode"] == "production", done["mode_reason"]


JOB_PY = [
    "Traceback (most recent call last):",
    '  File "/home/a/fl/job.py", line 40, in <module>',
    "RuntimeError: boom",
]
ASSIGNED = record("INFO", "ClientRunner", f"{ctx(run_id=OTHER_RUN)} - got task assignment: name=train, id=51aa")
WRAPPERS = {
    "journal": "Dec 06 21:15:03 host1 python3[1234]: {}",
    "kubectl-timestamps": "2026-12-06T21:15:03.123456789Z {}",
    "docker-compose": "site-1-1  | {}",
    "ansi-colour": "\x1b[36m{}\x1b[0m",
}


@pytest.mark.parametrize("wrapper", WRAPPERS.values(), ids=WRAPPERS)
def test_nvflares_record_under_a_line_wrapper_keeps_its_run_id_a_strong_hint(tmp_path, wrapper):
    """The reader peels the wrapper before the record check: a weak `job.py` frame does not outweigh the run id."""
    path = tmp_path / "site.log"
    path.write_text("".join(wrapper.format(text) + "\n" for text in [ASSIGNED] * 3 + JOB_PY), encoding="utf-8")
    evidence = collect_evidence([str(path)], job_id=None, **LIMITS)
    done = validated(diagnose(evidence, CATALOG))
    assert done["runtime_mode"] == "production", done["mode_reason"]
    assert "run id is a UUID (deployed job)" in done["mode_reason"]
    assert "not a record of NVFLARE's logger" not in done["mode_reason"]


def test_another_sites_identical_record_is_no_copy_that_went_on():
    """Two sites log the same words in the same millisecond: site-1 goes on, site-2's log ends with the error."""
    errors = [refused("21:14:58,000"), refused("21:14:59,000")]
    done = run({"site-1/log.txt": [*errors, *client_round()], "site-2/log.txt": errors})
    assert verdict(done) == (PEER, "high")


def test_nvflares_echo_of_a_scripts_peer_loss_words_supports_nothing():
    """A script's print of `... is deemed disconnected` is not NVFLARE's record that a peer is gone."""
    echo = record("INFO", "SubprocessLauncher", "Client site-2 is deemed disconnected!", at="21:15:30,000")
    assert verdict(run({"server/log.txt": [refused("21:14:59,000"), echo]})) == (PEER, "medium")
    own = record("ERROR", "WFCommServer", "Client site-2 is deemed disconnected!", at="21:15:30,000")
    assert verdict(run({"server/log.txt": [refused("21:14:59,000"), own]})) == (PEER, "high")


@pytest.mark.parametrize("logger", ["root", "__main__"])
def test_a_job_id_the_jobs_own_logger_writes_does_not_outweigh_a_simulations_hints(logger):
    """NVFLARE's log config formats the job's `logging.info(...)` like its own records; NVFLARE never logs to
    the root or __main__ logger."""
    for words in (f"Job {OTHER_RUN} started", f"tracking run={OTHER_RUN}"):
        done = run({"console.txt": [*SIMULATION, record("INFO", logger, words)]}, mode="auto")
        assert done["runtime_mode"] == "simulation", done["mode_reason"]
        alone = run({"console.txt": [record("INFO", logger, words), "RuntimeError: boom"]}, mode="auto")
        assert alone["runtime_mode"] == "production", alone["mode_reason"]


def test_the_servers_record_of_the_sites_accepted_contribution_caps_the_sites_error():
    """The server accepts site-1's contribution after site-1's error: its fl_ctx names site-1 as the peer."""
    accepted = record(
        "INFO",
        "ScatterAndGather",
        f"[identity=server, run={THIS_RUN}, wf=scatter_and_gather, peer=site-1, peer_run={THIS_RUN}, task_name=train]"
        " - Contribution from site-1 ACCEPTED by the aggregator at round 1.",
        at="21:15:30,000",
    )
    assert verdict(run({"console.txt": [oom(), accepted]}, "simulation")) == ("CUDA_OOM", "medium")
    other = accepted.replace("peer=site-1", "peer=site-2").replace("from site-1", "from site-2")
    assert verdict(run({"console.txt": [oom(), other]}, "simulation")) == ("CUDA_OOM", "high")
