"""Evaluate several candidates at once (issue 24), on the stand-in job.

Each test names the point of the issue it proves: 1 several pending candidates, 2 batch evaluate, 3 deterministic
decisions, 4 accounting, 6 faults.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml
from runner_support import (
    RUNNER,
    WITHOUT_NAMESPACES,
    initialized_standin,
    ledger_records,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    set_bonus,
    source_dir,
    token_processes,
    tree_digest,
)

pytestmark = pytest.mark.slow
MARKER = ".nvflare/autofl/running_trial.json"
HANG = "\nimport time\ntime.sleep(120)\n"
TIMING_FIELDS = ("runtime_seconds",)


@pytest.fixture
def ws(tmp_path):
    return initialized_standin(tmp_path, "--max-candidates", "6")


def prepare(workspace, name, *extra):
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"h {name}", *extra)
    assert done.code == 0, done.stderr
    return done


def manifest_path(workspace, name):
    return str(workspace / ".nvflare" / "autofl" / "candidates" / name / "candidate_manifest.json")


def three_candidates(workspace):
    """lr-a (better), bonus (better still, a source edit), lr-c (worse), all from the baseline."""
    prepare(workspace, "lr-a", "--run-args", "--lr 0.15")
    prepare(workspace, "bonus")
    set_bonus(source_dir(workspace, "bonus"), 0.2)
    prepare(workspace, "lr-c", "--run-args", "--lr 0.4")
    return ["lr-a", "bonus", "lr-c"]


def batch_args(workspace, names):
    return [arg for name in names for arg in ("--manifest", manifest_path(workspace, name))]


def ledger_without_timings(workspace):
    return [{k: v for k, v in row.items() if k not in TIMING_FIELDS} for row in ledger_rows(workspace)]


# --- point 1: several pending candidates -------------------------------------------------------------------


def test_prepare_while_others_are_prepared_and_status_lists_them(ws):
    """Point 1: prepare may be called while candidates are prepared; each records base_candidate; status lists
    them; abandon takes one by --manifest (and refuses to guess among several)."""
    three_candidates(ws)
    assert all(manifest(ws, name)["base_candidate"] == "baseline" for name in ("lr-a", "bonus", "lr-c"))
    status = run_inproc(ws, "status")
    assert status.code == 0
    assert [(p["candidate_id"], p["status"], p["base_candidate"]) for p in status.envelope["pending"]] == [
        ("lr-a", "prepared", "baseline"),
        ("bonus", "prepared", "baseline"),
        ("lr-c", "prepared", "baseline"),
    ]
    assert status.envelope["pending"][0]["run_args"] == ["--lr", "0.15"]
    guessed = run_inproc(ws, "abandon")
    assert guessed.code == 2 and "pass --manifest" in guessed.stderr
    twice = run_inproc(ws, "abandon", *batch_args(ws, ["lr-a", "lr-c"]))
    assert twice.code == 2 and "abandon takes one candidate" in twice.stderr
    done = run_inproc(ws, "abandon", "--manifest", manifest_path(ws, "lr-c"))
    assert done.code == 0 and manifest(ws, "lr-c")["status"] == "abandoned"
    assert [p["candidate_id"] for p in run_inproc(ws, "status").envelope["pending"]] == ["lr-a", "bonus"]


def test_single_evaluate_of_one_of_several_needs_its_manifest(ws):
    """Point 1: with several prepared, a plain evaluate refuses to guess; --manifest picks one, the others stay."""
    three_candidates(ws)
    guessed = run_inproc(ws, "evaluate")
    assert guessed.code == 2 and "pass --manifest" in guessed.stderr
    done = run_inproc(ws, "evaluate", "--manifest", manifest_path(ws, "lr-c"))
    assert done.code == 0 and done.envelope["candidate_status"] == "discard"
    assert "batch" not in done.envelope
    assert manifest(ws, "lr-a")["status"] == manifest(ws, "bonus")["status"] == "prepared"


# --- points 2 and 3: batch evaluate, deterministic decisions ----------------------------------------------


def test_batch_evaluate_runs_every_candidate_and_reports_one_entry_each(ws):
    """Point 2: `evaluate --manifest A --manifest B --manifest C` runs all three (sealed, concurrently) and prints
    one envelope with one entry per candidate, in the order given; point 3: each is compared with the best at the
    moment it is finalized (bonus against lr-a, which was kept just before it)."""
    names = three_candidates(ws)
    before = tree_digest(
        ws, skip=(".nvflare", "autofl_runs", "results.tsv", "progress.png", "progress.txt", "autofl_report.md")
    )
    done = run_inproc(ws, "evaluate", *batch_args(ws, names), "--parallel", "3")
    assert done.code == 0, done.stderr
    batch = done.envelope["batch"]
    assert [e["candidate_id"] for e in batch] == names
    assert [e["candidate_status"] for e in batch] == ["keep", "keep", "discard"]
    assert [e["compared_with"] for e in batch] == ["baseline", "lr-a", "bonus"]
    assert [e["score"] for e in batch] == [0.8, 0.95, 0.65]
    assert done.envelope["parallel"] == 3 and done.envelope["batch_sealed"] is True
    assert done.envelope["best_candidate"] == "bonus" and done.envelope["candidate_attempts"] == 3
    assert [r["name"] for r in ledger_rows(ws)] == ["baseline", *names]
    assert all(r["base_candidate"] == "baseline" for r in ledger_rows(ws)[1:])
    assert "BONUS = 0.2" in (ws / "client.py").read_text()  # the final best is installed
    assert before != tree_digest(ws, skip=(".nvflare", "autofl_runs", "results.tsv", "progress.png"))
    assert not (ws / MARKER).exists()
    assert manifest(ws, "lr-c")["batch"] == {"members": names, "parallel": 3}


def test_the_report_shows_which_candidates_ran_together(ws):
    """Point 8: the report names the candidates that ran as one batch and notes that their runtimes shared the
    machine; live progress lines name each candidate."""
    names = three_candidates(ws)
    done = run_cli(ws, "evaluate", *batch_args(ws, names), "--parallel", "2")
    assert done.code == 0, done.stderr
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["compute"]["batches"] == [{"members": names, "parallel": 2}]
    text = (ws / "autofl_report.md").read_text()
    assert "- Ran together as one batch (2 at a time): lr-a, bonus, lr-c; runtimes measured in a batch share" in text
    for name in names:
        assert f"[autofl {name}] finished 3/3 rounds" in done.stderr


def test_the_progress_plot_shades_the_batch(ws, tmp_path, matplotlib_plot):
    """Point 8: progress.png (drawn by the runner's plot worker after the batch and after a later candidate, and by
    `report`) is the plot of the ledger with the batch shaded: the picture `plot.render` draws with the batch, not
    the one without; the worker, the runner and the report draw the same bytes."""
    from autofl_core.campaign import plot
    from autofl_core.runner.open_campaign import Campaign
    from autofl_core.runner.report import build

    def drawn():
        campaign = Campaign.open(ws / "job.py")
        state = json.loads((ws / ".nvflare/autofl/campaign_state.json").read_text())
        return build.plot_options(campaign, state)

    names = three_candidates(ws)
    assert run_cli(ws, "evaluate", *batch_args(ws, names), "--parallel", "2").code == 0
    options = drawn()
    assert options["batches"] == [{"members": names, "parallel": 2}] and options["curves"]
    plot.render(ledger_records(ws), tmp_path / "with.png", **options)
    plot.render(ledger_records(ws), tmp_path / "without.png", **dict(options, batches=[]))
    picture = (ws / "progress.png").read_bytes()
    assert picture == (tmp_path / "with.png").read_bytes() != (tmp_path / "without.png").read_bytes()
    assert run_cli(ws, "prepare", "--name", "lr-d", "--hypothesis", "h", "--run-args", "--lr 0.5").code == 0
    assert run_cli(ws, "evaluate").code == 0  # a later single candidate: the batch stays shaded
    plot.render(ledger_records(ws), tmp_path / "later.png", **drawn())
    assert (ws / "progress.png").read_bytes() == (tmp_path / "later.png").read_bytes()
    (ws / "progress.png").unlink()
    assert run_cli(ws, "report", "--confirm-interrupted").code == 0  # the report's own render
    assert (ws / "progress.png").read_bytes() == (tmp_path / "later.png").read_bytes()


def test_all_prepared_takes_every_prepared_candidate_oldest_first(ws):
    """Point 2: `--all-prepared` is the batch of every prepared candidate, in the order they were prepared."""
    names = three_candidates(ws)
    done = run_inproc(ws, "evaluate", "--all-prepared")
    assert done.code == 0, done.stderr
    assert [e["candidate_id"] for e in done.envelope["batch"]] == names
    assert done.envelope["parallel"] == min(3, 2 * (os.cpu_count() or 1))  # the CPU default: 2 slots per core


def test_same_batch_sequential_and_parallel_give_the_identical_ledger(tmp_path):
    """Point 3: the same batch run one by one (--parallel 1) and in parallel gives the identical ledger, best and
    decisions, timings aside."""
    ledgers, bests = [], []
    for parallel in ("1", "3"):  # the same folder each time: the ledger records absolute run commands
        workspace = initialized_standin(tmp_path, "--max-candidates", "6")
        names = three_candidates(workspace)
        done = run_inproc(workspace, "evaluate", *batch_args(workspace, names), "--parallel", parallel)
        assert done.code == 0 and done.envelope["parallel"] == int(parallel)
        ledgers.append(ledger_without_timings(workspace))
        bests.append((done.envelope["best_candidate"], (workspace / "client.py").read_text()))
        shutil.rmtree(workspace)
    assert ledgers[0] == ledgers[1] and bests[0] == bests[1]
    assert [r["status"] for r in ledgers[0]] == ["baseline", "keep", "keep", "discard"]


def test_order_given_decides_not_order_finished(ws):
    """Point 3: the order of the manifests decides: bonus first is kept and lr-a (worse than bonus) is discarded,
    even though lr-a's trial is just as fast."""
    names = three_candidates(ws)
    done = run_inproc(ws, "evaluate", *batch_args(ws, ["bonus", "lr-a"]))
    assert done.code == 0
    assert [(e["candidate_id"], e["candidate_status"]) for e in done.envelope["batch"]] == [
        ("bonus", "keep"),
        ("lr-a", "discard"),
    ]
    assert manifest(ws, names[2])["status"] == "prepared"  # not in the batch: untouched


