"""The final report: facts from hand-written edge ledgers (every literature outcome, broken lineage, a better
scored discard, an older ledger, an interrupted campaign), the warnings, the refusal rules of the `report`
action and campaign_report.py (open candidates, live trials, the lock, aliased outputs), the read-only and
plot-less paths, and the markdown and JSON (checked against shared/schemas/autofl_report.v1.schema.json)."""

import json
import os
import signal
import subprocess
import sys

import pytest
from audit_wrapper import AUDIT_WRAPPER, audit_events
from autofl_core.campaign import ledger
from autofl_core.runner.report import facts as report_facts
from autofl_core.runner.report import warning_rules as report_warnings
from runner_support import (
    SCRIPTS,
    _check,
    initialized_standin,
    ledger_rows,
    run_inproc,
    set_bonus,
    source_dir,
    standin_workspace,
    tree_digest,
)

pytestmark = pytest.mark.slow
CAMPAIGN_REPORT = SCRIPTS / "campaign_report.py"


def r(status, name, score=None, **extra):
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status=status, name=name, score=score, runtime_seconds=extra.pop("runtime", None), **extra)
    return ledger.LedgerRow(**values)


def lit(event):
    return r("literature", event, literature_event_id=event, diff_summary=f"idea {event} [src: Someone 2020]")


def se(status, name, score, event="", **extra):
    return r(
        status, name, score, candidate_kind="source_edit", literature_event_id=event, base_candidate="baseline", **extra
    )


EDGE_ROWS = [
    r("baseline", "baseline", 0.80, runtime=10.0, run_command="python job.py --name b", metric_source="structured:m"),
    lit("lit-0001"),
    se("keep", "l1-a", 0.82, "lit-0001", algorithm_family="fedprox", runtime=12.0),
    lit("lit-0002"),
    se("discard", "l2-a", 0.82, "lit-0002"),
    se("discard", "l2-b", 0.81, "lit-0002"),
    se("discard", "l2-c", 0.79, "lit-0002"),
    lit("lit-0003"),
    se("discard", "l3-a", 0.70, "lit-0003"),
    se("discard", "l3-b", 0.75, "lit-0003"),
    se("discard", "l3-c", 0.71, "lit-0003"),
    lit("lit-0004"),
    se("crash", "l4-a", None, "lit-0004", failure_reason="exit_code=1; site-1: OOM"),
    se("crash", "l4-b", None, "lit-0004", failure_reason="exit_code=1; site-1: OOM"),
    lit("lit-0005"),
    lit("lit-0006"),
    se("discard", "l6-a", 0.78, "lit-0006"),
    r("crash", "other-crash", None, failure_reason="exit_code=2; site-2: KeyError: 'x'", algorithm_family="fedprox"),
    r(
        "discard",
        "better-discard",
        0.95,
        candidate_kind="argument_only",
        algorithm_family="tuning",
        failure_reason="within noise (delta=+0.130000, margin=0.200000)",
    ),
]


def test_every_literature_outcome_from_linked_candidates_only():
    walk = report_facts.walk_rows(EDGE_ROWS, "max")
    outcomes = {e["event_id"]: e["outcome"] for e in report_facts.literature_outcomes(EDGE_ROWS, walk, batch_size=3)}
    assert outcomes == {
        "lit-0001": "helped",
        "lit-0002": "matched",
        "lit-0003": "not_confirmed",
        "lit-0004": "failed",
        "lit-0005": "not_evaluated",
        "lit-0006": "incomplete",
    }
    unlabelled = [lit("lit-0001"), se("keep", "x", 0.9)]  # follows the event in row order but does not carry its id
    walk = report_facts.walk_rows([EDGE_ROWS[0], *unlabelled], "max")
    (event,) = report_facts.literature_outcomes([EDGE_ROWS[0], *unlabelled], walk, batch_size=3)
    assert event["outcome"] == "not_evaluated", "never guessed from row order"


