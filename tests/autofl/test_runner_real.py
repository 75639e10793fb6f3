"""The campaign runner on real NVFLARE 2.9 simulations of the bundled examples.

- `make demo` (examples/demo.py): baseline, then one batch of three candidates from it (an argument-only one
  from `suggest`, a source edit, a crash) run concurrently, replicates of the best side by side, ending in
  `candidate_cap_exhausted` with the final answer allowed, and a diagnosis of the crash; then, on that
  campaign: a cap increase refused and approved, the campaign moved to another folder, a batch whose crash and
  discard are restored exactly, and an identical crash replayed (counted, provenance recorded);
- a min-mode campaign (examples/numpy-loss) with a literature event and its three linked source-edit
  candidates, the plateau clock reset, stop files, and a runner killed mid-evaluation recovered;
- poc mode: evaluate -> ready_for_external_execution -> record with a real result folder.
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from module_loader import load_by_path
from runner_support import REPO, RUNNER, WITHOUT_NAMESPACES, ledger_rows, manifest, run_cli, source_dir, tree_digest
from runner_support import _check as check_schema

# The demo fixture runs a whole campaign (about ten real simulations): 2-3 minutes alone, over 300 s on a two-core
# machine at load 18-20 (fresh-clone CI beside bench/background_load.py and four other jobs, 2026-12-06).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1200)]
DEMO = REPO / "examples" / "demo.py"
SOURCES_ONLY = (
    ".nvflare",
    "autofl_runs",
    "results.tsv",
    "progress.png",
    "progress.txt",
    "autofl_report.md",
    "autofl_report.json",
    "__pycache__",
    "STOP_AUTOFL",
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    env = {key: value for key, value in os.environ.items() if key != "AUTOFL_PLOT_RENDERER"}  # as a user runs it
    done = subprocess.run(
        [sys.executable, str(DEMO), "--output", str(out)], capture_output=True, text=True, timeout=1080, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def documents_valid(workspace):
    state = json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())
    check_schema("campaign_state.v1", state, "state")
    check_schema("campaign.v1", json.loads((workspace / ".nvflare/autofl/campaign.json").read_text()), "campaign")
    for path in (workspace / ".nvflare/autofl/candidates").glob("*/candidate_manifest.json"):
        check_schema("candidate_manifest.v1", json.loads(path.read_text()), str(path))
    return state


def run_window(workspace, name):
    """(start, end) of a trial in seconds since the epoch: its run.log's last write minus its runtime."""
    trial = json.loads((workspace / "autofl_runs" / name / "trial.json").read_text())
    end = os.stat(workspace / "autofl_runs" / name / "run.log").st_mtime
    return end - trial["runtime_seconds"], end


def overlapped(workspace, names):
    """True when the trials of `names` all ran at one moment (the latest start before the earliest end)."""
    windows = [run_window(workspace, name) for name in names]
    return max(start for start, _ in windows) < min(end for _, end in windows)


