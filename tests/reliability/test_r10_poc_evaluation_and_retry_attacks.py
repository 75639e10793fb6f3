"""Attacks on the poc/prod evaluation job (`submit --evaluation`) and on the one retry after a simulator stall.

The promises under attack: the evaluation job measures the model of the training job `submit` ran and downloaded
for this run, with only the runner's frozen copies; a forged or partial answer never becomes a score; a candidate
that prints NVFLARE's stall line itself gains nothing from the second attempt. The FLARE system is a stand-in
(`preflight.check` and `FlareCli` replaced in this process) that records what would be submitted: the point is what
the runner hands NVFLARE, not NVFLARE (tests/poc/test_poc_frozen.py runs a real POC).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from runner_support import initialized_standin, ledger_rows, run_inproc, source_dir, standin_workspace

EVALUATOR = Path(__file__).resolve().parents[1] / "autofl" / "standin_evaluator"
APPROVED = ("--confirm-user-authorized", "--startup-kit", "/nonexistent/kit")
SCHEMA = "nvflare.autofl.external.v1"


class StandInSystem:
    """A FLARE system that answers preflight with two sites and records every job folder handed to it."""

    def __init__(self, monkeypatch):
        from autofl_core.runner import preflight
        from autofl_core.trial import flare_cli

        self.submitted: list[Path] = []
        monkeypatch.setattr(preflight, "check", lambda *a, **k: ["site-1", "site-2"])
        system = self

        class Cli:
            def __init__(self, *args, **kwargs):
                pass

            def submit(self, folder):
                system.submitted.append(Path(folder))
                raise flare_cli.FlareCliError("stand-in system: stop after the submit")

            def jobs_named(self, name):
                return []

        monkeypatch.setattr(flare_cli, "FlareCli", Cli)


def poc_workspace(tmp_path: Path) -> Path:
    workspace = standin_workspace(tmp_path)
    for path in EVALUATOR.glob("*.py"):
        shutil.copy(path, workspace / path.name)
    done = run_inproc(workspace, "initialize", "--env", "poc", "--evaluator", "evaluate_model.py")
    assert done.code == 0, done.stderr
    return workspace


def planted_download(root: Path, weights) -> Path:
    """A folder shaped like `nvflare job download`'s (<root>/<job id>/workspace/models/server.npy)."""
    models = root / "workspace" / "models"
    models.mkdir(parents=True)
    np.save(models / "server.npy", np.asarray(weights, dtype=float))
    return root


def awaiting_record(workspace: Path, name: str, **submission) -> None:
    record = workspace / ".nvflare" / "autofl" / "external" / f"{name}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    fields = {"state": "downloaded", "job_id": "job-1", "awaiting_evaluation": True, **submission}
    record.write_text(json.dumps({"schema_version": SCHEMA, "name": name, "submission": fields}))


def edits(workspace: Path) -> dict:
    """Hand edits of external/baseline.json that point `submit --evaluation` at a model submit never downloaded."""
    planted = planted_download(workspace.parent / "planted" / "job-1", [9.0, 9.0, 9.0])
    runs = workspace / "autofl_runs" / "baseline" / "download"
    runs.mkdir(parents=True)
    (runs / "job-9").symlink_to(planted, target_is_directory=True)
    planted_download(runs / "job-2", [8.0])  # a real download, but of another job id than the record names
    return {
        "outside the run": {"download": "../planted/job-1"},
        "absolute": {"download": str(planted)},
        "through a link": {"download": "autofl_runs/baseline/download/job-9", "job_id": "job-9"},
        "another job's download": {"download": "autofl_runs/baseline/download/job-2"},
        "no download": {},
        "never downloaded": {
            "state": "submitted",
            "download": "autofl_runs/baseline/download/job-2",
            "job_id": "job-2",
        },
        "job id with a path": {"download": "autofl_runs/baseline/download/job-2", "job_id": "../download/job-2"},
    }


EDITS = (
    "outside the run",
    "absolute",
    "through a link",
    "another job's download",
    "no download",
    "never downloaded",
    "job id with a path",
)


@pytest.mark.parametrize("edit", EDITS)
def test_a_hand_edited_submission_record_never_sends_a_planted_model_to_the_sites(tmp_path, monkeypatch, edit):
    workspace = poc_workspace(tmp_path)
    awaiting_record(workspace, "baseline", **edits(workspace)[edit])
    system = StandInSystem(monkeypatch)
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert system.submitted == [], f"{edit}: an evaluation job was submitted: {system.submitted}"
    assert done.code == 2 and "external/baseline.json does not describe a training job" in done.stderr, done.stderr
    assert not (workspace / "autofl_runs" / "baseline" / "evaluation_job").exists()
    assert ledger_rows(workspace) == []