def test_best_is_never_a_discard_and_a_better_discard_is_best_observed():
    walk = report_facts.walk_rows(EDGE_ROWS, "max")
    assert EDGE_ROWS[walk.best].name == "l1-a"
    seen = report_facts.best_observed(EDGE_ROWS, walk)
    assert (seen["name"], seen["score"], seen["gain_over_best"]) == ("better-discard", 0.95, pytest.approx(0.13))
    assert seen["reason"].startswith("within noise")


def test_what_helped_and_what_did_not():
    rows = [
        r("baseline", "baseline", 0.5),
        r("keep", "a", 0.6),
        r("discard", "x", 0.55, algorithm_family="lr"),
        r("keep", "b", 0.9),
        r("keep", "c", 0.91),
        r("discard", "y", 0.7, algorithm_family="lr"),
        r("keep", "stale", 0.91),
        r("crash", "z", None, failure_reason="boom"),
        r("crash", "w", None, failure_reason="boom"),
    ]
    walk = report_facts.walk_rows(rows, "max")
    helped = report_facts.what_helped(walk, band=0.05)
    assert [i["name"] for i in helped["improvements"]] == ["a", "b", "c"], "a tie kept by hand is no improvement"
    assert (helped["first"], helped["largest"], helped["final"]) == ("a", "b", "c")
    assert [i["noise"] for i in helped["improvements"]] == ["beyond noise", "beyond noise", "within noise"]
    failed = report_facts.what_did_not_help(rows, walk)
    (group,) = failed["discards"]
    assert (group["key"], group["count"], group["representative"]["name"]) == ("lr", 2, "x")
    assert failed["crashes"] == [{"reason": "boom", "count": 2, "names": ["z", "w"]}]
    path = report_facts.trajectory(rows, walk)
    assert [(p["name"], p["marks"]) for p in path["points"]] == [
        ("baseline", ["start"]),
        ("a", ["first"]),
        ("b", ["largest"]),
        ("c", ["final"]),
    ]
    assert path["steps_total"] == 4


def test_min_mode_gains_are_direction_adjusted():
    rows = [r("baseline", "baseline", 0.5), r("keep", "a", 0.4), r("discard", "x", 0.45)]
    walk = report_facts.walk_rows(rows, "min")
    assert walk.improvements[0]["gain"] == pytest.approx(0.1) and walk.judged[2] == pytest.approx(-0.05)


def test_families_from_explicit_values_only():
    rows = [
        r("baseline", "baseline", 0.5),
        r("keep", "a", 0.6, algorithm_family="f1"),
        r("discard", "b", 0.55, algorithm_family="f1"),
        r("keep", "c", 0.7, algorithm_family="f2"),
        r("discard", "d", 0.1, algorithm_family="f3"),
        r("crash", "e", None, algorithm_family="f4"),
        r("discard", "g", 0.1),
    ]
    table = report_facts.families(rows, report_facts.walk_rows(rows, "max"))
    assert {f["family"]: f["outcome"] for f in table["families"]} == {
        "f1": "mixed",
        "f2": "helped",
        "f3": "not_confirmed",
        "f4": "failed",
    }
    assert table["unclassified_attempts"] == 1


def test_lineage_follows_base_candidate_and_marks_a_missing_ancestor():
    rows = [
        r("baseline", "baseline", 0.5),
        r("keep", "a", 0.6, base_candidate="baseline", changed_files="a.py"),
        r("keep", "b", 0.7, base_candidate="a", changed_files="b.py,a.py"),
    ]
    full = report_facts.lineage(rows, 2)
    assert full == {"chain": ["b", "a", "baseline"], "partial": False, "missing": [], "changed_files": ["a.py", "b.py"]}
    broken = rows[:1] + [r("keep", "b", 0.7, base_candidate="ghost", changed_files="b.py")]
    assert report_facts.lineage(broken, 1) == {
        "chain": ["b"],
        "partial": True,
        "missing": ["ghost"],
        "changed_files": ["b.py"],
    }
    older = rows[:1] + [r("keep", "b", 0.7)]
    assert report_facts.lineage(older, 1)["partial"] is True


