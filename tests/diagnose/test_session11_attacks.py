"""Attacks on the confidence calibration (session 11), in both directions.

Promises guarded:
- a correct diagnosis of the job's own exception stays high on real NVFLARE output: 2.9 SimEnv runs (in-process,
  an external process whose output NVFLARE echoes as INFO records, a script in a package folder, a module the script imports, the `nvflare simulator` CLI on
  an exported job with a workspace of any name), a real POC run, Windows paths and the 2.0-2.8 run layouts;
- a library is not the job's code because a folder on its path is named `custom` or `app_<x>`: only an app's
  `custom` folder is NVFLARE's layout for the job's code;
- another run's evidence is not a confident diagnosis of this job, whether its record names the run by `run=`, by a
  job id in NVFLARE's shapes or by the run folder of its file; a record pasted alone and dated outside the span of
  the other logs is another run's line;
- a job id the job's own code prints in NVFLARE's shape does not unsettle a real simulation's mode (session 15).

The real captures (tests/fixtures/diagnose_real_2.9/README.md) are runs of examples/hello-numpy with a `raise` added;
the other paths and messages are written for the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from nvfdiag.read import evidence as ev
from nvfdiag.read import prefixes
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "diagnose_real_2.9"
POC = REPO / "evals" / "diagnose" / "files" / "real" / "poc" / "workspace" / "prod_00"
POC_FAILED_JOB = "525e802a-5a43-42ca-97c8-1834306f6903"  # job_ids.txt: user-code-exception
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
CATALOG = cat.load_catalog()
TB = "Traceback (most recent call last):"
FNF = "FileNotFoundError: [Errno 2] No such file or directory: '/data/site-1/train.csv'"
VALUE = "ValueError: operands could not be broadcast together with shapes (3,) (4,)"
OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
THIS_RUN = "8c4f6a38-0f9b-4b1e-9a43-3f2a1e5d8b11"
OTHER_RUN = "5f0c6a2e-8d1b-4c3a-9e7f-2b4d6a8c0e13"


def from_files(paths, job_id=None, mode="auto"):
    found = ev.collect_evidence([str(p) for p in paths], job_id=job_id, **LIMITS)
    return validated(diagnose(found, CATALOG, mode=mode, job_id=job_id))


def run(files: dict[str, list[str]], mode="simulation", job_id=None):
    """Diagnose text files given as {source name: lines}; a name `site-1/...` is that site's file."""
    sources, lines = [], []
    for name, texts in files.items():
        site = name.split("/")[0] if name.startswith("site-") else None
        sources.append(Source(name, "log", site, "complete", 100))
        lines += [Line(name, site, i + 1, text) for i, text in enumerate(texts)]
    return validated(diagnose(Evidence(sources=sources, lines=lines), CATALOG, mode=mode, job_id=job_id))


def traceback(paths, last):
    out = [TB]
    for path in paths:
        out += [f'  File "{path}", line 12, in load', "    return reader(path)"]
    return out + [last]


def verdict(done):
    return done["matched_pattern"], done["confidence"]


# -- 1. correct diagnoses that stay high ----------------------------------------------------------------------------

REAL_CAPTURES = {
    "in-process": "simenv_inprocess_console.txt",
    "script-in-src-package": "simenv_src_package_console.txt",
    "raise-in-an-imported-module": "simenv_imported_module_site-1_log.txt",
    "external-process-site-log": "simenv_external_process_site-1_log.txt",
    "simulator-cli-odd-workspace": "simulator_cli_odd_workspace_console.txt",
}


@pytest.mark.parametrize("name", REAL_CAPTURES.values(), ids=REAL_CAPTURES)
def test_real_2_9_simulations_of_a_raise_in_the_client_are_a_high_user_code_exception(name):
    done = from_files([REAL / name])
    assert (*verdict(done), done["runtime_mode"]) == ("USER_CODE_EXCEPTION", "high", "simulation")


def test_the_external_process_console_of_a_real_2_9_simulation_is_a_high_user_code_exception():
    """The concise console writes the echo as `<time> - INFO - <line>`, with no logger name."""
    done = from_files([REAL / "simenv_external_process_console.txt"])
    assert (*verdict(done), done["runtime_mode"]) == ("USER_CODE_EXCEPTION", "high", "simulation")


ECHO_2_9 = "2026-12-06 21:16:17,258 - ExternalProcessBackend - INFO - "
CONCISE = "2026-12-06 21:16:17,258 - INFO - "


@pytest.mark.parametrize("prefix", [ECHO_2_9, CONCISE], ids=["log.txt", "concise-console"])
def test_only_the_traceback_lines_of_2_9s_external_process_echo_are_peeled(prefix):
    """ExternalProcessBackend also logs its own INFO records: those stay records, the script's traceback is read."""
    script = [TB, '  File "/ws/site-1/simulate_job/app_site-1/custom/client.py", line 60, in main', "    main()", VALUE]
    own = ["launching external trainer (launch 1)", "trainer readiness confirmed from site-1.simulate_job.trainer_1"]
    texts = [prefix + text for text in own + script]
    peeler = prefixes.detect(texts)
    assert [peeler.peel(text)[0] for text in texts] == texts[: len(own)] + script


def test_a_real_poc_run_of_a_raise_in_the_client_is_a_high_user_code_exception():
    done = from_files([POC], job_id=POC_FAILED_JOB)
    assert (*verdict(done), done["runtime_mode"]) == ("USER_CODE_EXCEPTION", "high", "production")


