"""Every NVFLARE 2.9 recipe class, one realistic job each: training admitted, everything else refused (issue 15).

The expectations are hand-written in tests/fixtures/jobs/recipes/expected.json; the recipe classes come from the
table rendered from the installed NVFLARE (autofl_core/importer/nvflare_recipes.json).
"""

import io
import json
from pathlib import Path

import pytest
from autofl_core.importer import api, recipes
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "tests" / "fixtures" / "jobs"
RECIPES = JOBS / "recipes"
EXPECTED = json.loads((RECIPES / "expected.json").read_text())["fixtures"]
# Admitted by the importer before issue 15 (commit 9ba5ca3, default arguments). The two FedJob jobs that simulate
# into a literal folder are refused since issue 7 on purpose: their trials could not be isolated.
ADMITTED_BEFORE = [
    "boolean_optional",
    "branch_selection",
    "bridge_schema",
    "choices",
    "export_only",
    "fedjob_simulator",
    "hello_numpy",
    "loss_min",
    "main_args_param",
    "namespace_not_args",
    "parse_known_args",
    "poc_env",
    "prod_env",
    "pt_cyclic",
    "pt_fedavg",
    "pt_fedopt",
    "pt_fedprox",
    "pt_scaffold",
    "schema_budget",
    "short_aliases",
    "sklearn_recipe",
    "stop_cond_ge",
    "stop_cond_le",
    "trust_local_modules",
    "vars_namespace",
]
LITERAL_SIMULATOR_PATHS = {
    "fedjob_literal_workspace": "/tmp/nvflare/jobs/workdir",
    "fedjob_to_clients": "/tmp/nvflare/jobs/workdir",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recipe_fixture_admission_class_and_family(name):
    expected = EXPECTED[name]
    config = api.import_job(RECIPES / name / "job.py")
    assert (config["admission_errors"] == []) == expected["admit"], config["admission_errors"]
    assert config["job"]["nvflare_class"] == expected["nvflare_class"]
    assert config["job"]["family"] == expected["family"]
    if expected["admit"]:
        assert all(
            config["fixed_budget"][f]["confidence"] != "unresolved"
            for f in ("num_clients", "min_clients", "num_rounds")
        )
        for field in ("num_rounds", "num_clients"):
            if expected.get(f"{field}_source"):
                assert expected[f"{field}_source"] in config["fixed_budget"][field]["source"]
    elif expected["family"] in ("training", None):  # a shape job.py can change (issue 22): the line is named
        first = config["admission_errors"][0]
        assert first["code"] in FIXABLE_CODES and expected["refusal"] in first["message"], first
    else:
        [error] = config["admission_errors"]
        assert error["code"] == "AUTOFL_UNSUPPORTED_JOB" and "Auto-FL needs a training job" in error["message"]


FIXABLE_CODES = {"AUTOFL_UNSUPPORTED_JOB", "AUTOFL_UNRESOLVED_SAFETY_FIELD", "AUTOFL_RECIPE_WOULD_RAISE"}


def test_every_recipe_class_of_the_installed_nvflare_has_a_fixture():
    classes = {q for q, e in recipes.table()["classes"].items() if e["kind"] == "recipe"}
    assert len(classes) >= 25
    assert classes - {e["nvflare_class"] for e in EXPECTED.values()} == set()
    families = {e["family"] for e in EXPECTED.values()} - {None}  # None: job.py raises before building a recipe
    assert families == {"training", "statistics", "psi", "evaluation", "inference", "nested"}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("lookalike_alias", ["FedStatsRecipe is statistics-only"]),
        ("lookalike_subclass", ["FedAvgTrainRecipe is evaluation-only"]),
        ("fed_task_named_train", ["FedTaskRecipe is inference-only", "model-free task"]),
        ("psi", ["private set intersection"]),
        ("flower", ["nested unsupported application", "Flower"]),
    ],
)
def test_non_training_jobs_stay_refused_whatever_they_are_called(name, words):
    message = api.import_job(RECIPES / name / "job.py")["admission_errors"][0]["message"]
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("name", "field", "value", "confidence", "source", "note"),
    [
        ("np_fedavg", "num_rounds", 2, "medium", "NumpyFedAvgRecipe default", "recipe default, nvflare 2.9.0"),
        ("sklearn_kmeans", "num_rounds", 5, "medium", "KMeansFedAvgRecipe default", "recipe default, nvflare 2.9.0"),
        ("sklearn_svm", "num_rounds", 2, "medium", "SVMFedAvgRecipe fixed value", "recipe fixed value, nvflare 2.9.0"),
        ("pt_cyclic", "min_clients", 2, "medium", "CyclicRecipe default", "recipe default, nvflare 2.9.0"),
        ("pt_fedce", "num_rounds", 10, "pinned", "FedCERecipe(num_rounds=...)", None),
        ("collab_fedavg", "num_rounds", 3, "high", "CollabRecipe(server=FedAvgServer(num_rounds=...))", None),
    ],
)
def test_budget_sources_of_recipe_fixtures(name, field, value, confidence, source, note):
    entry = api.import_job(RECIPES / name / "job.py")["fixed_budget"][field]
    assert (entry["value"], entry["confidence"], entry["source"], entry.get("note")) == (
        value,
        confidence,
        source,
        note,
    )