def test_the_download_submit_wrote_still_reaches_the_evaluation_job(tmp_path, monkeypatch):
    """The guard above refuses only records submit never wrote: the genuine one builds and submits the job."""
    workspace = poc_workspace(tmp_path)
    planted_download(workspace / "autofl_runs" / "baseline" / "download" / "job-1", [0.5, 0.5])
    awaiting_record(workspace, "baseline", download="autofl_runs/baseline/download/job-1")
    system = StandInSystem(monkeypatch)
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 2 and "stand-in system" in done.stderr, done.stderr
    [job] = system.submitted
    custom = job / "app" / "custom"
    assert np.load(custom / "autofl_model.npy").tolist() == [0.5, 0.5]
    frozen = yaml.safe_load((workspace / "autofl.yaml").read_text())["evaluation"]["frozen"]
    shipped = {str(path.relative_to(custom)) for path in custom.rglob("*") if path.is_file()}
    assert shipped == {"autofl_model.npy", "autofl_site_eval.py", *frozen}


@pytest.mark.parametrize("job_name", ["../../../../victim", "/tmp/../victim", "a/b"])
def test_a_hand_edited_job_name_never_removes_or_writes_outside_the_run(tmp_path, monkeypatch, job_name):
    workspace = poc_workspace(tmp_path)
    planted_download(workspace / "autofl_runs" / "baseline" / "download" / "job-1", [0.5, 0.5])
    awaiting_record(workspace, "baseline", download="autofl_runs/baseline/download/job-1", job_name=job_name)
    (workspace / "autofl_runs" / "baseline" / "evaluation_job").mkdir()  # as an earlier evaluation left it
    victim = tmp_path / "victim_eval"
    victim.mkdir()
    (victim / "keep.txt").write_text("the user's file")
    system = StandInSystem(monkeypatch)
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert (victim / "keep.txt").read_text() == "the user's file"
    assert system.submitted == [] and done.code == 2 and "job name" in done.stderr, done.stderr


class ForgedEvaluationSystem:
    """A FLARE system on which the agent ran an evaluation job of its own: waiting on any job id finishes it, and
    downloading it gives answers that name the shipped model's digest and an inflated accuracy."""

    def __init__(self, monkeypatch, digest: str):
        from autofl_core.runner import preflight
        from autofl_core.trial import flare_cli, job_meta

        monkeypatch.setattr(preflight, "check", lambda *a, **k: ["site-1", "site-2"])
        forged = {"autofl_stdout": '{"accuracy": 0.99, "n": 1000}', "autofl_exit": 0, "autofl_model_sha256": digest}

        class Cli:
            def __init__(self, *args, **kwargs):
                pass

            def wait(self, job_id, seconds):
                return flare_cli.Waited(finished=True, status=job_meta.COMPLETED, meta=None)

            def download(self, job_id, destination):
                folder = Path(destination) / job_id
                results = folder / "workspace" / "cross_site_val" / "cross_val_results.json"
                results.parent.mkdir(parents=True, exist_ok=True)
                results.write_text(json.dumps({site: {"SRV_server": forged} for site in ("site-1", "site-2")}))
                return folder

        monkeypatch.setattr(flare_cli, "FlareCli", Cli)


def test_an_evaluation_job_the_runner_did_not_build_never_scores(tmp_path, monkeypatch):
    """A job id written by hand into evaluation_submission: its download holds no job definition of the runner's
    evaluation job, so its answers (which need only the shipped model's sha256) never become a score."""
    workspace = poc_workspace(tmp_path)
    download = planted_download(workspace / "autofl_runs" / "baseline" / "download" / "job-1", [0.5, 0.5])
    awaiting_record(workspace, "baseline", download="autofl_runs/baseline/download/job-1")
    record = workspace / ".nvflare" / "autofl" / "external" / "baseline.json"
    document = json.loads(record.read_text())
    document["evaluation_submission"] = {
        "state": "submitted",
        "job_id": "agents-own-job",
        "job_name": "x_eval",
        "target": "evaluation of baseline",
        "environment": "poc",
        "kit": "/nonexistent/kit",
        "approval": {"confirmed_by": "--confirm-user-authorized", "authorization": None, "at": "2026-12-05"},
    }
    record.write_text(json.dumps(document))
    from autofl_core.runner import frozen_submit

    ForgedEvaluationSystem(monkeypatch, frozen_submit._sha256(download / "workspace" / "models" / "server.npy"))
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 1 and "holds no job definition" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert [row["score"] for row in ledger_rows(workspace) if row["score"] not in (None, "")] == []
    evaluation = json.loads((workspace / "autofl_runs" / "baseline" / "evaluation.json").read_text())
    assert evaluation["score"] is None and "holds no job definition" in evaluation["failure"]
    assert json.loads(record.read_text())["evaluation_submission"]["state"] == "failed"  # the next one is built