def test_demo_runs_a_bounded_campaign_and_diagnoses_its_crash(demo):
    out, stdout = demo
    workspace = out / "workspace"
    rows = ledger_rows(workspace)
    assert [(r["status"], r["candidate_kind"]) for r in rows] == [
        ("baseline", ""),
        ("keep", "argument_only"),
        ("keep", "source_edit"),
        ("crash", "source_edit"),
        ("replicate", ""),
        ("replicate", ""),
    ]
    baseline, best = rows[0]["score"], rows[2]["score"]
    assert 0.5 < baseline < rows[1]["score"] < best <= 1.0
    assert (
        rows[3]["failure_reason"].startswith("exit_code=1; site-") and "ValueError: matmul" in rows[3]["failure_reason"]
    )
    # the three candidates ran as one batch, all prepared from the baseline, concurrently, decided in order
    names = [row["name"] for row in rows[1:4]]
    assert names[1:] == ["feature-scaling", "drop-bias"]
    assert [row["base_candidate"] for row in rows[1:4]] == ["baseline"] * 3
    parallel = manifest(workspace, "drop-bias")["batch"]["parallel"]
    assert parallel == min(3, 2 * (os.cpu_count() or 1)) and parallel > 1
    assert all(manifest(workspace, name)["batch"] == {"members": names, "parallel": parallel} for name in names)
    assert overlapped(workspace, names), "the batch's trials ran at the same time"
    assert overlapped(workspace, [row["name"] for row in rows[4:]]), "the two replicates ran side by side"
    assert json.loads((workspace / "autofl_report.json").read_text())["compute"]["batches"] == [
        {"members": names, "parallel": parallel}
    ]
    state = documents_valid(workspace)
    assert (state["reason"], state["next_action"], state["final_response_allowed"]) == (
        "candidate_cap_exhausted",
        "final_report",
        True,
    )
    assert state["candidate_attempts"] == 3 and state["best_candidate"] == "feature-scaling"
    best_copy = workspace / ".nvflare/autofl/snapshots/best/source/client.py"
    assert (workspace / "client.py").read_bytes() == best_copy.read_bytes()  # the crash was restored exactly
    assert "standardize each feature" in (workspace / "client.py").read_text()
    diagnosis = json.loads((out / "diagnosis.json").read_text())
    assert (diagnosis["matched_pattern"], diagnosis["confidence"]) == ("USER_CODE_EXCEPTION", "high")
    for line in (
        f"baseline:    {baseline:.6f}",
        f"batch:       3 candidates ran together ({parallel} at a time): {names[0]} keep, feature-scaling keep, "
        "drop-bias crash",
        f"best:        {best:.6f} (feature-scaling)",
        "crashed:     drop-bias",
        "diagnosis:   USER_CODE_EXCEPTION",
        "best command: cd ",
        str(workspace / "results.tsv"),
        "noise:       stdev ",
        "(seeds 1-2 and its own); the gain is beyond noise",
        str(workspace / "progress.png"),
        str(workspace / "autofl_report.md"),
    ):
        assert line in stdout, line
    report = (workspace / "autofl_report.md").read_text()
    assert "| crash | drop-bias |" in report and "improvement +" in report
    assert f"- Ran together as one batch ({parallel} at a time): {', '.join(names)}; runtimes measured" in report


def test_demo_frozen_evaluation_shows_measured_and_reported_and_refuses_an_inflated_metric(demo):
    out, stdout = demo
    workspace = out / "frozen_workspace"
    rows = ledger_rows(workspace)
    assert [(r["status"], r["name"]) for r in rows] == [("baseline", "baseline"), ("discard", "inflate-metric")]
    assert all(r["metric_source"] == "measured:frozen_evaluator" for r in rows)
    result = manifest(workspace, "inflate-metric")["result"]
    assert result["score"] == rows[0]["score"] and result["reported_score"] > result["score"] + 0.1
    assert result["metric_divergence"]["reported"] == result["reported_score"]
    assert "measured: frozen evaluator on the final global model; second campaign, evaluate.py" in stdout
    assert f"baseline:       measured {rows[0]['score']:.6f} | job-reported " in stdout
    assert "-> discard; metric_divergence (reported beats measured by " in stdout
    assert 'metrics={"accuracy": acc}' in (workspace / "client.py").read_text()
    # it ran beside the main campaign (they share nothing): its baseline overlapped one of the main campaign's runs
    frozen_start, frozen_end = run_window(workspace, "baseline")
    main_runs = [run_window(out / "workspace", row["name"]) for row in ledger_rows(out / "workspace")]
    assert any(start < frozen_end and frozen_start < end for start, end in main_runs), (frozen_start, main_runs)