def test_batch_refusals_write_nothing(ws):
    """Point 2: a batch is validated whole before anything runs: a candidate named twice, a non-prepared one,
    --run-args for several, --all-prepared with --manifest; each exit 2 with nothing changed."""
    names = three_candidates(ws)
    assert run_inproc(ws, "abandon", "--manifest", manifest_path(ws, "lr-c")).code == 0
    before = tree_digest(ws)
    for args, words in (
        (batch_args(ws, ["lr-a", "lr-a"]), "named twice"),
        (batch_args(ws, ["lr-a", "lr-c"]), "is abandoned, not prepared"),
        ([*batch_args(ws, names[:2]), "--run-args", "--lr 0.3"], "--run-args applies to one candidate"),
        (["--all-prepared", *batch_args(ws, names[:1])], "either --all-prepared or --manifest"),
    ):
        done = run_inproc(ws, "evaluate", *args)
        assert done.code == 2 and words in done.stderr, (args, done.stderr)
        assert tree_digest(ws) == before


def test_a_candidate_changing_nothing_refuses_the_whole_batch(ws):
    """Point 2: one invalid candidate refuses the batch before any trial runs; the others stay prepared."""
    prepare(ws, "lr-a", "--run-args", "--lr 0.15")
    prepare(ws, "same")
    done = run_inproc(ws, "evaluate", "--all-prepared")
    assert done.code == 2 and "changes nothing" in done.stderr
    assert manifest(ws, "lr-a")["status"] == manifest(ws, "same")["status"] == "prepared"
    assert [r["name"] for r in ledger_rows(ws)] == ["baseline"]


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "one by one"])
def test_two_kept_candidates_that_create_files_leave_only_the_last_ones_files(ws, sealed):
    """Point 3: two candidates of one batch that each create a file are both kept in the order given; the second
    keep removes the first one's file from the live job and from allowed_edit_paths (sealed and concurrent, or
    one by one where trials cannot be sealed)."""
    for name, bonus in (("mod-a", 0.1), ("mod-b", 0.2)):
        prepare(ws, name)
        set_bonus(source_dir(ws, name), bonus)
        (source_dir(ws, name) / f"helper_{name.replace('-', '_')}.py").write_text(f"EXTRA = {bonus}\n")
    done = run_cli(ws, "evaluate", "--all-prepared", prefix=() if sealed else WITHOUT_NAMESPACES)
    assert done.code == 0, done.stderr
    assert [e["candidate_status"] for e in done.envelope["batch"]] == ["keep", "keep"]
    assert not (ws / "helper_mod_a.py").exists() and (ws / "helper_mod_b.py").read_text() == "EXTRA = 0.2\n"
    trust = yaml.safe_load((ws / "autofl.yaml").read_text())["trust"]
    assert "helper_mod_a.py" not in trust["allowed_edit_paths"] and "helper_mod_b.py" in trust["allowed_edit_paths"]
    assert run_inproc(ws, "status").code == 0


