"""Every flag the runner accepts either takes effect or is refused for that action with one line (issue 22).

The walk covers every (action, flag) pair: each action (record once per kind of record) on a stand-in campaign
ready for it, each option of `run_job_campaign.py` with a value that would change something. A refused pair
exits 2 with one line naming the flag and leaves the workspace byte-identical; an accepted pair must show its
effect (the manifest, the ledger row, the envelope, the audited setting, or what the trial ran with).

Trials are replaced by a fake (`campaign_trial.run`): it scores the stand-in client in-process and records the
settings the trial would have used, so the walk needs one real baseline only. The expectations below are
written out by hand; they are not read from the runner's own table.
"""

from __future__ import annotations

import json
import shlex
import shutil

import pytest
from runner_support import initialized_standin, ledger_rows, manifest, run_inproc, standin_workspace, tree_digest

pytestmark = pytest.mark.slow

ACTION_KINDS = (
    "initialize",
    "prepare",
    "evaluate",
    "abandon",
    "record-literature",
    "record-baseline",
    "record-candidate",
    "suggest",
    "status",
    "replicate",
    "report",
)
# the options each kind runs with, besides the flag under test (it needs them to do anything at all); a flag
# under test replaces the base option of the same name, and a record's result flags replace each other
BASE_ARGS = {
    "initialize": {},
    "prepare": {"--name": "walk", "--hypothesis": "h"},
    "evaluate": {},
    "abandon": {},
    "record-literature": {"--literature": None, "--hypothesis": "FedProx [src: Li 2020]"},
    "record-baseline": {"--baseline": None, "--score": "0.7"},
    "record-candidate": {"--score": "0.9"},
    "suggest": {},
    "status": {},
    "replicate": {"--count": "1"},
    "report": {"--confirm-interrupted": None},
}
RESULT_FLAGS = ("--score", "--artifacts", "--failure-reason")
# action options (not campaign settings) each kind takes, with a value that does something
ACTION_OPTION_VALUES = {
    "--name": "walk-name",
    "--hypothesis": "a specific hypothesis",
    "--family": "optimizer",
    "--literature-event": "lit-0001",
    "--manifest": "<manifest>",
    "--run-args": "--lr 0.15",
    "--all-prepared": None,
    "--parallel": "2",
    "--score": "0.66",
    "--artifacts": "<artifacts>",
    "--job-id": "job-42",
    "--failure-reason": "site-1 ran out of memory",
    "--baseline": None,
    "--literature": None,
    "--limit": "1",
    "--count": "2",
    "--confirm-interrupted": None,
    "--evaluator": "evaluate_model.py",
    "--evaluator-input": "offset.txt",
    "--fixed-args": "lr",
    "--startup-kit": "/no/such/admin-kit",
    "--kit-id": "kit-7",
    "--confirm-user-authorized": None,
    "--authorization": "yes from the user",
    "--evaluation": None,
    "--write-best-defaults": None,
}
# `submit` needs a real FLARE system: its own options are proven in tests/autofl/test_external_accounting.py and
# tests/poc/test_poc_submit.py; here every other action refuses them
TAKES = {
    "initialize": {"--startup-kit", "--kit-id", "--evaluator", "--evaluator-input", "--fixed-args"},
    "prepare": {"--name", "--hypothesis", "--family", "--literature-event", "--run-args"},
    "evaluate": {"--manifest", "--run-args", "--all-prepared", "--parallel"},
    "abandon": {"--manifest"},
    "record-literature": {"--literature", "--name", "--hypothesis", "--family"},
    "record-baseline": {"--baseline", "--score", "--artifacts", "--job-id", "--failure-reason"},
    "record-candidate": {"--manifest", "--score", "--artifacts", "--job-id", "--failure-reason"},
    "suggest": {"--limit"},
    "status": {"--write-best-defaults"},
    "replicate": {"--count", "--parallel"},
    "report": {"--confirm-interrupted"},
}
# campaign settings: (flag, value, setting) - immutable ones are refused when they differ, mutable ones audited
IMMUTABLE = [
    ("--metric", "loss"),
    ("--env", "prod"),
    ("--autofl-yaml", "other.yaml"),
    ("--results", "other.tsv"),
    ("--state", "other_state.json"),
    ("--progress", "other.png"),
    ("--report", "other.md"),
    ("--output-root", "other_runs"),
    ("--base-args", "--lr 0.3"),
    ("--python", "/usr/bin/python3"),
]
MUTABLE = [
    ("--plateau-threshold", "3", "plateau_threshold", 3),
    ("--plateau-min-delta", "0.01", "plateau_min_delta", 0.01),
    ("--hard-crash-threshold", "0", "hard_crash_threshold", 0),
    ("--exploration-batch-size", "0", "exploration_batch_size", 0),
    ("--family-repeat-limit", "0", "family_repeat_limit", 0),
    ("--noise-sigmas", "2", "noise_sigmas", 2.0),
    ("--stop-file", "MY_STOP", "stop_files", ["MY_STOP"]),
    ("--timeout", "123", "timeout", 123.0),
    ("--simulator-no-progress-timeout", "99", "simulator_no_progress_timeout", 99.0),
    ("--allow-network", None, "allow_network", True),
    ("--no-allow-network", None, "allow_network", False),
    ("--prune", None, "prune", True),
    ("--no-prune", None, "prune", False),
    ("--max-candidates", "4", "max_candidates", 4),
    ("--trial-memory", "2G", "trial_memory", 2 * 1024**3),
    ("--trial-disk", "500M", "trial_disk", 500 * 1024**2),
    ("--trial-processes", "300", "trial_processes", 300),
]
CAP_FLAGS = ("--uncapped", "--confirm-user-approved-cap-change")
TRIAL_KINDS = {"evaluate", "replicate"}
SEEN: list[dict] = []  # settings each fake trial ran with