def test_demo_report_shows_real_round_curves_and_each_sites_final_value(demo):
    """On real NVFLARE round records (round_metrics.jsonl): the report's curves of the baseline, the best and
    the latest batch (the crash recorded no rounds), what they show in words, each site's final-round value
    for the baseline and the best, and the picture the envelope names (AUTOFL_VIEW_DIR keeps a copy)."""
    from PIL import Image

    out, stdout = demo
    workspace = out / "workspace"
    report = json.loads((workspace / "autofl_report.json").read_text())
    rows = ledger_rows(workspace)
    assert [(c["name"], c["role"]) for c in report["curves"]] == [
        ("baseline", "baseline"),
        ("feature-scaling", "best"),
        (rows[1]["name"], "candidate"),
    ]
    for curve in report["curves"]:
        assert curve["rounds"] == [0, 1, 2] and len(curve["values"]) == 3
        row = next(r for r in rows if r["name"] == curve["name"])
        assert abs(curve["values"][-1] - row["score"]) < 1e-9, "the last round is the score the ledger records"
        assert sorted(curve["sites"]) == ["site-1", "site-2"]
    assert len(report["curves_summary"]) == 3 and report["curves_summary"][1].startswith("best (feature-scaling): ")
    trial = json.loads((workspace / "autofl_runs" / "feature-scaling" / "trial.json").read_text())
    assert [entry["value"] for entry in trial["rounds"]] == report["curves"][1]["values"], "kept in trial.json"
    marked = {e["name"]: e for e in report["leaderboard"] if "sites" in e}
    assert set(marked) == {"baseline", "feature-scaling"}
    best = marked["feature-scaling"]["sites"]
    assert sorted(best) == ["site-1", "site-2"] and min(best.values()) <= rows[2]["score"] <= max(best.values())
    markdown = (workspace / "autofl_report.md").read_text()
    assert "![progress](progress.png)" in markdown and "Round curves, metric per round" in markdown
    assert "Each site's value in the final round:" in markdown
    assert "  curve:       best (feature-scaling): " in stdout and "  sites:       baseline baseline: site-" in stdout
    with Image.open(workspace / "progress.png") as image:
        assert image.size == (1100, 900)
    if os.environ.get("AUTOFL_VIEW_DIR"):
        shutil.copy(workspace / "progress.png", os.path.join(os.environ["AUTOFL_VIEW_DIR"], "demo-progress.png"))


def test_the_p6_bench_times_bare_the_job_runs_the_demo_campaign_made(demo):
    """bench/demo_campaign.py's bare runs (P6) are the configurations the real demo campaign ran, in order."""
    out, _stdout = demo
    bench = load_by_path("demo_campaign_bench", REPO / "bench" / "demo_campaign.py")
    rows = ledger_rows(out / "workspace")
    bench.check_ran(rows)
    assert [row["status"] for row in rows] == ["baseline", "keep", "keep", "crash", "replicate", "replicate"]


BIAS_LINE = '        w = np.asarray(model.params["numpy_key"], dtype=float)\n'