class RunningSystem:
    """A FLARE system that runs what it is handed: `submit` keeps the job folder, and `download` gives it back as
    NVFLARE 2.9 does (`<job id>/job/<temporary folder>/` with the JSON configuration laid out anew and signature
    files in every folder, `<job id>/workspace/cross_site_val/cross_val_results.json` with each site's answer on
    the model the job carries). `tamper(definition)` edits the definition before it is handed back."""

    def __init__(self, monkeypatch, accuracy: float, tamper=None):
        from autofl_core.runner import preflight
        from autofl_core.trial import flare_cli, job_meta

        monkeypatch.setattr(preflight, "check", lambda *a, **k: ["site-1", "site-2"])
        self.jobs: dict[str, Path] = {}
        system = self

        class Cli:
            def __init__(self, *args, **kwargs):
                pass

            def submit(self, folder):
                job_id = f"job-{len(system.jobs) + 1}"
                system.jobs[job_id] = Path(folder)
                return job_id

            def jobs_named(self, name):
                return []

            def wait(self, job_id, seconds):
                return flare_cli.Waited(finished=True, status=job_meta.COMPLETED, meta=None)

            def download(self, job_id, destination):
                folder = Path(destination) / job_id
                shutil.rmtree(folder, ignore_errors=True)
                definition = folder / "job" / "tmpk2x9q1ab"
                shutil.copytree(system.jobs[job_id], definition)
                for path in [definition, *definition.rglob("*")]:
                    if path.is_dir():
                        (path / ".__nvfl_sig.json").write_text('{"meta.json": "c2lnbmF0dXJl"}')
                        (path / ".__nvfl_submitter.crt").write_text("-----BEGIN CERTIFICATE-----\n")
                    elif path.suffix == ".json":
                        path.write_text(json.dumps(json.loads(path.read_text()), indent=2))
                model = definition / "app" / "custom" / "autofl_model.npy"
                answer = {
                    "autofl_stdout": json.dumps({"accuracy": accuracy, "n": 100}),
                    "autofl_exit": 0,
                    "autofl_model_sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
                }
                if tamper:
                    tamper(definition)
                results = folder / "workspace" / "cross_site_val" / "cross_val_results.json"
                results.parent.mkdir(parents=True)
                results.write_text(json.dumps({site: {"SRV_server": answer} for site in ("site-1", "site-2")}))
                return folder

        monkeypatch.setattr(flare_cli, "FlareCli", Cli)


def awaiting_baseline(tmp_path: Path) -> Path:
    workspace = poc_workspace(tmp_path)
    planted_download(workspace / "autofl_runs" / "baseline" / "download" / "job-1", [0.5, 0.5])
    awaiting_record(workspace, "baseline", download="autofl_runs/baseline/download/job-1")
    return workspace


def test_the_evaluation_job_the_runner_built_and_nvflare_ran_scores(tmp_path, monkeypatch):
    workspace = awaiting_baseline(tmp_path)
    RunningSystem(monkeypatch, accuracy=0.625)
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 0, done.stderr
    [row] = ledger_rows(workspace)
    assert row["status"] == "baseline" and float(row["score"]) == 0.625
    assert row["metric_source"] == "measured:frozen_evaluator"


def _one_byte(definition: Path) -> None:
    script = definition / "app" / "custom" / "evaluate_model.py"
    data = bytearray(script.read_bytes())
    data[-2] ^= 0x01
    script.write_bytes(bytes(data))


def _helper_shadowed(definition: Path) -> None:
    (definition / "app" / "custom" / "sitecustomize.py").write_text("import builtins\n")


def _client_script_swapped(definition: Path) -> None:
    client = definition / "app" / "config" / "config_fed_client.json"
    document = json.loads(client.read_text())
    document["executors"][0]["executor"]["args"]["task_script_path"] = "evaluate_model.py"
    client.write_text(json.dumps(document))


