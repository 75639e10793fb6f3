"""Objective import and admission: key metric, direction sources, bridges and the admission codes."""

from pathlib import Path

import pytest
from autofl_core.importer import api
from autofl_core.importer.objective import is_lower_better_name, parse_stop_cond

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "jobs"


def imported(case: str, **kwargs) -> dict:
    return api.import_job(FIXTURES / case / "job.py", **kwargs)


def codes(config: dict) -> list[str]:
    return [e["code"] for e in config["admission_errors"]]


@pytest.mark.parametrize(
    ("case", "metric", "mode", "source"),
    [
        ("hello_numpy", "accuracy", "max", "core_default"),
        ("loss_min", "loss", "min", "key_metric_mode"),
        ("stop_cond_ge", "f1", "max", "stop_cond"),
        ("stop_cond_le", "mse", "min", "stop_cond"),
        ("stop_cond_other_metric", "loss", "max", "core_default"),
        ("pt_scaffold", "accuracy", "max", "core_default"),
    ],
)
def test_key_metric_direction_sources(case, metric, mode, source):
    objective = imported(case)["objective"]
    assert objective["job_key_metric"] == metric
    assert objective["metric"] == metric
    assert objective["job_key_metric_mode"] == mode
    assert objective["mode"] == mode
    assert objective["mode_contract_source"] == source
    assert objective["metric_extraction_order"] == [metric]


def test_loss_with_explicit_min_is_admissible():
    assert imported("loss_min")["admission_errors"] == []


def test_example_numpy_loss_job_is_admissible_with_min():
    config = api.import_job(REPO / "examples" / "numpy-loss" / "job.py")
    assert (config["objective"]["metric"], config["objective"]["mode"]) == ("loss", "min")
    assert config["admission_errors"] == []


def test_loss_without_mode_is_a_direction_conflict_naming_the_fix():
    config = imported("loss_no_mode")
    assert codes(config) == ["AUTOFL_METRIC_DIRECTION_CONFLICT"]
    assert 'key_metric_mode="min"' in config["admission_errors"][0]["message"]
    assert "NumpyFedAvgRecipe" in config["admission_errors"][0]["message"]


def test_stop_cond_on_another_metric_does_not_set_direction():
    assert codes(imported("stop_cond_other_metric")) == ["AUTOFL_METRIC_DIRECTION_CONFLICT"]


def test_custom_model_selector_makes_direction_unresolved():
    config = imported("custom_model_selector")
    assert config["objective"]["mode"] is None
    assert codes(config) == ["AUTOFL_UNRESOLVED_SAFETY_FIELD"]
    assert "model_selector" in config["admission_errors"][0]["message"]
    assert "objective.mode" in config["summary"]["unresolved"]


def test_requested_metric_without_bridge_is_not_declared():
    config = imported("hello_numpy", metric="val_loss")
    assert config["objective"]["requested_metric"] == "val_loss"
    assert codes(config) == ["AUTOFL_METRIC_NOT_DECLARED"]
    message = config["admission_errors"][0]["message"]
    assert "--metric accuracy" in message and "mutation_schema.yaml" in message
    assert api.admission_errors(imported("hello_numpy"), "f1")[0]["code"] == "AUTOFL_METRIC_NOT_DECLARED"


def test_requested_key_metric_is_admissible():
    assert imported("hello_numpy", metric="accuracy")["admission_errors"] == []


def test_bridged_metric_takes_schema_direction_and_order():
    config = imported("bridge_schema", metric="val_loss")
    objective = config["objective"]
    assert objective["bridged"] is True
    assert (objective["metric"], objective["mode"], objective["mode_contract_source"]) == (
        "val_loss",
        "min",
        "mutation_schema",
    )
    assert objective["job_key_metric"] == "accuracy" and objective["job_key_metric_mode"] == "max"
    assert objective["metric_extraction_order"] == ["val_loss", "loss"]
    assert objective["metric_source"] == "text"
    assert config["admission_errors"] == []


def test_schema_requested_metric_applies_without_cli_metric():
    objective = imported("bridge_schema")["objective"]
    assert objective["requested_metric"] == "val_loss"
    assert objective["mode"] == "min"


