"""Watchdog, log watcher and progress parsing as pure logic with a fake clock."""

import io
import json
import os

import pytest
from autofl_core.trial import watchdog
from autofl_core.trial.progress import ProgressPrinter, ProgressTracker, RoundRecords
from autofl_core.trial.watchdog import LogWatcher, Watchdog

ROUND0 = "                                Round 0 started.                                "
SERVER_AGG = "2026-11-30 07:13:04,593 - FedAvg - INFO - [identity=simulator_server] - Aggregated {k}/{n} results"
BEST = "IntimeModelSelector - INFO - [identity=simulator_server] - new best validation metric at round 1: {v}"


def dog(total=None, no_progress=10.0):
    return Watchdog(started=0.0, total_timeout=total, no_progress_timeout=no_progress)


def test_total_timeout():
    watch = dog(total=5.0, no_progress=None)
    assert watch.check(4.9) is None
    assert "5s total timeout" in watch.check(5.0)


def test_no_progress_only_after_the_first_marker():
    watch = dog()
    watch.observe("loading modules, creating workspace", 1.0)
    assert watch.check(100.0) is None  # startup may be slow; only the total timeout applies
    watch.observe(ROUND0, 100.0)
    assert watch.check(109.9) is None
    reason = watch.check(110.0)
    assert reason.startswith("no progress: no new progress marker for 10s")


def test_progress_markers_reset_the_clock():
    watch = dog()
    for t, line in [(1, ROUND0), (8, "site=site-1 round=0 accuracy=0.2"), (15, "Finished FedAvg."), (22, "epoch 3")]:
        watch.observe(line, float(t))
    assert watch.check(31.0) is None
    assert watch.check(32.0) is not None


def test_partial_aggregation_that_does_not_advance_fires_despite_other_markers():
    watch = dog()
    watch.observe(ROUND0, 0.0)
    watch.observe(SERVER_AGG.format(k=1, n=2), 1.0)
    watch.observe("site=site-1 round=0 accuracy=0.3 sent result", 6.0)  # noise while site-2 hangs
    watch.observe(SERVER_AGG.format(k=1, n=2), 9.0)  # repeated, not advancing
    reason = watch.check(11.0)
    assert reason is not None and "partial aggregation did not advance" in reason


def test_advancing_aggregation_counts_as_progress():
    watch = dog()
    watch.observe(SERVER_AGG.format(k=1, n=2), 0.0)
    watch.observe(SERVER_AGG.format(k=2, n=2), 8.0)
    watch.observe("site=site-1 round=1 accuracy=0.3", 15.0)
    assert watch.check(24.0) is None


def test_stall_markers_fire_immediately():
    for marker in [
        "SimulatorClientRunner - ERROR - run_client_thread error: boom",
        "Failed to create connection to the child process in SimulatorClientRunner",
    ]:
        watch = dog(no_progress=None)
        watch.observe(marker, 1.0)
        assert watch.check(1.0).startswith("simulator stall")


def test_zero_disables_no_progress():
    watch = dog(no_progress=0)
    watch.observe(ROUND0, 0.0)
    assert watch.check(10_000.0) is None


def test_log_watcher_reads_only_appended_lines_at_a_low_rate(tmp_path):
    server = tmp_path / "job" / "server"
    server.mkdir(parents=True)
    log = server / "log.txt"
    log.write_text("a\nb\npart")
    watcher = LogWatcher(tmp_path, interval=2.0)
    assert watcher.poll(0.0) == ["a", "b"]
    with log.open("a") as handle:
        handle.write("ial\nc\n")
    assert watcher.poll(1.0) == []  # too early: no stat at all
    assert watcher.poll(2.0) == ["partial", "c"]
    assert watcher.poll(4.0) == []


def test_progress_tracker_parses_real_shapes():
    tracker = ProgressTracker("baseline", num_rounds=3, metric="accuracy")
    assert "starting" in tracker.render(0)
    tracker.feed(ROUND0)
    tracker.feed("2026-11-30 - INFO - site=site-2 round=0 accuracy=0.2750")
    tracker.feed(SERVER_AGG.format(k=1, n=2))
    line = tracker.render(75)
    assert line == "[autofl baseline] round 1/3 (1/2 aggregated) | 1:15 elapsed | site-2 accuracy=0.275"
    tracker.feed(BEST.format(v="0.915"))
    assert tracker.render(80).endswith("server best accuracy=0.915")
    tracker.feed("Finished FedAvg.")
    assert "finished 3/3 rounds" in tracker.render(90)