def _model_swapped(definition: Path) -> None:
    np.save(definition / "app" / "custom" / "autofl_model.npy", np.asarray([0.5, 0.25]))


def _linked_helper(definition: Path) -> None:
    helper = definition / "app" / "custom" / "evalhelpers.py"
    outside = definition.parent.parent / "evalhelpers.py"  # the same bytes, outside the definition
    outside.write_bytes(helper.read_bytes())
    helper.unlink()
    helper.symlink_to(outside)


TAMPERS = {
    "one byte of the evaluator": (_one_byte, "app/custom/evaluate_model.py differs"),
    "an extra module": (_helper_shadowed, "holds app/custom/sitecustomize.py"),
    "another client script": (_client_script_swapped, "config_fed_client.json is another configuration"),
    "another model": (_model_swapped, "app/custom/autofl_model.npy differs"),
    "a linked helper": (_linked_helper, "app/custom/evalhelpers.py is not a regular file"),
}


@pytest.mark.parametrize("edit", TAMPERS)
def test_a_download_whose_job_definition_is_not_the_runners_never_scores(tmp_path, monkeypatch, edit):
    tamper, why = TAMPERS[edit]
    workspace = awaiting_baseline(tmp_path)
    RunningSystem(monkeypatch, accuracy=0.99, tamper=tamper)
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 1 and why in done.stderr and "not the evaluation job the runner builds" in done.stderr, (
        done.stderr
    )
    assert ledger_rows(workspace) == []
    evaluation = json.loads((workspace / "autofl_runs" / "baseline" / "evaluation.json").read_text())
    assert evaluation["score"] is None and why in evaluation["failure"]