# --- point 4: accounting ------------------------------------------------------------------------------------


def test_batch_larger_than_the_remaining_cap_is_refused_before_anything_runs(tmp_path):
    """Point 4: a batch of 3 with 2 candidates left under the cap exits 2 naming the numbers; nothing runs."""
    workspace = initialized_standin(tmp_path, "--max-candidates", "2")
    names = three_candidates(workspace)
    before = tree_digest(workspace)
    done = run_inproc(workspace, "evaluate", *batch_args(workspace, names))
    assert done.code == 2
    assert "the batch has 3 candidates but only 2 of the cap of 2 remain" in done.stderr
    assert tree_digest(workspace) == before
    ok = run_inproc(workspace, "evaluate", *batch_args(workspace, names[:2]))
    assert ok.code == 0 and ok.envelope["candidate_attempts"] == 2 and ok.envelope["remaining_candidates"] == 0


def test_every_candidate_counts_crashes_included(ws):
    """Point 4: a crashing candidate of a batch counts like the others (exit 1: one crashed)."""
    prepare(ws, "lr-a", "--run-args", "--lr 0.15")
    prepare(ws, "broken")
    client = source_dir(ws, "broken") / "client.py"
    client.write_text(client.read_text() + "\nraise SystemExit('broken on purpose')\n")
    done = run_inproc(ws, "evaluate", "--all-prepared")
    assert done.code == 1
    assert [e["candidate_status"] for e in done.envelope["batch"]] == ["keep", "crash"]
    assert done.envelope["batch"][1]["reason"] and done.envelope["batch"][1]["score"] is None
    assert done.envelope["candidate_attempts"] == 2


