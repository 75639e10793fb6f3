"""Metric extraction over hand-made artifacts: every form, precedence, non-finite rejection, not-found."""

import json

import pytest
from autofl_core.trial.metrics import extract_metric

SUMMARY = "simulation/server/simulate_job/metrics/metrics_summary.json"
CROSS = "simulation/server/simulate_job/cross_site_val/cross_val_results.json"


def write(base, rel, content):
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def nv(name, value):
    return [{"name": name, "value": value}]


def test_real_2_9_summary_uses_final_aggregated_metrics(tmp_path):
    write(
        tmp_path,
        SUMMARY,
        {"final_aggregated_metrics": nv("accuracy", 0.915), "best_metrics": nv("accuracy", 0.93), "best_round": 1},
    )
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.metric_name, found.metric_source) == (
        0.915,
        "accuracy",
        "structured:metrics_summary.json",
    )
    assert found.metric_artifact == SUMMARY
    assert found.detail == "final_aggregated_metrics"


@pytest.mark.parametrize(
    ("document", "detail", "value"),
    [
        ({"best_metrics": nv("accuracy", 0.8), "metrics": {"accuracy": 0.7}}, "best_metrics", 0.8),
        ({"metrics": {"accuracy": 0.7}, "accuracy": 0.6}, "metrics", 0.7),
        ({"metrics": nv("loss", 1.0), "accuracy": 0.6}, "direct_key", 0.6),
        ({"validation": {"global": {"accuracy": 0.55}}}, "nested", 0.55),
        ({"rounds": [{"round": 2, "aggregated_metrics": nv("accuracy", 0.44)}]}, "nested", 0.44),
    ],
)
def test_summary_field_precedence(tmp_path, document, detail, value):
    write(tmp_path, SUMMARY, document)
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.detail) == (value, detail)


def test_metric_extraction_order_is_followed(tmp_path):
    write(tmp_path, SUMMARY, {"final_aggregated_metrics": nv("accuracy", 0.9) + nv("val_acc", 0.7)})
    assert extract_metric(tmp_path, ["val_acc", "accuracy"]).metric_name == "val_acc"
    assert extract_metric(tmp_path, ["missing", "accuracy"]).metric_name == "accuracy"


def test_cross_site_mean_of_final_global_model_over_sites(tmp_path):
    write(
        tmp_path,
        CROSS,
        {
            "site-1": {
                "SRV_FL_global_model.pt": {"accuracy": 0.8},
                "SRV_best_FL_global_model.pt": {"accuracy": 0.99},
                "site-1": {"accuracy": 0.1},
            },
            "site-2": {"SRV_FL_global_model.pt": {"accuracy": 0.6}, "site-2": {"accuracy": 0.1}},
        },
    )
    found = extract_metric(tmp_path, ["accuracy"])
    assert found.value == pytest.approx(0.7)
    assert found.metric_source == "structured:cross_val_results.json#server_final"
    assert found.metric_artifact == CROSS


def test_cross_site_best_entries_only_when_no_final_ones(tmp_path):
    write(tmp_path, CROSS, {"site-1": {"SRV_best_FL_global_model.pt": {"accuracy": 0.9}}})
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.metric_source) == (0.9, "structured:cross_val_results.json#server_best")


def test_summary_wins_over_cross_site_and_structured_over_text(tmp_path):
    write(tmp_path, "run.log", "final accuracy=0.1\n")
    write(tmp_path, CROSS, {"site-1": {"SRV_FL_global_model.pt": {"accuracy": 0.2}}})
    assert extract_metric(tmp_path, ["accuracy"]).value == 0.2
    write(tmp_path, SUMMARY, {"final_aggregated_metrics": nv("accuracy", 0.3)})
    assert extract_metric(tmp_path, ["accuracy"]).value == 0.3


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("accuracy: 0.91", 0.91),
        ('{"accuracy": 0.91, "loss": 2}', 0.91),
        ("final accuracy=0.91", 0.91),
        ("Accuracy of the received model on the test set: 91", 91.0),
        ("2026-01-01 - INFO - site=site-1 round=2 accuracy=9.1e-1", 0.91),
    ],
)
def test_text_forms(tmp_path, line, value):
    write(tmp_path, "simulation/site-1/log.txt", f"noise\n{line}\nmore noise\n")
    found = extract_metric(tmp_path, ["accuracy"])
    assert found.value == pytest.approx(value)
    assert found.metric_source == "text:log.txt:line=2"
    assert found.metric_artifact == "simulation/site-1/log.txt"