def _every_runner_option() -> set[str]:
    from runner_support import _runner_module

    parser = _runner_module().build_parser()
    return {flag for action in parser._actions for flag in action.option_strings} - {"-h", "--help"}


def test_the_walk_covers_every_option_the_runner_accepts():
    covered = set(ACTION_OPTION_VALUES) | {flag for flag, _ in IMMUTABLE} | {m[0] for m in MUTABLE} | set(CAP_FLAGS)
    assert covered == _every_runner_option()


# --- campaigns ready for each kind of action -------------------------------------------------------------


def _fake_trial(campaign, *, name, run_args, kind, candidate=None, stage_files=None):
    """Score the stand-in client in-process with the trial's run args (the staged client.py of a sealed trial, else
    the workspace's); remember the settings it ran with."""
    from autofl_core.campaign import vocabulary as v
    from autofl_core.trial.execute import TrialResult

    SEEN.append(campaign.settings.to_json())
    path = campaign.paths.workspace / "client.py"
    client = {"__name__": "client", "__file__": str(path)}
    source = (stage_files or {}).get("client.py") or path.read_bytes()
    exec(compile(source, str(path), "exec"), client)
    score = client["evaluate"](list(run_args))
    return TrialResult(
        outcome=v.OUTCOME_SUCCESS,
        score=score,
        metric_name="accuracy",
        metric_source="structured:metrics_summary.json",
        metric_artifact="",
        failure_reason="",
        exit_code=0,
        runtime_seconds=0.01,
        run_command="python job.py " + shlex.join(run_args),
        argv=[],
        artifacts={},
    )


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """One workspace per kind of action, ready for it (one real baseline trial for the simulation ones)."""
    root = tmp_path_factory.mktemp("walk")
    sim = initialized_standin(root / "sim", "--max-candidates", "5")
    poc = standin_workspace(root / "poc-src")
    assert run_inproc(poc, "initialize", "--env", "poc", "--max-candidates", "5").code == 0
    ready = {}
    for kind in ACTION_KINDS:
        source = poc if kind.startswith("record-") and kind != "record-literature" else sim
        workspace = root / "kinds" / kind
        shutil.copytree(source, workspace)
        _prepare_kind(kind, workspace, root)
        ready[kind] = workspace
    return ready


def _prepare_kind(kind: str, workspace, root) -> None:
    if kind in ("evaluate", "abandon"):
        done = run_inproc(workspace, "prepare", "--name", "pending", "--hypothesis", "h", "--run-args", "--lr 0.15")
        assert done.code == 0, done.stderr
    if kind == "prepare":
        assert run_inproc(workspace, "record", "--literature", "--hypothesis", "FedProx").code == 0
    if kind == "record-candidate":
        assert run_inproc(workspace, "record", "--baseline", "--score", "0.75").code == 0
        assert run_inproc(workspace, "prepare", "--name", "external", "--hypothesis", "h").code == 0
        assert run_inproc(workspace, "evaluate", "--run-args", "--lr 0.15").code == 0
    artifacts = root / "downloaded" / "server" / "simulate_job" / "metrics"
    artifacts.mkdir(parents=True, exist_ok=True)
    summary = {"final_aggregated_metrics": [{"name": "accuracy", "value": 0.81}]}
    (artifacts / "metrics_summary.json").write_text(json.dumps(summary))


