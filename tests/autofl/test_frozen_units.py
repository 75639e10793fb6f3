"""The frozen evaluator's pure parts: where the global model is, which sites took part, the evaluator's answer,
the n-weighted score, the evaluator's job-local imports, and the metric_divergence rule."""

import os

import pytest
from autofl_core.importer.evaluator_imports import local_imports
from autofl_core.trial import evaluator, global_model


def make(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [
        ("models/server.npy", "numpy"),
        ("app_server/FL_global_model.pt", "pytorch"),
        ("FL_global_model.pt", "fobs"),
    ],
)
def test_each_nvflare_layout_is_found_with_its_format(tmp_path, rel, fmt):
    make(tmp_path / "server/simulate_job" / rel, "model")
    make(tmp_path / "server/simulate_job/app_server/best_FL_global_model.pt", "best")
    found = global_model.find_global_model(tmp_path)
    assert (found.path, found.format) == (tmp_path / "server/simulate_job" / rel, fmt)


def test_the_best_model_alone_is_never_taken_and_the_message_names_the_places(tmp_path):
    make(tmp_path / "server/simulate_job/app_server/best_FL_global_model.pt", "best")
    with pytest.raises(global_model.ModelNotFound) as error:
        global_model.find_global_model(tmp_path)
    assert "server/simulate_job/models/server.npy" in str(error.value)
    assert "server/simulate_job/app_server/FL_global_model.pt" in str(error.value)


def test_a_linked_model_or_folder_is_not_followed(tmp_path):
    outside = make(tmp_path / "outside.npy", "x")
    (tmp_path / "r1/server/simulate_job/models").mkdir(parents=True)
    os.symlink(outside, tmp_path / "r1/server/simulate_job/models/server.npy")
    (tmp_path / "r2/server/simulate_job").mkdir(parents=True)
    make(tmp_path / "elsewhere/models/server.npy", "x")
    os.symlink(tmp_path / "elsewhere/models", tmp_path / "r2/server/simulate_job/models")
    for root in ("r1", "r2"):
        with pytest.raises(global_model.ModelNotFound):
            global_model.find_global_model(tmp_path / root)


def test_a_declared_model_file_is_used(tmp_path):
    make(tmp_path / "server/simulate_job/custom/final.pth", "m")
    found = global_model.find_global_model(tmp_path, "custom/final.pth")
    assert found.format == "pytorch" and found.path.name == "final.pth"


def test_participating_sites_are_the_site_folders(tmp_path):
    for name in ("server", "site-2", "site-1", "local", "startup"):
        (tmp_path / name).mkdir()
    make(tmp_path / "site-3", "a file, not a site")
    assert global_model.participating_sites(tmp_path) == ["site-1", "site-2"]


def test_the_answer_is_the_last_json_line_with_the_metric_and_a_positive_n():
    text = 'loading\n{"progress": 1}\n{"accuracy": 0.9, "n": 50, "loss": 0.3, "note": "x"}\n'
    assert evaluator.parse_output(text, "accuracy") == (0.9, 50.0, {"accuracy": 0.9, "n": 50.0, "loss": 0.3})
    for bad, words in (
        ("no json here", "no JSON object"),
        ('{"accuracy": 0.9}', "positive `n`"),
        ('{"accuracy": 0.9, "n": 0}', "positive `n`"),
        ('{"loss": 0.9, "n": 3}', "no number for 'accuracy'"),
        ('{"accuracy": NaN, "n": 3}', "NaN is not a number"),
        ('{"accuracy": true, "n": 3}', "no number for 'accuracy'"),
    ):
        with pytest.raises(ValueError, match=words.replace("(", r"\(")):
            evaluator.parse_output(bad, "accuracy")


def test_the_score_is_weighted_by_the_evaluators_n_not_by_training_steps():
    sites = [evaluator.SiteResult("site-1", value=0.9, n=100), evaluator.SiteResult("site-2", value=0.5, n=300)]
    assert evaluator.combine(sites) == pytest.approx(0.6)
    assert evaluator.combine([]) is None


def test_local_imports_are_found_transitively_and_stdlib_ignored():
    files = {
        "evaluate.py": "import json\nfrom data import load\nimport pkg.metrics\n",
        "data.py": "import numpy\nfrom helpers import split\n",
        "helpers.py": "X = 1\n",
        "pkg/__init__.py": "",
        "pkg/metrics.py": "from . import util\n",
        "pkg/util.py": "Y = 2\n",
        "client.py": "import data\n",
    }
    found = local_imports("evaluate.py", files.get)
    assert found == ["data.py", "helpers.py", "pkg/__init__.py", "pkg/metrics.py", "pkg/util.py"]


def test_an_evaluator_that_does_not_parse_is_named():
    with pytest.raises(ValueError, match="evaluate.py does not parse"):
        local_imports("evaluate.py", {"evaluate.py": "def broken(:\n"}.get)
