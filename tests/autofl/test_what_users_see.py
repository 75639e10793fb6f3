"""What users and agents look at: every path an envelope names exists (or is null with the reason), the round
curves in the picture and the report, each site's final-round value in the envelopes and the leaderboard.

Stand-in campaigns (tests/autofl/standin_campaign): each site's round value sits around the aggregate, site-1
0.01 above it and site-2 0.01 below it with two sites, so the values to expect follow from the score.
"""

import json
import os
import shutil
import sys

from autofl_core.campaign import ledger
from autofl_core.runner.report import curves
from autofl_core.runner.report.facts import walk_rows
from PIL import Image
from runner_support import initialized_standin, ledger_rows, run_cli, run_inproc


def _paths_exist_or_say_why(envelope: dict) -> None:
    for key in ("autofl_yaml", "results", "state", "progress", "report"):
        if envelope[key] is None:
            assert envelope["unavailable"][key], key
        else:
            assert os.path.isfile(envelope[key]), key
            assert key not in envelope.get("unavailable", {})


# --- 3. every path an envelope names exists --------------------------------------------------------------------


def test_without_a_picture_the_envelope_names_no_png_and_says_why(tmp_path):
    """The suite asks for the text summary (AUTOFL_PLOT_RENDERER=text): no progress.png, so the envelope's
    `progress` is null and `unavailable` gives the reason and the summary's path; every other path exists."""
    ws = initialized_standin(tmp_path)
    done = run_inproc(ws, "status")
    _paths_exist_or_say_why(done.envelope)
    assert done.envelope["progress"] is None and not (ws / "progress.png").exists()
    reason = done.envelope["unavailable"]["progress"]
    assert "AUTOFL_PLOT_RENDERER=text" in reason and reason.endswith(f"text summary: {ws / 'progress.txt'}")
    assert "metric per round:" in (ws / "progress.txt").read_text()
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["artifacts"]["progress"] == str(ws / "progress.txt") and report["progress_plot"] is None


