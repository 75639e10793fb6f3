"""Attacks on session 19's diagnose changes (h19atk): the "ran by a site" rule (match/raiser.py), the argparse
signal of SIMULATION_CONFIG_ERROR, and load_catalog's in-process memo.

Promises guarded:
- job.py's own configuration failing before the recipe is built is SIMULATION_CONFIG_ERROR, also when job.py reads
  it through a helper module kept in an app's `custom` folder (old job-folder layout): only a chain that *starts* in
  NVFLARE or in an app's custom folder (simulation, POC and production run folders) was run by a site;
- a site-run traceback echoed beside job.py's own failure neither flips the row nor names the site's file as the
  job.py argument to fix;
- the argparse signal matches nothing in the healthy real runs, the real-world failure set and linters' output;
  a completed run whose client survived argparse's rejection is not a rejection at high, from the console alone too
  (calibration's went-on rule reads 2.9 FedAvg's `Aggregated N/M results`, h19cal);
- load_catalog never answers with a parse of other bytes than the file holds (a writer between two reads, a swapped
  symlink, an oversized file).

Real evidence: tests/fixtures/diagnose_session19_2.9 (sim-client-args-tolerated added here) and a real python job.py
run made by a fixture below."""

from __future__ import annotations

import builtins
import copy
import json
import shutil
import sys
from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match import raiser
from nvfdiag.match.tracebacks import find_tracebacks
from nvfdiag.model import Line
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
S19 = REPO / "tests" / "fixtures" / "diagnose_session19_2.9"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
SIM = "SIMULATION_CONFIG_ERROR"
USER = "USER_CODE_EXCEPTION"

sys.path.insert(0, str(REPO / "evals"))
from make_real_fixtures import child_env, run_argv  # noqa: E402


def report_of(*paths):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(diagnose(found, CATALOG, mode="auto", job_id=None, job_status=None))


# --- 1. "ran by a site": a helper in app/custom called by job.py before anything ran ---------------------------

HELPER = '''"""Reads the job's settings (kept with the client code in app/custom)."""

import json


def read_config(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
'''


