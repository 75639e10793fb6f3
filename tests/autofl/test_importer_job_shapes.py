"""Job shapes NVFLARE's own examples use (issue 22, point 10), each resolved with the source of its value or refused
with a reason that names the line and what to change; and what the human is shown of an import (point 7).

The recipe fixtures (tests/fixtures/jobs/recipes, one per shape, in the `make eval` table) cover the same shapes as
whole jobs; these tests pin the details: what the value depends on, where it comes from, what the reason names.
"""

import json
import subprocess
import sys

import pytest
import yaml
from autofl_core.importer import api, display
from runner_support import SCRIPTS

XGB = (
    "import argparse\nfrom nvflare.app_opt.xgboost.recipes import XGBHorizontalRecipe\n"
    "from nvflare.recipe import SimEnv, set_per_site_config\n"
    "p = argparse.ArgumentParser()\np.add_argument('--n_clients', type=int, default=3)\nargs = p.parse_args()\n"
    "recipe = XGBHorizontalRecipe(name='x', min_clients=args.n_clients, num_rounds=10)\n"
)


def budget(source: str, files: dict | None = None) -> dict:
    files = files or {}
    return api.import_source(source, read_file=files.get)["fixed_budget"]


# --- client lists from configured_sites() -----------------------------------------------------------


@pytest.mark.parametrize(
    "per_site",
    [
        "set_per_site_config(recipe, {f'site-{i}': {'data_loader': object()} for i in ['a', 'b']})\n",
        "recipe.set_per_site_config({'site-a': {'data_loader': 1}, 'site-b': {'data_loader': 2}})\n",
    ],
    ids=["comprehension", "literal-method-form"],
)
def test_configured_sites_are_refused_statically_naming_the_line(per_site):
    """`recipe.configured_sites()` is not read statically, whatever the per-site config: the sites are refused
    naming the line of the call (the dry run records them:
    test_importer_dryrun.py::test_a_budget_the_reading_does_not_follow_is_pinned_by_the_run[configured-sites])."""
    config = api.import_source(XGB + per_site + "recipe.execute(SimEnv(clients=recipe.configured_sites()))\n")
    entry = config["fixed_budget"]["num_clients"]
    assert entry["confidence"] == "unresolved"
    assert "result of XGBHorizontalRecipe.configured_sites() at line 9" in entry["reason"]
    assert any("line 9" in e["message"] for e in config["admission_errors"])


def test_configured_sites_without_a_per_site_config_names_the_fix():
    config = api.import_source(XGB + "recipe.execute(SimEnv(clients=recipe.configured_sites()))\n")
    assert config["fixed_budget"]["num_clients"]["confidence"] == "unresolved"
    first = config["admission_errors"][0]
    assert first["code"] == "AUTOFL_RECIPE_WOULD_RAISE", "NVFLARE itself would raise at execution"
    assert "never calls set_per_site_config() on the XGBHorizontalRecipe built at line 7" in first["message"]


# --- NVFLARE recipe code that raises for some arguments ----------------------------------------------


def test_a_recipe_that_needs_per_site_config_is_refused_with_the_nvflare_line():
    [first, *_] = api.import_source(XGB + "recipe.execute(SimEnv(num_clients=3))\n")["admission_errors"]
    assert first["code"] == "AUTOFL_RECIPE_WOULD_RAISE"
    assert "nvflare/app_opt/xgboost/recipes/histogram.py line 248" in first["message"]
    assert "set_per_site_config(recipe," in first["message"] and "line 7" in first["message"]


def test_a_budget_guard_of_the_recipe_names_the_option_to_change():
    source = (
        "import argparse\nfrom nvflare.app_opt.pt.recipes import FedCERecipe\nfrom nvflare.recipe import SimEnv\n"
        "p = argparse.ArgumentParser()\np.add_argument('--n_clients', type=int, default=1)\na = p.parse_args()\n"
        "FedCERecipe(name='f', model=object(), min_clients=a.n_clients, num_rounds=2, train_script='c.py')"
        ".execute(SimEnv(num_clients=a.n_clients))\n"
    )
    [first] = api.import_source(source)["admission_errors"]
    assert first["code"] == "AUTOFL_RECIPE_WOULD_RAISE"
    assert "min_clients < 2 (nvflare/app_opt/pt/recipes/fedce.py line 71" in first["message"]
    assert "pass --n_clients with another value in --base-args" in first["message"]
    assert api.import_source(source, base_args=["--n_clients", "2"])["admission_errors"] == []