# --- point 2: where trials cannot be sealed -----------------------------------------------------------------


def test_without_namespaces_the_batch_runs_one_by_one_and_says_so(ws):
    """Point 2: on a host that cannot seal trials the batch still runs, one candidate at a time (each applied to
    the workspace only while its trial runs), batch_sealed false, parallel 1; the same decisions."""
    names = three_candidates(ws)
    done = run_cli(ws, "evaluate", *batch_args(ws, names), "--parallel", "3", prefix=WITHOUT_NAMESPACES)
    assert done.code == 0, done.stderr
    assert done.envelope["batch_sealed"] is False and done.envelope["parallel"] == 1
    assert "one candidate at a time" in done.stderr
    assert [e["candidate_status"] for e in done.envelope["batch"]] == ["keep", "keep", "discard"]
    assert "BONUS = 0.2" in (ws / "client.py").read_text()


def test_without_namespaces_a_discarded_creator_leaves_none_of_its_files_behind(ws):
    """Point 2: one by one, each candidate is applied only while its own trial runs; a candidate that creates a
    file and is discarded leaves no file behind, also when it is not the last of the batch (the record of what
    the runner created is one file, written again for each candidate just before it is applied)."""
    prepare(ws, "mod-a")
    (source_dir(ws, "mod-a") / "helper_mod_a.py").write_text("EXTRA = 0.01\n")  # imported by nothing: a tie
    prepare(ws, "lr-c", "--run-args", "--lr 0.4")
    done = run_cli(ws, "evaluate", *batch_args(ws, ["mod-a", "lr-c"]), prefix=WITHOUT_NAMESPACES)
    assert done.code == 0, done.stderr
    assert done.envelope["batch_sealed"] is False
    assert [e["candidate_status"] for e in done.envelope["batch"]] == ["discard", "discard"]
    assert not (ws / "helper_mod_a.py").exists()


