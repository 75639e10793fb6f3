"""The NVFLARE example corpus stays admitted (tests/fixtures/nvflare_examples; the full figure with dry runs is
`python evals/import_corpus.py --examples`, too slow for the suite).

Every example is imported statically (in-process, milliseconds each) and must get the verdict SOURCES.json
records for it: training jobs admitted stay admitted, jobs that train nothing stay refused. Five examples are also
dry-run: two FedAvgJob scripts whose min_clients only a run reads, a FedJob whose simulator folder only a run reads
(TensorFlow stood in), a job run with the arguments it documents, and a nested CCWF job the run recognises by what
it builds; so are the random forest (ported to 2.9.0's set_per_site_config), whose sites only a run counts, and the
examples whose arguments point at placeholder data, which a run gets past only with that data. Every training
example the dry run refuses is dry-run too, and its refusal must carry the code SOURCES.json records
(`refused_for`). Five more are dry-run for what the boot's stand-ins let them record: a model derived from an
absent framework handed to NVFLARE as a component, a model from one absent module checked against another's class,
an optional module NVFLARE itself looks for (mlflow, wandb), and a PSI job whose stood-in module must not make it a
training job.
"""

import json
import shutil
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "nvflare_examples"
SOURCES = json.loads((CORPUS / "SOURCES.json").read_text(encoding="utf-8"))["jobs"]
DRY_RUN_SUBSET = ["pt-fedjob-lightning", "pt-fedjob-dp-filter", "tf-fedjob-algos", "gnn", "np-ccwf-swarm"]
REFUSED_TRAINING = sorted(n for n, e in SOURCES.items() if e["family"] == "training" and e["dry_run"] == "refuse")


def verdict(config: dict) -> str:
    return "admit" if not config["admission_errors"] else "refuse"