# --- raise statements in job.py ------------------------------------------------------------------------

RAISING = (
    "import argparse\nfrom nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
    "p = argparse.ArgumentParser()\np.add_argument('--data', default=None)\np.add_argument('--n', type=int, default=2)\n"
    "args = p.parse_args()\n"
)
RUN = "FedAvgRecipe(min_clients=2, num_rounds=3, train_script='c.py').execute(SimEnv(num_clients=2))\n"


def test_a_helper_that_raises_with_the_defaults_refuses_the_job_at_its_line():
    source = (
        RAISING + "def check(a):\n    if a.data is None:\n        raise ValueError('pass --data')\ncheck(args)\n" + RUN
    )
    [error] = api.import_source(source)["admission_errors"]
    assert error["code"] == "AUTOFL_UNSUPPORTED_JOB"
    assert "reaches `raise` at line 10 (ValueError('pass --data'))" in error["message"]
    assert "depend on --data" in error["message"] and "--base-args" in error["message"]
    assert api.import_source(source, base_args=["--data", "/d"])["admission_errors"] == []


def test_a_raise_that_a_try_may_catch_does_not_refuse_the_job():
    source = RAISING + "def check():\n    raise KeyError('x')\ntry:\n    check()\nexcept KeyError:\n    pass\n" + RUN
    assert api.import_source(source)["admission_errors"] == []
    reraised = RAISING + "try:\n    import torch\nexcept ImportError:\n    raise SystemExit('install torch')\n" + RUN
    assert api.import_source(reraised)["admission_errors"] == [], "the import succeeds statically: no handler runs"


def test_a_raise_reached_whatever_the_arguments_says_so():
    [error] = api.import_source(RAISING + "raise SystemExit('not ready')\n" + RUN)["admission_errors"]
    assert "reaches `raise` at line 8 (SystemExit('not ready'))" in error["message"]
    assert "whatever the arguments" in error["message"]


def test_a_raise_under_an_unresolved_condition_leaves_the_other_side():
    source = RAISING + "import os\nif not os.path.exists('/data'):\n    raise FileNotFoundError('/data')\n" + RUN
    assert api.import_source(source)["admission_errors"] == []


# --- classes the job defines itself -------------------------------------------------------------------

COLLAB = "from nvflare.collab.recipe import CollabRecipe\nfrom nvflare.recipe import SimEnv\n"


SERVER_MODULE = "class FedAvg:\n    def __init__(self, num_rounds=7):\n        self.num_rounds = num_rounds\n"
OWN_CLASSES = {
    "server from a module beside job.py, named like NVFLARE's FedAvg (default 5)": (
        COLLAB
        + "from fedavg import FedAvg\nCollabRecipe(job_name='c', server=FedAvg()).execute(SimEnv(num_clients=2))\n",
        "FedAvg (built at job.py line 4)",
    ),
    "the same, imported relatively": (
        COLLAB
        + "from .fedavg import FedAvg\nCollabRecipe(job_name='c', server=FedAvg()).execute(SimEnv(num_clients=2))\n",
        "FedAvg (built at job.py line 4)",
    ),
    "server class defined in job.py": (
        COLLAB
        + "class Server:\n    def __init__(self, rounds=3, **kw):\n        self.rounds = rounds\n"
        + "CollabRecipe(job_name='c', server=Server()).execute(SimEnv(num_clients=2))\n",
        "Server (built at job.py line 6)",
    ),
    "recipe subclass renaming its budget parameter": (
        "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
        "class SFT(FedAvgRecipe):\n    def __init__(self, rounds=2, **kw):\n"
        "        super().__init__(num_rounds=rounds, min_clients=2, train_script='s.py', **kw)\n"
        "SFT(rounds=6).execute(SimEnv(num_clients=2))\n",
        "SFT (built at job.py line 6)",
    ),
}


@pytest.mark.parametrize("shape", sorted(OWN_CLASSES))
def test_a_budget_decided_in_the_job_s_own_class_is_refused_statically_naming_the_line(shape):
    """The static reading does not follow the job's own classes (the dry run runs them: test_importer_dryrun.py);
    it never matches one to an NVFLARE class by name and refuses with the line where job.py builds it."""
    source, where = OWN_CLASSES[shape]
    config = api.import_source(source, read_file={"fedavg.py": SERVER_MODULE}.get)
    entry = config["fixed_budget"]["num_rounds"]
    assert (entry["value"], entry["confidence"]) == (None, "unresolved")
    assert where in entry["reason"] and "is the job's own class" in entry["reason"]
    assert "pass num_rounds= where job.py builds it" in entry["reason"]
    assert config["admission_errors"][0]["code"] == "AUTOFL_UNRESOLVED_SAFETY_FIELD"