# --- point 6: faults ----------------------------------------------------------------------------------------


def _hanging_batch(workspace, prefix=()):
    """Three candidates, the last two hang; start the batch as a CLI process and wait until all three trials ran
    (the first finished, two running)."""
    prepare(workspace, "lr-a", "--run-args", "--lr 0.15")
    for name in ("hang-1", "hang-2"):
        prepare(workspace, name)
        client = source_dir(workspace, name) / "client.py"
        client.write_text(client.read_text() + HANG)
    proc = subprocess.Popen(
        [*prefix, sys.executable, str(RUNNER), "evaluate", str(workspace / "job.py"), "--all-prepared"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        marker = workspace / MARKER
        if marker.exists():
            trials = json.loads(marker.read_text())["trials"]
            if len([t for t in trials if token_processes(t["token"])]) == 2:
                return proc, trials
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the batch never had its two hanging trials running")


def _sources(workspace):
    return tree_digest(
        workspace,
        skip=(
            ".nvflare",
            "autofl_runs",
            "results.tsv",
            "progress.png",
            "progress.txt",
            "autofl_report.md",
            "autofl_report.json",
        ),
    )


def test_killed_runner_mid_batch_is_recovered_with_every_candidate_pending_again(ws):
    """Point 6 (R1 for a batch of three): SIGKILL of the runner while two trials of the batch run; the next action
    ends both orphaned trials, removes their folders, and every candidate is prepared again (none counted)."""
    before = _sources(ws)
    proc, trials = _hanging_batch(ws)
    assert len(trials) == 3
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert any(token_processes(t["token"]) for t in trials)  # the trials outlived the runner
    done = run_cli(ws, "status")
    assert done.code == 0 and "recovered_interrupted_evaluation" in done.envelope
    assert all(token_processes(t["token"]) == [] for t in trials)
    assert all(not os.path.exists(t["temp_dir"]) for t in trials) and not (ws / MARKER).exists()
    assert [manifest(ws, name)["status"] for name in ("lr-a", "hang-1", "hang-2")] == ["prepared"] * 3
    assert [p["candidate_id"] for p in done.envelope["pending"]] == ["lr-a", "hang-1", "hang-2"]
    assert done.envelope["candidate_attempts"] == 0 and [r["name"] for r in ledger_rows(ws)] == ["baseline"]
    assert _sources(ws) == before


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_end_every_trial_of_the_batch(ws, sig, code):
    """Point 6: SIGTERM / Ctrl-C end every running trial of the batch; every candidate is prepared again."""
    before = _sources(ws)
    proc, trials = _hanging_batch(ws)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code and out == ""
    assert err.strip().endswith("a candidate under evaluation is pending again")
    assert all(token_processes(t["token"]) == [] for t in trials)
    assert all(not os.path.exists(t["temp_dir"]) for t in trials) and not (ws / MARKER).exists()
    assert [manifest(ws, name)["status"] for name in ("lr-a", "hang-1", "hang-2")] == ["prepared"] * 3
    assert _sources(ws) == before and [r["name"] for r in ledger_rows(ws)] == ["baseline"]


def test_the_lock_is_held_for_the_whole_batch(ws):
    """Point 6: while a batch runs, any other action is refused as busy (exit 2) and changes nothing."""
    proc, trials = _hanging_batch(ws)
    try:
        busy = run_cli(ws, "status")
        assert busy.code == 2 and "already in use by another Auto-FL action" in busy.stderr, busy.stderr
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
    assert all(token_processes(t["token"]) == [] for t in trials)


# --- point 2: slots ----------------------------------------------------------------------------------------


def test_slots_one_per_visible_gpu_else_two_per_core(tmp_path):
    """Point 2: the default is one slot per visible GPU (each its own CUDA_VISIBLE_DEVICES), else 2 per CPU core;
    never more than the batch; --parallel overrides (GPUs shared round robin)."""
    from autofl_core.runner import batch_trials

    assert batch_trials.slots(None, 8, gpus=["0", "3"], cpus=2) == ["0", "3"]
    assert batch_trials.slots(3, 8, gpus=["0", "3"], cpus=2) == ["0", "3", "0"]
    assert batch_trials.slots(None, 8, gpus=[], cpus=2) == [None] * 4
    assert batch_trials.slots(None, 3, gpus=[], cpus=2) == [None] * 3
    assert batch_trials.slots(5, 2, gpus=[], cpus=2) == [None] * 2
    assert batch_trials.visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 5"}) == ["2", "5"]
    assert batch_trials.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert batch_trials.visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia1", "nvidia0", "nvidiactl", "nvidia-uvm", "null"):
        (dev / name).touch()
    assert batch_trials.visible_gpus({}, dev=str(dev)) == ["0", "1"]


def test_each_concurrent_trial_sees_its_own_gpu(ws):
    """Point 2: with two GPUs visible, a batch of two runs two at a time and each trial's child sees one GPU of
    its own in CUDA_VISIBLE_DEVICES."""
    for name in ("gpu-a", "gpu-b"):
        prepare(ws, name)
        client = source_dir(ws, name) / "client.py"
        extra = "\nimport os\nprint('GPU=' + os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))\n"
        client.write_text(client.read_text() + extra)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1")
    done = run_cli(ws, "evaluate", "--all-prepared", env=env)
    assert done.code == 0, done.stderr
    assert done.envelope["parallel"] == 2
    seen = []
    for name in ("gpu-a", "gpu-b"):
        lines = (ws / "autofl_runs" / name / "run.log").read_text().splitlines()
        seen += [line for line in lines if line.startswith("GPU=")]
    assert sorted(set(seen)) == ["GPU=0", "GPU=1"]


# --- point 5: replicates in parallel -----------------------------------------------------------------------


def test_replicates_run_concurrently_and_land_in_order(tmp_path):
    """Point 5: `replicate --count 3` runs its sealed reruns concurrently (parallel 3) and appends their rows in
    replicate order: the same ledger as `--parallel 1`, timings aside."""
    ledgers = []
    for parallel in ("1", "3"):
        workspace = initialized_standin(tmp_path, "--max-candidates", "3")
        done = run_inproc(workspace, "replicate", "--count", "3", "--parallel", parallel)
        assert done.code == 0, done.stderr
        assert done.envelope["parallel"] == int(parallel)
        assert [r["name"] for r in done.envelope["replicates"]] == [f"replicate_baseline_{n}" for n in (1, 2, 3)]
        ledgers.append(ledger_without_timings(workspace))
        assert not (workspace / MARKER).exists()
        shutil.rmtree(workspace)
    assert ledgers[0] == ledgers[1]
    assert [r["status"] for r in ledgers[0]] == ["baseline", "replicate", "replicate", "replicate"]


@pytest.mark.parametrize(
    "point",
    ["evaluate:manifest_running", "trial:child_started", "finalize:journal_written", "finalize:ledger_appended"],
)
def test_killed_at_a_batch_instant_every_candidate_is_finalized_or_prepared(ws, point):
    """Point 6 (R1 for a batch of three): SIGKILL at the first time the batch passes `point` (a manifest going
    running, a trial starting, the first finalize's journal or ledger row); the next action leaves each candidate
    either finalized (with its one ledger row) or prepared again, and the batch can then be finished."""
    names = three_candidates(ws)
    env = dict(os.environ, AUTOFL_FAULT_AT=point)
    killed = run_cli(ws, "evaluate", *batch_args(ws, names), env=env)
    assert killed.code == -9, killed.stderr[-500:]
    done = run_cli(ws, "status")
    assert done.code == 0 and not (ws / MARKER).exists()
    statuses = {name: manifest(ws, name)["status"] for name in names}
    rows = [r["name"] for r in ledger_rows(ws)][1:]
    assert all(status in ("prepared", "keep", "discard") for status in statuses.values()), statuses
    assert rows == [name for name in names if statuses[name] != "prepared"]  # finalized ones, once each, in order
    finalized_first = point.startswith("finalize:")
    assert rows == (["lr-a"] if finalized_first else [])
    again = run_cli(ws, "evaluate", "--all-prepared")
    assert again.code == 0, again.stderr
    assert [r["name"] for r in ledger_rows(ws)] == ["baseline", *names]
    assert done.envelope["candidate_attempts"] == len(rows)
