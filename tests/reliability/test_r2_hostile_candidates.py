"""R2: every candidate validation rule. Hostile drafts, run args and manifests are rejected with exit 2 and a
reason naming the offending path or flag, and the workspace, the best snapshot and the ledger stay
byte-identical (compared by hash)."""

import json
import os

import pytest
from runner_support import run_inproc, source_dir, standin_workspace, tree_digest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One initialized stand-in campaign; each test works on a fresh copy (cheap: no baseline rerun)."""
    workspace = standin_workspace(tmp_path_factory.mktemp("validation"))
    assert run_inproc(workspace, "initialize").code == 0
    return workspace


@pytest.fixture
def ws(campaign, tmp_path):
    import shutil

    copy = tmp_path / "ws"
    shutil.copytree(campaign, copy, symlinks=True)
    assert run_inproc(copy, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    return copy


def guarded(workspace):
    """What a rejection must leave byte-identical: workspace sources, best snapshot, ledger, manifests, metadata."""
    return tree_digest(
        workspace,
        skip=(
            ".nvflare/autofl/candidates/draft/source",
            "autofl_runs",
            "__pycache__",
            ".nvflare/autofl/campaign_state.json",
            ".nvflare/autofl/campaign.lock",
            # the re-import's own evidence of why a candidate was rejected:
            ".nvflare/autofl/candidates/draft/import.log",
            ".nvflare/autofl/candidates/draft/candidate_autofl.yaml",
        ),
    )


def rejected(workspace, fragment, *args):
    before = guarded(workspace)
    done = run_inproc(workspace, "evaluate", *args)
    assert done.code == 2, done
    assert fragment in done.stderr, done.stderr
    assert "\n" not in done.stderr
    assert guarded(workspace) == before
    return done


def write(folder, rel, data):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)


DRAFTS = {
    "symlink file": (
        lambda d: (d / "client.py").unlink() or os.symlink("/etc/hostname", d / "client.py"),
        "client.py is a symlink",
    ),
    "symlink to a folder": (lambda d: os.symlink("/etc", d / "etc"), "etc is a symlink"),
    "symlinked new module": (lambda d: os.symlink(d / "client.py", d / "alias.py"), "alias.py is a symlink"),
    "binary file": (lambda d: write(d, "blob.py", b"\x00\x01binary"), "blob.py is binary"),
    "invalid utf-8": (lambda d: write(d, "latin.py", b"# caf\xe9\n"), "latin.py is not valid UTF-8"),
    "reserved .git": (lambda d: write(d, ".git/hooks/post.py", "x = 1\n"), "reserved folder .git"),
    "reserved .nvflare": (lambda d: write(d, ".nvflare/autofl/evil.py", "x = 1\n"), "reserved folder .nvflare"),
    "reserved autofl_runs": (lambda d: write(d, "autofl_runs/x.py", "x = 1\n"), "reserved folder autofl_runs"),
    "reserved venv": (lambda d: write(d, "venv/lib.py", "x = 1\n"), "reserved folder venv"),
    "not a python file": (
        lambda d: write(d, "notes.txt", "hi\n"),
        "creates notes.txt, which matches no allowed_create_patterns",
    ),
    "shell script": (lambda d: write(d, "run.sh", "rm -rf /\n"), "run.sh"),
    "deleted managed file": (lambda d: (d / "standin_flare.py").unlink(), "deletes standin_flare.py"),
    "overwrites an unmanaged file": (lambda d: write(d, "unmanaged.py", "x = 2\n"), "unmanaged file"),
    "fifo": (lambda d: os.mkfifo(d / "pipe.py"), "pipe.py is not a regular file"),
    "backslash name": (lambda d: write(d, "a\\b.py", "x = 1\n"), "not a plain workspace-relative path"),
}


@pytest.mark.parametrize("case", sorted(DRAFTS), ids=lambda c: c.replace(" ", "-"))
def test_hostile_draft_is_rejected_and_nothing_changes(ws, case):
    (ws / "unmanaged.py").write_text("x = 1\n")
    mutate, fragment = DRAFTS[case]
    mutate(source_dir(ws, "draft"))
    rejected(ws, fragment)


def test_edit_outside_allowed_edit_paths_is_rejected(ws):
    import yaml

    config_path = ws / "autofl.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["trust"]["allowed_edit_paths"] = ["job.py"]  # the human narrowed the contract
    config_path.write_text(yaml.safe_dump(config))
    (source_dir(ws, "draft") / "client.py").write_text("BONUS = 1\n")
    rejected(ws, "changes client.py, outside the trust contract's allowed_edit_paths")


def test_pycache_in_the_draft_is_ignored(ws):
    folder = source_dir(ws, "draft")
    write(folder, "__pycache__/client.cpython-312.pyc", b"\x00compiled")
    done = run_inproc(ws, "evaluate", "--run-args", "--lr 0.2")
    assert done.code == 0 and not (ws / "__pycache__" / "client.cpython-312.pyc").exists()


RUN_ARGS = {
    "budget long flag": ("--num_rounds 5", "fixed-budget option --num_rounds"),
    "budget equals form": ("--num_rounds=5", "fixed-budget option --num_rounds"),
    "budget short alias": ("-r 5", "fixed-budget option --num_rounds"),
    "budget attached short": ("-r5", "fixed-budget option --num_rounds"),
    "budget abbreviation": ("--num_r 5", "fixed-budget option --num_rounds"),
    "budget same value": ("--n_clients 2", "fixed-budget option --n_clients"),
    "runner-owned name": ("--name mine", "runner-owned option --name"),
    "abbreviated tunable": ("--local 7", "not a canonical option; write --local_steps"),
    "unknown option": ("--learning-rate 0.1", "--learning-rate"),
    "positional": ("0.1", "is not an option"),
    "missing value": ("--lr", "needs a value"),
    "switch with value": ("--use_bonus=1", "is a switch and takes no value"),
    "wrong type": ("--local_steps many", "rejected by job.py's parser"),
    "unbalanced quotes": ("--lr '0.1", "cannot be split"),
}


@pytest.mark.parametrize("case", sorted(RUN_ARGS), ids=lambda c: c.replace(" ", "-"))
def test_hostile_run_args_are_rejected_and_nothing_changes(ws, case):
    text, fragment = RUN_ARGS[case]
    rejected(ws, fragment, "--run-args", text)


def test_empty_candidate_is_rejected(ws):
    rejected(ws, "the candidate changes nothing")
    rejected(ws, "the candidate changes nothing", "--run-args", "--lr 0.1")  # equal to the best configuration


def test_schema_bounds_limit_run_args(campaign, tmp_path):
    import shutil

    workspace = tmp_path / "bounded"
    shutil.copytree(campaign, workspace)
    (workspace / "mutation_schema.yaml").write_text("mutable_args:\n  lr: {type: float, min: 0.01, max: 0.3}\n")
    shutil.rmtree(workspace / ".nvflare")
    for name in ("autofl.yaml", "results.tsv"):
        (workspace / name).unlink()
    assert run_inproc(workspace, "initialize").code == 0
    run_inproc(workspace, "prepare", "--name", "draft", "--hypothesis", "h")
    rejected(workspace, "above mutation_schema.yaml max 0.3", "--run-args", "--lr 0.5")
    rejected(workspace, "not in mutation_schema.yaml mutable_args", "--run-args", "--local_steps 7")
    assert run_inproc(workspace, "evaluate", "--run-args", "--lr 0.2").code == 0


def test_candidate_that_changes_the_budget_in_job_py_is_restored_and_rejected(ws):
    job = source_dir(ws, "draft") / "job.py"
    job.write_text(
        job.read_text().replace(
            '"--num_rounds", "-r", type=int, default=3', '"--num_rounds", "-r", type=int, default=5'
        )
    )
    # the budget is pinned on the command line, so only a literal change inside job.py can move it:
    job.write_text(job.read_text().replace("num_rounds=args.num_rounds,", "num_rounds=args.num_rounds + 1,"))
    done = rejected(ws, "changes the fixed budget")
    assert "num_rounds" in done.stderr
    assert (
        json.loads((ws / ".nvflare/autofl/candidates/draft/candidate_manifest.json").read_text())["status"]
        == "prepared"
    )
    assert "re-import" in (ws / ".nvflare/autofl/candidates/draft/import.log").read_text()


def test_candidate_that_changes_the_objective_is_rejected(ws):
    job = source_dir(ws, "draft") / "job.py"
    job.write_text(job.read_text().replace('key_metric="accuracy",', 'key_metric="accuracy", key_metric_mode="min",'))
    rejected(ws, "changes the objective")


def test_forged_manifest_status_is_refused(ws):
    path = ws / ".nvflare/autofl/candidates/draft/candidate_manifest.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps(dict(record, status="keep")))
    done = run_inproc(ws, "evaluate")
    assert done.code == 2 and "no pending candidate" in done.stderr
    path.write_text(json.dumps(dict(record, status="winner")))
    done = run_inproc(ws, "status")
    assert done.code == 2 and "unknown status 'winner'" in done.stderr


def test_manifest_whose_id_does_not_match_its_folder_is_refused(ws):
    path = ws / ".nvflare/autofl/candidates/draft/candidate_manifest.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps(dict(record, candidate_id="other")))
    done = run_inproc(ws, "evaluate")
    assert done.code == 2 and "does not match its folder" in done.stderr


def test_workspace_edited_outside_the_candidate_is_refused(ws):
    (ws / "client.py").write_text((ws / "client.py").read_text() + "# edited in place\n")
    (source_dir(ws, "draft") / "client.py").write_text("BONUS = 1\n")
    done = run_inproc(ws, "evaluate")
    assert done.code == 2 and "workspace differs from the best snapshot (client.py)" in done.stderr


def test_manifest_from_another_workspace_is_refused(ws, tmp_path):
    before = guarded(ws)
    other = standin_workspace(tmp_path, "other")
    run_inproc(other, "initialize")
    run_inproc(other, "prepare", "--name", "foreign", "--hypothesis", "h")
    foreign = other / ".nvflare/autofl/candidates/foreign/candidate_manifest.json"
    for action in ("evaluate", "abandon"):
        refused = run_inproc(ws, action, "--manifest", str(foreign))
        assert refused.code == 2 and "not a candidate manifest of this workspace" in refused.stderr
    assert guarded(ws) == before


def test_unknown_literature_event_is_refused(ws):
    run_inproc(ws, "abandon")
    before = guarded(ws)
    done = run_inproc(ws, "prepare", "--name", "lit", "--hypothesis", "h", "--literature-event", "lit-0042")
    assert done.code == 2 and "--literature-event lit-0042 is not a recorded literature event" in done.stderr
    assert guarded(ws) == before
