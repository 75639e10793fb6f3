"""JSON Schemas in shared/schemas: valid for what our code produces and the example documents, strict otherwise."""

import json
import subprocess
from pathlib import Path

import pytest
from autofl_core.campaign import guard, ledger
from jsonschema import Draft202012Validator

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "shared" / "schemas"
DOCUMENTS = REPO / "tests" / "fixtures" / "autofl_documents"
KIND_TO_SCHEMA = {
    "manifest": "candidate_manifest.v1.schema.json",
    "campaign": "campaign.v1.schema.json",
    "envelope": "runner_envelope.v1.schema.json",
    "state": "campaign_state.v1.schema.json",
}
# invalid example -> a fragment of the error path or message, so each is rejected for the intended reason
INVALID_BECAUSE = {
    "manifest__bad_candidate_id": "candidate_id",
    "manifest__id_too_long": "candidate_id",
    "manifest__absolute_changed_file": "changed_files",
    "manifest__dotdot_created_file": "created_files",
    "manifest__forged_status": "status",
    "manifest__keep_without_score": "result/score",
    "manifest__crash_without_reason": "result/failure_reason",
    "manifest__missing_effective_run_args": "'effective_run_args' is a required property",
    "manifest__bad_sha": "patch_sha256",
    "manifest__escaping_artifact": "artifacts/run",
    "manifest__unknown_field": "'extra' was unexpected",
    "manifest__bad_mode": "objective/mode",
    "campaign__missing_best_run_args": "'best_run_args' is a required property",
    "campaign__cap_change_not_boolean": "cap_changes/0/user_approved",
    "campaign__zero_cap": "settings/max_candidates",
    "campaign__missing_setting_changes": "'setting_changes' is a required property",
    "campaign__bad_schema_version": "schema_version",
    "envelope__relative_path": "results",
    "envelope__missing_state_field": "'abandoned_candidates' is a required property",
    "envelope__instruction_without_prefix": "agent_instruction",
    "envelope__uncapped_with_remaining": "remaining_candidates",
    "envelope__unknown_next_action": "next_action",
    "envelope__bad_suggestion": "'run_args' is a required property",
}


def validator(kind: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / KIND_TO_SCHEMA[kind]).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _errors(kind: str, document) -> list[str]:
    return [
        "/".join(map(str, error.absolute_path)) + ": " + error.message
        for error in validator(kind).iter_errors(document)
    ]


def test_every_schema_is_draft_2020_12():
    for name in KIND_TO_SCHEMA.values():
        schema = json.loads((SCHEMAS / name).read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", sorted((DOCUMENTS / "valid").glob("*.json")), ids=lambda p: p.stem)
def test_valid_examples(path):
    assert _errors(path.stem.split("__")[0], json.loads(path.read_text())) == []


@pytest.mark.parametrize("path", sorted((DOCUMENTS / "invalid").glob("*.json")), ids=lambda p: p.stem)
def test_invalid_examples_fail_for_the_intended_reason(path):
    errors = _errors(path.stem.split("__")[0], json.loads(path.read_text()))
    assert errors, "must be rejected"
    assert any(INVALID_BECAUSE[path.stem] in error for error in errors), errors


def test_every_invalid_example_is_listed():
    assert {p.stem for p in (DOCUMENTS / "invalid").glob("*.json")} == set(INVALID_BECAUSE)


def test_schema_field_lists_mirror_the_spec():
    state = json.loads((SCHEMAS / KIND_TO_SCHEMA["state"]).read_text())
    spec_state = (
        "schema_version updated_at results mode decision reason next_action final_response_allowed candidate_cap "
        "candidate_cap_source candidate_attempts remaining_candidates pending_candidates scored_attempts best_score "
        "baseline_status baseline_score improvement abandoned_candidates stop_files plateau exploration_batch "
        "required_exploration agent_instruction accounting_instruction best_candidate best_source_sha256 "
        "pending_candidate_manifest noise"
    ).split()
    beyond_the_spec = ["noise_context"]  # is the best's own gain real (issue 22: noise advice that fires)
    beyond_the_spec.append("metric_divergence")  # frozen evaluation: a report that beats its measured model
    assert sorted(state["properties"]) == sorted(spec_state + beyond_the_spec)
    assert sorted(state["properties"]["plateau"]["properties"]) == sorted(
        "available recommendation best_name best_score best_scored_index last_literature_event_index "
        "last_batch_completion_index min_delta reset_row_index scored_since_reset threshold".split()
    )
    envelope = json.loads((SCHEMAS / KIND_TO_SCHEMA["envelope"]).read_text())
    spec_envelope = (
        "autofl_yaml results state progress report candidate_attempts decision reason next_action "
        "final_response_allowed candidate_cap candidate_cap_source remaining_candidates baseline_status "
        "baseline_score improvement abandoned_candidates agent_instruction required_exploration noise"
    ).split()
    assert sorted(envelope["required"]) == sorted(spec_envelope)
    extras = "initialized baseline_retried candidate_manifest candidate_source job_id literature_event literature_event_id campaign suggestions"
    assert set(extras.split()) <= set(envelope["properties"]) - set(envelope["required"])


# --- documents our code produces ----------------------------------------------------------------


def _row(status, score=None, **extra):
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status=status, name=status, score=score, runtime_seconds=None, **extra)
    return ledger.LedgerRow(**values)


