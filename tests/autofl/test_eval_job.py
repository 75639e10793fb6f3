"""The evaluation job of a downloaded model (poc/prod frozen evaluation), without a FLARE system.

What the job folder holds (only the runner's frozen copies, the model and the runner's client script), that its
configuration is what NVFLARE's own FedJob API exports for the same evaluation-only components, that it runs in
NVFLARE's simulator and its answers are read back, and how each site's answer becomes the measured score.
"""

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from autofl_core.runner import frozen_submit
from autofl_core.trial import eval_job, eval_job_match, evaluator, global_model
from runner_support import REPO, run_inproc, standin_workspace

EVALUATOR = Path(__file__).resolve().parent / "standin_evaluator"
HELLO = REPO / "examples" / "hello-numpy"
CUSTOM = "app/custom"
REAL = REPO / "tests" / "fixtures" / "eval_job_download"  # one real `nvflare job download` (its README)


def download_with_model(root: Path, weights) -> Path:
    """What `nvflare job download -j job-1` leaves: <dir>/job-1/workspace/models/server.npy."""
    models = root / "job-1" / "workspace" / "models"
    models.mkdir(parents=True)
    np.save(models / "server.npy", np.asarray(weights, dtype=float))
    return root


def spec(tmp_path, **changes) -> eval_job.EvalJobSpec:
    model = tmp_path / "server.npy"
    np.save(model, np.linspace(-1.0, 1.0, 9))
    fields = dict(
        name="autofl_ab_lr_eval",
        script="evaluate.py",
        files={"evaluate.py": (HELLO / "evaluate.py").read_bytes()},
        model=model,
        model_format="numpy",
        min_clients=2,
        timeout=120,
    )
    fields.update(changes)
    return eval_job.EvalJobSpec(**fields)


def files_below(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_the_evaluation_job_holds_only_the_runners_frozen_copies_the_model_and_its_client_script(tmp_path):
    workspace = standin_workspace(tmp_path)
    for path in EVALUATOR.glob("*.py"):
        shutil.copy(path, workspace / path.name)
    done = run_inproc(workspace, "initialize", "--env", "poc", "--evaluator", "evaluate_model.py")
    assert done.code == 0, done.stderr
    # the live copy changes after initialize: the job must carry the runner's frozen copy, never this one
    (workspace / "evalhelpers.py").write_text("raise SystemExit('a candidate edit')\n")
    from autofl_core.runner.open_campaign import Campaign

    campaign = Campaign.open(str(workspace / "job.py"))
    download = download_with_model(tmp_path / "downloads", np.linspace(0.0, 1.0, 9))
    folder, model = frozen_submit.job_for(campaign, "lr-x2", download, job_name="autofl_ab_lr-x2_eval", min_clients=2)

    assert folder == workspace / "autofl_runs" / "lr-x2" / "evaluation_job" / "autofl_ab_lr-x2_eval"
    frozen_root = workspace / ".nvflare" / "autofl" / "frozen"
    frozen_files = {p.relative_to(frozen_root).as_posix(): p.read_bytes() for p in frozen_root.rglob("*.py")}
    assert set(frozen_files) == {"evaluate_model.py", "evalhelpers.py", "evalsizes.py"}
    found = files_below(folder)
    assert set(found) == {
        "meta.json",
        "app/config/config_fed_server.json",
        "app/config/config_fed_client.json",
        f"{CUSTOM}/{eval_job.WRAPPER}",
        f"{CUSTOM}/autofl_model.npy",
        *(f"{CUSTOM}/{rel}" for rel in frozen_files),
    }
    for rel, data in frozen_files.items():
        assert found[f"{CUSTOM}/{rel}"] == data  # the runner's copies, byte for byte
    assert b"a candidate edit" not in found[f"{CUSTOM}/evalhelpers.py"]
    assert found[f"{CUSTOM}/autofl_model.npy"] == model.path.read_bytes()
    assert model.path == download / "job-1" / "workspace" / "models" / "server.npy" and model.format == "numpy"
    assert found[f"{CUSTOM}/{eval_job.WRAPPER}"] == eval_job.WRAPPER_SOURCE.read_bytes()
    client = json.loads(found["app/config/config_fed_client.json"])["executors"][0]["executor"]["args"]
    assert client["task_script_path"] == eval_job.WRAPPER
    assert client["task_script_args"].split()[:4] == ["--script", "evaluate_model.py", "--model", "autofl_model.npy"]
    assert json.loads(found["meta.json"])["name"] == "autofl_ab_lr-x2_eval"


def test_the_materialized_configuration_is_what_nvflares_fedjob_exports(tmp_path):
    """The same components through NVFLARE 2.9's own job API: the same meta.json and app configurations."""
    built = eval_job.materialize(spec(tmp_path), tmp_path / "ours")
    script = tmp_path / "api.py"
    script.write_text(
        "import sys\n"
        "from nvflare.job_config.api import FedJob\n"
        "from nvflare.app_common.workflows.global_model_eval import GlobalModelEval\n"
        "from nvflare.app_common.np.np_model_locator import NPModelLocator\n"
        "from nvflare.app_common.widgets.validation_json_generator import ValidationJsonGenerator\n"
        "from nvflare.job_config.script_runner import ScriptRunner, FrameworkType\n"
        "job = FedJob(name='autofl_ab_lr_eval', min_clients=2)\n"
        "job.to_server(NPModelLocator(model_dir='app_server/custom', model_name={'server': 'autofl_model.npy'}),"
        " id='model_locator')\n"
        "job.to_server(GlobalModelEval(model_locator_id='model_locator', validation_timeout=120), id='controller')\n"
        "job.to_server(ValidationJsonGenerator(), id='validation_json_generator')\n"
        "job.to_clients(ScriptRunner(script=sys.argv[2], script_args=sys.argv[3], framework=FrameworkType.NUMPY),"
        " tasks=['validate'])\n"
        "job.export_job(sys.argv[1])\n"
    )
    wrapper = tmp_path / eval_job.WRAPPER
    shutil.copy(eval_job.WRAPPER_SOURCE, wrapper)
    args = "--script evaluate.py --model autofl_model.npy --format numpy --timeout 120"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "api"), wrapper.name, args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    exported = tmp_path / "api" / "autofl_ab_lr_eval"
    for rel in ("meta.json", "app/config/config_fed_server.json", "app/config/config_fed_client.json"):
        assert json.loads((built / rel).read_text()) == json.loads((exported / rel).read_text()), rel


