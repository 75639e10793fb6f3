"""The frozen evaluator on the stand-in job: the runner measures the score on the persisted global model.

The stand-in persists `server/simulate_job/models/server.npy` (one value: what the model is worth) and reports
that value plus client.py's REPORTED_BONUS; `standin_evaluator/` scores the model per site a little lower
(site-1: 100 samples at -0.01, site-2: 300 samples at -0.02), so the baseline's measured score is the
n-weighted 0.7325 while the job reports 0.75.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from runner_support import (
    WITHOUT_NAMESPACES,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    source_dir,
    standin_workspace,
)

pytestmark = pytest.mark.slow

EVALUATOR = Path(__file__).resolve().parent / "standin_evaluator"
MEASURED = "measured: frozen evaluator on the final global model"
BASELINE_MEASURED = round((0.74 * 100 + 0.73 * 300) / 400, 6)


def evaluator_workspace(tmp_path, evaluator_text=None):
    workspace = standin_workspace(tmp_path)
    for path in EVALUATOR.glob("*.py"):
        shutil.copy(path, workspace / path.name)
    if evaluator_text is not None:
        (workspace / "evaluate_model.py").write_text(evaluator_text)
    return workspace


def initialized(tmp_path, *extra):
    workspace = evaluator_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py", "--max-candidates", "5", *extra)
    assert done.code == 0, done.stderr
    return workspace, done


def candidate(workspace, name, edit):
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"try {name}")
    assert done.code == 0, done.stderr
    edit(source_dir(workspace, name))
    return run_inproc(workspace, "evaluate")


def set_line(folder, prefix, line):
    client = folder / "client.py"
    text = client.read_text()
    if prefix in text:
        text = "\n".join(line if row.startswith(prefix) else row for row in text.splitlines()) + "\n"
    else:
        text = text.replace("BONUS = 0.0\n", f"BONUS = 0.0\n{line}\n")
    client.write_text(text)


def test_the_baseline_score_is_measured_by_the_evaluator_and_the_reported_value_kept_beside_it(tmp_path):
    workspace, done = initialized(tmp_path)
    assert done.envelope["baseline_score"] == BASELINE_MEASURED
    assert done.envelope["reported_score"] == 0.75 and done.envelope["score_provenance"] == MEASURED
    sites = done.envelope["evaluation"]["sites"]
    assert sites == {"site-1": {"value": 0.74, "n": 100.0}, "site-2": {"value": 0.73, "n": 300.0}}
    row = ledger_rows(workspace)[0]
    assert (row["score"], row["metric_source"]) == (BASELINE_MEASURED, "measured:frozen_evaluator")
    evaluation = json.loads((workspace / "autofl_runs/baseline/evaluation.json").read_text())
    assert evaluation["model"] == "autofl_runs/baseline/simulation/server/simulate_job/models/server.npy"
    assert evaluation["model_format"] == "numpy" and evaluation["sandbox"]["sealed"] is True
    section = yaml.safe_load((workspace / "autofl.yaml").read_text())["evaluation"]
    assert section["script"] == "evaluate_model.py"
    assert section["modules"] == ["evalhelpers.py", "evalsizes.py"]  # transitive: evalhelpers imports evalsizes
    assert sorted(section["frozen"]) == ["evalhelpers.py", "evalsizes.py", "evaluate_model.py"]
    copy = workspace / ".nvflare/autofl/frozen/evalsizes.py"
    assert copy.read_bytes() == (workspace / "evalsizes.py").read_bytes()
    status = run_inproc(workspace, "status")
    assert status.envelope["score_provenance"] == MEASURED


def test_a_candidate_that_inflates_its_reported_metric_is_measured_and_not_kept(tmp_path):
    workspace, _ = initialized(tmp_path)
    done = candidate(workspace, "inflate", lambda folder: set_line(folder, "REPORTED_BONUS", "REPORTED_BONUS = 0.2"))
    assert done.code == 0 and done.envelope["candidate_status"] == "discard"
    result = manifest(workspace, "inflate")["result"]
    assert result["reported_score"] == 0.95 and result["score"] == BASELINE_MEASURED
    divergence = done.envelope["metric_divergence"]  # gap 0.2175 > the baseline's 0.0175 + the band 0.01
    assert divergence == {
        "reported": 0.95,
        "measured": BASELINE_MEASURED,
        "gap": 0.2175,
        "baseline_gap": 0.0175,
        "band": 0.01,
    }
    assert result["metric_divergence"] == divergence
    state = json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["metric_divergence"] == [{"name": "inflate", **divergence}]
    report = (workspace / "autofl_report.md").read_text()
    assert "## Score" in report and "measured: frozen evaluator on the final global model" in report
    assert "inflate: metric_divergence: reported 0.950000 vs measured 0.732500" in report
    score = json.loads((workspace / "autofl_report.json").read_text())["score"]
    assert [(t["name"], t["reported"]) for t in score["trials"]] == [("baseline", 0.75), ("inflate", 0.95)]
    better = candidate(workspace, "better", lambda folder: set_line(folder, "BONUS = ", "BONUS = 0.02"))
    assert better.envelope["candidate_status"] == "keep" and "metric_divergence" not in better.envelope
    assert manifest(workspace, "better")["result"]["score"] == round(BASELINE_MEASURED + 0.02, 6)


def test_without_an_evaluator_the_score_is_said_to_be_client_reported(tmp_path):
    workspace = standin_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--max-candidates", "2")
    reported = "client-reported: model after round N-1, weighted by client steps"
    assert done.envelope["score_provenance"] == reported
    assert "initialize --evaluator FILE" in done.envelope["agent_instruction"]
    status = run_inproc(workspace, "status")
    assert status.envelope["score_provenance"] == reported
    assert "--evaluator" not in status.envelope["agent_instruction"]  # said once, at initialize
    report = (workspace / "autofl_report.md").read_text()
    assert f"- Provenance: {reported}" in report.replace("\\", "")


def test_a_missing_model_is_a_crash_with_its_cause(tmp_path):
    workspace, _ = initialized(tmp_path)
    done = candidate(workspace, "nomodel", lambda folder: set_line(folder, "PERSIST_MODEL", "PERSIST_MODEL = False"))
    assert done.code == 1 and done.envelope["candidate_status"] == "crash"
    row = ledger_rows(workspace)[-1]
    assert row["score"] is None
    assert "server persisted no global model" in row["failure_reason"]
    assert "server/simulate_job/models/server.npy" in row["failure_reason"]


def test_a_failing_evaluator_is_a_crash_naming_the_site_and_the_error(tmp_path):
    broken = (
        (EVALUATOR / "evaluate_model.py")
        .read_text()
        .replace(
            "    weights = read_npy(args.model)\n",
            "    weights = read_npy(args.model)\n    if args.site == 'site-2':\n        raise ZeroDivisionError('no samples')\n",
        )
    )
    workspace = evaluator_workspace(tmp_path, broken)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 1  # an unscored baseline
    row = ledger_rows(workspace)[0]
    assert row["score"] is None
    assert row["failure_reason"] == "frozen evaluator failed on site-2: exit_code=1; ZeroDivisionError: no samples"


def test_an_evaluator_without_n_or_metric_is_a_crash(tmp_path):
    silent = (EVALUATOR / "evaluate_model.py").read_text().replace('"n": site_size(args.site)', '"count": 3')
    workspace = evaluator_workspace(tmp_path, silent)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 1
    assert "has no positive `n`" in ledger_rows(workspace)[0]["failure_reason"]


def test_a_draft_that_edits_a_frozen_module_is_refused(tmp_path):
    importing = (
        (EVALUATOR / "evaluate_model.py")
        .read_text()
        .replace("from evalhelpers import", "import client  # noqa: F401\nfrom evalhelpers import")
    )
    workspace = evaluator_workspace(tmp_path, importing)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 0, done.stderr
    assert "client.py" in yaml.safe_load((workspace / "autofl.yaml").read_text())["evaluation"]["frozen"]
    run_inproc(workspace, "prepare", "--name", "edit-client", "--hypothesis", "h")
    set_line(source_dir(workspace, "edit-client"), "BONUS = ", "BONUS = 0.5")
    before = (workspace / "results.tsv").read_bytes()
    refused = run_inproc(workspace, "evaluate")
    assert refused.code == 2 and "frozen with the evaluator" in refused.stderr and "client.py" in refused.stderr
    assert (workspace / "results.tsv").read_bytes() == before


def test_initialize_refuses_an_evaluator_outside_the_job_or_missing(tmp_path):
    workspace = evaluator_workspace(tmp_path)
    outside = tmp_path / "elsewhere.py"
    outside.write_text("print(1)\n")
    for args, words in (
        (["--evaluator", str(outside)], "outside the job folder"),
        (["--evaluator", "nope.py"], "does not exist"),
        (["--evaluator-input", "evalsizes.py"], "needs --evaluator"),
    ):
        done = run_inproc(workspace, "initialize", *args)
        assert done.code == 2 and words in done.stderr
        assert not (workspace / ".nvflare").exists() and not (workspace / "results.tsv").exists()


def test_the_evaluator_reads_autofl_yaml_and_freezes_its_inputs(tmp_path):
    reading = (
        (EVALUATOR / "evaluate_model.py")
        .read_text()
        .replace(
            "    weights = read_npy(args.model)\n",
            "    weights = read_npy(args.model)\n    weights[0] += float(open('offset.txt').read())\n",
        )
    )
    workspace = evaluator_workspace(tmp_path, reading)
    (workspace / "offset.txt").write_text("0.1\n")
    (workspace / "autofl.yaml").write_text("evaluation:\n  script: evaluate_model.py\n  inputs: [offset.txt]\n")
    done = run_inproc(workspace, "initialize")
    assert done.code == 0, done.stderr
    assert done.envelope["baseline_score"] == round(BASELINE_MEASURED + 0.1, 6)
    section = yaml.safe_load((workspace / "autofl.yaml").read_text())["evaluation"]
    assert section["inputs"] == ["offset.txt"] and "offset.txt" in section["frozen"]
    (workspace / "offset.txt").write_text("0.9\n")  # changed in the live job: the next trial says so and restores it
    done = candidate(workspace, "any", lambda folder: set_line(folder, "BONUS = ", "BONUS = 0.02"))
    assert done.envelope["candidate_status"] == "crash"
    assert "offset.txt, frozen with the evaluator" in ledger_rows(workspace)[-1]["failure_reason"]
    assert (workspace / "offset.txt").read_text() == "0.1\n"


def test_the_evaluator_can_write_only_its_temp_folder(tmp_path):
    target = tmp_path / "outside.txt"
    job_target = tmp_path / "ws" / "written_by_evaluator.txt"
    writing = (
        (EVALUATOR / "evaluate_model.py")
        .read_text()
        .replace(
            "    print(json.dumps(",
            f"""    import os
    import tempfile

    escaped = 0
    for path in ({str(target)!r}, {str(job_target)!r}, os.path.expanduser("~/autofl-evaluator-probe")):
        try:
            with open(path, "w") as handle:
                handle.write("escaped")
            escaped += 1
        except OSError:
            pass
    with open(os.path.join(tempfile.gettempdir(), "scratch.txt"), "w") as handle:
        handle.write("ok")
    print(json.dumps({{"escaped": escaped}}))
    print(json.dumps(""",
        )
    )
    writing = writing.replace('"n": site_size(args.site)}', '"n": site_size(args.site), "escaped": escaped}')
    workspace = evaluator_workspace(tmp_path, writing)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 0, done.stderr
    evaluation = json.loads((workspace / "autofl_runs/baseline/evaluation.json").read_text())
    assert [site["metrics"]["escaped"] for site in evaluation["sites"]] == [0.0, 0.0]
    assert not target.exists() and not job_target.exists()
    assert (
        not (Path.home() / "autofl-evaluator-probe").exists()
        or "escaped" not in (Path.home() / "autofl-evaluator-probe").read_text()
    )


def test_a_contained_trial_that_changes_a_frozen_file_is_a_crash_and_the_file_is_restored(tmp_path):
    workspace = evaluator_workspace(tmp_path)
    done = run_cli(workspace, "initialize", "--evaluator", "evaluate_model.py", prefix=WITHOUT_NAMESPACES)
    assert done.code == 0, done.stderr
    assert done.envelope["sandbox"]["sealed"] is False and done.envelope["baseline_score"] == BASELINE_MEASURED
    original = (workspace / "evalsizes.py").read_bytes()
    run_cli(workspace, "prepare", "--name", "rewrite", "--hypothesis", "h", prefix=WITHOUT_NAMESPACES)
    client = source_dir(workspace, "rewrite") / "client.py"
    client.write_text(
        client.read_text()
        + "\nfor target in ('evalsizes.py', '.nvflare/autofl/frozen/evalsizes.py'):\n"
        + "    open(target, 'w').write('SIZES = {\"site-1\": 1}\\nHELD_OUT_PENALTY = -0.5\\n')\n"
    )
    done = run_cli(workspace, "evaluate", prefix=WITHOUT_NAMESPACES)
    assert done.envelope["candidate_status"] == "crash"
    reason = ledger_rows(workspace)[-1]["failure_reason"]
    assert reason.startswith("tampering: the trial changed ") and ".nvflare/autofl/frozen/evalsizes.py" in reason
    assert (workspace / "evalsizes.py").read_bytes() == original
    assert (workspace / ".nvflare/autofl/frozen/evalsizes.py").read_bytes() == original  # the runner's copy too
    again = run_cli(workspace, "status", prefix=WITHOUT_NAMESPACES)
    assert again.code == 0 and again.envelope["score_provenance"] == MEASURED


def test_poc_with_an_evaluator_takes_no_hand_reported_score_and_says_how_the_score_is_measured(tmp_path):
    """In poc/prod the evaluation job measures the score (tests/poc/test_poc_frozen.py); a hand-reported number
    would be a score the evaluator never measured, so record refuses it and changes nothing."""
    workspace = evaluator_workspace(tmp_path)
    init = run_inproc(workspace, "initialize", "--env", "poc", "--evaluator", "evaluate_model.py")
    assert init.code == 0, init.stderr
    assert init.envelope["score_provenance"] == MEASURED
    note = init.envelope["frozen_evaluation_note"]
    assert "submit_evaluation" in note and "--evaluation" in note and "Not automated" in note
    run_dir = tmp_path / "downloads" / "job-7" / "workspace"  # what `nvflare job download -j job-7` leaves
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "metrics" / "metrics_summary.json").write_text(
        json.dumps({"final_aggregated_metrics": [{"name": "accuracy", "value": 0.8}]})
    )
    (run_dir / "models").mkdir()
    (run_dir / "models" / "server.npy").write_bytes(b"\x93NUMPY")
    before = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if "campaign.lock" not in p.name)
    for given in (("--score", "0.75"), ("--artifacts", str(tmp_path / "downloads"), "--job-id", "job-7")):
        done = run_inproc(workspace, "record", "--baseline", *given)
        assert done.code == 2 and done.envelope is None
        assert "measured by its frozen evaluator" in done.stderr and "submit --evaluation" in done.stderr
    after = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if "campaign.lock" not in p.name)
    assert after == before and ledger_rows(workspace) == []
    status = run_inproc(workspace, "status")
    assert status.envelope["next_action"] == "submit_baseline"


def test_batch_members_and_replicates_are_measured_too(tmp_path):
    workspace, _ = initialized(tmp_path)
    for name, bonus in (("a", "0.01"), ("b", "0.03")):
        assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "h").code == 0
        set_line(source_dir(workspace, name), "BONUS = ", f"BONUS = {bonus}")
    batch = run_inproc(workspace, "evaluate", "--all-prepared")
    assert batch.code == 0, batch.stderr
    entries = {entry["candidate_id"]: entry for entry in batch.envelope["batch"]}
    assert entries["b"]["score"] == round(BASELINE_MEASURED + 0.03, 6) and entries["b"]["reported_score"] == 0.78
    assert entries["a"]["evaluation"]["sites"]["site-2"] == {"value": 0.74, "n": 300.0}
    replicated = run_inproc(workspace, "replicate", "--count", "1")
    assert replicated.code == 0, replicated.stderr
    rows = ledger_rows(workspace)
    assert [r["status"] for r in rows] == ["baseline", "keep", "keep", "replicate"]
    assert all(r["metric_source"] == "measured:frozen_evaluator" for r in rows)
    assert rows[-1]["score"] == round(BASELINE_MEASURED + 0.03, 6)


def test_the_p9_bench_runs_and_its_verdict_agrees_with_its_figure(repo_root, python_exe):
    import re
    import subprocess

    done = subprocess.run(
        [python_exe, str(repo_root / "bench" / "frozen_eval_overhead.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=repo_root,
    )
    found = re.search(r"^P9: median frozen evaluation step ([\d.]+) s per trial", done.stdout, re.M)
    assert found, done.stdout + done.stderr
    verdict = "PASS" if float(found.group(1)) <= 5.0 else "FAIL"
    assert done.stdout.rstrip().endswith(f"RESULT: {verdict}") and done.returncode == (0 if verdict == "PASS" else 1)