def test_compute_by_status():
    rows = [
        r("baseline", "b", 0.5, runtime=10.0),
        r("keep", "k", 0.6, runtime=12.5),
        r("replicate", "x", 0.6, runtime=11.0),
        r("crash", "c", None, runtime=3.0),
        r("discard", "ext", 0.4),
        lit("lit-0001"),
    ]
    assert report_facts.compute_spent(rows) == {
        "total_seconds": 36.5,
        "rows_without_runtime": 1,
        "by_status": {"baseline": 10.0, "crash": 3.0, "keep": 12.5, "replicate": 11.0},
    }


def evidence(**changes):
    baseline = r("baseline", "baseline", 0.5, runtime=10.0, metric_source="structured:metrics_summary.json")
    best = r(
        "keep",
        "k",
        0.6,
        runtime=40.0,
        metric_source="text:log.txt:line=4",
        candidate_manifest="m",
        candidate_kind="argument_only",
    )
    values = dict(
        rows=[baseline, best],
        best=best,
        baseline=baseline,
        best_run_args=["--local_steps", "20", "--lr", "1"],
        missing_columns=(),
        metric="accuracy",
        fresh_state={"best_score": 0.6},
        stored_state={"best_score": 0.6},
        meta={"best_candidate": "k"},
        manifest_status={"k": "keep"},
        best_observed=None,
        gain_verdict=None,
        band=None,
    )
    values.update(changes)
    return report_warnings.Evidence(**values)


def codes(ev):
    return [w["code"] for w in report_warnings.collect(ev)]


def test_warnings():
    assert codes(evidence()) == ["compute_changed", "compute_changed", "metric_source_changed"]
    assert "population_changed" in codes(evidence(best_run_args=["--clients_per_round", "1"]))
    found = codes(
        evidence(
            best_run_args=[],
            stored_state={"best_score": 0.7},
            meta={"best_candidate": "x"},
            manifest_status={"k": "discard"},
        )
    )
    assert found.count("state_disagrees") == 3
    assert "state_disagrees" in codes(evidence(best_run_args=[], stored_state=None))
    assert "test_like_metric" not in codes(evidence(metric="test_accuracy")), "one scored candidate is no selection"
    two = evidence(metric="test_accuracy", rows=evidence().rows + [r("discard", "d", 0.4, metric_source="x")])
    assert "test_like_metric" in codes(two) and "test_like_metric" not in codes(evidence(metric="contest_score"))
    older = codes(evidence(best_run_args=[], missing_columns=("candidate_kind",)))
    assert older.count("missing_provenance") == 1
    assert "within_noise" in codes(evidence(gain_verdict="within noise", band=0.1))


# --- end to end on stand-in campaigns --------------------------------------------------------------


def campaign(tmp_path, name="ws", *, cap="5"):
    workspace = standin_workspace(tmp_path, name)
    assert run_inproc(workspace, "initialize", "--max-candidates", cap).code == 0
    return workspace


def write_ledger(workspace, rows, *, header_columns=None):
    text = ledger.format_ledger([row.to_row() for row in rows])
    if header_columns:
        width = header_columns
        lines = text.splitlines()
        text = "\n".join(
            ["\t".join(ledger.COLUMNS[:width])] + ["\t".join(line.split("\t")[:width]) for line in lines[1:]]
        )
        text += "\n"
    (workspace / "results.tsv").write_text(text)