def test_a_candidate_whose_evaluation_job_is_not_the_runners_is_a_crash_without_a_score(tmp_path, monkeypatch):
    workspace = awaiting_baseline(tmp_path)
    RunningSystem(monkeypatch, accuracy=0.5)
    assert run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED).code == 0
    assert run_inproc(workspace, "prepare", "--name", "c", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0 and done.envelope["next_action"] == "submit_candidate", done.stderr
    planted_download(workspace / "autofl_runs" / "c" / "download" / "job-7", [0.25, 0.75])
    awaiting_record(workspace, "c", job_id="job-7", download="autofl_runs/c/download/job-7")
    RunningSystem(monkeypatch, accuracy=0.99, tamper=_one_byte)
    done = run_inproc(workspace, "submit", "--evaluation", *APPROVED)
    assert done.code == 1 and done.envelope["candidate_status"] == "crash", done.stderr
    row = ledger_rows(workspace)[-1]
    assert row["name"] == "c" and row["status"] == "crash" and row["score"] in (None, "")
    assert "app/custom/evaluate_model.py differs" in row["failure_reason"]
    evaluation = json.loads((workspace / "autofl_runs" / "c" / "evaluation.json").read_text())
    assert evaluation["score"] is None and "evaluate_model.py differs" in evaluation["failure"]


# --- forged answers ---------------------------------------------------------------------------------------------


MEASURED_BASELINE = {
    "status": "baseline",
    "name": "baseline",
    "score": 0.7,
    "metric_source": "measured:frozen_evaluator",
}


def measured(tmp_path, answers, rows=()):
    from autofl_core.campaign.ledger import LedgerRow
    from autofl_core.runner import frozen_submit
    from autofl_core.trial import global_model

    model_path = tmp_path / "server.npy"
    np.save(model_path, np.zeros(3))
    model = global_model.GlobalModel(path=model_path, format="numpy")
    paths = SimpleNamespace(run_dir=lambda name: tmp_path / "runs" / name, rel=str)
    campaign = SimpleNamespace(
        paths=paths, settings=SimpleNamespace(metric="accuracy"), rows=lambda: [LedgerRow.from_row(row) for row in rows]
    )
    found = frozen_submit.measured(campaign, "c", answers, model, sites=["site-1", "site-2"], job={"job_id": "j"})
    return found, frozen_submit._sha256(model_path)


def answer(digest, stdout, **extra):
    return {"autofl_stdout": stdout, "autofl_exit": 0, "autofl_model_sha256": digest, **extra}


def test_forged_answers_never_become_a_score(tmp_path):
    _found, digest = measured(tmp_path, {})
    honest = answer(digest, '{"accuracy": 0.5, "n": 100}')
    forged = {
        "no digest": {"autofl_stdout": '{"accuracy": 0.99, "n": 100}', "autofl_exit": 0},
        "exit code true": answer(digest, '{"accuracy": 0.99, "n": 100}', autofl_exit=True),
        "negative n": answer(digest, '{"accuracy": 0.99, "n": -50}'),
        "NaN n": answer(digest, '{"accuracy": 0.99, "n": NaN}'),
        "bool n": answer(digest, '{"accuracy": 0.99, "n": true}'),
        "huge int n": answer(digest, '{"accuracy": 0.99, "n": ' + "9" * 400 + "}"),
    }
    for why, bad in forged.items():
        found, _ = measured(tmp_path, {"site-1": honest, "site-2": bad})
        assert found["score"] is None and "site-2" in found["failure"], (why, found)
    extra = answer(digest, '{"accuracy": 1, "n": 9}')
    found, _ = measured(tmp_path, {"site-1": honest, "site-2": honest, "site-0": extra})
    assert found["score"] is None and "site-0" in found["failure"]


def test_a_missing_baseline_evaluation_record_never_lifts_the_site_pins_in_poc(tmp_path):
    """As in simulation: once a baseline is measured, its record pins the sites; without it nothing is scored."""
    _found, digest = measured(tmp_path, {})
    honest = answer(digest, '{"accuracy": 0.5, "n": 100}')
    found, _ = measured(tmp_path, {"site-1": honest, "site-2": honest}, rows=[MEASURED_BASELINE])
    assert (
        found["score"] is None
        and "baseline's record" in found["failure"]
        and "missing or unreadable" in (found["failure"])
    )
    record = tmp_path / "runs" / "baseline" / "evaluation.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"sites": [{"site": "site-1"}, {"site": "site-2"}]}))
    found, _ = measured(tmp_path, {"site-1": honest, "site-2": honest}, rows=[MEASURED_BASELINE])
    assert found["failure"] == "" and found["score"] == 0.5


# --- the retry after a simulator stall --------------------------------------------------------------------------

LATE_STALL = """
import os as _os, time as _time
if _os.environ.get("AUTOFL_TRIAL_ATTEMPT") == "1":
    print("round=1 accuracy=0.10 (the candidate saw its own rounds and did badly)", flush=True)
    print("2026-12-05 18:01:33,760 - SimulatorClientRunner - ERROR - "
          "Communication error with client site-1: [Errno 104] Connection reset by peer", flush=True)
    _time.sleep(120)
BONUS = 0.05
"""


def test_a_stall_line_printed_after_the_rounds_ran_gets_no_second_attempt(tmp_path):
    """Only a stall before the trial reported any result is retried (NVFLARE's race comes as the workers start)."""
    ws = initialized_standin(tmp_path, "--uncapped")
    assert run_inproc(ws, "prepare", "--name", "reroll", "--hypothesis", "better").code == 0
    client = source_dir(ws, "reroll") / "client.py"
    client.write_text(client.read_text() + LATE_STALL)
    done = run_inproc(ws, "evaluate")
    trial = json.loads((ws / "autofl_runs" / "reroll" / "trial.json").read_text())
    assert trial["retried_after"] is None
    assert done.envelope["candidate_status"] == "crash"


DAEMON_THEN_STALL = """
import os as _os, subprocess as _sp, sys as _sys, time as _time
if _os.environ.get("AUTOFL_TRIAL_ATTEMPT") == "1":
    _sp.Popen([_sys.executable, "-c", "import time; time.sleep(90)  # {tag}"], start_new_session=True,
              stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL)
    print("2026-12-05 18:01:33,760 - SimulatorClientRunner - ERROR - "
          "Communication error with client site-1: [Errno 104] Connection reset by peer", flush=True)
    _time.sleep(120)
BONUS = 0.05
"""


def alive_with(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_first_attempts_processes_never_outlive_it(tmp_path):
    """A daemon the first attempt leaves in a session of its own is ended before the second attempt's result."""
    tag = f"autofl-attack-{tmp_path.name}"
    ws = initialized_standin(tmp_path, "--uncapped")
    assert run_inproc(ws, "prepare", "--name", "daemon", "--hypothesis", "better").code == 0
    client = source_dir(ws, "daemon") / "client.py"
    client.write_text(client.read_text() + DAEMON_THEN_STALL.format(tag=tag))
    done = run_inproc(ws, "evaluate")
    trial = json.loads((ws / "autofl_runs" / "daemon" / "trial.json").read_text())
    assert trial["retried_after"] and done.envelope["candidate_status"] == "keep", done.envelope
    assert trial["runtime_seconds"] >= 0 and alive_with(tag) == []