def test_progress_tracker_undoes_nvflare_negation_for_min_metrics():
    tracker = ProgressTracker("c1", num_rounds=3, metric="loss", mode="min")
    tracker.feed(BEST.format(v="-1.8795879269826816"))
    assert tracker.render(1).endswith("server best loss=1.87959")


def test_printer_writes_only_on_change_when_not_a_tty():
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer.show("a | 0:01", key=1)
    printer.show("a | 0:02", key=1)
    printer.show("b | 0:03", key=2)
    printer.close()
    assert stream.getvalue() == "a | 0:01\nb | 0:03\n"


def test_printer_says_when_a_line_would_be_written_so_it_is_built_only_then():
    printer = ProgressPrinter(io.StringIO())
    assert printer.wants(1)
    printer.show("a", key=1)
    assert not printer.wants(1) and printer.wants(2)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = ProgressPrinter(Tty())
    tty.show("a", key=1)
    assert tty.wants(1)  # a terminal redraws the elapsed time on every tick


def test_a_stall_line_says_stop_now_and_other_lines_do_not():
    watch = dog()
    assert watch.observe(ROUND0, 1.0) is False
    assert watch.observe("plain text", 2.0) is False
    assert watch.observe("SimulatorClientRunner - ERROR - run_client_thread error: boom", 3.0) is True


@pytest.mark.timeout(10)
def test_log_watcher_never_opens_a_fifo_named_log_txt(tmp_path):
    site = tmp_path / "job" / "site-1"
    site.mkdir(parents=True)
    os.mkfifo(site / "log.txt")
    (tmp_path / "job" / "server").mkdir()
    (tmp_path / "job" / "server" / "log.txt").write_text("Round 1 started\n")
    assert LogWatcher(tmp_path, interval=0.0).poll(1.0) == ["Round 1 started"]


# --- the value the ledger records, labelled (issue 22, point 4) ---------------------------------------


def _round_records(root, *records, job="job"):
    folder = root / job / "server" / "simulate_job" / "metrics"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "round_metrics.jsonl", "a") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def test_progress_shows_the_server_aggregate_once_it_exists(tmp_path):
    tracker = ProgressTracker("baseline", num_rounds=3, metric="accuracy", root=tmp_path)
    tracker.feed("2026-11-30 - INFO - site=site-1 round=0 accuracy=0.2850")
    assert tracker.render(1).endswith("site-1 accuracy=0.285")
    tracker.feed("IntimeModelSelector - INFO - [identity=simulator_server] - validation metric 0.93 from client site-2")
    assert tracker.render(2).endswith("site-2 accuracy=0.93")
    _round_records(
        tmp_path,
        {"round": 0, "aggregated_metrics": [{"name": "loss", "value": 2.0}, {"name": "accuracy", "value": 0.28}]},
    )
    assert tracker.render(3).endswith("server aggregated accuracy=0.28 (round 1, the value the ledger records)")
    _round_records(tmp_path, {"round": 2, "aggregated_metrics": [{"name": "accuracy", "value": 0.915}]})
    tracker.feed("2026-11-30 - INFO - site=site-1 round=2 accuracy=0.9000")
    line = tracker.render(4)
    assert line == (
        "[autofl baseline] round 3/3 | 0:04 elapsed | server aggregated accuracy=0.915 (round 3, the value the "
        "ledger records)"
    )


def test_progress_labels_a_site_value_it_cannot_place_and_reads_records_of_a_root_job(tmp_path):
    tracker = ProgressTracker("c", num_rounds=2, metric="accuracy", root=tmp_path)
    tracker.feed("TaskScriptRunner - INFO - round=0 accuracy=0.5")
    assert tracker.render(1).endswith("one site's accuracy=0.5")
    folder = tmp_path / "server" / "simulate_job" / "metrics"  # FedJob.simulator_run(root): no job folder
    folder.mkdir(parents=True)
    (folder / "round_metrics.jsonl").write_text(
        '{"round": 1, "aggregated_metrics": [{"name": "accuracy", "value": 0.6}]}\n'
    )
    assert tracker.render(2).endswith("server aggregated accuracy=0.6 (round 2, the value the ledger records)")


