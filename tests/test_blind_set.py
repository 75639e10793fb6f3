"""The blind set's scoring (evals/blind_set.py): labels, acceptable rows, confident mistakes, floors.

The halves (dev, sealed, sealed2, sealed3) are real failure reports rebuilt as evidence, sealedrun, sealedrun2,
sealedrun3, sealedrun4, sealedrun5 and sealedrun6 hold real failing NVFLARE runs; these tests run the real script on
them in process, check that no report sits in two halves, that each case says where it comes from and names files
that exist, and check the judging rules on reports built here.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[1]
blind_set = load_by_path("blind_set", REPO / "evals" / "blind_set.py")
diagnose_job = load_by_path(
    "diagnose_job_blind", REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
)

CASE = {"id": "c", "expected": {"matched_pattern": "IMPORT_ERROR", "runtime_mode": "simulation"}}


def report(pattern: str, confidence: str, mode: str = "simulation") -> str:
    return json.dumps({"matched_pattern": pattern, "confidence": confidence, "runtime_mode": mode})


def test_a_case_is_right_on_its_label_or_an_acceptable_row():
    assert blind_set.judge(CASE, 0, report("IMPORT_ERROR", "high")).right
    other = {**CASE, "acceptable_patterns": ["UNKNOWN"]}
    assert blind_set.judge(other, 0, report("UNKNOWN", "low")).right
    assert not blind_set.judge(CASE, 0, report("UNKNOWN", "low")).right


def test_a_wrong_answer_at_high_confidence_is_counted_apart():
    wrong_high = blind_set.judge(CASE, 0, report("DATA_PATH_NOT_FOUND", "high"))
    wrong_medium = blind_set.judge(CASE, 0, report("DATA_PATH_NOT_FOUND", "medium"))
    assert (wrong_high.right, wrong_high.wrong_high) == (False, True)
    assert (wrong_medium.right, wrong_medium.wrong_high) == (False, False)


def test_a_failed_run_or_garbage_is_wrong_never_right():
    assert blind_set.judge(CASE, 2, "").said == "exit 2"
    assert not blind_set.judge(CASE, 0, "not json").right
    assert not blind_set.judge(CASE, 0, report("IMPORT_ERROR", "high", "production")).mode_right


def test_the_bars_and_the_floors_name_what_is_short():
    right = blind_set.judge(CASE, 0, report("IMPORT_ERROR", "high"))
    wrong_high = blind_set.judge(CASE, 0, report("UNKNOWN", "high"))
    assert blind_set.bar_misses([right] * 9 + [wrong_high]) == ["wrong at high confidence: c"]
    assert blind_set.bar_misses([right] * 10) == []
    assert any("right" in m for m in blind_set.bar_misses([right] * 8 + [wrong_high] * 2))
    floor_right, floor_high = blind_set.FLOORS["sealed"]
    assert blind_set.floor_misses("sealed", [right] * floor_right + [wrong_high] * floor_high) == []
    assert blind_set.floor_misses("sealed", [right] * (floor_right - 1)) != []


def run_in_process(case: dict) -> tuple[int, str, str]:
    root = Path(case["files_root"])
    argv = [str(root / name) for name in case["files"]] + list(case["args"])
    out, err = io.StringIO(), io.StringIO()
    saved, sys.stderr = sys.stderr, err
    try:
        code = diagnose_job.main(argv, stdin=io.BytesIO(b""), stdout=out)
    finally:
        sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def test_every_half_has_a_floor_and_no_report_is_in_two_halves():
    assert set(blind_set.FLOORS) == set(blind_set.HALVES)
    seen: dict[str, str] = {}
    for name in blind_set.HALVES:
        for case in blind_set.load_half(name):
            assert case["source"] not in seen, (case["id"], name, seen.get(case["source"]))
            seen[case["source"]] = name
    realworld = json.loads((REPO / "evals" / "realworld" / "cases.json").read_text(encoding="utf-8"))["cases"]
    assert not {case.get("source") for case in realworld} & set(seen)


def test_every_case_says_where_it_comes_from_and_its_files_exist():
    for name in blind_set.HALVES:
        for case in blind_set.load_half(name):
            assert case["provenance"] in ("reconstruction", "real-run"), (name, case["id"])
            is_url = case["source"].startswith("https://")
            assert is_url == (case["provenance"] == "reconstruction"), (name, case["id"], case["source"])
            assert case["release"] and case["reason"] and case["expected"]["matched_pattern"], (name, case["id"])
            for file in case["files"]:
                assert (Path(case["files_root"]) / file).exists(), (name, case["id"], file)


def test_every_half_holds_its_recorded_floor():
    for name in blind_set.HALVES:
        verdicts = blind_set.score_half(name, run_in_process)
        assert len(verdicts) >= 16, name
        assert blind_set.floor_misses(name, verdicts) == [], (name, blind_set.table(verdicts))
