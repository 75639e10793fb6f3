"""Two rules sealedrun6's misses asked for, proven on other real NVFLARE 2.9.0 runs (session 19, h19dfx).

Promises guarded:
- who raised it decides, also for a configuration file: SIMULATION_CONFIG_ERROR is job.py's arguments or local
  configuration rejected *before the simulation ran*; a parse error (json, yaml) raised in the job's code while a
  site ran it (NVFLARE's script runner started the chain, or the raising file is in an app's custom folder) is the
  training code's exception: USER_CODE_EXCEPTION, with SIMULATION_CONFIG_ERROR listed apart (raiser.SITE_RAN).
  Limits: job.py parsing its own configuration file before it builds the recipe stays SIMULATION_CONFIG_ERROR; so
  does NVFLARE's rejection of job.py's call and a parse error in a traceback that does not show who ran it;
- argparse rejecting the arguments job.py gave a client script (train_args: `client.py: error: argument --x:
  invalid int value`, `the following arguments are required`) is SIMULATION_CONFIG_ERROR's "bad job.py args", at
  any log level (NVFLARE relays an external process's stderr as INFO records). Limits: a compiler's or linter's
  `x.py:12: error:` and a script's own message after `x.py: error:` that is not argparse's wording match nothing;
  the argparse lines of python job.py's console alone (no site label) stay below high.

The real captures are in tests/fixtures/diagnose_session19_2.9 (make_fixtures.py rebuilds them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match import raiser
from nvfdiag.match.tracebacks import find_tracebacks
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "diagnose_session19_2.9"
WORKSPACE = Path("workspace") / "fedavg-numpy"
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
SIM = "SIMULATION_CONFIG_ERROR"
USER = "USER_CODE_EXCEPTION"


def report_of(*paths):
    found = ev.collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(diagnose(found, CATALOG, mode="auto", job_id=None, job_status=None))


def views(case: str) -> list[tuple[Path, ...]]:
    """The evidence a user can give for one run: stdout, stdout and workspace, the workspace alone."""
    root = REAL / case
    return [(root / "stdout.txt",), (root / "stdout.txt", root / WORKSPACE), (root / WORKSPACE,)]


def other(report, pattern):
    return next((c for c in report["other_candidates"] if c["pattern"] == pattern), None)


# --- 1. a configuration file the training code parses fails in the training code ---------------------------------


@pytest.mark.parametrize("case", ["sim-client-yaml-parse", "sim-client-json-external"])
@pytest.mark.parametrize("view", [0, 1, 2])
def test_config_file_parsed_by_the_running_client_is_the_training_codes_exception(case, view):
    report = report_of(*views(case)[view])
    assert report["runtime_mode"] == "simulation"
    assert report["matched_pattern"] == USER, report["likely_cause"]
    assert report["confidence"] == "high"
    assert other(report, SIM)["reason"] == raiser.SITE_RAN


def test_the_next_action_points_at_the_parsing_function_not_at_job_py():
    report = report_of(*views("sim-client-yaml-parse")[0])
    assert "(at settings.py:11 in load_settings())" in report["next_action"]
    assert "job.py" in report["next_action"] and "recipe argument" not in report["next_action"]


def test_job_py_parsing_its_own_config_before_the_run_stays_a_simulation_config_error():
    report = report_of(REAL / "job-config-json-parse" / "stdout.txt")
    assert report["matched_pattern"] == SIM and report["confidence"] == "high"
    assert "(at job.py:20 in read_config())" in report["next_action"]


SP = "/home/dev/.venv/lib/python3.11/site-packages"
PARSE = "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 2 column 1 (char 9)"
LIB = ['  File "/usr/lib/python3.11/json/__init__.py", line 293, in load', "    return loads(fp.read(),"]


def frame(path, line, func):
    return [f'  File "{path}", line {line}, in {func}', "    x = 1"]


def block(*frames):
    texts = ["Traceback (most recent call last):", *[t for f in frames for t in f], *LIB, PARSE]
    lines = [Line("out.txt", None, i + 1, text) for i, text in enumerate(texts)]
    return find_tracebacks(lines)[0]


@pytest.mark.parametrize(
    ("frames", "ran"),
    [
        # NVFLARE's script runner ran the client script (in process)
        (
            [
                frame(f"{SP}/nvflare/app_common/executors/task_script_runner.py", 95, "run"),
                frame("/srv/fl/client.py", 30, "main"),
            ],
            True,
        ),
        # an external client process: the chain starts in the client script, in the site's app custom folder
        ([frame("/ws/fedavg/site-2/simulate_job/app_site-2/custom/train.py", 12, "<module>")], True),
        ([frame("/home/me/jobs/x/app/custom/train.py", 12, "<module>")], True),  # a job folder's app/custom
        (  # an external client whose helper module is read from the job folder
            [
                frame("/ws/fedavg/site-1/simulate_job/app_site-1/custom/train.py", 40, "<module>"),
                frame("/home/me/jobs/fedavg/settings.py", 9, "load"),
            ],
            True,
        ),
        # job.py reading its configuration, also when NVFLARE calls back into the user's code from job.py
        ([frame("/home/me/fl/job.py", 20, "read_config")], False),
        (
            [
                frame("/home/me/fl/job.py", 30, "main"),
                frame(f"{SP}/nvflare/recipe/utils.py", 300, "load"),
                frame("/home/me/fl/model.py", 8, "__init__"),
            ],
            False,
        ),
        # a folder named custom or app_x alone says nothing
        ([frame("/opt/custom/libs/conf.py", 5, "read")], False),
        ([frame("/srv/app_deps/conf.py", 5, "read")], False),
    ],
)
def test_ran_by_a_site_needs_nvflare_starting_the_chain_or_an_app_custom_folder(frames, ran):
    assert raiser.ran_by_a_site(block(*frames)) is ran


def test_nvflare_raising_from_a_client_script_is_not_the_client_scripts_exception():
    found = block(
        frame(f"{SP}/nvflare/app_common/executors/task_script_runner.py", 95, "run"),
        frame("/srv/fl/client.py", 30, "main"),
        frame(f"{SP}/nvflare/client/api.py", 50, "receive"),
    )
    assert not raiser.ran_by_a_site(found)


def test_a_parse_error_of_unknown_provenance_keeps_the_catalog_row():
    """A pasted traceback from a user file that shows neither job.py nor a site running it: nothing to set aside."""
    texts = ["Traceback (most recent call last):", *frame("/home/me/fl/prep.py", 9, "main"), *LIB, PARSE]
    lines = [Line("out.txt", None, i + 1, text) for i, text in enumerate(texts)]
    evidence = Evidence(sources=[Source("out.txt", "log", None, "complete", 100)], lines=lines)
    report = validated(diagnose(evidence, CATALOG, mode="simulation"))
    assert report["matched_pattern"] == SIM
    assert other(report, SIM) is None


# --- 2. argparse rejecting a client script's train_args ----------------------------------------------------------


def test_in_process_client_parser_error_on_the_console_is_a_simulation_config_error_below_high():
    report = report_of(*views("sim-client-args-int")[0])
    assert report["matched_pattern"] == SIM
    assert report["confidence"] == "medium"  # one console line with no site label: not the affected site's own
    assert any("invalid int value: '2.5'" in s["excerpt"] for s in report["signals"] if s["pattern"] == SIM)


def test_in_process_client_parser_error_with_the_workspace_keeps_the_cause_the_console_shows():
    report = report_of(*views("sim-client-args-int")[1])
    assert report["matched_pattern"] == SIM
    assert report["confidence"] != "high"


@pytest.mark.parametrize("view", [0, 1, 2])
def test_external_client_parser_error_relayed_as_info_is_a_simulation_config_error(view):
    """NVFLARE 2.9.0 relays the external process's stderr as INFO records of the site's log (and python job.py
    exits 0 although neither client started)."""
    report = report_of(*views("sim-client-args-required")[view])
    assert report["matched_pattern"] == SIM
    excerpts = [s["excerpt"] for s in report["signals"] if s["pattern"] == SIM]
    assert any("the following arguments are required: --data_seed" in e for e in excerpts)


def parser_signal():
    """The SIMULATION_CONFIG_ERROR signal read at any level (the argparse one), or None."""
    return next((sig for sig in CATALOG.row(SIM).signals if sig.any_level), None)


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("client.py: error: argument --lr: invalid float value: '0,05'", True),
        ("train.py: error: argument -e/--epochs: expected one argument", True),
        ("client_args.py: error: the following arguments are required: --data_seed", True),
        ("cifar10.py: error: one of the arguments --a --b is required", True),
        ("client.py: error: unrecognized arguments: --batch 8", True),
        ("client.py: error: ambiguous option: --l could match --lr, --local_steps", True),
        ("client.py:12: error: Incompatible types in assignment", False),  # mypy
        ("train.py: error: CUDA out of memory", False),  # not argparse's wording
        ("see client.py for the error handling", False),
    ],
)
def test_the_parser_signal_is_argparse_wording_after_a_python_program_name(text, matches):
    signal = parser_signal()
    assert signal is not None
    assert bool(signal.regex.search(text)) is matches