def real_download(tmp_path) -> tuple[Path, eval_job.EvalJobSpec]:
    """A copy of the recorded download with the runner's current client script, and the spec of its sources."""
    download = shutil.copytree(REAL / "3db72ca1-990a-409d-a1c0-2c66d1e07e2d", tmp_path / "download")
    definition = eval_job_match.definition_root(download)
    shutil.copy(eval_job.WRAPPER_SOURCE, definition / CUSTOM / eval_job.WRAPPER)  # the runner's own file, as now
    files = {"evaluate.py": (REAL / "frozen" / "evaluate.py").read_bytes()}
    return download, spec(tmp_path, files=files, model=REAL / "server.npy", name="any_name", min_clients=5)


def test_a_real_download_of_the_runners_evaluation_job_is_what_the_runner_builds(tmp_path):
    """NVFLARE's own layout (configuration laid out anew, signature files, a temporary folder name) matches; the
    name, site count and timeout are the job's own (here autofl_ca19eb511f2d_baseline_eval, 2 sites, 900 s)."""
    download, job_spec = real_download(tmp_path)
    eval_job_match.check(download, job_spec)
    digest = frozen_submit._sha256(REAL / "server.npy")
    answers = eval_job.read_answers(download)
    assert sorted(answers) == ["site-1", "site-2"]
    assert all(answer["autofl_model_sha256"] == digest for answer in answers.values())


@pytest.mark.parametrize(
    "change, why",
    [
        ({"files": {"evaluate.py": (REAL / "frozen" / "evaluate.py").read_bytes() + b"#"}}, "evaluate.py differs"),
        (
            {"files": {"evaluate.py": (REAL / "frozen" / "evaluate.py").read_bytes(), "x.py": b""}},
            "lacks app/custom/x.py",
        ),
        ({"model": HELLO / "evaluate.py", "model_format": "numpy"}, "autofl_model.npy differs"),
        ({"script": "other.py", "files": {"other.py": b""}}, "holds app/custom/evaluate.py"),
    ],
)
def test_a_real_download_is_not_the_job_the_runner_builds_from_other_sources(tmp_path, change, why):
    download, job_spec = real_download(tmp_path)
    with pytest.raises(eval_job.EvalJobError, match=why):
        eval_job_match.check(download, dataclasses.replace(job_spec, **change))


def test_a_download_without_its_job_definition_is_refused(tmp_path):
    download, job_spec = real_download(tmp_path)
    shutil.rmtree(download / "job")
    with pytest.raises(eval_job.EvalJobError, match="holds no job definition"):
        eval_job_match.check(download, job_spec)
    (download / "job" / "a").mkdir(parents=True)
    (download / "job" / "b").mkdir()
    with pytest.raises(eval_job.EvalJobError, match="holds no job definition"):
        eval_job_match.check(download, job_spec)