def test_every_example_has_its_source_family_and_expected_verdicts():
    assert len(SOURCES) >= 60
    for name, entry in SOURCES.items():
        assert (CORPUS / name / "job.py").is_file(), name
        assert entry["path"].startswith("examples/") and len(entry["commit"]) == 40, name
        assert entry["static"] in ("admit", "refuse") and entry["dry_run"] in ("admit", "refuse"), name
        if entry["family"] != "training":  # a job that trains nothing is never admitted, by either importer
            assert entry["static"] == entry["dry_run"] == "refuse", name
        refused_training = entry["family"] == "training" and entry["dry_run"] == "refuse"
        assert refused_training == entry.get("refused_for", "").startswith("AUTOFL_"), name  # a refusal says why


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_static_reading_gives_each_example_its_recorded_verdict(name):
    entry = SOURCES[name]
    config = api.import_job(CORPUS / name / "job.py", base_args=entry.get("args", []))
    assert verdict(config) == entry["static"], config["admission_errors"][:1]


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
@pytest.mark.parametrize("name", DRY_RUN_SUBSET)
def test_the_dry_run_gives_examples_it_settles_their_recorded_verdict(name, tmp_path):
    entry = SOURCES[name]
    shutil.copytree(CORPUS / name, tmp_path / name)
    config = api.import_job(tmp_path / name / "job.py", dry_run=True, base_args=entry.get("args", []))
    assert verdict(config) == entry["dry_run"], config["admission_errors"][:1]
    assert config["import"]["dry_run"]["status"] in ("recorded", "raised")


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
@pytest.mark.parametrize("name", REFUSED_TRAINING)
def test_a_training_example_the_dry_run_refuses_is_refused_for_its_recorded_reason(name, tmp_path):
    entry = SOURCES[name]
    shutil.copytree(CORPUS / name, tmp_path / name)
    config = api.import_job(tmp_path / name / "job.py", dry_run=True, base_args=entry.get("args", []))
    assert entry["refused_for"] in [e["code"] for e in config["admission_errors"]], config["admission_errors"]


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_qwen3_vl_is_refused_only_for_its_key_metric_direction(tmp_path):
    """qwen3-vl ranks by `loss` with NVFLARE's implicit max: the job itself is wrong, and that alone refuses it (the
    client count only a run can read is the run's). The same job saying `key_metric_mode="min"` is admitted by the dry run, with its recorded budget and metric."""
    shutil.copytree(CORPUS / "qwen3-vl", tmp_path / "job")
    job_py = tmp_path / "job" / "job.py"
    source = job_py.read_text(encoding="utf-8")
    assert source.count('key_metric="loss",') == 1
    as_is = api.import_job(job_py, dry_run=True)
    assert [e["code"] for e in as_is["admission_errors"]] == ["AUTOFL_METRIC_DIRECTION_CONFLICT"], as_is[
        "admission_errors"
    ]
    assert as_is["fixed_budget"]["num_clients"]["value"] == 3, "the run's client count, not the reading's doubt"
    job_py.write_text(source.replace('key_metric="loss",', 'key_metric="loss", key_metric_mode="min",'))
    config = api.import_job(job_py, dry_run=True)
    assert config["admission_errors"] == [] and config["import"]["dry_run"]["status"] == "recorded"
    assert (config["objective"]["metric"], config["objective"]["mode"]) == ("loss", "min")
    assert {f: config["fixed_budget"][f]["value"] for f in ("num_clients", "min_clients", "num_rounds")} == {
        "num_clients": 3,
        "min_clients": 3,
        "num_rounds": 2,
    }


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_the_random_forest_s_budget_is_recorded_and_moved_by_its_options(tmp_path):
    """random-forest (ported to 2.9.0's set_per_site_config): only a run counts the sites its loop configures;
    the budget is the run's, and --n_clients and --num_rounds move it."""
    shutil.copytree(CORPUS / "random-forest", tmp_path / "job")
    job_py = tmp_path / "job" / "job.py"
    assert api.import_job(job_py)["admission_errors"], "precondition: the static reading cannot count the sites"
    for args, expected in (([], (5, 5, 1)), (["--n_clients", "3", "--num_rounds", "2"], (3, 3, 2))):
        config = api.import_job(job_py, dry_run=True, base_args=args)
        assert verdict(config) == SOURCES["random-forest"]["dry_run"] == "admit", config["admission_errors"][:1]
        assert config["job"]["nvflare_class"] == "nvflare.app_opt.xgboost.recipes.bagging.XGBBaggingRecipe"
        assert config["job"]["family"] == "training"
        budget = config["fixed_budget"]
        assert tuple(budget[f]["value"] for f in ("num_clients", "min_clients", "num_rounds")) == expected
        assert all(budget[f]["source"].startswith("dry run") for f in ("num_clients", "min_clients", "num_rounds"))
        assert (budget["num_clients"]["flag"], budget["num_rounds"]["flag"]) == ("--n_clients", "--num_rounds")


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_recorded_run_is_the_budget_source_of_a_job_the_reading_admits(tmp_path):
    """NVFLARE's cross-site-evaluation FedJob script (its site loop over a literal list, which the reading
    follows): the record is the budget, and both readings' min_clients is what its ScatterAndGather waits for
    every round (2), not FedJob's meta.json default 1."""
    shutil.copytree(CORPUS / "pt-fedjob-cse", tmp_path / "job")
    job_py = tmp_path / "job" / "job.py"  # the reading evaluates no range(): the copy lists the two sites
    job_py.write_text(job_py.read_text().replace("for i in range(n_clients):", "for i in [0, 1]:"))
    static = api.import_job(tmp_path / "job" / "job.py")
    assert static["fixed_budget"]["min_clients"]["value"] == 2
    assert static["fixed_budget"]["min_clients"]["source"] == "ScatterAndGather(min_clients=...)"
    config = api.import_job(tmp_path / "job" / "job.py", dry_run=True)
    assert config["admission_errors"] == [] and config["import"]["dry_run"]["status"] == "recorded"
    assert config["fixed_budget"]["min_clients"]["value"] == 2
    assert config["fixed_budget"]["min_clients"]["source"].startswith("dry run")
    assert config["trust"] == static["trust"], "the script NVFLARE was given (task_script_path) is the one read"
    assert "corrected" not in config["import"]["dry_run"]