def test_demo_campaign_continues_after_cap_approval_in_a_moved_folder(demo, tmp_path):
    out, _stdout = demo
    workspace = tmp_path / "moved campaign"
    shutil.copytree(out / "workspace", workspace)
    meta_before = (workspace / ".nvflare/autofl/campaign.json").read_bytes()
    refused = run_cli(workspace, "initialize", "--max-candidates", "6")
    assert refused.code == 2 and "approval" in refused.stderr
    assert (workspace / ".nvflare/autofl/campaign.json").read_bytes() == meta_before
    approved = run_cli(workspace, "initialize", "--max-candidates", "6", "--confirm-user-approved-cap-change")
    assert approved.code == 0 and approved.envelope["remaining_candidates"] == 3
    assert approved.envelope["next_action"] == "propose_candidate"

    # The demo's drop-bias ran from the baseline; its edit on the new best is another execution, not a replay.
    crash_line = BIAS_LINE.replace("dtype=float)", "dtype=float)[:-1]")
    assert crash_line.strip() in (source_dir(out / "workspace", "drop-bias") / "client.py").read_text()
    before = tree_digest(workspace, skip=SOURCES_ONLY)
    batch = []
    for name, hypothesis in (("drop-bias-again", "drop the bias on the new best"), ("flipped-labels", "flip y")):
        prepared = run_cli(workspace, "prepare", "--name", name, "--hypothesis", hypothesis)
        assert prepared.code == 0, prepared.stderr
        batch += ["--manifest", prepared.envelope["candidate_manifest"]]
    client = source_dir(workspace, "drop-bias-again") / "client.py"
    assert BIAS_LINE in client.read_text()
    client.write_text(client.read_text().replace(BIAS_LINE, crash_line))
    client = source_dir(workspace, "flipped-labels") / "client.py"
    text = client.read_text()
    assert "w = train(w, x, y, args.lr, args.local_steps, " in text
    client.write_text(
        text.replace(
            "w = train(w, x, y, args.lr, args.local_steps, ", "w = train(w, x, 1.0 - y, args.lr, args.local_steps, "
        )
    )
    done = run_cli(workspace, "evaluate", *batch)
    assert done.code == 1 and [(e["candidate_id"], e["candidate_status"]) for e in done.envelope["batch"]] == [
        ("drop-bias-again", "crash"),
        ("flipped-labels", "discard"),
    ]
    assert "crash_replay" not in manifest(workspace, "drop-bias-again")
    assert tree_digest(workspace, skip=SOURCES_ONLY) == before  # the crash and the discard restored exactly

    crash_edit = (source_dir(workspace, "drop-bias-again") / "client.py").read_text()
    assert run_cli(workspace, "prepare", "--name", "drop-bias-replay", "--hypothesis", "same edit again").code == 0
    (source_dir(workspace, "drop-bias-replay") / "client.py").write_text(crash_edit)
    replay = run_cli(workspace, "evaluate")
    assert replay.code == 1 and replay.envelope["candidate_attempts"] == 6
    provenance = manifest(workspace, "drop-bias-replay")["crash_replay"]
    assert provenance["replay_of"] == "drop-bias-again" and "ValueError" in provenance["previous_failure_reason"]
    assert tree_digest(workspace, skip=SOURCES_ONLY) == before
    assert replay.envelope["reason"] == "candidate_cap_exhausted"
    assert [r["status"] for r in ledger_rows(workspace)][-3:] == ["crash", "discard", "crash"]
    meta = json.loads((workspace / ".nvflare/autofl/campaign.json").read_text())
    assert [(c["old"], c["new"], c["user_approved"]) for c in meta["cap_changes"]] == [(3, 6, True)]
    assert str(out) not in json.dumps(meta["settings"]) and meta["best_candidate"] == "feature-scaling"
    documents_valid(workspace)


def momentum(beta):
    """A client.py edit: heavy-ball momentum in the local update (beta 0 is the ablation: plain steps).

    The first edit adds momentum; later candidates start from the kept best and only change its coefficient.
    """

    def edit(folder):
        client = folder / "client.py"
        text = client.read_text()
        plain = "    for _ in range(steps):\n        w = w - lr * 2.0 * x.T @ (x @ w - y) / len(y)\n"
        if plain in text:
            text = text.replace(
                plain,
                "    velocity = np.zeros_like(w)\n    for _ in range(steps):\n"
                "        velocity = BETA * velocity - lr * 2.0 * x.T @ (x @ w - y) / len(y)\n"
                "        w = w + velocity\n",
            )
            text = text.replace("NUM_FEATURES = 8\n", "NUM_FEATURES = 8\nBETA = 0.0\n")
        assert "BETA = " in text
        client.write_text(re.sub(r"^BETA = .*$", f"BETA = {beta}", text, flags=re.MULTILINE))

    return edit


