"""When a candidate's run args need no dry run: the import's perturbed runs tried every option they set, over the
same job folder (the campaign's own files aside) and the same base args. Pure: a config dict and a folder."""

from pathlib import Path

from autofl_core.runner.store import contract
from autofl_core.runner.store.paths import CampaignPaths


def _campaign(tmp_path: Path) -> tuple[dict, CampaignPaths]:
    (tmp_path / "job.py").write_text("import nvflare\n")
    (tmp_path / "client.py").write_text("print('train')\n")
    paths = CampaignPaths.for_job(tmp_path / "job.py", {})
    config = {
        "argparse": {"base_args": ["--seed", "1"]},
        "import": {"dry_run": {"status": "recorded", "tried_options": ["--epochs", "--lr", "-l"]}},
    }
    contract.note_classified_folder(config, paths)
    return config, paths


def test_tried_options_over_the_same_folder_are_settled(tmp_path):
    config, paths = _campaign(tmp_path)
    assert contract.run_args_known_unmoving(config, paths, ["--seed", "1"], ["--lr", "0.5"])
    assert contract.run_args_known_unmoving(config, paths, ["--seed", "1"], ["--lr=0.5", "-l", "2"])


def test_the_campaigns_own_files_do_not_unsettle_it(tmp_path):
    config, paths = _campaign(tmp_path)
    contract.write(paths.autofl_yaml, config)
    (paths.meta / "candidates" / "c1").mkdir(parents=True)
    (paths.meta / "candidates" / "c1" / "candidate_manifest.json").write_text("{}")
    (paths.output_root / "c1").mkdir(parents=True)
    (paths.output_root / "c1" / "trial.json").write_text("{}")
    paths.progress.with_suffix(".txt").write_text("best so far: 0.8\n")
    paths.report_json.write_text("{}")
    assert contract.run_args_known_unmoving(config, paths, ["--seed", "1"], ["--lr", "0.5"])


def test_anything_the_perturbed_runs_did_not_cover_needs_a_dry_run(tmp_path):
    config, paths = _campaign(tmp_path)
    base = ["--seed", "1"]
    assert not contract.run_args_known_unmoving(config, paths, base, ["--momentum", "0.9"])  # never tried
    assert not contract.run_args_known_unmoving(config, paths, base, ["--l", "0.5"])  # an abbreviation
    assert not contract.run_args_known_unmoving(config, paths, base, ["extra", "--lr", "0.5"])  # a positional
    assert not contract.run_args_known_unmoving(config, paths, ["--seed", "2"], ["--lr", "0.5"])  # other base args
    (tmp_path / "client.py").write_text("print('edited')\n")  # a file the runs read changed
    assert not contract.run_args_known_unmoving(config, paths, base, ["--lr", "0.5"])


def test_a_config_without_a_recorded_classification_needs_a_dry_run(tmp_path):
    config, paths = _campaign(tmp_path)
    for broken in ({}, {"status": "raised"}, {"status": "recorded", "tried_options": ["--lr"]}):
        other = {**config, "import": {"dry_run": broken}}
        assert not contract.run_args_known_unmoving(other, paths, ["--seed", "1"], ["--lr", "1"])
