"""Session 19 (h19cal): NVFLARE's logged-only messages and bare echoes of its messages are not high on their own.

Built from real NVFLARE 2.9.0 evidence (tests/fixtures/healthy_real: a SimEnv run that completed every round on both
sites; evals/diagnose/files/real: real failed runs). "Before" means the product code of 63db9a8a.

1. The rendered mapping carries each template's kind (raise, log, panic) to the matcher, and a line outside a
   traceback that a logged-only template decided is marked as such.
2. A row resting only on logged-only records is at most medium unless the evidence shows the run failed (a failed
   status, a traceback, a peer gone, a raised or panic message elsewhere); a real failure keeps its confidence.
3. 2.9 FedAvg's `Aggregated N/M results` is a progress record (the went-on rule); the rule reads only the progress
   records that may name the record's participant.
4. A bare line (no log record) in NVFLARE's words is not high when the run's course contradicts it: a progress
   record of its file follows it, or the evidence shows the run working and nothing failing. An early error line
   with nothing after it keeps its confidence.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from nvfdiag.match import calibration, matcher
from nvfdiag.match import catalog as cat
from nvfdiag.match.messages import LOG, PANIC, RAISE
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from nvfdiag.textindex import TextIndex
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "evals" / "diagnose" / "files" / "real"
HEALTHY = REPO / "tests" / "fixtures" / "healthy_real"
MESSAGES = REPO / "shared" / "catalog" / "nvflare_messages.yaml"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
CONFIG_ROW = "CONFIG_FILE_VALIDATION_ERROR"
# NVFLARE logs this and goes on (app_opt/pt/file_model_persistor.get_model returns None): kind log in the mapping
LOGGED = (
    "{ts} - PTFileModelPersistor - ERROR - [identity=simulator_server, run=simulate_job, wf=controller] - "
    "error loading checkpoint from /tmp/ws/server/simulate_job/models/FL_global_model.pt"
)
# NVFLARE raises this (app_opt/pt/recipes/swarm.py): a bare echo of it, as job.py's own print would leave it
RAISED_BARE = "ValueError: key_metric must be a non-empty string or None"


def report_of(paths, job_status=None):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(diagnose(found, CATALOG, mode="auto", job_status=job_status))


def analysis_of(paths, job_status=None):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return matcher.analyse(found, CATALOG, job_status=job_status)


def _wrapper_traceback() -> list[str]:
    """The last traceback of the real import-error run's job.py output: SimEnv's `Simulation failed with return
    code 2` (NVFLARE's wrapper of a failed simulation)."""
    lines = (REAL / "import-error" / "stdout.txt").read_text().splitlines()
    start = max(n for n, line in enumerate(lines) if line.startswith("Traceback (most recent call last):"))
    assert lines[-1].startswith("RuntimeError: Simulation failed with return code 2.")
    return lines[start:]


def _healthy(tmp_path) -> Path:
    root = tmp_path / "healthy"
    shutil.copytree(HEALTHY, root)
    return root


def _records(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line[:4].isdigit()]


def _insert_before_round_1(log: Path, line: str, cut: bool = False) -> None:
    """Put `line` (a record stamped like the one before it) just before the server's `Round 1 started.` banner;
    with `cut`, the log ends there (the server did not go on)."""
    lines = log.read_text().splitlines()
    at = next(n for n, text in enumerate(lines) if "Round 1 started." in text) - 1
    stamp = next(text for text in reversed(lines[:at]) if text[:4].isdigit())[:23]
    lines = lines[:at] + [line.format(ts=stamp)] + ([] if cut else lines[at:])
    log.write_text("\n".join(lines) + "\n")


def _stop_stdout_at_round_1(stdout: Path) -> None:
    """job.py's output up to round 1 (no `Aggregated` record yet), then SimEnv's real wrapper traceback."""
    lines = stdout.read_text().splitlines()
    first = next(n for n, text in enumerate(lines) if "Aggregated 1/2 results" in text)
    stdout.write_text("\n".join(lines[:first] + _wrapper_traceback()) + "\n")


# --- 1. the kind reaches the matcher -------------------------------------------------------------------------------


def test_every_template_is_loaded_with_the_kind_the_mapping_records():
    source = yaml.safe_load(MESSAGES.read_text())["messages"]
    recorded = {
        entry["t"]: entry.get("kind", RAISE)
        for group, entries in source.items()
        if group != "unreviewed"
        for entry in entries
    }
    loaded = {t.text: t.kind for t in CATALOG.messages.templates}
    assert loaded == recorded
    assert {LOG, PANIC, RAISE} == set(loaded.values())
    assert loaded["error loading checkpoint from {}"] == LOG


def test_the_rendered_entries_put_the_kind_last():
    rendered = json.loads((REPO / "skills/nvflare-diagnose-job/references/nvflare_messages.json").read_text())
    entries = [entry for group in rendered["templates"].values() for entry in group]
    assert all(len(entry) == 3 or (len(entry) == 4 and entry[3] in (LOG, PANIC)) for entry in entries)
    assert sum(len(entry) == 4 for entry in entries) > 100


def test_a_line_a_logged_template_decided_is_marked_logged(tmp_path):
    root = _healthy(tmp_path)
    log = root / "server" / "log.txt"
    log.write_text(log.read_text() + LOGGED.format(ts=_records(log)[-1][:23]) + "\n")
    an = analysis_of([root])
    assert an.primary.row.id == CONFIG_ROW
    assert [h.kind for h in an.primary.hits if h.strength == "strong"] == [LOG]


# --- 2. logged-only messages --------------------------------------------------------------------------------------


def test_a_logged_only_message_ending_a_run_that_failed_keeps_high(tmp_path):
    """Guard: the same logged record ending the healthy run's server log, with the failed status the user states
    (FINISHED:ABORTED): the evidence shows the run failed, so the row keeps high (as before)."""
    root = _healthy(tmp_path)
    log = root / "server" / "log.txt"
    log.write_text(log.read_text() + LOGGED.format(ts=_records(log)[-1][:23]) + "\n")
    report = report_of([root], job_status="FINISHED:ABORTED")
    assert (report["matched_pattern"], report["confidence"]) == (CONFIG_ROW, "high")
    assert report_of([root])["confidence"] == "medium"  # the same evidence without the status: nothing failed


def test_a_logged_only_message_where_the_run_stopped_and_failed_keeps_high(tmp_path):
    """Guard: the logged record before round 1, the server's log ending there (it did not go on) and job.py's
    output ending in SimEnv's real `Simulation failed` traceback: the row keeps high (as before)."""
    root = _healthy(tmp_path)
    _insert_before_round_1(root / "server" / "log.txt", LOGGED, cut=True)
    _stop_stdout_at_round_1(root / "job_stdout.txt")
    report = report_of([root / "server" / "log.txt", root / "job_stdout.txt"])
    assert (report["matched_pattern"], report["confidence"]) == (CONFIG_ROW, "high")


def test_a_logged_only_message_the_run_went_on_past_is_medium_even_when_the_run_failed_later(tmp_path):
    """The went-on rule does not need the run to be healthy: the server aggregated after the record, so it is not
    what stopped the run, whatever did (the same wrapper traceback at the end of job.py's output)."""
    root = _healthy(tmp_path)
    _insert_before_round_1(root / "server" / "log.txt", LOGGED)
    stdout = root / "job_stdout.txt"
    stdout.write_text(stdout.read_text() + "\n".join(_wrapper_traceback()) + "\n")
    an = analysis_of([root / "server" / "log.txt", stdout])
    assert an.primary.row.id == CONFIG_ROW and an.confidence == "medium"
    assert calibration.uncorroborated(an, an.primary) == calibration.WENT_ON


# --- 3. 2.9's aggregation record is progress ------------------------------------------------------------------


def test_fedavg_aggregated_records_are_progress():
    server = [line for line in _records(HEALTHY / "server" / "log.txt") if line.endswith("results")]
    assert len(server) == 6 and all(CATALOG.progress.regex.search(line) for line in server)
    assert not CATALOG.progress.regex.search(server[0].replace("Aggregated 1/2", "Aggregated 0/2"))


def test_progress_of_another_participant_is_not_read(tmp_path):
    """The went-on question for a record of `identity=server` is answered without reading the server log's
    `Aggregated` records of `identity=simulator_server` (the index tells they name another participant)."""
    texts = (HEALTHY / "server" / "log.txt").read_text().splitlines()
    read: list[int] = []

    class Counting:
        """A model.Line whose text reads are counted."""

        def __init__(self, number: int) -> None:
            self.source, self.site, self.line, self.part = "server/log.txt", "server", number, 0

        @property
        def text(self) -> str:
            read.append(self.line)
            return texts[self.line]

    lines = [Counting(n) for n in range(len(texts))]
    records = calibration.CourseRecords(lines, TextIndex(texts), set(), CATALOG.progress)
    mine = list(records(-1, "server/log.txt", "simulator_server"))
    assert len(mine) == 6
    read.clear()
    assert list(records(-1, "server/log.txt", "server")) == [] and read == []


# --- 4. bare lines in NVFLARE's words -----------------------------------------------------------------------------


def test_a_bare_raised_message_at_the_end_of_a_completed_runs_output_is_not_high(tmp_path):
    """One bare line in the words of a message NVFLARE raises, after the healthy run's last output: every round
    was aggregated on both sites and nothing failed. High before."""
    root = _healthy(tmp_path)
    stdout = root / "job_stdout.txt"
    stdout.write_text(stdout.read_text() + RAISED_BARE + "\n")
    an = analysis_of([root])
    assert (an.primary.row.id, an.confidence) == ("SIMULATION_CONFIG_ERROR", "medium")
    assert calibration.uncorroborated(an, an.primary) == calibration.ECHOED


def test_a_bare_raised_message_the_output_goes_on_past_is_not_high(tmp_path):
    """The same bare line in the middle of job.py's output, `Aggregated` records after it, and the run failing
    later (SimEnv's wrapper traceback at the end). High before."""
    root = _healthy(tmp_path)
    stdout = root / "job_stdout.txt"
    lines = stdout.read_text().splitlines()
    first = next(n for n, text in enumerate(lines) if "Aggregated 1/2 results" in text)
    stdout.write_text("\n".join(lines[:first] + [RAISED_BARE] + lines[first:] + _wrapper_traceback()) + "\n")
    report = report_of([stdout])
    assert (report["matched_pattern"], report["confidence"]) == ("SIMULATION_CONFIG_ERROR", "medium")


def test_a_bare_raised_message_where_the_output_stops_keeps_high(tmp_path):
    """Guard: job.py's real output up to the first aggregation, then the bare line and nothing after it (an early
    error: no record of completed work anywhere in the evidence): high, as before."""
    root = _healthy(tmp_path)
    stdout = root / "job_stdout.txt"
    lines = stdout.read_text().splitlines()
    first = next(n for n, text in enumerate(lines) if "Aggregated 1/2 results" in text)
    stdout.write_text("\n".join(lines[:first] + [RAISED_BARE]) + "\n")
    report = report_of([stdout])
    assert (report["matched_pattern"], report["confidence"]) == ("SIMULATION_CONFIG_ERROR", "high")


def test_a_real_cli_error_line_with_nothing_after_it_keeps_high():
    """Guard: the real `nvflare poc start` answer before `nvflare poc prepare` (a CLI envelope: its error line is
    bare, in NVFLARE's words): the command's refusal at high, as before."""
    report = report_of([REAL / "poc-not-prepared"])
    assert (report["matched_pattern"], report["confidence"]) == ("NVFLARE_COMMAND_ERROR", "high")
