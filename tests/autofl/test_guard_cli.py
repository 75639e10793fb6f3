"""campaign_guard.py: read-only CLI over the pure state machine."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
from audit_wrapper import AUDIT_WRAPPER, audit_events
from autofl_core.campaign import guard, ledger

SCRIPT_NAME = "campaign_guard.py"


def _ledger(folder, rows):
    path = folder / "results.tsv"
    for values in rows:
        ledger.append_row(path, values)
    return path


def _clean_env(**extra):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTOFL_")}
    env.update(extra)
    return env


@pytest.fixture
def script(repo_root):
    return str(repo_root / "skills" / "nvflare-autofl" / "scripts" / SCRIPT_NAME)


def run_guard(python_exe, script, *args, cwd=None, env=None):
    return subprocess.run(
        [python_exe, script, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or _clean_env(),
        timeout=60,
    )


ROWS = [
    {"status": "baseline", "name": "baseline", "score": 0.8, "metric_name": "accuracy"},
    {"status": "discard", "name": "a1", "score": 0.78, "candidate_kind": "argument_only", "algorithm_family": "lr"},
    {"status": "keep", "name": "a2", "score": 0.83, "candidate_kind": "argument_only", "algorithm_family": "lr"},
    {"status": "literature", "name": "fedprox", "literature_event_id": "lit-0001", "algorithm_family": "fedprox"},
    {
        "status": "discard",
        "name": "s1",
        "score": 0.82,
        "candidate_kind": "source_edit",
        "literature_event_id": "lit-0001",
    },
    {"status": "crash", "name": "s2", "candidate_kind": "source_edit", "failure_reason": "exit_code=1"},
    {"status": "infrastructure_retry", "name": "s3", "failure_reason": "sandbox"},
]


@pytest.mark.parametrize(
    "flags, settings, pending, stop",
    [
        ([], {}, 0, False),
        (["--max-candidates", "3"], {"max_candidates": 3}, 0, False),
        (
            ["--exploration-batch-size", "1", "--plateau-threshold", "2"],
            {"exploration_batch_size": 1, "plateau_threshold": 2},
            0,
            False,
        ),
        (
            ["--mode", "min", "--min-delta", "0.01", "--hard-crash-threshold", "1"],
            {"mode": "min", "plateau_min_delta": 0.01, "hard_crash_threshold": 1},
            0,
            False,
        ),
        (["--pending-manifests", "1", "--family-repeat-limit", "0"], {"family_repeat_limit": 0}, 1, False),
        (["--pending-manifests", "1"], {}, 1, True),
    ],
)
def test_cli_json_equals_compute_state(tmp_path, python_exe, script, flags, settings, pending, stop):
    results = _ledger(tmp_path, ROWS)
    if stop:
        (tmp_path / "STOP_AUTOFL").write_text("")
    done = run_guard(python_exe, script, results, *flags)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = guard.compute_state(
        ledger.read_rows(results),
        settings,
        stop_files_present=["STOP_AUTOFL"] if stop else [],
        pending_manifests=pending,
    )
    assert printed.pop("results") == str(results)
    assert printed.pop("mode") == settings.get("mode", "max")
    assert printed.pop("updated_at").endswith("Z")
    assert printed == expected
    assert done.stdout == json.dumps(json.loads(done.stdout), indent=2, sort_keys=True) + "\n", "sorted keys"


def test_env_defaults_apply_only_without_flags_and_never_the_cap(tmp_path, python_exe, script):
    results = _ledger(tmp_path, ROWS[:2])
    env = _clean_env(AUTOFL_PLATEAU_THRESHOLD="1", AUTOFL_PLATEAU_MIN_DELTA="0.25", AUTOFL_MAX_CANDIDATES="1")
    from_env = json.loads(run_guard(python_exe, script, results, env=env).stdout)
    assert from_env["plateau"]["threshold"] == 1 and from_env["plateau"]["min_delta"] == 0.25
    assert from_env["reason"] == "plateau_literature"
    assert from_env["candidate_cap"] is None and from_env["candidate_cap_source"] == "uncapped"
    flagged = json.loads(run_guard(python_exe, script, results, "--plateau-threshold", "5", env=env).stdout)
    assert flagged["plateau"]["threshold"] == 5 and flagged["reason"] == "continue"


def test_mode_comes_from_sibling_state_unless_given(tmp_path, python_exe, script):
    results = _ledger(tmp_path, [ROWS[0], {"status": "keep", "name": "lower", "score": 0.5}])
    state_dir = tmp_path / ".nvflare" / "autofl"
    state_dir.mkdir(parents=True)
    (state_dir / "campaign_state.json").write_text(json.dumps({"mode": "min"}))
    stored = json.loads(run_guard(python_exe, script, results, cwd="/").stdout)
    assert stored["mode"] == "min" and stored["best_score"] == 0.5 and stored["improvement"] == pytest.approx(0.3)
    forced = json.loads(run_guard(python_exe, script, results, "--mode", "max").stdout)
    assert forced["mode"] == "max" and forced["best_score"] == 0.8


def test_corrupt_sibling_state_without_mode_flag_is_rejected(tmp_path, python_exe, script):
    results = _ledger(tmp_path, ROWS[:1])
    state_dir = tmp_path / ".nvflare" / "autofl"
    state_dir.mkdir(parents=True)
    (state_dir / "campaign_state.json").write_text('{"mode": "max", "trunc')
    done = run_guard(python_exe, script, results)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--mode" in done.stderr and "Traceback" not in done.stderr
    assert run_guard(python_exe, script, results, "--mode", "max").returncode == 0


def test_default_stop_files_resolve_against_the_results_folder(tmp_path, python_exe, script):
    results = _ledger(tmp_path, ROWS[:1])
    (tmp_path / ".nvflare" / "autofl").mkdir(parents=True)
    (tmp_path / ".nvflare" / "autofl" / "STOP").write_text("")
    state = json.loads(run_guard(python_exe, script, results, cwd="/").stdout)
    assert state["reason"] == "manual_stop_file" and state["stop_files"] == [".nvflare/autofl/STOP"]
    custom = json.loads(run_guard(python_exe, script, results, "--stop-file", "HALT").stdout)
    assert custom["reason"] == "continue", "an explicit --stop-file replaces the defaults"
    (tmp_path / "HALT").write_text("")
    outside = tmp_path.parent / f"{tmp_path.name}-outside-stop"
    outside.write_text("")
    both = json.loads(run_guard(python_exe, script, results, "--stop-file", "HALT", "--stop-file", outside).stdout)
    outside.unlink()
    assert both["stop_files"] == ["HALT", str(outside)]


def test_missing_ledger_is_empty_with_a_note(tmp_path, python_exe, script):
    done = run_guard(python_exe, script, tmp_path / "results.tsv")
    assert done.returncode == 0 and "does not exist" in done.stderr
    assert json.loads(done.stdout)["candidate_attempts"] == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "content",
    [
        b"not a ledger\n",
        ("\t".join(ledger.COLUMNS) + "\nkeep\tx\tNaN" + "\t" * 15 + "\n").encode(),
        ("\t".join(ledger.COLUMNS) + "\nkeep\tx\t0.5" + "\t" * 16 + "\n").encode(),  # one field too many
        b"\xff\xfe\x00binary",
    ],
)
def test_corrupt_ledger_exits_2_with_one_line(tmp_path, python_exe, script, content):
    results = tmp_path / "results.tsv"
    results.write_bytes(content)
    done = run_guard(python_exe, script, results)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert str(results) in done.stderr and "line" in done.stderr
    assert results.read_bytes() == content


@pytest.mark.parametrize(
    "args, env",
    [
        (["--max-candidates", "0"], {}),
        (["--plateau-threshold", "0"], {}),
        (["--min-delta", "nan"], {}),
        (["--hard-crash-threshold", "-1"], {}),
        (["--mode", "best"], {}),
        (["--format", "yaml"], {}),
        (["--pending-manifests", "x"], {}),
        (["a.tsv", "b.tsv"], {}),
        (["--stop-file", ""], {}),
        ([], {"AUTOFL_EXPLORATION_BATCH_SIZE": "three"}),
        ([], {"AUTOFL_PLATEAU_MIN_DELTA": "-0.1"}),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, python_exe, script, args, env):
    done = run_guard(python_exe, script, *args, cwd=tmp_path, env=_clean_env(**env))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("campaign_guard: ")


def test_text_format(tmp_path, python_exe, script):
    results = _ledger(tmp_path, ROWS)
    done = run_guard(python_exe, script, results, "--format", "text", "--max-candidates", "3")
    assert done.returncode == 0
    assert "decision: stop (candidate_cap_exhausted); next action: final_report" in done.stdout
    assert "final answer allowed: yes" in done.stdout and "literature batch lit-0001: 1 of 3" in done.stdout
    assert (
        "plateau: continue; 1 of 8 scored since row 2 (min delta 0.0005); best a2 (retained scored row 1); "
        "last literature event row 3, last batch completion row none"
    ) in done.stdout


def _tree_digest(folder):
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
            digest.update(str(path.stat().st_mtime_ns).encode())
    return digest.hexdigest()


def test_cli_never_writes(tmp_path, python_exe, script):
    results = _ledger(tmp_path, ROWS)
    (tmp_path / ".nvflare" / "autofl").mkdir(parents=True)
    (tmp_path / ".nvflare" / "autofl" / "campaign_state.json").write_text('{"mode": "max"}')
    (tmp_path / "STOP_AUTOFL").write_text("")
    before = _tree_digest(tmp_path)
    for fmt in ("json", "text"):
        done = subprocess.run(
            [python_exe, "-c", AUDIT_WRAPPER, script, str(results), "--format", fmt, "--pending-manifests", "1"],
            capture_output=True,
            text=True,
            env=_clean_env(PYTHONDONTWRITEBYTECODE=""),
            timeout=60,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        audit = audit_events(done.stderr)
        assert audit == [], f"the guard wrote: {audit}"  # covers __pycache__ in the skill folder too
    assert _tree_digest(tmp_path) == before


def test_guard_import_is_cheap(python_exe, script):
    code = (
        "import runpy, sys; sys.argv = ['g', '/nonexistent/results.tsv']\n"
        f"try: runpy.run_path({script!r}, run_name='__main__')\n"
        "except SystemExit: pass\n"
        "bad = [m for m in ('matplotlib', 'nvflare', 'PIL', 'numpy') if m in sys.modules]\n"
        "sys.stderr.write('HEAVY ' + ','.join(bad) + '\\n')"
    )
    done = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, env=_clean_env(), timeout=60)
    assert done.stderr.strip().endswith("HEAVY"), done.stderr


def test_main_in_process(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)  # the import sets it
    for key in list(os.environ):
        if key.startswith("AUTOFL_"):
            monkeypatch.delenv(key)
    import campaign_guard

    results = _ledger(tmp_path, ROWS[:1])
    assert campaign_guard.main([str(results), "--max-candidates", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["remaining_candidates"] == 1


def test_audit_wrapper_detects_writes(tmp_path, python_exe):
    """The read-only check above is only worth something if the hook sees writes."""
    writer = tmp_path / "writer.py"
    writer.write_text("import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('x')\n")
    done = subprocess.run(
        [python_exe, "-c", AUDIT_WRAPPER, str(writer), str(tmp_path / "out.txt")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    audit = audit_events(done.stderr)
    assert ["open-for-write", str(tmp_path / "out.txt")] in audit


def test_results_path_that_is_a_directory(tmp_path, python_exe, script):
    (tmp_path / "results.tsv").mkdir()
    done = run_guard(python_exe, script, tmp_path / "results.tsv")
    assert done.returncode == 2 and "is a directory" in done.stderr and done.stderr.count("\n") == 1