def test_key_metric_defaults_come_from_the_recipe_class():
    objective = api.import_job(RECIPES / "sklearn_svm" / "job.py")["objective"]
    assert (objective["job_key_metric"], objective["job_key_metric_source"]) == ("AUC", "core_default")


@pytest.mark.parametrize("name", ADMITTED_BEFORE)
def test_nothing_admitted_before_is_refused_now(name):
    assert api.import_job(JOBS / name / "job.py")["admission_errors"] == []


@pytest.mark.parametrize("name", sorted(LITERAL_SIMULATOR_PATHS))
def test_fedjobs_with_a_literal_simulator_path_are_admitted_for_sealed_trials(name):
    from autofl_core.importer import admission

    config = api.import_job(JOBS / name / "job.py")
    assert config["admission_errors"] == []
    assert admission.literal_workspace(config) == LITERAL_SIMULATOR_PATHS[name]


def test_eval_section_prints_the_admission_table():
    section = load_by_path("recipe_admission", REPO / "evals" / "recipe_admission.py")
    out = io.StringIO()
    assert section.print_section(out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("== Auto-FL recipe admission")
    training = sum(1 for e in EXPECTED.values() if e["admit"])
    others = sum(1 for e in EXPECTED.values() if not e["admit"] and e["family"] not in ("training", None))
    fixable = len(EXPECTED) - training - others
    assert lines[-1] == (
        f"recipe admission: {training}/{training} training jobs admitted, {others}/{others} non-training jobs "
        f"refused, {fixable}/{fixable} jobs refused for a reason job.py can fix (the line named), 0 misses"
    )
    assert len([line for line in lines if line.endswith("PASS")]) == len(EXPECTED)
    refusals = [line for line in lines if line.startswith("recipe refusal: ")]
    assert len(refusals) == fixable and all(" line " in line for line in refusals), refusals


def test_eval_section_reports_a_wrong_expectation(monkeypatch, tmp_path):
    section = load_by_path("recipe_admission_wrong", REPO / "evals" / "recipe_admission.py")
    wrong = json.loads((RECIPES / "expected.json").read_text())
    wrong["fixtures"]["psi"]["admit"] = True
    wrong["fixtures"].pop("flower")
    monkeypatch.setattr(section, "EXPECTED", tmp_path / "expected.json")
    section.EXPECTED.write_text(json.dumps(wrong))
    out = io.StringIO()
    assert section.print_section(out) == 2
    text = out.getvalue()
    assert "recipe miss: psi: expected admitted" in text
    assert "recipe miss: no fixture builds nvflare.app_opt.flower.recipe.FlowerRecipe" in text