@pytest.mark.slow
def test_the_evaluation_job_runs_in_nvflares_simulator_and_each_sites_answer_is_read(tmp_path):
    job_spec = spec(tmp_path)
    folder = eval_job.materialize(job_spec, tmp_path / "jobs")
    workspace = tmp_path / "sim"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nvflare"), "simulator", str(folder), "-w", str(workspace), "-n", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    answers = eval_job.read_answers(workspace / "server" / "simulate_job")
    assert set(answers) == {"site-1", "site-2"}
    for site, answer in answers.items():
        alone = subprocess.run(
            [sys.executable, str(HELLO / "evaluate.py"), "--model", str(job_spec.model), "--site", site],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert answer["autofl_exit"] == 0
        assert evaluator.parse_output(answer["autofl_stdout"], "accuracy") == evaluator.parse_output(
            alone.stdout, "accuracy"
        )


def test_a_model_without_a_locator_and_unsafe_or_clashing_names_are_refused(tmp_path):
    with pytest.raises(eval_job.EvalJobError, match="NumPy models"):
        eval_job.job_files(spec(tmp_path, model_format="pytorch"))
    with pytest.raises(eval_job.EvalJobError, match="cannot be named"):
        eval_job.job_files(spec(tmp_path, files={"evaluate.py": b"", "../x.py": b""}))
    with pytest.raises(eval_job.EvalJobError, match="own file"):
        eval_job.job_files(spec(tmp_path, files={"evaluate.py": b"", eval_job.WRAPPER: b""}))
    with pytest.raises(eval_job.EvalJobError, match="cross_val_results.json"):
        eval_job.read_answers(tmp_path)


def answers_for(digest: str, **sites) -> dict:
    return {
        site: {"autofl_stdout": f"log\n{json.dumps(answer)}\n", "autofl_exit": 0, "autofl_model_sha256": digest}
        for site, answer in sites.items()
    }


def fake_campaign(tmp_path, rows=()):
    paths = SimpleNamespace(run_dir=lambda name: tmp_path / "runs" / name, rel=lambda path: str(path))
    return SimpleNamespace(paths=paths, settings=SimpleNamespace(metric="accuracy"), rows=lambda: list(rows))


def test_each_sites_answer_counts_only_on_the_shipped_model_with_the_evaluators_answer_format(tmp_path):
    model_path = tmp_path / "server.npy"
    np.save(model_path, np.zeros(3))
    model = global_model.GlobalModel(path=model_path, format="numpy")
    digest = frozen_submit._sha256(model_path)
    campaign = fake_campaign(tmp_path)
    job = {"job_id": "j-1"}

    good = answers_for(digest, **{"site-1": {"accuracy": 0.8, "n": 100}, "site-2": {"accuracy": 0.6, "n": 300}})
    found = frozen_submit.measured(campaign, "c", good, model, sites=["site-1", "site-2"], job=job)
    assert found["failure"] == "" and found["score"] == pytest.approx((0.8 * 100 + 0.6 * 300) / 400)
    record = json.loads((tmp_path / "runs" / "c" / "evaluation.json").read_text())
    assert [site["site"] for site in record["sites"]] == ["site-1", "site-2"] and record["evaluation_job"] == job

    other = dict(good, **answers_for("0" * 64, **{"site-2": {"accuracy": 0.99, "n": 300}}))
    found = frozen_submit.measured(campaign, "c", other, model, sites=["site-1", "site-2"], job=job)
    assert found["score"] is None and "site-2" in found["failure"] and "sha256" in found["failure"]

    missing = {"site-1": good["site-1"]}
    found = frozen_submit.measured(campaign, "c", missing, model, sites=["site-1", "site-2"], job=job)
    assert found["score"] is None and "site-2: it returned no result" in found["failure"]

    failed = dict(good, **{"site-1": dict(good["site-1"], autofl_exit=1, autofl_stderr="KeyError: 'x'")})
    found = frozen_submit.measured(campaign, "c", failed, model, sites=["site-1", "site-2"], job=job)
    assert found["score"] is None and "exit_code=1; KeyError" in found["failure"]

    no_n = answers_for(digest, **{"site-1": {"accuracy": 0.8}, "site-2": {"accuracy": 0.6, "n": 300}})
    found = frozen_submit.measured(campaign, "c", no_n, model, sites=["site-1", "site-2"], job=job)
    assert found["score"] is None and "positive `n`" in found["failure"]


def poc_campaign(tmp_path, *, evaluator=True):
    workspace = standin_workspace(tmp_path)
    for path in EVALUATOR.glob("*.py"):
        shutil.copy(path, workspace / path.name)
    extra = ("--evaluator", "evaluate_model.py") if evaluator else ()
    done = run_inproc(workspace, "initialize", "--env", "poc", *extra)
    assert done.code == 0, done.stderr
    return workspace


APPROVED = ("--confirm-user-authorized", "--startup-kit", "/nonexistent/kit")


def test_submit_evaluation_is_refused_without_an_evaluator_or_a_run_awaiting_it(tmp_path):
    plain = poc_campaign(tmp_path / "plain", evaluator=False)
    done = run_inproc(plain, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 2 and "declares no evaluator" in done.stderr
    workspace = poc_campaign(tmp_path / "frozen")
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", "--startup-kit", "/nonexistent/kit")
    assert done.code == 2 and "--confirm-user-authorized" in done.stderr  # the same gate as every submit
    done = run_inproc(workspace, "submit", "--baseline", "--evaluation", *APPROVED)
    assert done.code == 2 and "no downloaded run awaiting its evaluation" in done.stderr
    assert not (workspace / ".nvflare" / "autofl" / "external").exists()  # nothing written, nothing submitted


def test_a_downloaded_run_awaiting_its_evaluation_sets_next_action_and_is_never_submitted_again(tmp_path):
    workspace = poc_campaign(tmp_path)
    record = workspace / ".nvflare" / "autofl" / "external" / "baseline.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps(
            {
                "schema_version": "nvflare.autofl.external.v1",
                "name": "baseline",
                "submission": {"state": "downloaded", "job_id": "job-1", "awaiting_evaluation": True},
            }
        )
    )
    status = run_inproc(workspace, "status")
    assert status.code == 0, status.stderr
    assert status.envelope["next_action"] == "submit_evaluation"
    assert (
        "--evaluation" in status.envelope["agent_instruction"]
        and "Awaiting: baseline" in (status.envelope["agent_instruction"])
    )
    assert status.envelope["final_response_allowed"] is False
    done = run_inproc(workspace, "submit", "--baseline", *APPROVED)
    assert done.code == 2 and "awaits its evaluation job" in done.stderr
    # a runner killed after recording the baseline but before marking its submission recorded: nothing awaits
    from autofl_core.campaign import ledger

    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status="baseline", name="baseline", score=0.7, metric_source="measured:frozen_evaluator")
    (workspace / "results.tsv").write_text(ledger.format_ledger([values]))
    status = run_inproc(workspace, "status")
    assert status.code == 0 and status.envelope["next_action"] == "propose_candidate"