def _action(kind: str) -> str:
    return kind.split("-")[0]


def _value(flag: str, workspace) -> list[str]:
    value = ACTION_OPTION_VALUES[flag]
    if value == "<manifest>":
        found = sorted((workspace / ".nvflare/autofl/candidates").glob("*/candidate_manifest.json"))
        value = str(found[-1]) if found else str(workspace / ".nvflare/autofl/candidates/none/candidate_manifest.json")
    elif value == "<artifacts>":
        value = str(workspace.parent / "downloaded")
    return [flag] if value is None else [flag, value]


def _run(kind: str, workspace, flag_args: list[str], monkeypatch):
    from autofl_core.runner import campaign_trial

    monkeypatch.setattr(campaign_trial, "run", _fake_trial)
    flag = flag_args[0] if flag_args else None
    base = []
    for option, value in BASE_ARGS[kind].items():
        if option == flag or (flag in RESULT_FLAGS and option in RESULT_FLAGS):
            continue
        base += [option] if value is None else [option, value]
    SEEN.clear()
    return run_inproc(workspace, _action(kind), *base, *flag_args)


def _copy(bases, kind, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(bases[kind], workspace)
    downloaded = bases[kind].parent.parent / "downloaded"
    shutil.copytree(downloaded, tmp_path / "downloaded")
    return workspace


def _assert_refused(done, *words: str) -> None:
    """Exit 2, no envelope, one line that contains each of `words` (the flag it refuses, and why)."""
    assert done.code == 2 and done.envelope is None, done
    assert done.stderr and "\n" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


# --- action options ------------------------------------------------------------------------------------


ACTION_CASES = [(kind, flag) for kind in ACTION_KINDS for flag in ACTION_OPTION_VALUES]


@pytest.mark.parametrize("kind, flag", ACTION_CASES, ids=[f"{k}{f}" for k, f in ACTION_CASES])
def test_action_option(kind, flag, bases, tmp_path, monkeypatch):
    workspace = _copy(bases, kind, tmp_path)
    before = tree_digest(workspace)
    done = _run(kind, workspace, _value(flag, workspace), monkeypatch)
    if (kind, flag) in KIND_CHANGES:  # --literature / --baseline turn one kind of record into another
        _assert_refused(done, *KIND_CHANGES[(kind, flag)])
        assert tree_digest(workspace) == before
        return
    if flag not in TAKES[kind]:
        _assert_refused(done, flag, "does not apply")
        assert tree_digest(workspace) == before, "a refused option changes nothing"
        return
    EFFECTS[(kind, flag)](workspace, done)


KIND_CHANGES = {  # (kind, flag) -> what the refusal names
    ("record-literature", "--baseline"): ("--literature and --baseline are separate records",),
    ("record-baseline", "--literature"): ("--literature and --baseline are separate records",),
    ("record-candidate", "--literature"): ("--score does not apply to record --literature",),
    ("record-candidate", "--baseline"): ("record --baseline is only allowed before any scored baseline",),
}


def _last_row(workspace) -> dict:
    return ledger_rows(workspace)[-1]


def _ok(done) -> dict:
    assert done.code == 0, done.stderr
    return done.envelope


def defaults_wait_for_the_end(workspace, done):
    """Accepted by status, but job.py is written only once the campaign has finished (the walk's campaigns have
    not): refused with the reason; tests/autofl/test_what_users_see.py proves the write itself."""
    _assert_refused(done, "--write-best-defaults", "after the campaign has finished")


def _effects() -> dict:
    """(kind, flag) -> a check that the accepted flag did what it says."""

    def prepare_name(ws, d):
        _ok(d)
        assert manifest(ws, "walk-name")["status"] == "prepared"

    def prepare_field(field, expected):
        def check(ws, d):
            _ok(d)
            assert manifest(ws, "walk")[field] == expected

        return check

    def prepare_run_args(ws, d):
        assert _ok(d)["next_action"] == "evaluate_candidate"
        assert manifest(ws, "walk")["run_args"] == ["--lr", "0.15"]

    def evaluated(ws, d):
        envelope = _ok(d)
        assert envelope["candidate_manifest"].endswith("pending/candidate_manifest.json")
        assert envelope["candidate_status"] == "keep" == manifest(ws, "pending")["status"]
        assert manifest(ws, "pending")["run_args"] == ["--lr", "0.15"]

    def batch_evaluated(ws, d):
        """A batch of the one prepared candidate (issue 24): never more slots than the batch."""
        envelope = _ok(d)
        assert [(e["candidate_id"], e["candidate_status"]) for e in envelope["batch"]] == [("pending", "keep")]
        assert envelope["parallel"] == 1 and manifest(ws, "pending")["status"] == "keep"

    def abandoned(ws, d):
        _ok(d)
        assert manifest(ws, "pending")["status"] == "abandoned"

    def row_field(field, expected):
        def check(ws, d):
            _ok(d)
            assert _last_row(ws)[field] == expected

        return check

    def literature_hypothesis(ws, d):
        _ok(d)
        assert "a specific hypothesis" in _last_row(ws)["diff_summary"]

    def baseline_from_artifacts(ws, d):
        _ok(d)
        assert (_last_row(ws)["score"], _last_row(ws)["metric_source"]) == (0.81, "structured:metrics_summary.json")

    def baseline_job_id(ws, d):
        assert _ok(d)["job_id"] == "job-42" and "job-42" in _last_row(ws)["run_command"]

    def baseline_needs_a_score(ws, d):
        _assert_refused(d, "needs a score")

    def candidate_recorded(ws, d):
        assert _ok(d)["candidate_status"] == "keep" == manifest(ws, "external")["status"]

    def candidate_score(ws, d):
        assert _ok(d)["score"] == 0.66 == _last_row(ws)["score"]

    def candidate_artifacts(ws, d):
        assert _ok(d)["score"] == 0.81 == _last_row(ws)["score"]

    def candidate_job_id(ws, d):
        assert _ok(d)["job_id"] == "job-42" == manifest(ws, "external")["artifacts"]["job_id"]

    def candidate_crash(ws, d):
        assert _ok(d)["candidate_status"] == "crash"
        assert _last_row(ws)["failure_reason"] == "site-1 ran out of memory"

    def limited(ws, d):
        assert len(_ok(d)["suggestions"]) == 1

    def replicated(ws, d):
        assert len(_ok(d)["replicates"]) == 2
        assert [r["status"] for r in ledger_rows(ws)].count("replicate") == 2

    def replicated_in_parallel(ws, d):
        """--parallel 2 with --count 1: one rerun, one slot (never more than the reruns)."""
        envelope = _ok(d)
        assert len(envelope["replicates"]) == 1 and envelope["parallel"] == 1

    def fixed_at_start(ws, d):
        """The evaluator, its inputs and pinned options are fixed when a campaign starts: an existing one refuses."""
        _assert_refused(d, "fixed when the campaign starts")

    def kit_refused_in_simulation(ws, d):
        """A kit is for poc/prod (preflight); the walk's initialize campaign is a simulation."""
        _assert_refused(d, "apply to --env poc|prod")

    def confirmed(ws, d):
        _ok(d)
        assert json.loads((ws / "autofl_report.json").read_text())["provenance"]["confirm_interrupted"] is True

    return {
        ("prepare", "--name"): prepare_name,
        ("prepare", "--hypothesis"): prepare_field("hypothesis", "a specific hypothesis"),
        ("prepare", "--family"): prepare_field("algorithm_family", "optimizer"),
        ("prepare", "--literature-event"): prepare_field("literature_event_id", "lit-0001"),
        ("prepare", "--run-args"): prepare_run_args,
        ("evaluate", "--manifest"): evaluated,
        ("evaluate", "--run-args"): evaluated,
        ("evaluate", "--all-prepared"): batch_evaluated,
        ("evaluate", "--parallel"): batch_evaluated,
        ("abandon", "--manifest"): abandoned,
        ("record-literature", "--literature"): row_field("status", "literature"),
        ("record-literature", "--name"): row_field("name", "walk-name"),
        ("record-literature", "--hypothesis"): literature_hypothesis,
        ("record-literature", "--family"): row_field("algorithm_family", "optimizer"),
        ("record-baseline", "--baseline"): row_field("status", "baseline"),
        ("record-baseline", "--score"): row_field("score", 0.66),
        ("record-baseline", "--artifacts"): baseline_from_artifacts,
        ("record-baseline", "--job-id"): baseline_job_id,
        ("record-baseline", "--failure-reason"): baseline_needs_a_score,
        ("record-candidate", "--manifest"): candidate_recorded,
        ("record-candidate", "--score"): candidate_score,
        ("record-candidate", "--artifacts"): candidate_artifacts,
        ("record-candidate", "--job-id"): candidate_job_id,
        ("record-candidate", "--failure-reason"): candidate_crash,
        ("suggest", "--limit"): limited,
        ("replicate", "--count"): replicated,
        ("replicate", "--parallel"): replicated_in_parallel,
        ("report", "--confirm-interrupted"): confirmed,
        ("initialize", "--evaluator"): fixed_at_start,
        ("initialize", "--evaluator-input"): fixed_at_start,
        ("initialize", "--fixed-args"): fixed_at_start,
        ("initialize", "--startup-kit"): kit_refused_in_simulation,
        ("initialize", "--kit-id"): kit_refused_in_simulation,
        ("status", "--write-best-defaults"): defaults_wait_for_the_end,
    }


EFFECTS = _effects()


def test_every_accepted_action_option_has_an_effect_check():
    accepted = {(kind, flag) for kind in ACTION_KINDS for flag in TAKES[kind]}
    assert accepted == set(EFFECTS)


# --- campaign settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ACTION_KINDS)
@pytest.mark.parametrize("flag, value", IMMUTABLE, ids=[f for f, _ in IMMUTABLE])
def test_immutable_setting_that_differs_is_refused(kind, flag, value, bases, monkeypatch):
    workspace = bases[kind]
    before = tree_digest(workspace)
    done = _run(kind, workspace, [flag, value], monkeypatch)
    _assert_refused(done, flag, "cannot change within a campaign")
    assert tree_digest(workspace) == before


@pytest.mark.parametrize("kind", ACTION_KINDS)
@pytest.mark.parametrize("flag, value, setting, stored", MUTABLE, ids=[m[0] for m in MUTABLE])
def test_mutable_setting_is_audited_and_used(kind, flag, value, setting, stored, bases, tmp_path, monkeypatch):
    workspace = _copy(bases, kind, tmp_path)
    if flag == "--no-allow-network":
        assert run_inproc(workspace, "status", "--allow-network").code == 0
    if flag == "--no-prune":
        assert run_inproc(workspace, "status", "--prune").code == 0
    before = tree_digest(workspace)
    done = _run(kind, workspace, [flag] if value is None else [flag, value], monkeypatch)
    if kind == "report":
        _assert_refused(done, "report changes no setting", flag.replace("--no-", "--"))
        assert tree_digest(workspace) == before
        return
    assert done.code == 0, done.stderr
    assert setting in done.envelope["settings_changed"]
    meta = json.loads((workspace / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"][setting] == stored
    if kind in TRIAL_KINDS:
        assert SEEN and all(seen[setting] == stored for seen in SEEN), "the trial ran with the new setting"


@pytest.mark.parametrize("kind", ACTION_KINDS)
def test_cap_flags_need_each_other(kind, bases, tmp_path, monkeypatch):
    workspace = bases[kind]
    before = tree_digest(workspace)
    _assert_refused(_run(kind, workspace, ["--uncapped"], monkeypatch), "uncapped", "needs the user's approval")
    alone = _run(kind, workspace, ["--confirm-user-approved-cap-change"], monkeypatch)
    _assert_refused(alone, "--confirm-user-approved-cap-change", "--uncapped")
    assert tree_digest(workspace) == before
    copy = _copy(bases, kind, tmp_path)
    done = _run(kind, copy, ["--uncapped", "--confirm-user-approved-cap-change"], monkeypatch)
    if kind == "report":
        _assert_refused(done, "report changes no setting", "--max-candidates")
        return
    assert done.code == 0 and "max_candidates" in done.envelope["settings_changed"], done.stderr
    meta = json.loads((copy / ".nvflare/autofl/campaign.json").read_text())
    assert meta["settings"]["max_candidates"] is None and meta["cap_changes"][-1]["user_approved"] is True


def test_a_new_campaign_refuses_an_option_initialize_does_not_take(tmp_path):
    workspace = standin_workspace(tmp_path)
    before = tree_digest(workspace)
    done = run_inproc(workspace, "initialize", "--run-args", "--lr 0.2")
    _assert_refused(done, "--run-args does not apply to initialize")
    assert tree_digest(workspace) == before and not (workspace / ".nvflare").exists()


@pytest.mark.parametrize(("flag", "value"), [("--score", "0"), ("--limit", "0"), ("--count", "0")])
def test_a_zero_value_is_still_a_given_option(flag, value, bases, monkeypatch):
    workspace = bases["prepare"]
    before = tree_digest(workspace)
    done = _run("prepare", workspace, [flag, value], monkeypatch)
    _assert_refused(done, f"{flag} does not apply to prepare")
    assert tree_digest(workspace) == before