def test_text_takes_the_last_matching_line_and_ignores_lookalike_names(tmp_path):
    write(tmp_path, "run.log", "accuracy=0.5\nval_accuracy=0.99\naccuracy=0.6\naccuracy_std=0.01\n")
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.metric_source) == (0.6, "text:run.log:line=3")


def test_text_log_order_run_log_first(tmp_path):
    write(tmp_path, "simulation/server/log.txt", "accuracy=0.2\n")
    write(tmp_path, "run.log", "accuracy=0.1\n")
    assert extract_metric(tmp_path, ["accuracy"]).metric_artifact == "run.log"


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_summary_value_is_not_a_score(tmp_path, bad):
    template = '{"final_aggregated_metrics": [{"name": "accuracy", "value": BAD}], "best_metrics": NV}'
    write(tmp_path, SUMMARY, template.replace("BAD", bad).replace("NV", json.dumps(nv("accuracy", 0.9))))
    found = extract_metric(tmp_path, ["accuracy"])
    assert found.value is None
    assert found.reason.startswith("matching metric not found; metrics=[accuracy]; searched=[")
    assert "rejected non-finite" in found.reason


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_text_value_is_not_a_score(tmp_path, bad):
    write(tmp_path, "run.log", f"accuracy=0.5\naccuracy={bad}\n")
    found = extract_metric(tmp_path, ["accuracy"])
    assert found.value is None
    assert "text:run.log:line=2" in found.reason


def test_non_finite_cross_site_value_is_not_a_score(tmp_path):
    write(tmp_path, CROSS, '{"site-1": {"SRV_FL_global_model.pt": {"accuracy": NaN}}}')
    assert extract_metric(tmp_path, ["accuracy"]).value is None


def test_not_found_reason_lists_metrics_and_searched_files(tmp_path):
    write(tmp_path, SUMMARY, {"final_aggregated_metrics": nv("loss", 0.3)})
    write(tmp_path, "run.log", "nothing here\n")
    found = extract_metric(tmp_path, ["accuracy", "val_acc"])
    assert found.value is None
    assert found.reason == (f"matching metric not found; metrics=[accuracy, val_acc]; searched=[{SUMMARY}, run.log]")


def test_corrupt_and_binary_artifacts_do_not_break_extraction(tmp_path):
    write(tmp_path, SUMMARY, "{truncated")
    (tmp_path / "run.log").write_bytes(b"\xff\xfe\x00binary\naccuracy: 0.25\n\x80")
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.metric_source) == (0.25, "text:run.log:line=2")


def test_booleans_are_not_numbers(tmp_path):
    write(tmp_path, SUMMARY, {"final_aggregated_metrics": {"accuracy": True}, "metrics": {"accuracy": 0.4}})
    assert extract_metric(tmp_path, ["accuracy"]).value == 0.4


def test_a_huge_single_line_log_is_handled(tmp_path):
    (tmp_path / "run.log").write_bytes(b"x" * (20 * 1024 * 1024) + b" accuracy=0.33\nend\n")
    found = extract_metric(tmp_path, ["accuracy"])
    assert (found.value, found.metric_source) == (0.33, "text:run.log:line=1")


def test_line_numbers_stay_right_after_a_line_longer_than_the_read_piece(tmp_path):
    (tmp_path / "run.log").write_bytes(b"accuracy=0.1 " + b"x" * (3 * 1024 * 1024) + b"\naccuracy=0.4\nend\n")
    assert extract_metric(tmp_path, ["accuracy"]).metric_source == "text:run.log:line=2"


def test_empty_or_missing_folder_reports_not_found(tmp_path):
    found = extract_metric(tmp_path / "missing", ["accuracy"])
    assert found.value is None
    assert found.reason == "matching metric not found; metrics=[accuracy]; searched=[]"