# --- what the human is shown (point 7) ---------------------------------------------------------------

LONG = (
    "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
    "FedAvgRecipe(min_clients=2, num_rounds=3, train_script='c.py', initial_model=[0.0] * 210, "
    "note='x' * 900).execute(SimEnv(num_clients=2))\n"
)


def test_the_summary_holds_the_objective_and_the_fixed_budget():
    summary = api.import_source(LONG)["summary"]
    assert summary["objective"] == {
        "metric": "accuracy",
        "direction": "higher is better",
        "mode": "max",
        "source": "core_default",
    }
    assert summary["fixed_budget"]["num_rounds"] == {
        "value": 3,
        "confidence": "high",
        "source": "FedAvgRecipe(num_rounds=...)",
    }
    assert set(summary) == {"objective", "fixed_budget", "editable", "unresolved", "allowed"}


def test_long_literal_values_are_elided_in_the_view_never_in_the_data():
    config = api.import_source(LONG)
    assert config["recipe_args"]["initial_model"]["value"] == [0.0] * 210, "the data keeps every element"
    view = display.elide(config)
    assert view["recipe_args"]["initial_model"]["value"] == "[0.0] x 210"
    assert view["recipe_args"]["note"]["value"].endswith("... (900 characters)")
    assert view["cli_flags"] == config["cli_flags"], "configuration lists are never shortened"
    assert display.elide([1, 2, 3] * 10) == [1, 2, 3, "... (30 items: int)"]
    assert display.elide([[0.0] * 3] * 20) == "[[0.0, 0.0, 0.0]] x 20"


LAYERS = "[" + ", ".join(f"{{'name': 'layer{i}', 'units': {i}}}" for i in range(210)) + "]"
SHAPES = "{" + ", ".join(f"'w{i}': [{i}, 3]" for i in range(40)) + "}"
LITERALS = (
    "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\nfrom nvflare.recipe import SimEnv\n"
    f"FedAvgRecipe(min_clients=2, num_rounds=3, train_script='c.py', initial_model={LAYERS}, "
    f"model_args={SHAPES}, labels={[f'cat{i}' for i in range(30)]!r}).execute(SimEnv(num_clients=2))\n"
)


def test_any_long_literal_of_plain_data_is_summarized_with_type_length_and_first_items():
    """A 210-layer model literal of mappings, a 40-key mapping and 30 strings: summarized in the view (first
    items, length, types), whole in the data; lists of options and files elsewhere in the config stay whole."""
    config = api.import_source(LITERALS)
    args = config["recipe_args"]
    assert len(args["initial_model"]["value"]) == 210 and len(args["model_args"]["value"]) == 40
    view = display.elide(config)["recipe_args"]
    assert view["initial_model"]["value"] == [
        {"name": "layer0", "units": 0},
        {"name": "layer1", "units": 1},
        {"name": "layer2", "units": 2},
        "... (210 items: dict)",
    ]
    assert view["model_args"]["value"] == "{'w0', 'w1', 'w2', ...} (40 keys; values: list)"
    assert view["labels"]["value"] == ["cat0", "cat1", "cat2", "... (30 items: str)"]
    many = {"editable": [f"f{i}.py" for i in range(40)], "flags": {f"--o{i}": i for i in range(40)}}
    assert display.elide(many) == many, "configuration (not under a value or default key) is never shortened"


def test_the_yaml_view_is_elided_and_the_json_complete(tmp_path):
    (tmp_path / "job.py").write_text(LONG)
    script = SCRIPTS / "job_importer.py"
    as_json = subprocess.run([sys.executable, str(script), str(tmp_path / "job.py")], capture_output=True, text=True)
    as_yaml = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "job.py"), "--format", "yaml"], capture_output=True, text=True
    )
    assert as_json.returncode == as_yaml.returncode == 0, as_yaml.stderr
    assert json.loads(as_json.stdout)["recipe_args"]["initial_model"]["value"] == [0.0] * 210
    assert yaml.safe_load(as_yaml.stdout)["recipe_args"]["initial_model"]["value"] == "[0.0] x 210"
    assert "summary:" in as_yaml.stdout and "direction: higher is better" in as_yaml.stdout
