"""The real-world eval set (evals/realworld/): its structure, the provenance of its files, and every case replayed
in-process (`make eval` runs the same cases through the CLI and prints the set's own score line)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import diagnose_job
import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
REALWORLD = load_by_path("realworld_set", REPO / "evals" / "realworld_set.py")
CHECKS = load_by_path("eval_checks", REPO / "evals" / "eval_checks.py")
RUN_EVALS = load_by_path("run_evals", REPO / "evals" / "run_evals.py")
WRAPPED = load_by_path("make_wrapped", REPO / "evals" / "realworld" / "make_wrapped.py")
CASES, PROBLEMS = REALWORLD.load_cases()
RAW = json.loads(REALWORLD.CASES.read_text(encoding="utf-8"))["cases"]


def test_the_set_is_valid_and_large_enough():
    assert PROBLEMS == []
    assert len(CASES) == len(RAW) >= 30


def test_the_set_spans_releases_deployments_and_provenances():
    provenance = [case["provenance"] for case in RAW]
    assert provenance.count("real") >= 12 and provenance.count("wrapped") >= 5
    lines = {".".join(case["release"].split(".")[:2]) for case in RAW}
    assert {"2.4", "2.5", "2.6", "2.7", "2.8", "2.9"} <= lines
    rows = {case["expected"]["matched_pattern"] for case in RAW}
    for row in (
        "PEER_GONE_OR_TIMEOUT",
        "INFRASTRUCTURE_DEPLOYMENT_FAILURE",
        "AUTH_FAILURE",
        "STARTUP_KIT_EXPIRED",
        "TRANSFER_PROGRESS_TIMEOUT",
        "RESOURCE_EXCEEDS_HOST_CAPACITY",
        "PACKAGE_EXPORT_ERROR",
        "PROCESS_EXIT_NEG9",
    ):
        assert row in rows
    modes = {case["expected"].get("runtime_mode") for case in RAW}
    assert {"simulation", "production"} <= modes


def test_real_captures_are_the_runs_of_older_releases_and_hold_no_credential_material():
    real = REALWORLD.FILES / "real"
    folders = sorted(p.name for p in real.iterdir())
    assert any("2.4" in name for name in folders) and sum("2.5" in name for name in folders) >= 8
    for path in REALWORLD.FILES.rglob("*"):
        if path.is_file():
            assert path.suffix in (".txt", ".log"), path
            assert "BEGIN" not in path.read_text(encoding="utf-8", errors="replace"), path  # no PEM block
    for case in RAW:
        if case["provenance"] == "real":
            assert all(name.startswith("real/") for name in case["files"]), case["id"]


def test_the_wrapped_copies_are_fresh():
    """make_wrapped.py is deterministic: the committed wrapped files are exactly what it writes."""
    assert WRAPPED.main(["--check"]) == 0


def test_the_score_line_counts_each_provenance():
    results = [({"provenance": "real"}, []), ({"provenance": "real"}, ["miss"]), ({"provenance": "wrapped"}, [])]
    assert REALWORLD.score_line(results) == "real-world: 2 of 3 passed (real 1/2, wrapped 1/1, reconstruction 0/0)"


def test_a_case_without_reason_or_with_an_unknown_provenance_is_a_problem():
    case = dict(RAW[0], provenance="rumour", reason="")
    problems = REALWORLD.case_problems(case)
    assert any("provenance" in p for p in problems) and any("reason" in p for p in problems)


def test_a_source_that_is_not_an_https_url_is_a_problem():
    case = next(case for case in REALWORLD.load_cases()[0] if case["id"] == "rw-rec-pasted-requests-cert")
    assert case["expected"]["confidence"] == "low"
    raw = {"id": "x", "prompt": "p", "files": [], "expected": {"matched_pattern": "UNKNOWN"}}
    raw |= {"provenance": "reconstruction", "release": "2.5", "reason": "r"}
    assert not any("source" in p for p in REALWORLD.case_problems(raw | {"source": "https://github.com/o/r/issues/1"}))
    for bad in ("http://example.org/report", "see issue 12", 12):
        assert any("source" in p for p in REALWORLD.case_problems(raw | {"source": bad})), bad


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_realworld_case_in_process(case, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    argv = [str(Path(case["files_root"]) / f) for f in case["files"]] + list(case.get("args", []))
    stdout = io.StringIO()
    code = diagnose_job.main(argv, stdin=io.BytesIO(b""), stdout=stdout)
    err = capsys.readouterr().err
    catalog, schema = RUN_EVALS.load_catalog(), RUN_EVALS.load_schema()
    assert CHECKS.check_result(case["expected"], code, stdout.getvalue(), err, catalog, schema=schema) == []