def report_cli(workspace, *args, env=None, wrapper=None):
    command = [sys.executable, *(["-c", wrapper] if wrapper else []), str(CAMPAIGN_REPORT), str(workspace), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    return done


def report_of(folder):
    data = json.loads((folder / "autofl_report.json").read_text())
    _check("autofl_report.v1", data, str(folder))
    return data, (folder / "autofl_report.md").read_text()


def test_edge_ledger_report_reads_every_outcome(tmp_path):
    ws = campaign(tmp_path)
    write_ledger(ws, EDGE_ROWS)
    (ws / "STOP_AUTOFL").write_text("")
    assert run_inproc(ws, "status").code == 0
    out = tmp_path / "out"
    out.mkdir()
    done = report_cli(ws, "--output-dir", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["selected"] == "l1-a"
    data, markdown = report_of(out)
    assert data["selected"]["name"] == "l1-a" and data["best_observed"]["name"] == "better-discard"
    for line in (
        "| lit-0002 | matched |",
        "| lit-0005 | not_evaluated |",
        "| lit-0006 | incomplete | l6-a (1 scored of 3",
        "[src: Someone 2020]",
        "- Best observed (not selected): discard `better-discard` 0.950000",
        "- literature event lit-0003: 3 discard(s); closest `l3-b` 0.750000",
        "- crashed 2x (`l4-a`, `l4-b`): exit_code=1; site-1: OOM",
        "- fedprox: mixed (2 attempt(s), 1 improved, 1 crashed)",
        "`better_discard`",
        "`missing_provenance`: 12 row(s) have no candidate manifest",
    ):
        assert line in markdown, line
    for section in (
        "## Selected candidate and why",
        "## What helped",
        "## What did not help",
        "## Literature outcomes",
        "## Families",
        "## Trajectory",
        "## Noise",
        "## Warnings",
        "## Compute and time",
        "## Leaderboard",
    ):
        assert section in markdown, section
    assert "Compute spent (sum of run times): 22.0 s (baseline 10.0 s, keep 12.0 s)" in markdown


def test_broken_lineage_and_an_older_ledger_are_reported_not_rejected(tmp_path):
    ws = campaign(tmp_path)
    rows = [
        r("baseline", "baseline", 0.75, runtime=1.0),
        r(
            "keep",
            "b",
            0.8,
            base_candidate="ghost",
            changed_files="client.py",
            candidate_kind="source_edit",
            runtime=1.0,
        ),
    ]
    write_ledger(ws, rows, header_columns=12)
    done = report_cli(ws, "--confirm-interrupted", "--output-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    data, markdown = report_of(tmp_path)
    assert data["selected"]["lineage"]["partial"] is True and data["selected"]["lineage"]["missing"] == ["ghost"]
    assert "- Lineage: `b` (partial: ghost not in the ledger)" in markdown
    warning = next(w for w in data["warnings"] if w["code"] == "missing_provenance")
    assert "predates the columns metric_name, metric_source" in warning["message"]
    assert run_inproc(ws, "status").code == 2, "the runner itself still refuses the older ledger"


def test_refresh_writes_interim_reports_and_the_final_one_after_the_cap(tmp_path, matplotlib_plot):
    ws = campaign(tmp_path, cap="1")
    assert run_inproc(ws, "prepare", "--name", "bonus", "--hypothesis", "h").code == 0
    interim, _ = report_of(ws)
    assert interim["provenance"]["generated_by"] == "refresh" and interim["provenance"]["interim"] is True
    set_bonus(source_dir(ws, "bonus"), 0.05)
    done = run_inproc(ws, "evaluate")
    assert done.envelope["final_response_allowed"] is True
    data, markdown = report_of(ws)
    assert data["provenance"]["interim"] is False and data["selected"]["name"] == "bonus"
    assert "Interim report" not in markdown and "improvement +0.050000" in markdown
    final = run_inproc(ws, "report")
    assert final.code == 0 and final.envelope["progress_plot_available"] is True
    assert final.envelope["report_json"] == str(ws / "autofl_report.json")
    assert report_of(ws)[0]["provenance"]["generated_by"] == "run_job_campaign.py report"


def test_unfinished_campaign_needs_confirm_interrupted_and_open_candidates_always_block(tmp_path):
    ws = campaign(tmp_path)
    before = tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",))
    refused = run_inproc(ws, "report")
    assert refused.code == 2 and "not finished" in refused.stderr and "--confirm-interrupted" in refused.stderr
    assert run_inproc(ws, "prepare", "--name", "open", "--hypothesis", "h").code == 0
    before = tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",))
    for args in ((), ("--confirm-interrupted",)):
        blocked = run_inproc(ws, "report", *args)
        assert blocked.code == 2 and "candidate open is prepared (not terminal)" in blocked.stderr
        cli = report_cli(ws, *args)
        assert cli.returncode == 2 and "not terminal" in cli.stderr and cli.stderr.count("\n") == 1
    assert tree_digest(ws, skip=(".nvflare/autofl/campaign.lock",)) == before
    assert run_inproc(ws, "abandon").code == 0
    state_before = (ws / ".nvflare/autofl/campaign_state.json").read_bytes()
    done = run_inproc(ws, "report", "--confirm-interrupted")
    assert done.code == 0 and done.envelope["final_response_allowed"] is False
    assert (ws / ".nvflare/autofl/campaign_state.json").read_bytes() == state_before, "the state is never rewritten"
    data, markdown = report_of(ws)
    assert data["provenance"]["confirm_interrupted"] is True and "Report of an interrupted campaign" in markdown


def test_a_missing_manifest_counts_as_not_terminal(tmp_path):
    ws = campaign(tmp_path, cap="1")
    assert run_inproc(ws, "prepare", "--name", "gone", "--hypothesis", "h").code == 0
    assert run_inproc(ws, "evaluate", "--run-args", "--lr 0.2").code == 0
    (ws / ".nvflare/autofl/candidates/gone/candidate_manifest.json").unlink()
    done = run_inproc(ws, "report")
    assert done.code == 2 and "manifest of gone" in done.stderr and "is missing" in done.stderr


def test_a_live_trial_blocks_and_a_dead_ones_marker_is_noted(tmp_path):
    ws = campaign(tmp_path, cap="1")
    assert run_inproc(ws, "prepare", "--name", "c", "--hypothesis", "h").code == 0
    assert run_inproc(ws, "evaluate", "--run-args", "--lr 0.2").code == 0
    marker = ws / ".nvflare/autofl/running_trial.json"
    token = "f" * 32
    marker.write_text(json.dumps({"token": token, "name": "x", "temp_dir": "/nonexistent"}))
    child = subprocess.Popen(["sleep", "60"], env={**os.environ, "AUTOFL_TRIAL_TOKEN": token})
    try:
        done = report_cli(ws)
        assert done.returncode == 2 and f"still running (pids {child.pid})" in done.stderr
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    done = report_cli(ws)
    assert done.returncode == 0, done.stderr
    data, _ = report_of(ws)
    assert any("interrupted trial" in note for note in data["provenance"]["notes"])
    assert marker.exists(), "the report never cleans up campaign files"


def test_the_lock_is_held_while_reporting(tmp_path):
    from autofl_core.runner.store.lock import workspace_lock

    ws = campaign(tmp_path, cap="1")
    (ws / "STOP_AUTOFL").write_text("")
    with workspace_lock(ws / ".nvflare/autofl/campaign.lock"):
        done = report_cli(ws)
        assert done.returncode == 2 and "already in use" in done.stderr
    assert report_cli(ws).returncode == 0


def test_output_paths_that_alias_evidence_sources_or_each_other_are_refused(tmp_path):
    ws = campaign(tmp_path)
    (ws / "STOP_AUTOFL").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    (out / "to-yaml.md").symlink_to(ws / "autofl.yaml")
    os.link(ws / "results.tsv", out / "hard.md")
    (out / "b.json").symlink_to(out / "b.md")
    (out / "folder.png").mkdir()
    cases = {
        ("--report", str(ws / "results.tsv")): "campaign evidence",
        ("--report", str(ws / "client.py")): "job source",
        ("--progress", str(ws / "job.py")): "job source",
        ("--report", str(ws / ".nvflare/autofl/notes.md")): "campaign evidence",
        ("--progress", str(ws / "autofl_runs/plot.png")): "campaign evidence",
        ("--report", str(out / "to-yaml.md")): "through a link",
        ("--report", str(out / "hard.md")): "through a link",
        ("--report", str(out / "b.md")): "same file",
        ("--report", str(out / "a.md"), "--progress", str(out / "a.json")): "same file",
        ("--progress", str(out / "folder.png")): "is a folder",
    }
    before = tree_digest(tmp_path)
    for args, expected in cases.items():
        done = report_cli(ws, *args)
        assert done.returncode == 2 and expected in done.stderr, (args, done.stderr)
    assert tree_digest(tmp_path) == before, "a refused report writes nothing"
    (ws / "autofl_report.md").unlink()
    (ws / "autofl_report.md").symlink_to(ws / "results.tsv")
    refused = run_inproc(ws, "report")
    assert refused.code == 2 and "through a link" in refused.stderr


def test_read_only_archive_is_reported_elsewhere_writing_nothing_else(tmp_path, matplotlib_plot):
    ws = campaign(tmp_path, cap="1")
    assert run_inproc(ws, "prepare", "--name", "c", "--hypothesis", "h").code == 0
    assert run_inproc(ws, "evaluate", "--run-args", "--lr 0.2").code == 0
    archive = tmp_path / "archive"
    os.rename(ws, archive)
    before = tree_digest(archive)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl")}
    done = report_cli(archive / "job.py", "--output-dir", str(out), env=env, wrapper=AUDIT_WRAPPER)
    assert done.returncode == 0, done.stderr
    writes = [path for _event, path in audit_events(done.stderr)]  # digits: fchmod on a temp file opened in out/
    assert writes and all(p.isdigit() or p.startswith((str(out), str(tmp_path / "mpl"))) for p in writes), writes
    assert tree_digest(archive) == before
    data, markdown = report_of(out)
    assert data["selected"]["name"] == "c" and data["provenance"]["lock"] == "held"
    assert data["artifacts"]["results"] == str(archive / "results.tsv")
    assert "cd " + str(archive) in data["best_command"]
    assert "![progress](progress.png)" in markdown and (out / "progress.png").stat().st_size > 0
    refused = report_cli(archive, "--output-dir", str(tmp_path / "missing"))
    assert refused.returncode == 2 and "not an existing folder" in refused.stderr


BLOCK_PLOTTING = (
    "import runpy, sys\n"
    "sys.modules['matplotlib'] = None; sys.modules['PIL'] = None\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def test_without_matplotlib_and_pillow_both_reports_are_still_written(tmp_path):
    ws = campaign(tmp_path)
    (ws / "STOP_AUTOFL").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    done = report_cli(ws, "--output-dir", str(out), wrapper=BLOCK_PLOTTING)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["progress_plot_available"] is False
    data, markdown = report_of(out)
    assert data["progress_plot_available"] is False and data["progress_plot"] is None
    assert "![progress]" not in markdown and "## Selected candidate and why" in markdown
    assert not (out / "progress.png").exists() and "baseline" in (out / "progress.txt").read_text()


def test_refresh_without_plotting_libraries(tmp_path, monkeypatch):
    ws = campaign(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert run_inproc(ws, "record", "--literature", "--hypothesis", "idea [src: x]").code == 0
    data, markdown = report_of(ws)
    assert data["progress_plot_available"] is False and "![progress]" not in markdown
    assert ledger_rows(ws)[-1]["status"] == "literature"


def test_report_refuses_setting_changes_and_bad_input(tmp_path):
    ws = campaign(tmp_path)
    (ws / "STOP_AUTOFL").write_text("")
    done = run_inproc(ws, "report", "--plateau-threshold", "3")
    assert done.code == 2 and "report changes no setting; drop --plateau-threshold" in done.stderr
    assert run_inproc(ws, "report", "--report", "elsewhere.md").code == 2
    missing = report_cli(tmp_path / "nothing")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = report_cli(empty)
    assert none.returncode == 2 and "run initialize first" in none.stderr
    ledger_path = ws / "results.tsv"
    ledger_path.write_text(ledger_path.read_text() + "candidate\tx\n")
    corrupt = report_cli(ws)
    assert corrupt.returncode == 2 and "unknown status 'candidate'" in corrupt.stderr


def test_closed_stdout_exits_141_quietly_and_a_lone_isolated_copy_works(tmp_path):
    import shutil

    ws = campaign(tmp_path)
    (ws / "STOP_AUTOFL").write_text("")
    skill = tmp_path / "lone" / "nvflare-autofl"
    shutil.copytree(SCRIPTS.parent, skill, ignore=shutil.ignore_patterns("__pycache__"))
    script = skill / "scripts" / "campaign_report.py"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(script), str(ws)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == ""
    assert report_of(ws)[0]["provenance"]["generated_by"] == "campaign_report.py"
    assert not list(skill.rglob("__pycache__")), "a read-only script caches no bytecode"


def test_a_state_file_that_disagrees_with_the_ledger_is_a_warning_and_is_left_alone(tmp_path):
    ws = campaign(tmp_path)
    (ws / "STOP_AUTOFL").write_text("")
    state_path = ws / ".nvflare/autofl/campaign_state.json"
    state = json.loads(state_path.read_text())
    state_path.write_text(json.dumps(dict(state, best_score=0.99)))
    before = state_path.read_bytes()
    assert report_cli(ws).returncode == 0
    data, markdown = report_of(ws)
    assert "campaign_state.json disagrees with the ledger: best_score 0.99 (ledger: 0.75)" in markdown
    assert [w["code"] for w in data["warnings"]].count("state_disagrees") == 1
    assert state_path.read_bytes() == before


def test_network_line_says_what_the_trials_could_reach():
    from autofl_core.runner.report import markdown as report_markdown
    from autofl_core.runner.report import run_records

    assert run_records.trial_network({}) is None  # no trial ran (poc/prod), or its trial.json is unreadable
    assert run_records.trial_network({"network_isolation": "unavailable: unshare failed (EPERM)"}) == (
        "unavailable: unshare failed (EPERM)"
    )
    assert run_records.trial_network({"network_isolation": None}) == "allowed"
    assert run_records.trial_network({"network_isolation": 3}) is None
    line = report_markdown._network_line
    assert line({"allow_network": False, "latest_trial": None}) == []
    assert line({"allow_network": False, "latest_trial": "isolated"}) == ["- Trial network: isolated (loopback only)"]
    assert "not isolated" in line({"allow_network": False, "latest_trial": "unavailable: no userns"})[0]
    assert "--allow-network" in line({"allow_network": True, "latest_trial": "allowed"})[0]


def test_network_of_the_latest_trial_is_found_under_a_custom_output_root(tmp_path):
    workspace = initialized_standin(tmp_path, "--uncapped", "--output-root", "runs")
    assert ledger_rows(workspace)[-1]["artifacts"] == "runs/baseline"
    trial = json.loads((workspace / "runs" / "baseline" / "trial.json").read_text())
    report = json.loads((workspace / "autofl_report.json").read_text())
    assert report["network"] == {"allow_network": False, "latest_trial": trial["network_isolation"]}
    assert trial["network_isolation"]  # isolated, or unavailable: <why> on a host without namespaces