def test_min_mode_literature_batch_stop_files_and_recovery(tmp_path):
    workspace = tmp_path / "numpy-loss"
    shutil.copytree(REPO / "examples" / "numpy-loss", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    init = run_cli(workspace, "initialize", "--uncapped", "--plateau-threshold", "2")
    assert init.code == 0 and init.envelope["baseline_score"] > 1.0
    state = json.loads((workspace / ".nvflare/autofl/campaign_state.json").read_text())
    assert state["mode"] == "min"
    event = run_cli(
        workspace,
        "record",
        "--literature",
        "--family",
        "momentum",
        "--hypothesis",
        "Heavy-ball momentum [src: Polyak 1964] for the local least-squares steps",
    )
    assert event.envelope["literature_event_id"] == "lit-0001"
    assert event.envelope["next_action"] == "develop_literature_batch"
    statuses = []
    for name, beta in (("momentum-faithful", 0.9), ("momentum-tuned", 0.5), ("momentum-ablation", 0.0)):
        assert (
            run_cli(
                workspace,
                "prepare",
                "--name",
                name,
                "--hypothesis",
                f"momentum {beta}",
                "--literature-event",
                "lit-0001",
                "--family",
                "momentum",
            ).code
            == 0
        )
        momentum(beta)(source_dir(workspace, name))
        done = run_cli(workspace, "evaluate")
        assert done.code == 0, done.stderr
        statuses.append(done.envelope["candidate_status"])
    rows = ledger_rows(workspace)
    assert statuses[0] == "keep" and rows[2]["score"] < rows[0]["score"]  # lower loss is better
    assert statuses[2] == "discard"  # the ablation equals plain gradient steps: worse than the kept momentum
    state = documents_valid(workspace)
    batch = state["exploration_batch"]
    assert (batch["literature_event_id"], batch["completed"], batch["completion_index"]) == ("lit-0001", 3, 4)
    assert state["plateau"]["reset_row_index"] == 4 and state["plateau"]["scored_since_reset"] == 0
    assert state["next_action"] == "propose_candidate" and state["improvement"] > 0

    assert run_cli(workspace, "prepare", "--name", "steps-x2", "--hypothesis", "more local steps").code == 0
    (workspace / "STOP_AUTOFL").write_text("")
    stopped = run_cli(workspace, "status").envelope
    assert (stopped["reason"], stopped["next_action"]) == ("manual_stop_pending_candidate", "abandon_candidate")
    assert run_cli(workspace, "evaluate", "--run-args", "--local_steps 10").code == 2
    (workspace / "STOP_AUTOFL").unlink()

    before = tree_digest(workspace, skip=SOURCES_ONLY)
    proc = subprocess.Popen(
        [sys.executable, str(RUNNER), "evaluate", str(workspace / "job.py"), "--run-args", "--local_steps 10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = workspace / ".nvflare/autofl/running_trial.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        marker.exists()
        and list((workspace / "autofl_runs/steps-x2").glob("run.log"))
        and (workspace / "autofl_runs/steps-x2/run.log").stat().st_size > 2000
    ):
        time.sleep(0.2)
    token = json.loads(marker.read_text())["token"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    recovered = run_cli(workspace, "status")
    assert recovered.envelope["recovered_interrupted_evaluation"] == "steps-x2"
    assert _carriers(token) == [] and tree_digest(workspace, skip=SOURCES_ONLY) == before
    assert manifest(workspace, "steps-x2")["status"] == "prepared"
    assert run_cli(workspace, "abandon").code == 0
    (workspace / "STOP_AUTOFL").write_text("")
    final = run_cli(workspace, "status").envelope
    assert (final["reason"], final["final_response_allowed"]) == ("manual_stop_file", True)


def _carriers(token):
    needle = f"AUTOFL_TRIAL_TOKEN={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_poc_mode_records_real_downloaded_results(demo, tmp_path):
    out, _stdout = demo
    runs = out / "workspace" / "autofl_runs"
    workspace = tmp_path / "hello-numpy"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    init = run_cli(workspace, "initialize", "--env", "poc", "--max-candidates", "2")
    assert init.code == 0 and init.envelope["next_action"] == "submit_baseline"
    baseline = run_cli(
        workspace, "record", "--baseline", "--artifacts", str(runs / "baseline" / "simulation"), "--job-id", "a1b2c3"
    )
    assert baseline.code == 0 and baseline.envelope["baseline_score"] == ledger_rows(out / "workspace")[0]["score"]
    assert run_cli(workspace, "prepare", "--name", "lr-x2", "--hypothesis", "faster").code == 0
    ready = run_cli(workspace, "evaluate", "--run-args", "--lr 0.1")
    assert (
        ready.envelope["next_action"] == "submit_candidate"
        and ready.envelope["candidate_status"] == "ready_for_external_execution"
    )
    done = run_cli(workspace, "record", "--artifacts", str(runs / "lr-x2" / "simulation"), "--job-id", "d4e5f6")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep"
    row = ledger_rows(workspace)[-1]
    assert (
        row["metric_source"] == "structured:metrics_summary.json"
        and row["score"] == ledger_rows(out / "workspace")[1]["score"]
    )
    assert manifest(workspace, "lr-x2")["artifacts"]["job_id"] == "d4e5f6"
    assert not (workspace / "autofl_runs").exists()  # the runner itself never ran or submitted anything


def test_fedjob_campaign_isolated_and_an_aborted_run_is_a_crash(tmp_path):
    """FedJob in NVFLARE 2.9: simulator_run ignores NVFLARE_SIMULATOR_WORKSPACE_ROOT, so a literal path is mapped
    onto the trial's private simulator root by the sandbox (and refused where trials cannot be sealed); a job that
    reads the variable runs isolated anyway; its results sit directly in the root; a client failure aborts the run
    while the job still exits 0, which must be a crash, never a score. The two campaigns (the literal root, the
    aborted run) are independent and run side by side."""

    def literal_root():
        literal = tmp_path / "literal"
        shutil.copytree(REPO / "examples" / "fedjob-numpy", literal, ignore=shutil.ignore_patterns("__pycache__"))
        target = tmp_path / "fedjob-literal-root"  # the job's own path; no trial may write there on the host
        job = literal / "job.py"
        job.write_text(
            job.read_text().replace(
                "job.simulator_run(os.environ.get(WORKSPACE_ROOT_VARIABLE, args.workspace))",
                f"job.simulator_run({str(target)!r})",
            )
        )
        refused = run_cli(literal, "initialize", prefix=WITHOUT_NAMESPACES)  # a host where trials cannot be sealed
        assert refused.code == 2 and "cannot be isolated on this host" in refused.stderr, refused.stderr
        assert "NVFLARE_SIMULATOR_WORKSPACE_ROOT" in refused.stderr and not (literal / ".nvflare").exists()
        mapped = run_cli(literal, "initialize", "--max-candidates", "1")
        assert mapped.code == 0 and mapped.envelope["sandbox"]["sealed"] is True, mapped.stderr
        assert 0.4 < ledger_rows(literal)[0]["score"] <= 1.0
        assert (literal / "autofl_runs" / "baseline" / "simulation" / "server").is_dir()
        assert not target.exists()  # mapped inside the trial's mount namespace, never created on the host

    def aborted_run():
        workspace = tmp_path / "fedjob"
        shutil.copytree(REPO / "examples" / "fedjob-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
        init = run_cli(workspace, "initialize", "--max-candidates", "1")
        assert init.code == 0, init.stderr
        baseline = ledger_rows(workspace)[0]
        assert 0.4 < baseline["score"] <= 1.0 and baseline["metric_source"].startswith("text:")
        simulation = workspace / "autofl_runs" / "baseline" / "simulation"
        assert (simulation / "server").is_dir() and (simulation / "site-1").is_dir()  # no job-name folder
        assert run_cli(workspace, "prepare", "--name", "broken", "--hypothesis", "breaks the client").code == 0
        client = source_dir(workspace, "broken") / "client.py"
        client.write_text(
            client.read_text().replace("    flare.init()\n", "    flare.init()\n    raise ValueError('bad client')\n")
        )
        crashed = run_cli(workspace, "evaluate")
        assert crashed.code == 1 and crashed.envelope["candidate_status"] == "crash"
        reason = ledger_rows(workspace)[-1]["failure_reason"]
        assert (
            reason.startswith("exit_code=0 but NVFLARE aborted the run: site-") and "ValueError: bad client" in reason
        )
        trial = json.loads((workspace / "autofl_runs" / "broken" / "trial.json").read_text())
        assert trial["exit_code"] == 0 and trial["score"] is None

    with ThreadPoolExecutor(2) as pool:
        for half in [pool.submit(literal_root), pool.submit(aborted_run)]:
            half.result()  # re-raises a failed assertion of either


def test_demo_final_report_from_a_read_only_copy(demo, tmp_path, matplotlib_plot):
    """The real demo ledger (seeded runs, a batch of three, two replicates, a crash) reported again by
    campaign_report.py from a copy: no simulation, nothing written into the copy; the plot shades the batch."""
    out, _stdout = demo
    archive = tmp_path / "archive"
    shutil.copytree(out / "workspace", archive)
    before = tree_digest(archive)
    target = tmp_path / "report"
    target.mkdir()
    done = subprocess.run(
        [sys.executable, str(RUNNER.parent / "campaign_report.py"), str(archive), "--output-dir", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert tree_digest(archive) == before
    data = json.loads((target / "autofl_report.json").read_text())
    check_schema("autofl_report.v1", data, "demo report")
    rows = ledger_rows(archive)
    chosen = data["selected"]
    assert (chosen["name"], chosen["kind"], chosen["family"]) == ("feature-scaling", "source_edit", "preprocessing")
    assert chosen["lineage"] == {  # prepared from the baseline in the batch, not on top of the kept seed
        "chain": ["feature-scaling", "baseline"],
        "partial": False,
        "missing": [],
        "changed_files": ["client.py"],
    }
    assert chosen["effective_run_args"] == [] and chosen["noise"] == "beyond noise"
    assert chosen["delta"] == pytest.approx(rows[2]["score"] - rows[0]["score"])
    helped = data["what_helped"]
    assert (helped["first"], helped["final"], helped["largest"]) == (
        rows[1]["name"],
        "feature-scaling",
        "feature-scaling",
    )
    (crash,) = data["what_did_not_help"]["crashes"]
    assert crash["names"] == ["drop-bias"] and "ValueError: matmul" in crash["reason"]
    noise = data["noise"]
    assert noise["seeded"] is True and noise["estimate"]["replicates"] == 2 and noise["estimate"]["stdev"] > 0
    assert set(data["compute"]["by_status"]) == {"baseline", "keep", "replicate", "crash"}
    names = [row["name"] for row in rows[1:4]]
    parallel = manifest(archive, "drop-bias")["batch"]["parallel"]
    assert data["compute"]["batches"] == [{"members": names, "parallel": parallel}]
    from autofl_core.campaign import ledger, plot
    from autofl_core.runner.open_campaign import Campaign
    from autofl_core.runner.report import build

    state = json.loads((archive / ".nvflare/autofl/campaign_state.json").read_text())
    drawn = build.plot_options(Campaign.open(archive / "job.py"), state)
    assert drawn["batches"] == data["compute"]["batches"] and len(drawn["curves"]) == 3
    records = ledger.read_rows(archive / "results.tsv")
    plot.render(records, tmp_path / "with.png", **drawn)
    plot.render(records, tmp_path / "without.png", **dict(drawn, batches=[]))
    picture = (target / "progress.png").read_bytes()
    assert picture == (tmp_path / "with.png").read_bytes() != (tmp_path / "without.png").read_bytes()
    assert data["compute"]["wall_time_seconds"] > data["compute"]["by_status"]["baseline"]
    # the phases ran one after another (baseline, the batch side by side, the replicates side by side): the wall
    # time spans them all, the final replicates included (stamps are whole seconds)
    phases = (
        rows[0]["runtime_seconds"]
        + max(r["runtime_seconds"] for r in rows[1:4])
        + max(r["runtime_seconds"] for r in rows[4:])
    )
    assert data["compute"]["wall_time_seconds"] > phases - 1
    assert json.loads((out / "workspace" / "autofl_report.json").read_text())["provenance"]["generated_by"] == (
        "run_job_campaign.py report"
    )
    markdown = (target / "autofl_report.md").read_text()
    for text in (
        "## Selected candidate and why",
        "improvement +",
        "beyond noise",
        "Lineage: `feature-scaling` <- ",
        "job.py --n_clients 2 --num_rounds 3 --seed 0\n",  # the best configuration: the baseline's arguments
        "| keep | lr-x2 | 0.790000 | budget verified |",  # the seed from the batch, kept before feature-scaling
        "## Noise",
        "2 replicate(s) of `feature-scaling`",
        "crashed 1x (`drop-bias`)",
        f"Ran together as one batch ({parallel} at a time): {', '.join(names)}",
        "preprocessing: helped",
        "## Compute and time",
        "![progress](progress.png)",
    ):
        assert text in markdown, text


def test_noise_sigmas_discards_a_gain_inside_the_measured_spread_and_without_it_keeps_it(demo, tmp_path):
    """Real seeded hello-numpy runs: the demo's best (feature-scaling at the default --lr, seed 0) and its
    replicates with seeds 1 and 2 measure the spread; a later candidate is compared with the best's mean (its own run
    and its replicates), not its single run. `--lr 0.5 --local_steps 3` on seed 0 beats that mean by less than 3
    stdev: discarded with --noise-sigmas 3, kept without it. Two simulations, side by side (two copies of the
    campaign; a simulation mostly waits on NVFLARE's fixed polls, so the pair takes about the time of one)."""
    out, _stdout = demo

    def verdict(name, flags):
        workspace = tmp_path / name
        shutil.copytree(out / "workspace", workspace)
        assert run_cli(workspace, "initialize", "--max-candidates", "4", "--confirm-user-approved-cap-change").code == 0
        assert (
            run_cli(workspace, "prepare", "--name", "fast-short", "--hypothesis", "larger steps, fewer of them").code
            == 0
        )
        done = run_cli(workspace, "evaluate", "--run-args", "--lr 0.5 --local_steps 3", *flags)
        assert done.code == 0, done.stderr
        return done.envelope, ledger_rows(workspace)[-1], done.envelope["noise"]

    with ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(verdict, name, flags) for name, flags in (("on", ["--noise-sigmas", "3"]), ("off", []))
        }
        verdicts = {name: run.result() for name, run in runs.items()}  # re-raises a failed assertion of either
    rows = ledger_rows(out / "workspace")
    best = rows[2]["score"]
    mean = statistics.mean([best] + [r["score"] for r in rows if r["status"] == "replicate"])
    envelope, row, noise = verdicts["on"]
    assert envelope["compared_score"] == pytest.approx(mean, abs=1e-6), (envelope["compared_score"], mean)
    gain = row["score"] - mean
    assert noise["replicates"] == 2 and noise["applied"] is True and noise["margin"] >= 3 * noise["stdev"] - 1e-6
    assert envelope["candidate_status"] == "discard" and 0 < gain < noise["margin"], (row["score"], mean, noise)
    assert row["failure_reason"].startswith("within noise (delta=+"), row["failure_reason"]
    envelope, row, noise = verdicts["off"]
    assert envelope["candidate_status"] == "keep" and row["score"] > best and noise["applied"] is False


def test_a_batch_of_two_real_simulations_runs_concurrently(tmp_path):
    """Issue 24, points 2 and 3 on real NVFLARE: two argument-only candidates of hello-numpy evaluated as one batch
    run as concurrent sealed trials (their run windows overlap), are decided in the order given, and leave the
    ledger and documents valid."""
    workspace = tmp_path / "hello-numpy"
    shutil.copytree(REPO / "examples" / "hello-numpy", workspace, ignore=shutil.ignore_patterns("__pycache__"))
    assert run_cli(workspace, "initialize", "--max-candidates", "2").code == 0
    paths = []
    for name, lr in (("lr-a", "0.1"), ("lr-b", "0.02")):
        done = run_cli(workspace, "prepare", "--name", name, "--hypothesis", f"lr {lr}", "--run-args", f"--lr {lr}")
        assert done.code == 0, done.stderr
        paths += ["--manifest", done.envelope["candidate_manifest"]]
    done = run_cli(workspace, "evaluate", *paths, timeout=600)
    assert done.code == 0, done.stderr
    assert done.envelope["batch_sealed"] is True and done.envelope["parallel"] == 2
    batch = done.envelope["batch"]
    assert [e["candidate_id"] for e in batch] == ["lr-a", "lr-b"]
    assert all(e["candidate_status"] in ("keep", "discard") and e["score"] is not None for e in batch)
    assert batch[1]["compared_with"] == ("lr-a" if batch[0]["candidate_status"] == "keep" else "baseline")
    assert [r["name"] for r in ledger_rows(workspace)] == ["baseline", "lr-a", "lr-b"]
    assert overlapped(workspace, ["lr-a", "lr-b"]), "the two trials overlapped"
    state = documents_valid(workspace)
    assert state["candidate_attempts"] == 2