def test_bridged_lower_is_better_metric_without_mode_conflicts():
    config = imported("bridge_schema_no_mode")
    assert codes(config) == ["AUTOFL_METRIC_DIRECTION_CONFLICT"]
    assert "objective.mode: min in mutation_schema.yaml" in config["admission_errors"][0]["message"]


def test_schema_never_overrides_job_key_metric_direction():
    config = imported("schema_overrides_direction")
    assert config["objective"]["mode"] == "max"
    assert codes(config) == ["AUTOFL_METRIC_DIRECTION_CONFLICT"]
    assert "override" in config["admission_errors"][0]["message"]


def test_metric_invariants_are_complete_and_stable():
    invariants = imported("hello_numpy")["objective"]["metric_invariants"]
    assert set(invariants) == {"definition", "evaluation_data", "timing", "aggregation", "scale_units_direction"}
    assert "client.py" in invariants["definition"]
    assert "max" in invariants["scale_units_direction"]
    assert imported("hello_numpy", base_args=["--lr", "0.5"])["objective"] == imported("hello_numpy")["objective"]


@pytest.mark.parametrize(
    "name", ["loss", "val_loss", "top1_error", "MSE", "rmse", "nll", "perplexity", "wer", "cer", "trainLoss", "mae"]
)
def test_lower_is_better_names(name):
    assert is_lower_better_name(name)


@pytest.mark.parametrize("name", ["accuracy", "f1", "auc", "neg_loss", "dice", "precision", "recall"])
def test_higher_is_better_names(name):
    assert not is_lower_better_name(name)


def test_stop_cond_parsing_follows_nvflare_format():
    assert parse_stop_cond("accuracy >= 0.9") == ("accuracy", "max")
    assert parse_stop_cond("loss < 0.1") == ("loss", "min")
    assert parse_stop_cond("accuracy>=0.9") is None
    assert parse_stop_cond("accuracy = 0.9") is None


def test_admission_codes_for_budget():
    assert codes(imported("no_budget")) == ["AUTOFL_EMPTY_FIXED_BUDGET"]
    dynamic = imported("num_rounds_dynamic")
    assert codes(dynamic) == ["AUTOFL_UNRESOLVED_SAFETY_FIELD"]
    assert "fixed_budget.num_rounds" in dynamic["admission_errors"][0]["message"]


def test_admission_is_pure_over_the_config():
    config = imported("hello_numpy")
    config["fixed_budget"]["num_rounds"] = {"value": None, "confidence": "unresolved", "flag": None, "reason": "x"}
    assert [e["code"] for e in api.admission_errors(config, None)] == ["AUTOFL_UNRESOLVED_SAFETY_FIELD"]


FEDJOB = (
    "from nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.app_common.widgets.intime_model_selector import IntimeModelSelector\nfrom mine import BestSelector\n"
    "job = FedJob(name='j')\n"
)


@pytest.mark.parametrize(
    ("components", "metric", "mode", "source"),
    [
        (["FedAvg(num_rounds=2)"], "accuracy", "max", "core_default"),
        (["FedAvg(num_rounds=2)", "IntimeModelSelector()"], "val_accuracy", "max", "core_default"),
        (
            ["FedAvg(num_rounds=2)", "IntimeModelSelector(key_metric='val_loss', negate_key_metric=True)"],
            "val_loss",
            "min",
            "IntimeModelSelector(negate_key_metric=...)",
        ),
        (
            ["FedAvg(num_rounds=2, stop_cond='val_loss < 0.2')", "IntimeModelSelector(key_metric='val_loss')"],
            "val_loss",
            "min",
            "stop_cond",
        ),
        (["FedAvg(num_rounds=2)", "BestSelector()"], "accuracy", None, "unresolved"),
    ],
)
def test_fedjob_objective_from_components(components, metric, mode, source):
    attach = "".join(f"job.to_server({c})\n" for c in components)
    config = api.import_source(FEDJOB + attach + "job.simulator_run('/tmp/w', n_clients=2)\n")
    objective = config["objective"]
    assert (objective["job_key_metric"], objective["mode"], objective["mode_contract_source"]) == (metric, mode, source)