PREPARED_DATA = sorted(n for n, e in SOURCES.items() if "--data_root" in e.get("args", []))


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
@pytest.mark.parametrize("name", PREPARED_DATA)
def test_an_example_pointed_at_its_placeholder_data_records_and_raises_without_it(name, tmp_path):
    """Examples that check for data a user prepares first: their `args` point --data_root at the placeholder
    folder inside the example (relative: the run's working directory is the job's folder), so the dry run gets past
    the check and records the job; the same arguments without the folder raise at the check (a second copy: the
    dry-run cache's key does not cover data files)."""
    entry = SOURCES[name]
    assert entry["args"][entry["args"].index("--data_root") + 1] == "data" and (CORPUS / name / "data").is_dir()
    shutil.copytree(CORPUS / name, tmp_path / "prepared" / name)
    config = api.import_job(tmp_path / "prepared" / name / "job.py", dry_run=True, base_args=entry["args"])
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert verdict(config) == entry["dry_run"] == "admit", config["admission_errors"][:1]
    assert config["import"]["dry_run"]["family"] == "training"
    shutil.copytree(CORPUS / name, tmp_path / "unprepared" / name, ignore=shutil.ignore_patterns("data"))
    job_py = tmp_path / "unprepared" / name / "job.py"
    record = api.import_job(job_py, dry_run=True, base_args=entry["args"])["import"]["dry_run"]
    assert record["status"] == "raised" and "FileNotFoundError" in record["reason"], record


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_refusal_names_the_line_the_reading_cannot_pin_and_the_run_s_raise(tmp_path):
    """hello-huggingface without its prepared data: the reading cannot pin its client list (a comprehension at
    line 92) and the run raises on the missing files, so nothing pins the budget: refused, naming the job.py line and
    the run's raise. With the data its arguments point to, the same job is admitted (the placeholder-data test)."""
    shutil.copytree(CORPUS / "hello-huggingface", tmp_path / "job")
    shutil.rmtree(tmp_path / "job" / "data")
    config = api.import_job(tmp_path / "job" / "job.py", dry_run=True, base_args=SOURCES["hello-huggingface"]["args"])
    assert config["import"]["dry_run"]["status"] == "raised"
    first = config["admission_errors"][0]["message"]
    assert "a comprehension at line 92 is not evaluated statically" in first
    assert "running job.py raises at job.py line 65" in first and "Missing prepared data files" in first


STAND_IN_SUBSET = {  # example: (module the record must name as stood in, NVFLARE class recorded)
    "cifar10-pt-fedopt": ("torch", "nvflare.app_opt.pt.recipes.fedopt.FedOptRecipe"),
    "gnn": ("torch_geometric", "nvflare.app_opt.pt.recipes.fedavg.FedAvgRecipe"),
    "et-mlflow-pt": ("mlflow", "nvflare.app_opt.pt.recipes.fedavg.FedAvgRecipe"),
    "et-wandb": ("wandb", "nvflare.app_opt.pt.recipes.fedavg.FedAvgRecipe"),
    "psi-user-email": ("private_set_intersection", "nvflare.app_common.psi.recipes.dh_psi.DhPSIRecipe"),
}


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
@pytest.mark.parametrize("name", sorted(STAND_IN_SUBSET))
def test_examples_that_record_with_stand_ins_keep_their_recorded_verdict(name, tmp_path):
    entry = SOURCES[name]
    module, nvflare_class = STAND_IN_SUBSET[name]
    shutil.copytree(CORPUS / name, tmp_path / name)
    config = api.import_job(tmp_path / name / "job.py", dry_run=True, base_args=entry.get("args", []))
    record = config["import"]["dry_run"]
    assert record["status"] == "recorded", record
    assert module in record["stubbed"] and record["nvflare_class"] == nvflare_class
    assert record["family"] == entry["family"]
    assert verdict(config) == entry["dry_run"], config["admission_errors"][:1]


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_controller_that_keeps_its_rounds_under_another_name_records_the_rounds_nvflare_loads(tmp_path):
    """feature-election: `FeatureElectionController` keeps `num_rounds` as `fl_rounds`, so NVFLARE's export writes
    no `num_rounds` and the exported job is loaded with the constructor's default; the record holds that value, so
    the run is a training job whose budget comes from the record."""
    from autofl_core.importer import recorded

    entry = SOURCES["feature-election"]
    shutil.copytree(CORPUS / "feature-election", tmp_path / "job")
    record = dry_run(tmp_path / "job" / "job.py", entry.get("args", []))
    assert record.status == "recorded" and recorded.family(record) == "training"
    assert recorded.budget(record)["num_rounds"] == {"value": 5, "source": "dry run: the exported job's num_rounds"}
    config = api.import_job(tmp_path / "job" / "job.py", dry_run=True, base_args=entry.get("args", []))
    assert config["admission_errors"] == []
    assert config["fixed_budget"]["num_rounds"]["source"] == "dry run: the exported job's num_rounds"
