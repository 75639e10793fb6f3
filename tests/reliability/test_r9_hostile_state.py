"""R9: the runner's own files and recovery paths survive hostile and damaged input.

Each case is something a hand edit, or a file a job folder ships with, can do to the runner: a deleted or
symlinked lock, forged manifests and trial markers, symlinked workspace folders, very deep trees, SIGHUP and
SIGQUIT, wrongly typed settings, folders the runner did not make, `@file` arguments and recorded text that
tries to restructure the report. Each is refused or contained with one line on stderr, and nothing outside
the runner's own files is removed. (The diagnose item, a log-named symlink into a startup kit, is tested
beside the read-only audit in tests/diagnose/test_readonly_audit.py.)
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from recovery_checks import assert_recovers_and_completes, prepare_keep_candidate, trial_processes
from runner_support import (
    REPO,
    RUNNER,
    WITHOUT_NAMESPACES,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    set_bonus,
    source_dir,
    standin_workspace,
    tree_digest,
)

pytestmark = pytest.mark.slow
META = Path(".nvflare") / "autofl"
VOLATILE = (
    ".nvflare/autofl/campaign_state.json",
    ".nvflare/autofl/campaign.lock",
    "autofl_runs",
    "__pycache__",
)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One initialized stand-in campaign (uncapped); each test works on a fresh copy."""
    workspace = standin_workspace(tmp_path_factory.mktemp("r9"))
    assert run_inproc(workspace, "initialize", "--uncapped").code == 0
    return workspace


@pytest.fixture
def ws(campaign, tmp_path):
    copy = tmp_path / "ws"
    shutil.copytree(campaign, copy, symlinks=True)
    return copy


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if not line.startswith("[autofl ")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- the lock ------------------------------------------------------------------------------------------------


# The candidate's trial waits until the test releases it (SIGUSR1), at most two minutes: however slow the machine,
# the trial still runs (and its action holds the lock) while the test does what it must meanwhile.
WAIT_FOR_RELEASE = """
import signal, time
released = []
signal.signal(signal.SIGUSR1, lambda *_: released.append(1))
deadline = time.monotonic() + 120
while not released and time.monotonic() < deadline:
    time.sleep(0.05)
BONUS = 0.05
"""


def slow_candidate(workspace: Path, name: str = "slow") -> None:
    assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "slow but better").code == 0
    client = source_dir(workspace, name) / "client.py"
    client.write_text(client.read_text() + WAIT_FOR_RELEASE)


def catches_sigusr1(pid: int) -> bool:
    """True once the process has installed a SIGUSR1 handler (bit 10 of SigCgt in /proc/PID/status)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            caught = next(line for line in handle if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGUSR1 - 1)))


def release_trial(workspace: Path) -> None:
    """SIGUSR1 to the trial's process that waits for it, once its handler is installed (before, it would die of it)."""
    waiting: list[int] = []
    wait_for(lambda: waiting.extend(pid for pid in trial_processes(workspace) if catches_sigusr1(pid)) or waiting)
    for pid in waiting:
        try:
            os.kill(pid, signal.SIGUSR1)
        except OSError:
            continue


def wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_deleting_the_lock_while_an_action_holds_it_lets_no_second_action_in(ws):
    slow_candidate(ws)
    runner = subprocess.Popen(
        [sys.executable, str(RUNNER), "evaluate", str(ws / "job.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: trial_processes(ws))  # the evaluate holds the lock and its trial runs
        (ws / META / "campaign.lock").unlink()
        second = run_cli(ws, "status")
        assert second.code == 2 and "already in use" in one_line(second.stderr)
        release_trial(ws)
        out, err = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, err
    assert json.loads(out)["candidate_status"] == "keep"  # its trial was never "recovered" and killed
    assert [row["status"] for row in ledger_rows(ws) if row["name"] == "slow"] == ["keep"]


def test_a_lock_replaced_by_another_file_is_never_taken_twice(ws):
    from autofl_core.runner.outcome import CampaignError
    from autofl_core.runner.store.lock import workspace_lock

    lock = ws / META / "campaign.lock"
    with workspace_lock(lock):
        lock.unlink()
        lock.write_text("")  # a new file at the path: an flock on it alone would succeed
        with pytest.raises(CampaignError, match="already in use"):
            with workspace_lock(lock):
                pass
    with workspace_lock(lock):  # released: the next action gets it
        pass


def victim(tmp_path: Path) -> Path:
    return write(tmp_path / "victim" / "notes.txt", "the user's notes\n")


def test_a_symlinked_lock_in_an_existing_campaign_is_never_followed(ws, tmp_path):
    target = victim(tmp_path)
    lock = ws / META / "campaign.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    before = tree_digest(ws, skip=VOLATILE)
    for action in ("status", "evaluate"):
        done = run_cli(ws, action)
        assert done.code == 2 and "symlink" in one_line(done.stderr), done.stderr
    assert target.read_text() == "the user's notes\n"
    assert tree_digest(ws, skip=VOLATILE) == before


def test_a_symlinked_lock_shipped_in_a_job_folder_is_refused_before_initialize_writes(tmp_path):
    workspace = standin_workspace(tmp_path)
    target = victim(tmp_path)
    (workspace / META).mkdir(parents=True)
    (workspace / META / "campaign.lock").symlink_to(target)
    dangling = standin_workspace(tmp_path, "dangling")
    (dangling / META).mkdir(parents=True)
    (dangling / META / "campaign.lock").symlink_to(tmp_path / "nowhere" / "created.txt")
    for folder in (workspace, dangling):
        before = tree_digest(folder)
        done = run_cli(folder, "initialize")
        assert done.code == 2 and "symlink" in one_line(done.stderr), done.stderr
        assert tree_digest(folder) == before  # nothing written: no autofl.yaml, snapshot or campaign.json
    assert target.read_text() == "the user's notes\n"
    assert not (tmp_path / "nowhere").exists()


# --- recovery trusts only what the runner recorded -----------------------------------------------------------


def forge(workspace: Path, name: str, **fields) -> None:
    path = workspace / META / "candidates" / name / "candidate_manifest.json"
    path.write_text(json.dumps(dict(json.loads(path.read_text()), **fields)))


USER_FILES = {"results.tsv": None, "autofl.yaml": None, "data/train.csv": "a,b\n1,2\n"}


@pytest.mark.parametrize(
    "status, action",
    [("running", "status"), ("running", "abandon"), ("ready_for_external_execution", "abandon")],
)
def test_a_forged_manifest_never_makes_recovery_delete_files_the_runner_did_not_create(ws, status, action):
    write(ws / "data" / "train.csv", USER_FILES["data/train.csv"])
    assert run_inproc(ws, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    forge(ws, "draft", status=status, created_files=sorted(USER_FILES))
    kept = {rel: (ws / rel).read_bytes() for rel in USER_FILES}
    done = run_cli(ws, action)
    assert done.code == 0, done.stderr
    assert {rel: (ws / rel).read_bytes() for rel in USER_FILES if (ws / rel).exists()} == kept


def test_a_forged_trial_marker_never_makes_recovery_remove_another_folder(ws, tmp_path):
    outside = write(tmp_path / "afl-photos" / "holiday.txt", "keep me\n").parent
    inside = write(ws / "afl-data" / "train.csv", "a,b\n").parent
    own_root = Path(tempfile.mkdtemp(prefix="afl-"))  # looks like the runner's own, but no trial recorded it
    write(own_root / "keep.txt", "not recorded\n")
    try:
        for folder in (outside, inside, own_root, Path(tempfile.gettempdir())):
            marker = {"token": "f" * 32, "name": "x", "kind": "candidate", "temp_dir": str(folder), "runner_pid": 1}
            (ws / META / "running_trial.json").write_text(json.dumps(marker))
            done = run_cli(ws, "status")
            assert done.code == 0, done.stderr
            assert folder.is_dir(), folder
            assert not (ws / META / "running_trial.json").exists()
        assert (outside / "holiday.txt").exists() and (inside / "train.csv").exists()
    finally:
        shutil.rmtree(own_root, ignore_errors=True)


def test_a_forged_journal_never_deletes_user_files(ws):
    write(ws / "data" / "train.csv", "a,b\n")
    assert run_inproc(ws, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    record = manifest(ws, "draft")
    journal = {
        "schema_version": "nvflare.autofl.finalize.v1",
        "candidate_id": "draft",
        "status": "discard",
        "new_best_digest": None,
        "created_files": ["results.tsv", "data/train.csv", "autofl.yaml"],
        "manifest": dict(record, status="prepared"),
        "row": None,
        "ledger_rows_before": 10**6,
    }
    (ws / META / "finalize.json").write_text(json.dumps(journal))
    run_cli(ws, "status")  # whatever it says about the forged row, it must not delete the files
    assert (ws / "results.tsv").exists() and (ws / "autofl.yaml").exists() and (ws / "data" / "train.csv").exists()


# --- draft paths through symlinked folders -------------------------------------------------------------------


def test_a_draft_path_through_a_symlinked_workspace_folder_is_refused(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "ext").symlink_to(outside)
    (ws / "pkg").mkdir()
    (ws / "pkg" / "deep").symlink_to(outside)
    for rel in ("ext/planted.py", "pkg/deep/planted.py"):
        name = rel.split("/")[0] + "-draft"
        assert run_inproc(ws, "prepare", "--name", name, "--hypothesis", "h").code == 0
        write(source_dir(ws, name) / rel, "PLANTED = 1\n")
        before = tree_digest(ws, skip=VOLATILE + (f".nvflare/autofl/candidates/{name}/source",))
        done = run_inproc(ws, "evaluate")
        assert done.code == 2 and "symlink" in done.stderr and rel.rsplit("/", 1)[0] in done.stderr, done.stderr
        assert list(outside.iterdir()) == []
        assert tree_digest(ws, skip=VOLATILE + (f".nvflare/autofl/candidates/{name}/source",)) == before
        assert run_inproc(ws, "abandon").code == 0
    assert "planted" not in (ws / "autofl.yaml").read_text()


# --- deep trees ----------------------------------------------------------------------------------------------

DEEP = """
import os as _os
def _deep(base, depth=1200):
    here = _os.getcwd()
    _os.makedirs(base, exist_ok=True)
    _os.chdir(base)
    try:
        for _ in range(depth):
            _os.mkdir("d")
            _os.chdir("d")
    finally:
        _os.chdir(here)
_deep(_os.path.join({where}, "deep"))
_root = _os.environ["NVFLARE_SIMULATOR_WORKSPACE_ROOT"]
_result = [name for name in _os.listdir(_root) if name != "deep"][0]
with open(_os.path.join(_root, _result, "where.txt"), "w") as _handle:  # lands in the copied result
    _handle.write(_root)
BONUS = 0.02
"""


@pytest.mark.parametrize(
    "where",
    [
        '_os.environ["NVFLARE_SIMULATOR_WORKSPACE_ROOT"]',  # the trial's temp folder, beside the result
        '_os.environ.get("TMPDIR") or _os.environ["NVFLARE_SIMULATOR_WORKSPACE_ROOT"]',  # its private TMPDIR
    ],
    ids=["simulator-root", "private-tmpdir"],
)
def test_a_very_deep_tree_left_by_a_trial_is_cleaned_up_without_a_traceback(ws, where):
    assert run_inproc(ws, "prepare", "--name", "deep", "--hypothesis", "leaves a deep tree").code == 0
    client = source_dir(ws, "deep") / "client.py"
    client.write_text(client.read_text() + DEEP.format(where=where))
    done = run_cli(ws, "evaluate")
    assert done.code == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.envelope["candidate_status"] == "keep"
    root = Path((ws / "autofl_runs" / "deep" / "simulation" / "where.txt").read_text())
    temp = [folder for folder in root.parents if folder.name.startswith("afl-")]  # the runner's trial temp folder
    assert len(temp) == 1 and not temp[0].exists()  # gone, deep chain included
    again = run_cli(ws, "status")
    assert again.code == 0, again.stderr


def test_the_iterative_remover_removes_a_tree_deeper_than_the_recursion_limit(tmp_path):
    from autofl_core.common import trees

    root = tmp_path / "root"
    root.mkdir()
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(sys.getrecursionlimit() + 200):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf.txt").write_text("x")
        os.symlink("/etc", "link-to-etc")  # a symlink is removed, never followed
    finally:
        os.chdir(here)
    assert trees.remove_tree(root) is True
    assert not root.exists() and Path("/etc/hostname").exists() or not root.exists()
    assert trees.remove_tree(tmp_path / "missing") is True  # nothing to do is success


def test_a_draft_nested_deeper_than_the_limit_is_refused_without_a_traceback(ws):
    assert run_inproc(ws, "prepare", "--name", "nested", "--hypothesis", "h").code == 0
    write(source_dir(ws, "nested") / ("/".join(["d"] * 40)) / "mod.py", "X = 1\n")
    before = tree_digest(ws, skip=VOLATILE + (".nvflare/autofl/candidates/nested/source",))
    done = run_inproc(ws, "evaluate")
    assert done.code == 2 and "deeper than 32 levels" in done.stderr, done.stderr
    assert tree_digest(ws, skip=VOLATILE + (".nvflare/autofl/candidates/nested/source",)) == before


# --- signals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("signal_name, code", [("SIGHUP", 129), ("SIGQUIT", 131)])
@pytest.mark.parametrize("point", ["evaluate:applied_partially", "trial:child_started", "finalize:journal_written"])
def test_sighup_and_sigquit_are_handled_like_sigterm(campaign, tmp_path, point, signal_name, code):
    workspace = tmp_path / "ws"
    shutil.copytree(campaign, workspace)
    prepare_keep_candidate(workspace)
    prefix = WITHOUT_NAMESPACES if point == "evaluate:applied_partially" else ()  # only an unsealed trial applies
    env = {**os.environ, "AUTOFL_FAULT_AT": f"{point}:{signal_name}"}
    done = run_cli(workspace, "evaluate", env=env, prefix=prefix)
    assert done.code == code, (point, done.code, done.stderr[-500:])
    assert done.stderr.strip().splitlines()[-1].startswith(f"Auto-FL evaluate interrupted by {signal_name}")
    assert trial_processes(workspace) == []
    assert_recovers_and_completes(workspace)


def test_the_signal_exit_codes_are_documented():
    readme = (REPO / "README.md").read_text()
    runner_doc = RUNNER.read_text()
    for text in (readme, runner_doc):
        assert "129" in text and "131" in text and "SIGHUP" in text and "SIGQUIT" in text


# --- damaged settings ----------------------------------------------------------------------------------------

SETTINGS_DAMAGE = {
    "NaN timeout": ("timeout", math.nan),
    "string timeout": ("timeout", "900"),
    "null timeout": ("timeout", None),
    "negative timeout": ("timeout", -5),
    "string threshold": ("plateau_threshold", "8"),
    "float threshold": ("plateau_threshold", 1.5),
    "boolean cap": ("max_candidates", True),
    "zero cap": ("max_candidates", 0),
    "unknown mode": ("mode", "maximize"),
    "unknown env": ("env", "cloud"),
    "list metric": ("metric", ["accuracy"]),
    "string stop files": ("stop_files", "STOP_AUTOFL"),
    "string base args": ("base_args", "--lr 0.1"),
    "null python": ("python", None),
    "infinite min delta": ("plateau_min_delta", math.inf),
}
DOCUMENT_DAMAGE = {
    "settings is a list": lambda meta: dict(meta, settings=[]),
    "settings is null": lambda meta: dict(meta, settings=None),
    "cap_changes is a string": lambda meta: dict(meta, cap_changes="none"),
    "best_run_args holds a number": lambda meta: dict(meta, best_run_args=[0.1]),
    "a missing setting": lambda meta: dict(meta, settings={k: v for k, v in meta["settings"].items() if k != "env"}),
    "an unknown setting": lambda meta: dict(meta, settings=dict(meta["settings"], turbo=True)),
}


def damage_settings(workspace: Path, change) -> None:
    path = workspace / META / "campaign.json"
    meta = json.loads(path.read_text())
    if callable(change):
        meta = change(meta)
    else:
        key, value = change
        meta["settings"][key] = value
    path.write_text(json.dumps(meta))  # json.dumps writes NaN/Infinity as the bare words a hand edit would


@pytest.mark.parametrize("case", sorted(SETTINGS_DAMAGE) + sorted(DOCUMENT_DAMAGE))
def test_damaged_settings_are_refused_with_one_line_and_nothing_changes(ws, case):
    assert run_inproc(ws, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    set_bonus(source_dir(ws, "draft"), 0.02)
    damage_settings(ws, SETTINGS_DAMAGE.get(case) or DOCUMENT_DAMAGE.get(case))
    before = tree_digest(ws, skip=(".nvflare/autofl/campaign.lock", "__pycache__"))
    for action, *args in (("status",), ("evaluate",), ("prepare", "--name", "other", "--hypothesis", "h")):
        done = run_cli(ws, action, *args)
        assert done.code == 2, (case, action, done.code, done.stderr[-800:])
        line = one_line(done.stderr)
        assert "campaign.json" in line, line
    assert tree_digest(ws, skip=(".nvflare/autofl/campaign.lock", "__pycache__")) == before


def test_the_settings_checker_agrees_with_the_published_schema():
    """The skill validates campaign.json with its own small checker and its own copy of the schema (it cannot
    read shared/ at run time): the copy is the published schema, and on a corpus of damaged documents the
    checker's verdict is the jsonschema verdict (non-finite numbers, which JSON cannot hold, are refused too)."""
    from autofl_core.common import schema_check
    from autofl_core.runner.store import metadata
    from jsonschema import Draft202012Validator

    published = json.loads((REPO / "shared" / "schemas" / "campaign.v1.schema.json").read_text())
    shipped = metadata.schema()
    assert {k: v for k, v in shipped.items() if k != "$comment"} == published
    validator = Draft202012Validator(published)
    good = _valid_metadata()
    assert schema_check.problems(good, shipped) == [] and validator.is_valid(good)
    corpus = [change(good) for change in DOCUMENT_DAMAGE.values()]
    for key, value in SETTINGS_DAMAGE.values():
        corpus.append(dict(good, settings=dict(good["settings"], **{key: value})))
    corpus += _mutations(good)
    disagreements = []
    for document in corpus:
        mine = schema_check.problems(document, shipped)
        theirs = list(validator.iter_errors(document))
        finite = _all_finite(document)
        if bool(mine) != (bool(theirs) or not finite):
            disagreements.append((json.dumps(document, default=str)[:300], mine, [e.message for e in theirs]))
    assert disagreements == []
    assert len(corpus) > 60


def _valid_metadata() -> dict:
    return {
        "schema_version": "nvflare.autofl.campaign.v1",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "job": "/w/job.py",
        "workspace_root": "/w",
        "settings": {
            "metric": "accuracy",
            "mode": "max",
            "env": "sim",
            "max_candidates": 3,
            "autofl_yaml": "autofl.yaml",
            "results": "results.tsv",
            "state": ".nvflare/autofl/campaign_state.json",
            "progress": "progress.png",
            "report": "autofl_report.md",
            "output_root": "autofl_runs",
            "plateau_threshold": 8,
            "plateau_min_delta": 0.0005,
            "hard_crash_threshold": 6,
            "exploration_batch_size": 3,
            "family_repeat_limit": 6,
            "stop_files": ["STOP_AUTOFL"],
            "base_args": [],
            "timeout": 900.0,
            "simulator_no_progress_timeout": 240.0,
            "python": "/usr/bin/python3",
            "allow_network": False,
            "noise_sigmas": 0.0,
        },
        "best_candidate": None,
        "best_score": None,
        "best_source_sha256": None,
        "best_run_args": [],
        "fixed_budget_sha256": "0" * 64,
        "metric_direction_contract_version": 1,
        "cap_changes": [{"changed_at": "t", "old": 2, "new": 3, "source": "s", "user_approved": True}],
        "setting_changes": [{"changed_at": "t", "action": "evaluate", "setting": "timeout", "old": 1, "new": 2}],
    }


def _mutations(good: dict) -> list[dict]:
    """Each field replaced by values of other types, and each required key dropped."""
    values = [None, True, 0, -1, 1.5, "", "x", [], ["x"], {}, {"a": 1}, "0" * 64]
    out = []
    for key in good:
        out.append({k: v for k, v in good.items() if k != key})
        out += [dict(good, **{key: value}) for value in values]
    for key in good["settings"]:
        out.append(dict(good, settings={k: v for k, v in good["settings"].items() if k != key}))
        out += [dict(good, settings=dict(good["settings"], **{key: value})) for value in values]
    entry = good["cap_changes"][0]
    out += [dict(good, cap_changes=[dict(entry, **{k: value})]) for k in entry for value in values[:6]]
    out.append(dict(good, setting_changes=[{"changed_at": "t"}]))
    out.append(dict(good, setting_changes=[dict(good["setting_changes"][0], action="explode")]))
    return out


def _all_finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_all_finite(v) for v in value)
    return True


# --- folders the runner did not make -------------------------------------------------------------------------


def test_a_users_empty_folder_survives_a_discarded_or_rejected_draft(ws):
    (ws / "outputs").mkdir()
    for name, change_budget in (("discarded", False), ("rejected", True)):
        assert run_inproc(ws, "prepare", "--name", name, "--hypothesis", "h").code == 0
        folder = source_dir(ws, name)
        write(folder / "outputs" / "helper.py", "HELP = 1\n")
        write(folder / "newpkg" / "sub" / "mod.py", "X = 1\n")  # folders the runner creates (and removes)
        if change_budget:
            job = folder / "job.py"
            job.write_text(job.read_text().replace("num_rounds=args.num_rounds,", "num_rounds=args.num_rounds + 1,"))
            assert run_inproc(ws, "evaluate").code == 2
        else:
            set_bonus(folder, -0.5)
            done = run_inproc(ws, "evaluate")
            assert done.code == 0 and done.envelope["candidate_status"] == "discard"
        assert (ws / "outputs").is_dir() and list((ws / "outputs").iterdir()) == [], name
        assert not (ws / "newpkg").exists(), name
        if change_budget:
            assert run_inproc(ws, "abandon").code == 0


# --- @file arguments -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fromfile_campaign(tmp_path_factory):
    """A stand-in job whose parser reads `@file` arguments (fromfile_prefix_chars) and has a free --tag option."""
    workspace = standin_workspace(tmp_path_factory.mktemp("fromfile"))
    job = workspace / "job.py"
    text = job.read_text().replace(
        "argparse.ArgumentParser(description=__doc__)",
        'argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars="@")',
    )
    text = text.replace(
        '    parser.add_argument("--use_bonus", action="store_true")\n',
        '    parser.add_argument("--use_bonus", action="store_true")\n'
        '    parser.add_argument("--tag", type=str, default="none")\n',
    )
    job.write_text(text)
    (workspace / "extra.py").write_text("x\n--num_rounds=6\n")
    return workspace


def test_at_file_run_args_are_refused_before_the_budget_check(fromfile_campaign, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(fromfile_campaign, ws)
    assert run_inproc(ws, "initialize").code == 0
    assert run_inproc(ws, "prepare", "--name", "smuggle", "--hypothesis", "h").code == 0
    before = tree_digest(ws, skip=VOLATILE)
    # the inline form too: the runner passes run args on as `--tag @extra.py`, which argparse would expand
    for text in ("--tag @extra.py", "--lr 0.2 --tag @extra.py", "@extra.py", "--tag=@extra.py"):
        done = run_inproc(ws, "evaluate", "--run-args", text)
        assert done.code == 2 and "'@extra.py'" in done.stderr and "fromfile" in done.stderr, done.stderr
        assert tree_digest(ws, skip=VOLATILE) == before
    done = run_inproc(ws, "evaluate", "--run-args", "--tag plain")
    assert done.code == 0, done.stderr
    log = (ws / "autofl_runs" / "smuggle" / "run.log").read_text()
    assert "Round 2 started." in log and "Round 3 started." not in log  # the fixed budget (3 rounds) held


def test_at_file_base_args_are_refused(fromfile_campaign, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(fromfile_campaign, ws)
    before = tree_digest(ws)
    done = run_inproc(ws, "initialize", "--base-args", "--tag @extra.py")
    assert done.code == 2 and "@extra.py" in done.stderr and "fromfile" in done.stderr, done.stderr
    assert tree_digest(ws) == before


def test_a_candidate_that_turns_on_fromfile_arguments_is_rejected(fromfile_campaign, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(fromfile_campaign, ws)
    job = ws / "job.py"
    job.write_text(job.read_text().replace(', fromfile_prefix_chars="@"', ""))  # the imported job reads no files
    assert run_inproc(ws, "initialize").code == 0
    assert run_inproc(ws, "prepare", "--name", "sneaky", "--hypothesis", "h").code == 0
    folder = source_dir(ws, "sneaky")
    draft_job = folder / "job.py"
    draft_job.write_text(
        draft_job.read_text().replace(
            "argparse.ArgumentParser(description=__doc__)",
            'argparse.ArgumentParser(description=__doc__, fromfile_prefix_chars="+")',
        )
    )
    write(folder / "more_args.py", "x\n--num_rounds=6\n")
    done = run_inproc(ws, "evaluate", "--run-args", "--tag +more_args.py")
    assert done.code == 2 and "+more_args.py" in done.stderr and "fromfile" in done.stderr, done.stderr
    assert manifest(ws, "sneaky")["status"] == "prepared"
    assert not (ws / "more_args.py").exists()
    assert [row["name"] for row in ledger_rows(ws)] == ["baseline"]


# --- recorded text in the report -----------------------------------------------------------------------------

UNESCAPED_COMMENT = re.compile(r"(?<!\\)<!--")  # `\<!--` is a literal "<!--", not the start of a comment
HOSTILE = "faster\n## Injected heading\n<!-- hide the rest\u202e\u2066 `x` ![t](http://tracker/x.png) | cell"


def test_recorded_text_cannot_restructure_the_report(ws):
    assert run_inproc(ws, "prepare", "--name", "winner", "--hypothesis", HOSTILE, "--family", HOSTILE).code == 0
    set_bonus(source_dir(ws, "winner"), 0.05)
    done = run_inproc(ws, "evaluate")
    assert done.code == 0 and done.envelope["candidate_status"] == "keep"
    markdown = (ws / "autofl_report.md").read_text()
    assert "Injected heading" in markdown  # shown, as text
    assert not any(line.lstrip().startswith("## Injected") for line in markdown.splitlines())
    assert not UNESCAPED_COMMENT.search(markdown) and "\\<!--" in markdown and "](http://tracker" not in markdown
    assert not any(ch in markdown for ch in "\u202e\u2066\u200f\r")


def test_every_recorded_string_goes_through_the_one_rendering_helper(ws):
    """Replace every string of the report data by hostile text: the markdown keeps the structure it has with
    plain text (same lines, same headings, same table rows) and carries no control character."""
    from autofl_core.runner.report import markdown as report_markdown

    assert run_inproc(ws, "prepare", "--name", "c1", "--hypothesis", "h", "--family", "fam").code == 0
    set_bonus(source_dir(ws, "c1"), 0.05)
    assert run_inproc(ws, "evaluate").code == 0
    assert run_inproc(ws, "prepare", "--name", "c2", "--hypothesis", "h2").code == 0
    (source_dir(ws, "c2") / "client.py").write_text("raise SystemExit(3)\n")
    assert run_inproc(ws, "evaluate").code == 1
    data = json.loads((ws / "autofl_report.json").read_text())
    plain = report_markdown.render(_strings_replaced(data, "plain"))
    hostile = report_markdown.render(_strings_replaced(data, HOSTILE))
    plain_lines, hostile_lines = plain.splitlines(), hostile.splitlines()
    assert len(hostile_lines) == len(plain_lines)
    for a, b in zip(plain_lines, hostile_lines, strict=True):
        for prefix in STRUCTURE:
            assert a.startswith(prefix) == b.lstrip().startswith(prefix), (prefix, a, b)
        if a.startswith("#"):
            assert a == b
        if a.startswith("|"):
            assert _cells(a) == _cells(b), (a, b)
    outside = _outside_code(hostile)  # inside a code span, `<!--` and `](` are literal text
    assert not UNESCAPED_COMMENT.search(outside) and "](http" not in outside and "\\<!--" in outside
    assert not any(ch in hostile for ch in "\u202e\u2066\r")


STRUCTURE = ("#", "|", "- ", "```", ">", "![", "<", "* ", "+ ", "1. ")


def _outside_code(markdown: str) -> str:
    """The markdown without its code spans and fenced blocks (what a renderer would interpret)."""
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1\s*$", "", markdown, flags=re.M | re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)


def _cells(line: str) -> int:
    return len(line.replace("\\|", "").split("|"))


def _strings_replaced(value, text):
    if isinstance(value, str):
        return text
    if isinstance(value, dict):
        return {key: _strings_replaced(item, text) for key, item in value.items()}
    if isinstance(value, list):
        return [_strings_replaced(item, text) for item in value]
    return value


def test_the_readme_guarantees_name_existing_tests():
    """Every test the README's Guarantees table names exists (a renamed test must not leave a stale promise)."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Guarantees") : readme.index("\n## ", readme.index("## Guarantees") + 1)]
    named = set(re.findall(r"::(test_\w+)", section))
    defined = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    assert len(named) > 15 and named <= defined, sorted(named - defined)