def test_a_model_the_evaluation_job_cannot_carry_is_refused_with_what_to_do_instead(tmp_path):
    workspace = poc_campaign(tmp_path)
    from autofl_core.runner.open_campaign import Campaign
    from autofl_core.runner.outcome import CampaignError

    campaign = Campaign.open(str(workspace / "job.py"))
    server = tmp_path / "downloads" / "job-1" / "workspace" / "app_server"
    server.mkdir(parents=True)
    (server / "FL_global_model.pt").write_bytes(b"not numpy")
    with pytest.raises(CampaignError) as refused:
        frozen_submit.job_for(campaign, "c", tmp_path / "downloads", job_name="autofl_x_c_eval", min_clients=2)
    message = str(refused.value)
    assert "pytorch format" in message and "nothing was submitted" in message and "--failure-reason" in message
    assert not (workspace / "autofl_runs" / "c" / "evaluation_job").exists()


def test_status_says_a_ready_candidate_awaiting_its_evaluation_needs_the_evaluation_job(tmp_path):
    from autofl_core.campaign import ledger

    workspace = poc_campaign(tmp_path)
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status="baseline", name="baseline", score=0.7, metric_source="measured:frozen_evaluator")
    (workspace / "results.tsv").write_text(ledger.format_ledger([values]))
    assert run_inproc(workspace, "prepare", "--name", "c", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_inproc(workspace, "evaluate")
    assert done.code == 0 and done.envelope["next_action"] == "submit_candidate", done.stderr
    record = workspace / ".nvflare" / "autofl" / "external" / "c.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps(
            {
                "schema_version": "nvflare.autofl.external.v1",
                "name": "c",
                "submission": {"state": "downloaded", "job_id": "job-2", "awaiting_evaluation": True},
            }
        )
    )
    status = run_inproc(workspace, "status")
    assert (
        status.envelope["next_action"] == "submit_evaluation" and "Awaiting: c" in status.envelope["agent_instruction"]
    )
    (entry,) = status.envelope["pending"]
    assert entry["needs"] == frozen_submit.EVALUATION_NEEDED
    done = run_inproc(workspace, "record", "--score", "0.99")  # a hand-reported score is never taken
    assert done.code == 2 and "submit --evaluation" in done.stderr
    assert json.loads((workspace / ".nvflare/autofl/candidates/c/candidate_manifest.json").read_text())["status"] == (
        "ready_for_external_execution"
    )