def test_with_matplotlib_the_envelope_names_the_picture_and_the_report_embeds_the_curves(tmp_path, matplotlib_plot):
    ws = initialized_standin(tmp_path)
    assert run_cli(ws, "prepare", "--name", "lr-up", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_cli(ws, "evaluate")
    assert done.code == 0, done.stderr
    _paths_exist_or_say_why(done.envelope)
    assert done.envelope["progress"] == str(ws / "progress.png") and "unavailable" not in done.envelope
    assert not (ws / "progress.txt").exists()
    with Image.open(ws / "progress.png") as image:
        assert image.format == "PNG"
    if os.environ.get("AUTOFL_VIEW_DIR"):
        shutil.copy(ws / "progress.png", os.path.join(os.environ["AUTOFL_VIEW_DIR"], "standin-campaign.png"))
    markdown = (ws / "autofl_report.md").read_text()
    assert "![progress](progress.png)" in markdown
    assert "Round curves, metric per round (the picture's lower panel):" in markdown
    assert "- best (lr-up): still rising at the last round (+0.01 to 0.850000 at round 2)" in markdown
    report = json.loads((ws / "autofl_report.json").read_text())
    assert [(c["name"], c["role"], c["rounds"], c["values"]) for c in report["curves"]] == [
        ("baseline", "baseline", [0, 1, 2], [0.73, 0.74, 0.75]),
        ("lr-up", "best", [0, 1, 2], [0.83, 0.84, 0.85]),
    ]


# --- 1. curves: which runs, and what they show in words ---------------------------------------------------------


def _row(status, name, score=None):
    return ledger.LedgerRow(status=status, name=name, score=score, metric_name="accuracy")


def test_the_curves_show_the_baseline_the_best_and_the_latest_batch():
    rows = [
        _row("baseline", "baseline", 0.7),
        _row("keep", "a", 0.8),
        _row("discard", "b", 0.6),
        _row("discard", "c", 0.65),
        _row("crash", "d"),
        _row("discard", "e", 0.66),
    ]
    walk = walk_rows(rows, "max")
    chosen = curves.chosen_runs(rows, walk, [{"members": ["c", "d", "e"], "parallel": 3}])
    assert [(rows[i].name, role) for i, role in chosen] == [
        ("baseline", "baseline"),
        ("a", "best"),
        ("c", "candidate"),
        ("d", "candidate"),
        ("e", "candidate"),
    ]
    alone = curves.chosen_runs(rows, walk, [])  # no batch: the last few attempts
    assert [rows[i].name for i, _ in alone] == ["baseline", "a", "b", "c", "d", "e"][: 2 + curves.MAX_CANDIDATES]
    assert curves.chosen_runs(rows[:1], walk_rows(rows[:1], "max"), []) == [(0, "baseline")]


def test_the_words_say_rising_diverged_and_when_the_best_passed_the_baseline():
    shown = [
        {"name": "baseline", "role": "baseline", "rounds": [0, 1, 2, 3], "values": [0.3, 0.6, 0.70, 0.70]},
        {"name": "lr-x2", "role": "best", "rounds": [0, 1, 2, 3], "values": [0.4, 0.72, 0.78, 0.82]},
        {"name": "lr-x8", "role": "candidate", "rounds": [0, 1, 2, 3], "values": [0.5, 0.75, 0.4, 0.3]},
    ]
    assert curves.describe(shown, "max") == [
        "baseline: flat at the last round (0.700000 at round 3)",
        "best (lr-x2): still rising at the last round (+0.04 to 0.820000 at round 3); reached the baseline's final "
        "value (0.700000) at round 1 of 3",
        "lr-x8: falling (worse) at the last round (-0.1 to 0.300000 at round 3); diverged after round 1 (peak "
        "0.750000, ends 0.300000)",
    ]
    loss = [{"name": "baseline", "role": "baseline", "rounds": [0, 1], "values": [2.0, 1.5]}]
    assert curves.describe(loss, "min") == ["baseline: still falling at the last round (-0.5 to 1.500000 at round 1)"]


# --- 2. each site's value of the final round ---------------------------------------------------------------------


def test_each_sites_final_round_value_in_the_envelopes_and_the_leaderboard(tmp_path):
    ws = initialized_standin(tmp_path)
    assert run_inproc(ws, "prepare", "--name", "lr-up", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_inproc(ws, "evaluate")
    assert done.envelope["score"] == 0.85 and done.envelope["sites"] == {"site-1": 0.86, "site-2": 0.84}
    assert run_inproc(ws, "status").envelope["best_sites"] == {"site-1": 0.86, "site-2": 0.84}
    replicated = run_inproc(ws, "replicate", "--count", "1").envelope["replicates"]
    assert replicated[0]["sites"] == {"site-1": 0.86, "site-2": 0.84}
    report = json.loads((ws / "autofl_report.json").read_text())
    marked = {e["name"]: (e["role"], e["sites"]) for e in report["leaderboard"] if "sites" in e}
    assert marked == {
        "baseline": ("baseline", {"site-1": 0.76, "site-2": 0.74}),
        "lr-up": ("best", {"site-1": 0.86, "site-2": 0.84}),
    }
    markdown = (ws / "autofl_report.md").read_text()
    assert "- best `lr-up`: site-1 0.860000, site-2 0.840000" in markdown
    assert "- baseline `baseline`: site-1 0.760000, site-2 0.740000" in markdown
    assert len(ledger_rows(ws)) == 3


def test_a_batch_entry_carries_its_sites(tmp_path):
    ws = initialized_standin(tmp_path)
    for name, lr in (("a", "0.2"), ("b", "0.3")):
        assert run_inproc(ws, "prepare", "--name", name, "--hypothesis", "h", "--run-args", f"--lr {lr}").code == 0
    done = run_cli(ws, "evaluate", "--all-prepared")
    assert done.code == 0, done.stderr
    assert {e["candidate_id"]: e["sites"] for e in done.envelope["batch"]} == {
        "a": {"site-1": 0.86, "site-2": 0.84},
        "b": {"site-1": 0.76, "site-2": 0.74},
    }


# --- 4. where the best lives -------------------------------------------------------------------------------------


def test_rewrite_sets_each_options_default_by_its_type_and_keeps_the_rest():
    from autofl_core.runner import job_defaults

    source = (
        b"import argparse\n"
        b"# caf\xc3\xa9: a comment with UTF-8 before the calls\n"
        b"p = argparse.ArgumentParser()\n"
        b'p.add_argument("--lr", type=float, default=0.1, help="\xc3\xa9tape")\n'
        b'p.add_argument("--local_epochs", "-e", type=int)\n'
        b'p.add_argument("--optim", default="sgd")\n'
        b'p.add_argument("--use_bonus", action="store_true")\n'
    )
    text, written = job_defaults.rewrite(source, ["--lr", "0.2", "-e", "5", "--optim=adam"])
    assert written == {"--lr": "0.2", "-e": "5", "--optim": "'adam'"}
    assert text == source.replace(b"default=0.1", b"default=0.2").replace(
        b'"-e", type=int)', b'"-e", type=int, default=5)'
    ).replace(b'default="sgd"', b"default='adam'")
    for args, reason in (
        (["--use_bonus"], "--use_bonus is 'store_true'"),
        (["--momentum", "0.9"], "job.py defines no add_argument('--momentum')"),
        (["--local_epochs", "many"], "'many' is not a valid int"),
    ):
        try:
            job_defaults.rewrite(source, args)
        except job_defaults.JobDefaultsError as error:
            assert reason in str(error), (args, error)
        else:
            raise AssertionError(args)
    assert job_defaults.pairs(["--lr", "-0.5", "--flag"]) == [("--lr", "-0.5"), ("--flag", None)]


def test_the_best_lives_in_the_command_until_the_user_asks_to_write_it_into_job_py(tmp_path):
    import subprocess

    ws = initialized_standin(tmp_path, "--max-candidates", "1")
    lives = run_inproc(ws, "status").envelope["best_lives"]
    assert lives["name"] == "baseline" and lives["plain_job_py_reruns_it"] is True
    assert "takes no run arguments of its own" in lives["note"]
    assert run_inproc(ws, "prepare", "--name", "lr-up", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    done = run_inproc(ws, "evaluate")
    assert done.envelope["candidate_status"] == "keep" and done.envelope["final_response_allowed"] is True
    lives = done.envelope["best_lives"]
    assert lives["run_args"] == ["--lr", "0.2"] and lives["plain_job_py_reruns_it"] is False
    assert lives["command"].endswith("job.py --n_clients 2 --num_rounds 3 --lr 0.2")
    assert "a plain `python job.py` runs job.py's own defaults" in lives["note"]
    assert "--write-best-defaults" in lives["note"]
    assert "Where the best lives: " in (ws / "autofl_report.md").read_text()
    before = (ws / "job.py").read_bytes()
    written = run_inproc(ws, "status", "--write-best-defaults").envelope["job_defaults_written"]
    assert written["defaults"] == {"--lr": "0.2"}
    assert open(written["backup"], "rb").read() == before
    assert (ws / "job.py").read_bytes() == before.replace(
        b'"--lr", type=float, default=0.1)', b'"--lr", type=float, default=0.2)'
    )
    env = {"PATH": os.environ["PATH"], "NVFLARE_SIMULATOR_WORKSPACE_ROOT": str(tmp_path / "plain")}
    plain = subprocess.run(
        [sys.executable, "job.py"], cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert "site=site-1 round=2 accuracy=0.8400" in plain.stdout, "plain job.py now runs the best (0.85)"


def test_writing_the_defaults_is_refused_while_the_campaign_runs(tmp_path):
    ws = initialized_standin(tmp_path, "--max-candidates", "3")
    assert run_inproc(ws, "prepare", "--name", "lr-up", "--hypothesis", "h", "--run-args", "--lr 0.2").code == 0
    assert run_inproc(ws, "evaluate").code == 0
    before = (ws / "job.py").read_bytes()
    done = run_inproc(ws, "status", "--write-best-defaults")
    assert done.code == 2 and "only after the campaign has finished" in done.stderr
    assert (ws / "job.py").read_bytes() == before and not (ws / ".nvflare/autofl/backups").exists()


# --- 7. build byproducts in a draft ------------------------------------------------------------------------------


def test_bytecode_and_editor_files_in_a_draft_are_removed_before_validation(tmp_path):
    """An agent that ran py_compile (or an editor) in its draft: the byproducts are removed and named, never
    refused or counted as edits; the real edit is evaluated as usual."""
    from runner_support import manifest, set_bonus, source_dir

    ws = initialized_standin(tmp_path)
    assert run_inproc(ws, "prepare", "--name", "bonus", "--hypothesis", "h").code == 0
    draft = source_dir(ws, "bonus")
    set_bonus(draft, 0.05)
    (draft / "__pycache__").mkdir()
    (draft / "__pycache__" / "client.cpython-311.pyc").write_bytes(b"\x00\x01binary")
    byproducts = ["client.pyc", ".client.py.swp", "client.py~", "#client.py#"]
    for name in byproducts:
        (draft / name).write_bytes(b"\x00binary byproduct")
    os.symlink("user@host.1234:1700000000", draft / ".#client.py")  # an emacs lock: a dangling symlink
    done = run_cli(ws, "evaluate")
    assert done.code == 0, done.stderr
    assert done.envelope["candidate_status"] == "keep"
    assert manifest(ws, "bonus")["changed_files"] == ["client.py"]
    for name in ["__pycache__", *byproducts]:
        assert f"removed {name} from the draft" in done.stderr, name
    assert not any(os.path.lexists(draft / name) for name in ["__pycache__", ".#client.py", *byproducts])


# --- 8. noise causes read from the job ---------------------------------------------------------------------------

TORCH_JOB = """\
from model import SimpleNetwork
from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe
from nvflare.recipe import SimEnv

recipe = FedAvgRecipe(name="cifar", min_clients=2, num_rounds=3, initial_model=SimpleNetwork(), train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
TORCH_CLIENT = """\
import random

import numpy as np
import torch
from torch.utils.data import DataLoader

loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=2)
order = np.random.permutation(10)
random.shuffle(files)
torch.backends.cudnn.benchmark = True
"""


def test_unseeded_model_construction_shuffles_and_loaders_are_named_with_file_line_and_fix():
    from autofl_core.importer import noise_sources

    found = noise_sources.scan({"job.py": TORCH_JOB, "client.py": TORCH_CLIENT, "notes.txt": "shuffle=True"})
    where = [(item["file"], item["line"]) for item in found]
    assert where == [
        ("client.py", 7),
        ("client.py", 7),
        ("client.py", 8),
        ("client.py", 9),
        ("client.py", 10),
        ("job.py", 5),
    ]
    causes = {f"{item['file']}:{item['line']}": item for item in found}
    model = causes["job.py:5"]
    assert model["cause"].startswith("the model is built (`SimpleNetwork()`) before any seed is set")
    assert model["fix"] == "call `torch.manual_seed(0)` (or the framework's seed) before line 5"
    assert "generator=torch.Generator().manual_seed(0)" in " ".join(i["fix"] for i in found if i["line"] == 7)
    assert "worker_init_fn" in " ".join(i["cause"] for i in found if i["line"] == 7)
    seeded_job = "import torch\ntorch.manual_seed(0)\n" + TORCH_JOB
    seeded_client = TORCH_CLIENT.replace(
        "import torch\n", "import torch\ntorch.manual_seed(0)\nnp.random.seed(0)\nrandom.seed(0)\n"
    ).replace("num_workers=2", "num_workers=0")
    seeded_client = seeded_client.replace("torch.backends.cudnn.benchmark = True", "")
    assert noise_sources.scan({"job.py": seeded_job, "client.py": seeded_client}) == []
    numpy_only = TORCH_JOB.replace("nvflare.app_opt.pt.recipes.fedavg", "nvflare.app_common.np.recipes")
    assert noise_sources.scan({"job.py": numpy_only}) == [], "a numpy model starts from its own fixed weights"
    assert noise_sources.sentence(found[-1:]).startswith("Where reruns can differ, read from the job: job.py:5: ")


def test_the_replicate_note_and_the_report_name_what_was_found_in_the_job(tmp_path):
    from runner_support import standin_workspace

    ws = standin_workspace(tmp_path)
    client = ws / "client.py"
    client.write_text(client.read_text() + "\nimport random\nrandom.shuffle([1, 2])\n")
    line = len(client.read_text().splitlines())
    assert run_inproc(ws, "initialize").code == 0
    done = run_inproc(ws, "replicate", "--count", "1")
    assert done.code == 0, done.stderr
    (found,) = done.envelope["noise_sources"]
    assert (found["file"], found["line"]) == ("client.py", line)
    assert f"client.py:{line}: `random.shuffle` with an unseeded generator" in done.envelope["replicate_note"]
    report = json.loads((ws / "autofl_report.json").read_text())
    assert report["noise"]["sources"] == [found]
    markdown = (ws / "autofl_report.md").read_text()
    expected = (
        f"- Reruns can differ: `client.py:{line}` \\`random.shuffle\\` with an unseeded generator; smallest fix: "
    )
    assert expected in markdown  # recorded text: its backticks are escaped
    plain = initialized_standin(tmp_path / "plain")
    assert run_inproc(plain, "replicate", "--count", "1").envelope["noise_sources"] == []


def test_base_args_mean_a_bare_job_py_does_not_rerun_the_best(tmp_path):
    ws = initialized_standin(tmp_path, "--base-args", "--local_steps 6")
    lives = run_inproc(ws, "status").envelope["best_lives"]
    assert lives["plain_job_py_reruns_it"] is False and lives["run_args"] == []
    assert lives["command"].endswith("job.py --n_clients 2 --num_rounds 3 --local_steps 6")
    assert "passed the base arguments --local_steps 6: rerun it with the command above" in lives["note"]
    plain = run_inproc(initialized_standin(tmp_path / "plain"), "status").envelope["best_lives"]
    assert plain["note"].endswith("`python job.py --n_clients 2 --num_rounds 3` reruns it.")