SCENARIOS = {
    "stop_pending": ([_row("baseline", 0.8)], {}, {"stop_files_present": ["STOP_AUTOFL"], "pending_manifests": 1}),
    "stop": ([_row("baseline", 0.8)], {}, {"stop_files_present": ["STOP_AUTOFL"]}),
    "pending_ready": ([_row("baseline", 0.8)], {}, {"stop_files_present": [], "ready_manifests": 1}),
    "cap": ([_row("baseline", 0.8), _row("crash")], {"max_candidates": 1}, {"stop_files_present": []}),
    "crashes": ([_row("baseline", 0.8)] + [_row("crash")] * 6, {}, {"stop_files_present": []}),
    "batch": (
        [_row("baseline", 0.8), _row("literature", literature_event_id="lit-0001")],
        {},
        {"stop_files_present": []},
    ),
    "family": (
        [_row("baseline", 0.8), _row("literature", literature_event_id="")]
        + [_row("discard", 0.5, candidate_kind="source_edit")] * 3
        + [_row("discard", 0.5, candidate_kind="argument_only", algorithm_family="lr")] * 6,
        {"mode": "min"},
        {"stop_files_present": []},
    ),
    "plateau": (
        [_row("baseline", 0.8)] + [_row("discard", 0.5)] * 8,
        {"max_candidates": 20},
        {"stop_files_present": []},
    ),
    "empty": ([], {}, {"stop_files_present": []}),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_states_from_compute_state_validate(name):
    rows, settings, kwargs = SCENARIOS[name]
    state = guard.compute_state(rows, settings, **kwargs)
    mode = settings.get("mode", "max")
    view = guard.with_runner_fields(state, results="/w/results.tsv", mode=mode, updated_at="2026-11-30T07:00:00Z")
    assert _errors("state", view) == []
    full = guard.with_runner_fields(
        state,
        results="/w/results.tsv",
        mode=mode,
        updated_at="2026-11-30T07:00:00Z",
        abandoned_candidates=1,
        best_candidate="baseline",
        best_source_sha256="ab" * 32,
        pending_candidate_manifest=".nvflare/autofl/candidates/c1/candidate_manifest.json",
    )
    assert _errors("state", full) == []
    for override in ("repair_baseline", "submit_baseline", "await_simulation_runner_approval"):
        assert _errors("state", guard.with_next_action_override(full, override)) == []


def test_state_schema_rejects_partial_runner_fields_and_bad_values():
    state = guard.compute_state([_row("baseline", 0.8)], {}, stop_files_present=[])
    view = guard.with_runner_fields(state, results="/w/results.tsv", mode="max", updated_at="t")
    assert any("best_candidate" in error for error in _errors("state", {**view, "abandoned_candidates": 0}))
    assert _errors("state", {**view, "decision": "pause"})
    assert _errors("state", {k: v for k, v in view.items() if k != "plateau"})
    assert _errors("state", {**view, "plateau": {**view["plateau"], "extra": 1}})
    assert _errors("state", {**view, "exploration_batch": {"literature_event_id": "lit-0001"}})


def test_guard_cli_output_validates(tmp_path, python_exe):
    results = tmp_path / "results.tsv"
    for values in (
        {"status": "baseline", "name": "baseline", "score": 0.8},
        {"status": "literature", "name": "lit", "literature_event_id": "lit-0001"},
    ):
        ledger.append_row(results, values)
    script = REPO / "skills" / "nvflare-autofl" / "scripts" / "campaign_guard.py"
    done = subprocess.run([python_exe, str(script), str(results)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert _errors("state", json.loads(done.stdout)) == []