@pytest.fixture(scope="module")
def job_py_helper_in_app_custom(tmp_path_factory):
    """A real python job.py (NVFLARE 2.9.0 imported) in the old job-folder layout: job.py imports its config reader
    from app/custom and fails on job_config.json's trailing comma before it builds the recipe."""
    tmp = tmp_path_factory.mktemp("s19atk")
    job = tmp / "jobs" / "fedavg-numpy"
    shutil.copytree(S19 / "jobs", job, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (job / "app" / "custom").mkdir(parents=True)
    (job / "app" / "custom" / "job_settings.py").write_text(HELPER, encoding="utf-8")
    source = (job / "job.py").read_text(encoding="utf-8")
    head, _, rest = source.partition("def read_config(path):")
    rest = rest.split("\n\n\n", 1)[1]
    (job / "job.py").write_text(
        head.replace("import json\n", "import os\nimport sys\n")
        + 'sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "app", "custom"))\n'
        + "from job_settings import read_config  # noqa: E402\n\n\n"
        + rest,
        encoding="utf-8",
    )
    home, sim = tmp / "home", tmp / "sim"
    home.mkdir()
    argv = [sys.executable, "job.py", "--name", "fedavg-numpy", "--workspace", str(sim), "--script", "client_args.py"]
    code, output = run_argv([*argv, "--config", "job_config.json"], job, child_env(str(sim), str(home)), 180.0)
    assert code not in (None, 0) and "json.decoder.JSONDecodeError" in output, output[-2000:]
    assert "app/custom/job_settings.py" in output and not sim.exists()  # failed before any simulation
    (tmp / "stdout.txt").write_text(output, encoding="utf-8")
    return tmp / "stdout.txt"


def test_job_py_reading_its_config_through_a_helper_in_app_custom_stays_a_simulation_config_error(
    job_py_helper_in_app_custom,
):
    report = report_of(job_py_helper_in_app_custom)
    assert report["matched_pattern"] == SIM, report["likely_cause"]
    assert report["confidence"] == "high"


def test_a_site_run_traceback_echoed_above_job_pys_own_failure_neither_flips_the_row_nor_steers_the_fix(tmp_path):
    """Real text of two runs: an external client's relayed JSONDecodeError traceback (sim-client-json-external,
    site-1), echoed at the top of the console of python job.py whose own config parse failed before the recipe
    (job-config-json-parse). job.py's rejection stays the answer, and the fix points at job.py, not at the echo."""
    relayed = (S19 / "sim-client-json-external" / "workspace" / "fedavg-numpy" / "site-1" / "log.txt").read_text(
        encoding="utf-8"
    )
    echo = [line.split(" - INFO - ", 1)[1] for line in relayed.splitlines()[44:63]]
    assert echo[0] == "Traceback (most recent call last):" and echo[-1].startswith("json.decoder.JSONDecodeError")
    console = tmp_path / "stdout.txt"
    console.write_text(
        "\n".join(echo) + "\n" + (S19 / "job-config-json-parse" / "stdout.txt").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    report = report_of(console)
    assert report["matched_pattern"] == SIM and report["confidence"] == "high", report["likely_cause"]
    assert "(at job.py:20 in read_config())" in report["next_action"], report["next_action"]
    assert "client_json.py" not in report["next_action"] + report["likely_cause"]


def _frame_block(*paths: str):
    texts = ["Traceback (most recent call last):"]
    for number, path in enumerate(paths, 1):
        texts += [f'  File "{path}", line {number}, in main', "    x = 1"]
    texts += ["json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"]
    return find_tracebacks([Line("out.txt", None, i + 1, text) for i, text in enumerate(texts)])[0]


NV = "/opt/venv/lib/python3.11/site-packages/nvflare"


@pytest.mark.parametrize(
    ("paths", "ran"),
    [
        # POC / production: a site's run folder is <workspace>/<site>/<job id>/app_<site>/custom
        (["/ws/poc/site-1/0f3c2a9e-7b1d-4c55-9a51-3e2f1d0c9b8a/app_site-1/custom/client.py"], True),
        ([r"C:\fl\site-2\6d1e\app_site-2\custom\client.py"], True),
        ([f"{NV}/app_common/executors/task_script_runner.py", "/ws/site-1/1a2b/app_site-1/custom/client.py"], True),
        # job.py first, then a helper kept in app/custom or in a site's folder: job.py ran it, not a site
        (["/home/me/fl/job.py", "/home/me/fl/app/custom/job_settings.py"], False),
        (["/home/me/fl/job.py", "/ws/site-1/simulate_job/app_site-1/custom/client.py"], False),
        # look-alikes: a folder named custom under another app folder name, a custom folder without app
        (["/srv/my_app/custom/client.py"], False),
        (["/srv/apps/custom/client.py"], False),
    ],
)
def test_who_ran_it_is_read_from_where_the_chain_starts(paths, ran):
    assert raiser.ran_by_a_site(_frame_block(*paths)) is ran


# --- 3. load_catalog's memo: the answer is always a parse of the bytes the file holds -----------------------------


def _rendered() -> dict:
    return json.loads(cat.DEFAULT_PATH.read_text(encoding="utf-8"))


def test_a_catalog_changed_between_the_digest_and_the_parse_is_not_remembered_under_the_old_bytes(
    tmp_path, monkeypatch
):
    """A writer (make sync, an editor) replaces the file while load_catalog reads it: the parse of the new bytes must
    not be served later for the old bytes."""
    old = _rendered()
    new = copy.deepcopy(old)
    new["patterns"][0]["title"] = "written while the catalog was read"
    row_id = old["patterns"][0]["id"]
    path = tmp_path / "failure_patterns.json"
    path.write_text(json.dumps(old))
    real_open = builtins.open
    opened = []

    def open_with_a_writer(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file) == path:
            opened.append(file)
            if len(opened) == 2:  # the file changes after the first read (its digest): a second read sees new bytes
                with real_open(path, "w", encoding="utf-8") as handle:
                    handle.write(json.dumps(new))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_with_a_writer)
    cat.load_catalog(path)
    monkeypatch.undo()
    path.write_text(json.dumps(old))
    assert cat.load_catalog(path).row(row_id).title == old["patterns"][0]["title"]


def test_a_swapped_symlink_is_read_again(tmp_path):
    old = _rendered()
    new = copy.deepcopy(old)
    new["patterns"][0]["title"] = "the other target"
    row_id = old["patterns"][0]["id"]
    (tmp_path / "a.json").write_text(json.dumps(old))
    (tmp_path / "b.json").write_text(json.dumps(new))
    link = tmp_path / "failure_patterns.json"
    link.symlink_to(tmp_path / "a.json")
    assert cat.load_catalog(link).row(row_id).title == old["patterns"][0]["title"]
    link.unlink()
    link.symlink_to(tmp_path / "b.json")
    assert cat.load_catalog(link).row(row_id).title == "the other target"


def test_an_oversized_catalog_is_refused_every_time_not_served_from_memory(tmp_path):
    path = tmp_path / "failure_patterns.json"
    path.write_text(json.dumps(_rendered()))
    cat.load_catalog(path)
    with path.open("a") as handle:
        handle.write(" " * (cat.MAX_CATALOG_BYTES + 1))
    with pytest.raises(cat.CatalogError, match="larger than"):
        cat.load_catalog(path)


# --- 2. the argparse signal (SIMULATION_CONFIG_ERROR signal 3) ------------------------------------------------------

ARGPARSE = next(sig for sig in CATALOG.row(SIM).signals if sig.any_level and "py: error: " in sig.keywords)


@pytest.mark.parametrize(
    "folder", [REPO / "tests" / "fixtures" / "healthy_real", REPO / "evals" / "diagnose" / "files" / "real"]
)
def test_the_argparse_signal_matches_no_line_of_the_real_runs_it_was_not_written_for(folder):
    """Healthy real runs and the real-world failure set hold no argparse rejection: the signal finds nothing there."""
    hits = [
        (path.name, line[:120])
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
        if ARGPARSE.regex.search(line)
    ]
    assert hits == []


@pytest.mark.parametrize(
    "text",
    [
        "client.py:12: error: Incompatible types in assignment  [assignment]",  # mypy
        "client.py:3:1: F401 'os' imported but unused",  # flake8 / ruff
        "client.py:3:0: E0401: Unable to import 'torch' (import-error)",  # pylint
        "E   AssertionError: client.py: error: expected 3",  # pytest quoting an assertion
        "ERROR: client.py: error: could not read the data folder",  # a script's own words
        "client.py: error: argument parsing was skipped",  # no argparse option after `argument`
    ],
)
def test_ordinary_tool_output_is_not_an_argparse_rejection(text):
    assert not ARGPARSE.regex.search(text)


TOLERATED = S19 / "sim-client-args-tolerated"
TOLERATED_VIEWS = {
    "stdout": (TOLERATED / "stdout.txt",),
    "stdout+workspace": (TOLERATED / "stdout.txt", TOLERATED / "workspace" / "fedavg-numpy"),
    "workspace": (TOLERATED / "workspace" / "fedavg-numpy",),
}


@pytest.mark.parametrize(
    "view",
    [
        "stdout",
        "stdout+workspace",
        "workspace",
    ],
)
def test_an_argparse_complaint_the_script_survived_in_a_completed_run_is_not_a_rejection_at_high(view):
    """The real run printed argparse's rejection (relayed as INFO), the client script caught SystemExit, took its
    defaults and both rounds completed: "rejected before the simulation ran" must not be said at high. From the console
    alone this failed on h19atk's branch (high), before h19cal's went-on rule knew 2.9's `Aggregated N/M results`."""
    report = report_of(*TOLERATED_VIEWS[view])
    assert not (report["matched_pattern"] == SIM and report["confidence"] == "high"), report["likely_cause"]