def test_round_records_are_read_incrementally_and_bad_lines_are_skipped(tmp_path):
    records = RoundRecords(tmp_path)
    assert records.poll() == []
    _round_records(tmp_path, {"round": 0, "aggregated_metrics": []})
    folder = tmp_path / "job" / "server" / "simulate_job" / "metrics"
    with open(folder / "round_metrics.jsonl", "a") as handle:
        handle.write("not json\n" + "[" * 100000 + "\n" + '{"round": 1, "aggreg')
    assert [r["round"] for r in records.poll()] == [0]
    with open(folder / "round_metrics.jsonl", "a") as handle:
        handle.write('ated_metrics": []}\n')
    assert [r["round"] for r in records.poll()] == [1]
    assert records.poll() == []


@pytest.mark.timeout(10)
def test_round_records_never_open_a_fifo(tmp_path):
    folder = tmp_path / "job" / "server" / "simulate_job" / "metrics"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "round_metrics.jsonl")
    tracker = ProgressTracker("c", num_rounds=2, metric="accuracy", root=tmp_path)
    assert tracker.render(1).endswith("starting | 0:01 elapsed")


SAMPLED = "FedAvg - INFO - [identity=simulator_server, run=simulate_job, wf=controller] - Sampled clients: {}"
ARRIVED = (
    "FedAvg - INFO - [identity=simulator_server, run=simulate_job, wf=controller, peer={}, peer_run=simulate_job, "
    "peer_rc=OK, task_name=train, task_id=0] - Aggregated {}/{} results"
)


def test_a_round_waiting_for_a_site_names_it_in_the_note_and_the_reason():
    """Every WAIT_NOTE_SECONDS of silence gives a note (the progress line shows it), and the no-progress reason
    names the sites the round still waits for, from NVFLARE's own `Sampled clients` and `peer=` lines."""
    dog = Watchdog(started=0.0, total_timeout=None, no_progress_timeout=240.0)
    dog.observe("Round 1 started.", 1.0)
    dog.observe(SAMPLED.format(["site-1", "site-2"]), 1.0)
    dog.observe(ARRIVED.format("site-1", 1, 2), 2.0)
    assert dog.waiting(20.0) is None
    assert dog.waiting(40.0) == (
        1,
        "no progress for 38s (round results 1/2, waiting for site-2's result; the trial ends at 240s)",
    )
    assert dog.waiting(70.0)[0] == 2  # a new note every 30 s
    assert dog.check(242.0) == (
        "no progress: partial aggregation did not advance for 240s, waiting for site-2's result "
        "(simulator no-progress timeout)"
    )
    dog.observe(ARRIVED.format("site-2", 2, 2), 243.0)
    assert dog.waiting(250.0) is None and dog.check(250.0) is None


def test_the_progress_line_of_a_quiet_trial_says_what_it_waits_for(tmp_path):
    from autofl_core.trial import execute, monitor

    stream = io.StringIO()
    spec = execute.TrialSpec(
        python="python",
        job_path=tmp_path / "job.py",
        workspace=tmp_path,
        run_dir=tmp_path / "run",
        trial_name="lr-b",
        metric_order=["accuracy"],
        num_rounds=3,
        progress_stream=stream,
    )
    hooks = monitor.Monitor(spec, tmp_path, started=0.0)
    for line in ("Round 1 started.", SAMPLED.format(["site-1", "site-2"]), ARRIVED.format("site-1", 1, 2)):
        hooks.on_line(line)
    hooks.watchdog._last_progress = 0.0  # as if these lines came at the start
    for now in (10.0, 31.0, 33.0, 35.0, 61.0):
        hooks.tick(now)
    hooks.close()  # the lines are written by the printer's own thread
    notes = [line for line in stream.getvalue().splitlines() if "no progress for" in line]
    assert [note.split("| no progress for ")[1].split("s ")[0] for note in notes] == ["31", "61"], notes
    assert all("waiting for site-2's result" in note for note in notes)


