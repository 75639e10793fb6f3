"""Real fixtures of NVFLARE 2.9 rejecting jobs (issue 13): committed, scrubbed, used by evals, regenerable."""

import json
from pathlib import Path

import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "evals" / "diagnose" / "files" / "real"
fixtures = load_by_path("make_real_fixtures", REPO / "evals" / "make_real_fixtures.py")

# case -> a line NVFLARE itself printed in the committed output
NVFLARE_SAYS = {
    "bad-recipe-arg-type": "TypeError: FrameworkType.NUMPY requires model to be a numpy array or list, got str.",
    "simenv-inconsistent-clients": "Inconsistent number of clients: num_clients=3 but clients list has 2 entries.",
    "simenv-fractional-clients": "Input should be a valid integer, got a number with a fractional part",
    "fedjob-n-clients-with-to": "ValueError: You already specified clients using `to()`. Don't use `n_clients` in simulator_run.",
    "deploy-map-mismatch": "RuntimeError: App 'app_fedavg' in deploy_map doesn't exist for job deploy-map-mismatch",
    "invalid-resources-file": "ValueError: Simulator resources file must contain a JSON object:",
    "relative-data-path": "FileNotFoundError: [Errno 2] No such file or directory: 'data/site-1.csv'",
    "partial-model-send": "ValueError: cannot reshape array of size 200 into shape (21,10)",
    "simenv-per-site-config": "ValueError: You already specified clients using `to()`. Don't use `n_clients` in simulator_run.",
    "per-site-data-path": "FileNotFoundError: /home/user/fl-project/data/site_3/train.csv not found.",
}


def test_at_least_five_of_the_issues_rejections_are_real_runs():
    kinds = {
        "bad-recipe-arg-type",
        "simenv-inconsistent-clients",
        "fedjob-n-clients-with-to",
        "deploy-map-mismatch",
        "invalid-resources-file",
    }
    assert kinds <= set(fixtures.REJECTION_CASES) and set(NVFLARE_SAYS) == set(fixtures.REJECTION_CASES)


@pytest.mark.parametrize("case", sorted(NVFLARE_SAYS))
def test_committed_rejection_shows_nvflares_own_words_and_is_scrubbed(case):
    stdout = (REAL / case / "stdout.txt").read_text(encoding="utf-8")
    assert NVFLARE_SAYS[case] in stdout
    for path in (p for p in (REAL / case).rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        for leak in ("nvf-fixture-", "/root/", str(REPO) + "/", "/work/main/"):
            assert leak not in text or (leak == str(REPO) + "/" and str(REPO) == "/repo"), f"{path} leaks {leak!r}"
        assert "startup" not in path.relative_to(REAL / case).parts


def test_committed_poc_envelope_is_nvflares_error():
    envelope = json.loads((REAL / fixtures.POC_CASE / "poc_start.json").read_text(encoding="utf-8"))
    assert envelope["status"] == "error" and "make sure you have first run 'nvflare poc prepare'" in envelope["message"]


def test_every_rejection_fixture_is_an_eval_case():
    cases = json.loads((REPO / "evals" / "diagnose" / "evals.json").read_text(encoding="utf-8"))["cases"]
    used = {f.split("/")[1] for c in cases for f in c.get("files", []) if f.startswith("real/")}
    assert set(NVFLARE_SAYS) | {fixtures.POC_CASE} <= used


def test_exported_job_folder_keeps_configs_but_no_code():
    job = REAL / "deploy-map-mismatch" / "job" / "deploy-map-mismatch"
    assert json.loads((job / "meta.json").read_text())["deploy_map"] == {"app_fedavg": ["@ALL"]}
    assert sorted(p.name for p in job.rglob("*") if p.is_file()) == [
        "config_fed_client.json",
        "config_fed_server.json",
        "meta.json",
    ]


@pytest.mark.integration
def test_rejections_regenerate_from_real_nvflare(tmp_path):
    cases = ["simenv-inconsistent-clients", "deploy-map-mismatch", fixtures.POC_CASE]
    argv = sum((["--case", c] for c in cases), []) + ["--out", str(tmp_path)]
    assert fixtures.main(argv) == 0
    for case in cases[:2]:
        assert NVFLARE_SAYS[case] in (tmp_path / case / "stdout.txt").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(cases)  # no staging leftovers
    assert '"status": "error"' in (tmp_path / fixtures.POC_CASE / "poc_start.json").read_text(encoding="utf-8")