JOB_CODE_PATHS = {
    "windows-simulation": r"C:\Users\ml\nvflare\simulation\hello\site-1\simulate_job\app_site-1\custom\client.py",
    "windows-poc": rf"C:\poc\example_project\prod_00\site-1\{THIS_RUN}\app_site-1\custom\client.py",
    "simulator-2.4": "/tmp/nvflare/ws24/simulate_job/app_site-1/custom/trainer.py",
    "run-folder-2.3": "/ws/site-1/run_1/app_site-1/custom/cifar10trainer.py",
    "package-in-custom": "/tmp/nvflare/simulation/h/site-1/simulate_job/app_site-1/custom/src/train.py",
    "exported-job-app": "/home/ml/jobs/hello/app/custom/client.py",
}


@pytest.mark.parametrize("path", JOB_CODE_PATHS.values(), ids=JOB_CODE_PATHS)
@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_the_job_code_of_every_nvflare_layout_carries_high(path, mode):
    assert verdict(run({"console.txt": traceback([path], VALUE)}, mode)) == ("USER_CODE_EXCEPTION", "high")


def test_a_raise_in_a_module_of_the_custom_folder_the_script_imports_is_high():
    custom = "/tmp/nvflare/simulation/h/site-1/simulate_job/app_site-1/custom"
    done = run({"console.txt": traceback([f"{custom}/client.py", f"{custom}/model.py"], VALUE)})
    assert verdict(done) == ("USER_CODE_EXCEPTION", "high")


@pytest.mark.parametrize("named", ['recipe = FedAvgRecipe(train_script="src/train.py")', "$ python3 -u src/train.py"])
def test_a_script_in_a_package_folder_the_evidence_names_is_the_job(named):
    done = run({"console.txt": [named, *traceback(["/home/ml/project/src/train.py"], VALUE)]})
    assert verdict(done) == ("USER_CODE_EXCEPTION", "high")


def test_a_job_id_the_client_prints_does_not_unsettle_a_real_simulation():
    lines = (REAL / "simenv_inprocess_console.txt").read_text(encoding="utf-8").splitlines()
    done = run({"console.txt": [f"Job {OTHER_RUN} started", *lines]}, mode="auto")
    assert (*verdict(done), done["runtime_mode"]) == ("USER_CODE_EXCEPTION", "high", "simulation")


# -- 2. wrong answers that must not be high ---------------------------------------------------------------------------

LIBRARIES_IN_FOLDERS_NAMED_LIKE_THE_LAYOUT = {
    "pythonpath-custom": "/opt/custom/libs/pandas/io/parsers/readers.py",
    "venv-src-custom": "/opt/venv/src/foo/foo/custom/readers.py",
    "app-named-folder": "/srv/app_deps/pandas/io/parsers/readers.py",
    "windows-custom": r"D:\tools\custom\pandas\io\parsers\readers.py",
    "site-packages-custom": "/opt/venv/lib/python3.11/site-packages/foo/custom/readers.py",
}


@pytest.mark.parametrize(
    "path", LIBRARIES_IN_FOLDERS_NAMED_LIKE_THE_LAYOUT.values(), ids=LIBRARIES_IN_FOLDERS_NAMED_LIKE_THE_LAYOUT
)
@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_a_library_under_a_folder_named_custom_or_app_is_not_surely_the_job(path, mode):
    for last in (FNF, VALUE):
        done = run({"console.txt": traceback([path], last)}, mode)
        assert done["confidence"] != "high", (path, last, done["matched_pattern"])


def this_run_log(day="2026-12-06"):
    return [
        f"{day} 21:15:0{i},000 - ClientRunner - INFO - [identity=site-1, run={THIS_RUN}] - finished task train"
        for i in range(5)
    ]


@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_a_lone_error_record_pasted_from_another_day_is_not_high(mode):
    pasted = {"notes.txt": [f"2025-03-02 09:12:44,120 - ClientRunner - ERROR - {OOM}"]}
    assert verdict(run({"site-1/log.txt": this_run_log(), **pasted}, mode)) == ("CUDA_OOM", "medium")


def test_a_lone_error_record_of_the_same_hour_as_the_logs_stays_high():
    pasted = {"notes.txt": [f"2026-12-06 21:15:07,120 - ClientRunner - ERROR - {OOM}"]}
    assert verdict(run({"site-1/log.txt": this_run_log(), **pasted})) == ("CUDA_OOM", "high")


OTHER_RUN_RECORDS = {
    "its-file-in-the-run-folder": {
        f"site-1/{OTHER_RUN}/log.txt": [f"2026-01-01 10:00:05,000 - ClientRunner - ERROR - {OOM}"]
    },
    "job-id-repr": {
        "site-1/log.txt": [f"2026-01-01 10:00:05,000 - ClientRunner - ERROR - job_id='{OTHER_RUN}': {OOM}"]
    },
    "job-started-line": {"site-1/log.txt": [f"2026-01-01 10:00:05,000 - JobRunner - ERROR - Job {OTHER_RUN}: {OOM}"]},
}


@pytest.mark.parametrize("files", OTHER_RUN_RECORDS.values(), ids=OTHER_RUN_RECORDS)
def test_another_runs_record_without_a_run_prefix_is_not_a_confident_diagnosis_of_this_job(files):
    assert verdict(run(files, "production", job_id=THIS_RUN)) == ("CUDA_OOM", "medium")
    assert verdict(run(files, "production", job_id=OTHER_RUN)) == ("CUDA_OOM", "high")


def test_a_tracker_printing_job_id_unquoted_does_not_make_the_record_another_runs():
    files = {"site-1/log.txt": [f"2026-01-01 10:00:05,000 - ClientRunner - ERROR - wandb job_id={OTHER_RUN} {OOM}"]}
    assert verdict(run(files, "production", job_id=THIS_RUN)) == ("CUDA_OOM", "high")
