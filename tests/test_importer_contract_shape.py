"""The importer's config has the shape references/job-import-contract.md documents, for every job we ship.

Imports each fixture job (tests/fixtures/jobs/) and each example job in-process and checks the documented
shape: the top-level and section keys ("Config shape"), `{value, confidence, flag, source}` budget entries
with a `reason` exactly when unresolved, recipe-argument entries, confidence words, admission codes, and the
summary's agreement with the fields it summarizes. Mutation testing (`make mutate`) found renamed keys and
dropped fields that no other in-process test read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from autofl_core.importer import api

REPO = Path(__file__).resolve().parents[1]
JOBS = sorted(REPO.glob("tests/fixtures/jobs/*/job.py")) + sorted(REPO.glob("examples/**/job.py"))
SECTIONS = {
    "argparse": {
        "flags",
        "base_args",
        "base_args_errors",
        "budget_conflicts",
        "schema_args",
        "allow_abbrev",
        "fromfile_prefix_chars",
        "parsed",
        "problems",
        "class_parsers",
    },
    "cli_flags": {"long_flags", "groups", "name_flag", "takes_value", "allow_abbrev"},
    "data_shaping": {"fixed", "unclassified"},
    "environment": {"discovered", "simulator_env_passthrough", "simulator_workspace"},
    "import": {"support", "would_raise"},
    "job": {"path", "pattern", "class", "env", "run_call", "line", "nvflare_class", "family"},
    "objective": {
        "metric",
        "mode",
        "requested_metric",
        "job_key_metric",
        "job_key_metric_mode",
        "job_key_metric_source",
        "mode_contract_source",
        "metric_extraction_order",
        "metric_source",
        "metric_invariants",
        "bridged",
        "schema_mode",
    },
    "schema": {
        "present",
        "path",
        "errors",
        "objective",
        "mutable_args",
        "comparison_budget_args",
        "preferred_targets",
        "bridged_metrics",
        "budget_mismatches",
    },
    "search_space": {"suggested"},
    "summary": {"objective", "fixed_budget", "editable", "unresolved", "allowed"},
    "trust": {"allowed_edit_paths", "allowed_create_patterns", "preferred_targets", "train_script", "local_modules"},
}
TOP = {*SECTIONS, "admission_errors", "fixed_budget", "importer_version", "recipe_args", "source_sha256", "unresolved"}
BUDGET_FIELDS = {"num_clients", "min_clients", "num_rounds"}
ADMISSION_CODES = {
    "AUTOFL_UNSUPPORTED_JOB",
    "AUTOFL_RECIPE_WOULD_RAISE",
    "AUTOFL_EMPTY_FIXED_BUDGET",
    "AUTOFL_UNRESOLVED_SAFETY_FIELD",
    "AUTOFL_METRIC_NOT_DECLARED",
    "AUTOFL_METRIC_DIRECTION_CONFLICT",
    "AUTOFL_INVALID_BASE_ARGS",
    "AUTOFL_INVALID_MUTATION_SCHEMA",
    "AUTOFL_BUDGET_ARGUMENT_CONFLICT",
    "AUTOFL_SCHEMA_BUDGET_MISMATCH",
    "AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED",
    "AUTOFL_SEVERAL_RUNS",
}
UNSUPPORTED_CODES = {"AUTOFL_UNSUPPORTED_JOB", "AUTOFL_SEVERAL_RUNS"}
VALUE_CONFIDENCE = {"high", "medium", "unresolved"}
BUDGET_CONFIDENCE = VALUE_CONFIDENCE | {"pinned", "not_applicable"}


def job_id(path: Path) -> str:
    return str(path.parent.relative_to(REPO))


@pytest.fixture(scope="module", params=JOBS, ids=[job_id(p) for p in JOBS])
def imported(request):
    return request.param, api.import_job(request.param)


def test_every_shipped_job_is_covered():
    assert len(JOBS) >= 45


def test_top_level_and_section_keys(imported):
    _path, config = imported
    assert set(config) == TOP
    for section, keys in SECTIONS.items():
        assert set(config[section]) == keys, section
    assert set(config["import"]["support"]) - {"several_runs"} == {"status", "reason"}  # several_runs: only when true
    assert config["import"]["support"].get("several_runs", True) is True
    assert config["job"]["env"] is None or set(config["job"]["env"]) == {"class", "args"}  # None: export-only
    assert set(config["environment"]["discovered"]) == {"name", "args"}


def test_fixed_budget_entries(imported):
    _path, config = imported
    budget = config["fixed_budget"]
    if config["import"]["support"]["status"] == "unsupported":
        assert budget == {}
        return
    assert set(budget) == BUDGET_FIELDS | {"comparison_args"}
    for name in BUDGET_FIELDS:
        entry = budget[name]
        unresolved = entry["confidence"] in ("unresolved", "not_applicable")
        required = {"value", "confidence", "flag", "source", "depends_on"} | ({"reason"} if unresolved else set())
        assert required <= set(entry) <= required | {"note"}, name
        assert entry["confidence"] in BUDGET_CONFIDENCE
        assert isinstance(entry["depends_on"], list) and all(flag.startswith("-") for flag in entry["depends_on"])
        assert "note" not in entry or entry["confidence"] == "medium", name  # notes explain NVFLARE defaults
        assert (entry["value"] is None) == unresolved, name
        assert entry["flag"] is None or entry["flag"].startswith("-")


def test_recipe_arguments_and_unresolved_fields(imported):
    _path, config = imported
    for name, entry in config["recipe_args"].items():
        assert {"value", "confidence"} <= set(entry) <= {"value", "confidence", "expr", "flags", "reason"}, name
        assert entry["confidence"] in VALUE_CONFIDENCE
        assert ("reason" in entry) == (entry["confidence"] == "unresolved"), name
    for item in config["unresolved"]:
        assert set(item) == {"field", "reason"} and item["field"] and item["reason"]


def test_admission_and_support_agree(imported):
    _path, config = imported
    codes = [error["code"] for error in config["admission_errors"]]
    assert all(set(error) == {"code", "message"} and error["message"] for error in config["admission_errors"])
    assert set(codes) <= ADMISSION_CODES
    support = config["import"]["support"]
    assert support["status"] in ("supported", "unsupported") and support["reason"]
    assert (support["status"] == "unsupported") == bool(UNSUPPORTED_CODES & set(codes))
    assert ("AUTOFL_SEVERAL_RUNS" in codes) == support.get("several_runs", False)
    assert api.admission_errors(config, config["objective"]["requested_metric"]) == config["admission_errors"]


def test_summary_agrees_with_what_it_summarizes(imported):
    path, config = imported
    summary = config["summary"]
    assert summary["editable"] == config["trust"]["allowed_edit_paths"]
    assert summary["unresolved"] == [item["field"] for item in config["unresolved"]]
    assert set(summary["allowed"]) <= {item["flag"] for item in config["search_space"]["suggested"]}
    for item in config["search_space"]["suggested"]:
        assert (
            {"flag", "dest", "type", "default"}
            <= set(item)
            <= {"flag", "dest", "type", "default", "choices", "min", "max"}
        )
    assert config["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert config["job"]["path"] == "job.py"
    if config["objective"]["mode"] not in ("max", "min"):  # an unknown direction is never admitted
        assert config["objective"]["mode"] is None and config["admission_errors"]


FEDJOB = (
    "from nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.job_config.script_runner import ScriptRunner\n"
)
TO_SITE_1 = "job.to(ScriptRunner(script='c.py'), 'site-1')\n"
SITE_TARGETS = (1, "high", "FedJob.to(..., site) targets")


@pytest.mark.parametrize(
    ("body", "rounds", "min_clients", "clients"),
    [
        (
            "job = FedJob(name='j')\njob.to(FedAvg(num_clients=2, num_rounds=3), 'server')\n"
            + TO_SITE_1
            + "job.simulator_run('/tmp/w')\n",
            (3, "high", "FedAvg(num_rounds=...)"),
            (2, "high", "FedAvg(num_clients=...)"),
            SITE_TARGETS,
        ),
        (
            "job = FedJob(name='j', min_clients=3)\njob.to(FedAvg(), 'server')\n"
            + TO_SITE_1
            + "job.simulator_run('/tmp/w')\n",
            (5, "medium", "FedAvg default"),
            (3, "medium", "FedAvg default"),  # the clients FedAvg waits for, not FedJob's meta.json min_clients
            SITE_TARGETS,
        ),
        (
            "job = FedJob(name='j')\n" + TO_SITE_1 + "job.simulator_run('/tmp/w')\n",
            (None, "unresolved", "FedJob"),
            (1, "medium", "FedJob default"),
            SITE_TARGETS,
        ),
        (
            "job = FedJob(name='j')\njob.to(FedAvg(num_rounds=3), 'server')\n"
            + TO_SITE_1
            + "job.simulator_run('/tmp/w', clients=['a', 'b'])\n",
            (3, "high", "FedAvg(num_rounds=...)"),
            (3, "medium", "FedAvg default"),
            (2, "medium", "simulator_run(clients=[...])"),
        ),
        (
            "job = FedJob(name='j')\njob.to(FedAvg(num_rounds=3), 'server')\n"
            + TO_SITE_1
            + "job.simulator_run('/tmp/w', clients=['a', 'b'], n_clients=2)\n",
            (3, "high", "FedAvg(num_rounds=...)"),
            (3, "medium", "FedAvg default"),
            (None, "unresolved", "simulator_run(...)"),
        ),
    ],
    ids=["controller", "fedavg-default", "no-controller", "clients-list", "clients-and-n-clients"],
)
def test_fedjob_budget_values_and_sources(body, rounds, min_clients, clients):
    """Contract "Fixed training budget": for a FedJob, the controller or FedJob(min_clients=), documented
    defaults, unresolved without one; simulator_run(clients=) replaces the sites, and n_clients= with it fails."""
    budget = api.import_source(FEDJOB + body)["fixed_budget"]
    for name, want in (("num_rounds", rounds), ("min_clients", min_clients), ("num_clients", clients)):
        assert (budget[name]["value"], budget[name]["confidence"], budget[name]["source"]) == want, name