def test_a_progress_stream_nobody_reads_never_blocks_the_trial():
    """A full pipe on stderr (an agent reading only stdout) blocks the printer's writer thread, never the caller:
    the output pump and the watchdogs go on, lines beyond the queue are dropped, close() returns."""
    import threading
    import time

    release = threading.Event()

    class Stuck(io.StringIO):
        def write(self, text):
            release.wait(30)  # as a write to a pipe nobody reads
            return super().write(text)

    stream = Stuck()
    printer = ProgressPrinter(stream)
    started = time.monotonic()
    for index in range(500):
        printer.show(f"line {index}", index)
    printer.close()
    assert time.monotonic() - started < 10  # 500 lines handed over and closed without waiting for the stream
    release.set()
    printer._writer.join(timeout=30)
    written = stream.getvalue().splitlines()
    assert written[-1] == "line 499" and len(written) <= 2 * ProgressPrinter.MAX_QUEUED  # the latest kept


def test_a_client_the_simulator_lost_at_start_is_a_stall_named_at_once():
    """NVFLARE 2.9's SimulatorClientRunner, when the connection to a client's worker process breaks as it starts
    it (seen in bench/batch_stress.py under load), logs this and never runs that client: the server would wait
    for its result until the no-progress timeout. The line ends the trial at once, quoting the client."""
    console = (
        "2026-12-05 18:01:33,760 - ERROR - Communication error with client site-1: [Errno 104] Connection reset by peer"
    )
    server_log = console.replace(" - ERROR - ", " - SimulatorClientRunner - ERROR - ")
    for line in (console, server_log):
        watch = dog()
        watch.observe(ROUND0, 0.0)
        assert watch.observe(line, 1.0) is True
        assert watch.check(1.0) == (
            "simulator stall: server log shows 'Communication error with client site-1: [Errno 104] Connection "
            "reset by peer'"
        )


def test_only_the_simulators_own_connection_failures_are_infrastructure_stalls():
    """A reset connection or a worker the simulator could not reach is NVFLARE's doing; a worker that died of the
    job's code ends its connection with EOF (an empty message) and stays the candidate's crash."""
    stalls = {
        "Communication error with client site-1: [Errno 104] Connection reset by peer": True,
        "Failed to create connection to the child process in SimulatorClientRunner, timeout: 60.0": True,
        "Communication error with client site-2: ": False,  # EOFError: the worker process died
        "SimulatorClientRunner - ERROR - run_client_thread error: ValueError: bad shape": False,
        # the same race seen from the client's thread (a real CI run under load, 2026-12-07, session 18)
        "SimulatorClientRunner - ERROR - run_client_thread error: ConnectionResetError: [Errno 104] Connection reset "
        "by peer": True,
        "SimulatorClientRunner - ERROR - run_client_thread error: ConnectionResetError: job closed it": False,
    }
    for line, expected in stalls.items():
        watch = dog()
        watch.observe(ROUND0, 0.0)
        assert watch.observe(line, 1.0) is True
        assert watchdog.infrastructure_stall(watch.check(1.0)) is expected, line
    assert not watchdog.infrastructure_stall(None)
    assert not watchdog.infrastructure_stall("timeout: trial exceeded the 60s total timeout")
    assert not watchdog.infrastructure_stall("crashed: Communication error with client site-1: [Errno 104]")


def test_a_stall_after_the_trial_reported_results_is_no_infrastructure_stall():
    """NVFLARE's race comes as the sites' workers start: a stall line after a result or metric (which a candidate
    could print itself once it saw how its rounds went) is named as late and never run again."""
    reset = "Communication error with client site-1: [Errno 104] Connection reset by peer"
    early = dog()
    early.observe("Start FedAvg.", 0.0)
    early.observe(ROUND0, 0.1)
    early.observe(reset, 1.0)
    assert watchdog.infrastructure_stall(early.check(1.0))
    for result_line in ("Aggregated 1/2 results", "site=site-1 round=0 accuracy=0.5", "Round 1 started."):
        late = dog()
        late.observe(ROUND0, 0.0)
        late.observe(result_line, 0.5)
        late.observe(reset, 1.0)
        reason = late.check(1.0)
        assert reason == f"{watchdog.STALL_REASON}{reset!r}{watchdog.LATE_STALL}"
        assert not watchdog.infrastructure_stall(reason)
