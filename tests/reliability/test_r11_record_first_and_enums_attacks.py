"""Attacks on the record-first import (the dry run is the source of the job, budget and trust) and on the status
enums of the campaign's files.

The promises under attack: a dry run's record is what job.py asked NVFLARE for in THIS job folder (a cached record
is served only for the same files and arguments, and never where this host cannot seal the run that would make
it); a candidate cannot use the run to widen its trust contract or to change the fixed budget without a refusal
before its trial or a violation after it; a hand-edited campaign file with an unknown, differently-cased or
non-string status is refused with one line (exit 2), nothing changes on disk, and every file the runner writes
holds values, never `Class.NAME`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from runner_support import REPO, dry_run, run_cli, run_inproc, source_dir, standin_workspace, tree_digest

# --- the dry run's cache: a record is served only for the files that made it ------------------------------------


def _job(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text("import nvflare\nfrom conf import ROUNDS\n")
    return folder / "job.py"


def _keys(dryrun, folder: Path) -> tuple:
    return dryrun.job_digest(folder, None, [], "python"), dryrun.folder_digest(folder)


def _assert_key_moves(dryrun, folder: Path, module: Path) -> None:
    """Editing `module` (which job.py can import) must change the dry run's key, or leave the folder uncacheable."""
    before = _keys(dryrun, folder)
    module.write_text("ROUNDS = 50\n")
    after = _keys(dryrun, folder)
    for old, new in zip(before, after, strict=True):
        assert old is None or new is None or old != new, f"{module} changed and the key did not"


def test_a_module_past_the_hashed_file_limit_is_never_served_a_stale_record(tmp_path):
    from autofl_core.importer import dryrun

    folder = tmp_path / "job"
    _job(folder)
    data = folder / "data"
    data.mkdir()
    for index in range(dryrun.MAX_HASHED_FILES + 1):  # a folder of small JSON samples, sorted before the module
        (data / f"{index:04d}.json").write_text("{}")
    (folder / "zconf").mkdir()
    module = folder / "zconf" / "conf.py"
    module.write_text("ROUNDS = 5\n")
    _assert_key_moves(dryrun, folder, module)


def test_a_module_deeper_than_the_walk_is_never_served_a_stale_record(tmp_path):
    from autofl_core.importer import dryrun

    folder = tmp_path / "job"
    _job(folder)
    deep = folder.joinpath(*"abcde")
    deep.mkdir(parents=True)
    module = deep / "conf.py"
    module.write_text("ROUNDS = 5\n")
    _assert_key_moves(dryrun, folder, module)


def test_a_symlinked_module_whose_target_changes_is_never_served_a_stale_record(tmp_path):
    from autofl_core.importer import dryrun

    folder = tmp_path / "job"
    _job(folder)
    target = tmp_path / "shared" / "conf.py"
    target.parent.mkdir()
    target.write_text("ROUNDS = 5\n")
    (folder / "conf.py").symlink_to(target)
    _assert_key_moves(dryrun, folder, target)


def test_a_module_over_the_hashed_size_is_never_served_a_stale_record(tmp_path):
    from autofl_core.importer import dryrun

    folder = tmp_path / "job"
    _job(folder)
    module = folder / "conf.py"
    module.write_text("ROUNDS = 5\n" + "#" * dryrun.MAX_HASHED_BYTES)
    before = _keys(dryrun, folder)
    module.write_text("ROUNDS = 50\n" + "#" * dryrun.MAX_HASHED_BYTES)
    after = _keys(dryrun, folder)
    for old, new in zip(before, after, strict=True):
        assert old is None or new is None or old != new


def test_the_record_of_one_job_folder_is_never_served_for_a_copy_at_another_path(tmp_path):
    """A record names its folder (`job_dir`, a FedJob's absolute simulator workspace): a copy elsewhere with the same
    files runs its own dry run."""
    from autofl_core.importer import dryrun

    first = _job(tmp_path / "a" / "job").parent
    second = tmp_path / "b" / "job"
    shutil.copytree(first, second)
    assert dryrun.job_digest(first, None, [], "python") != dryrun.job_digest(second, None, [], "python")


def test_a_record_planted_in_the_cache_is_not_served_where_this_host_cannot_seal_a_run(tmp_path, monkeypatch):
    """Without namespaces trials run unsealed, so candidate code can write the user's cache folder: a record found
    there must not stand in for a dry run this host cannot make (the static import stands, `dry_run` None)."""
    import tempfile

    from autofl_core.importer import dryrun

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(dryrun, "_MEMO", {})
    monkeypatch.setattr(dryrun, "available", lambda python=None: False)
    job = _job(tmp_path / "job")
    (tmp_path / "job" / "conf.py").write_text("ROUNDS = 5\n")
    key = dryrun.job_digest(job.parent, None, [], "python")
    assert key is not None
    forged = {"status": "recorded", "recipe_attrs": {"num_rounds": 3, "train_script": "job.py"}}
    cache = dryrun._cache_dir()
    (cache / f"{key}.json").write_text(json.dumps(forged))
    assert dry_run(job, [], python="python") is None


@pytest.mark.parametrize("planted", ["oversized", "symlink", "not an object"])
def test_a_cache_entry_that_is_oversized_symlinked_or_not_a_record_is_never_served(tmp_path, monkeypatch, planted):
    import tempfile

    from autofl_core.importer import dryrun

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(dryrun, "_MEMO", {})
    job = _job(tmp_path / "job")
    key = dryrun.job_digest(job.parent, None, [], "python")
    entry = dryrun._cache_dir() / f"{key}.json"
    record = {"status": "recorded", "recipe_attrs": {"num_rounds": 3}}
    if planted == "oversized":
        entry.write_text(json.dumps(dict(record, padding="x" * dryrun.MAX_RECORD_BYTES)))
    elif planted == "symlink":
        (tmp_path / "elsewhere.json").write_text(json.dumps(record))
        entry.symlink_to(tmp_path / "elsewhere.json")
    else:
        entry.write_text("[1, 2]")
    assert dryrun._cached(key) is None


# --- hand-edited statuses in the campaign's files ----------------------------------------------------------------

META = Path(".nvflare") / "autofl"
STABLE = (".nvflare/autofl/campaign.lock", "__pycache__")
WORDS = re.compile(
    r"\b(?:Word|LedgerStatus|ManifestStatus|CandidateKind|TrialOutcome|BudgetCheck|Decision|BaselineStatus|Reason"
    r"|NextAction)\.[A-Z_]+|<[A-Za-z]+\.[A-Z_]+: "
)


@pytest.fixture(scope="module")
def enum_campaign(tmp_path_factory):
    """A stand-in campaign with a kept, a discarded and a crashed candidate, and one prepared draft."""
    workspace = standin_workspace(tmp_path_factory.mktemp("r11"))
    assert run_inproc(workspace, "initialize", "--uncapped").code == 0
    for name, bonus in (("better", "0.05"), ("worse", "-0.05"), ("broken", None)):
        assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "h").code == 0
        client = source_dir(workspace, name) / "client.py"
        text = client.read_text()
        if bonus is None:
            client.write_text(text + "\nraise SystemExit(3)\n")
        else:
            client.write_text(
                "\n".join(f"BONUS = {bonus}" if ln.startswith("BONUS = ") else ln for ln in text.split("\n"))
            )
        assert run_inproc(workspace, "evaluate").code in (0, 1)
    assert run_inproc(workspace, "prepare", "--name", "draft", "--hypothesis", "h").code == 0
    return workspace


@pytest.fixture
def enum_ws(enum_campaign, tmp_path):
    copy = tmp_path / "ws"
    shutil.copytree(enum_campaign, copy, symlinks=True)
    return copy


def test_every_file_the_runner_wrote_holds_status_values_never_enum_names(enum_campaign):
    statuses = [line.split("\t", 1)[0] for line in (enum_campaign / "results.tsv").read_text().splitlines()[1:]]
    assert {"baseline", "keep", "discard", "crash"} <= set(statuses), statuses
    checked = 0
    for path in sorted(enum_campaign.rglob("*")):
        if path.is_file() and path.suffix in (".tsv", ".json", ".yaml", ".md", ".log", ".txt", ".jsonl"):
            found = WORDS.search(path.read_text(errors="replace"))
            assert found is None, f"{path.relative_to(enum_campaign)}: {found.group(0)}"
            checked += 1
    assert checked > 10


def _ledger_status(value: str):
    def edit(workspace: Path) -> None:
        path = workspace / "results.tsv"
        lines = path.read_text().split("\n")
        row = next(i for i, line in enumerate(lines) if line.startswith("keep\t"))
        lines[row] = value + lines[row][len("keep") :]
        path.write_text("\n".join(lines))

    return edit


def _manifest_status(value):
    def edit(workspace: Path) -> None:
        path = workspace / META / "candidates" / "draft" / "candidate_manifest.json"
        document = json.loads(path.read_text())
        document["status"] = value
        path.write_text(json.dumps(document, indent=2))

    return edit


HAND_EDITS = {
    "ledger: upper case": (_ledger_status("KEEP"), "results.tsv"),
    "ledger: title case": (_ledger_status("Keep"), "results.tsv"),
    "ledger: the member's name": (_ledger_status("LedgerStatus.KEEP"), "results.tsv"),
    "ledger: leading space": (_ledger_status(" keep"), "results.tsv"),
    "ledger: trailing space": (_ledger_status("keep "), "results.tsv"),
    "ledger: empty": (_ledger_status(""), "results.tsv"),
    "ledger: a manifest word": (_ledger_status("prepared"), "results.tsv"),
    "manifest: upper case": (_manifest_status("PREPARED"), "candidate_manifest.json"),
    "manifest: the member's name": (_manifest_status("ManifestStatus.PREPARED"), "candidate_manifest.json"),
    "manifest: whitespace": (_manifest_status("prepared\n"), "candidate_manifest.json"),
    "manifest: a number": (_manifest_status(1), "candidate_manifest.json"),
    "manifest: a bool": (_manifest_status(True), "candidate_manifest.json"),
    "manifest: null": (_manifest_status(None), "candidate_manifest.json"),
    "manifest: a list": (_manifest_status(["prepared"]), "candidate_manifest.json"),
    "manifest: a ledger word": (_manifest_status("baseline"), "candidate_manifest.json"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HAND_EDITS))
def test_a_hand_edited_status_is_refused_with_one_line_and_nothing_changes(enum_ws, case):
    edit, named = HAND_EDITS[case]
    edit(enum_ws)
    before = tree_digest(enum_ws, skip=STABLE)
    for action, *args in (("status",), ("evaluate",)):
        done = run_cli(enum_ws, action, *args, timeout=120)
        lines = [line for line in done.stderr.splitlines() if not line.startswith("[autofl ")]
        assert done.code == 2 and "Traceback" not in done.stderr, (case, action, done.code, done.stderr[-600:])
        assert len(lines) == 1 and named in lines[0], (case, lines)
        assert tree_digest(enum_ws, skip=STABLE) == before, (case, action)


@pytest.mark.parametrize("script", ["campaign_guard.py", "plot_progress.py", "campaign_report.py"])
@pytest.mark.parametrize("value", ["KEEP", "LedgerStatus.KEEP", " keep"])
def test_the_read_only_tools_refuse_a_hand_edited_ledger_status_with_one_line(enum_ws, script, value):
    import subprocess
    import sys

    _ledger_status(value)(enum_ws)
    before = tree_digest(enum_ws, skip=STABLE)
    tool = REPO / "skills" / "nvflare-autofl" / "scripts" / script
    done = subprocess.run(
        [sys.executable, str(tool), "results.tsv"], cwd=enum_ws, capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-600:]
    assert len(lines) == 1 and "unknown status" in lines[0] and repr(value) in lines[0], lines
    assert tree_digest(enum_ws, skip=STABLE) == before


# --- a hostile draft: job.py runs in the recorder's process and can tell a dry run from a trial -------------------

RECORDING = """def _recording():
    from nvflare.job_config.fed_job_config import FedJobConfig

    return FedJobConfig.simulator_run.__module__ != "nvflare.job_config.fed_job_config"


class Plan:"""


def _dryrun_available() -> bool:
    from autofl_core.importer import dryrun

    return dryrun.available()


needs_dry_run = pytest.mark.skipif(not _dryrun_available(), reason="this host cannot seal a dry run (no namespaces)")


def _two_faced_draft(campaign: Path, tmp_path: Path, plan_line: str, argument: str) -> tuple[Path, object]:
    """A draft whose job.py asks NVFLARE for the imported budget while it is recorded, and for another one when
    it trains; evaluated."""
    workspace = tmp_path / "ws"
    shutil.copytree(campaign, workspace, symlinks=True)
    assert run_inproc(workspace, "prepare", "--name", "two-faced", "--hypothesis", "h").code == 0
    job = source_dir(workspace, "two-faced") / "job.py"
    text = job.read_text().replace("class Plan:", RECORDING)
    text = text.replace("        self.rounds = args.epochs * 2", f"        self.rounds = args.epochs * 2\n{plan_line}")
    job.write_text(text.replace(*argument))
    return workspace, run_inproc(workspace, "evaluate")


def _trial_budget(workspace: Path) -> dict:
    return json.loads((workspace / "autofl_runs" / "two-faced" / "trial.json").read_text()).get("budget") or {}


@pytest.mark.integration
@pytest.mark.slow
@needs_dry_run
def test_a_draft_that_trains_more_rounds_than_its_dry_run_recorded_is_caught_after(computed_budget_campaign, tmp_path):
    workspace, done = _two_faced_draft(
        computed_budget_campaign,
        tmp_path,
        "        self.rounds = self.rounds if _recording() else self.rounds + 2",
        ("num_rounds=plan.rounds,", "num_rounds=plan.rounds,"),
    )
    refused_before = done.code == 2 and "fixed budget" in done.stderr
    assert refused_before or _trial_budget(workspace).get("status") == "violated", (done.code, done.stderr[-400:])
    assert (
        json.loads((workspace / ".nvflare" / "autofl" / "campaign.json").read_text())["best_candidate"] != "two-faced"
    )


@pytest.mark.integration
@pytest.mark.slow
@needs_dry_run
def test_a_draft_that_lowers_min_clients_only_when_it_trains_is_refused_or_caught(computed_budget_campaign, tmp_path):
    workspace, done = _two_faced_draft(
        computed_budget_campaign,
        tmp_path,
        "        self.least = args.n_clients if _recording() else 1",
        ("min_clients=args.n_clients,", "min_clients=plan.least,"),
    )
    server = workspace / "autofl_runs" / "two-faced" / "simulation" / "server" / "simulate_job" / "app_server"
    ran = json.loads((server / "config" / "config_fed_server.json").read_text()) if server.exists() else {}
    assert '"num_clients": 1' in json.dumps(ran) or done.code == 2, "the draft did not lower min_clients"
    refused_before = done.code == 2 and "fixed budget" in done.stderr
    assert refused_before or _trial_budget(workspace).get("status") == "violated", (done.code, done.stderr[-400:])


FORGER = '''
HONEST = []

def _forge(record, rounds):
    """Rewrite the recorder's record in place: the imported rounds, and the evaluator named as the train script."""
    if isinstance(record, dict):
        for key, value in record.items():
            if key == "num_rounds" and isinstance(value, int):
                record[key] = rounds
            else:
                _forge(value, rounds)
        if isinstance(record.get("recipe_attrs"), dict):
            record["recipe_attrs"]["train_script"] = "evaluate.py"
    elif isinstance(record, list):
        for value in record:
            _forge(value, rounds)


def _recorder_state():
    import sys

    frame = sys._getframe()
    while frame is not None and "STATE" not in frame.f_globals:
        frame = frame.f_back
    return frame.f_globals["STATE"] if frame is not None else None


if __name__ == "__main__":
    try:
        main()
    finally:  # after the run, whether the recorder stops job.py there or lets it go on
        state = _recorder_state()
        if state is not None and getattr(state, "record", None):
            _forge(state.record, HONEST[0])
'''


@pytest.mark.integration
@pytest.mark.slow
@needs_dry_run
def test_a_draft_that_rewrites_its_own_record_widens_no_trust_and_its_rounds_are_caught(
    computed_budget_campaign, tmp_path
):
    """job.py finds the recorder's state through the call stack and rewrites the record after NVFLARE's entry point:
    the rounds the imported job would ask for (so the perturbed runs agree) where it asks for 1.5 times as many, and
    `evaluate.py` as its train script."""
    workspace = tmp_path / "ws"
    shutil.copytree(computed_budget_campaign, workspace, symlinks=True)
    trust_before = (workspace / "autofl.yaml").read_text().split("trust:")[1]
    assert run_inproc(workspace, "prepare", "--name", "forger", "--hypothesis", "h").code == 0
    job = source_dir(workspace, "forger") / "job.py"
    text = job.read_text().replace("args.epochs * 2", "args.epochs * 3\n        HONEST[:] = [args.epochs * 2]")
    job.write_text(text.replace('\n\nif __name__ == "__main__":\n    main()\n', FORGER))
    done = run_inproc(workspace, "evaluate")
    log = (workspace / ".nvflare" / "autofl" / "candidates" / "forger" / "import.log").read_text()
    forged = yaml_of(workspace / ".nvflare" / "autofl" / "candidates" / "forger" / "candidate_autofl.yaml")
    assert forged["trust"]["train_script"] == "evaluate.py", "the forgery did not reach the draft's import"
    assert (workspace / "autofl.yaml").read_text().split("trust:")[1] == trust_before
    trial = workspace / "autofl_runs" / "forger" / "trial.json"
    budget = (json.loads(trial.read_text()).get("budget") or {}) if trial.exists() else {}
    assert (done.code == 2 and "fixed budget" in done.stderr) or budget.get("status") == "violated", (log, budget)
    assert run_inproc(workspace, "prepare", "--name", "next", "--hypothesis", "h").code == 0
    (source_dir(workspace, "next") / "evaluate.py").write_text("# edited by a candidate\n")
    pick = workspace / ".nvflare" / "autofl" / "candidates" / "next" / "candidate_manifest.json"
    refused = run_inproc(workspace, "evaluate", "--manifest", str(pick))
    assert refused.code == 2 and "evaluate.py" in refused.stderr, refused.stderr


def yaml_of(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("decision", "CONTINUE"),
        ("next_action", "NextAction.FINAL_REPORT"),
        ("reason", "Plateau"),
        ("baseline_status", 7),
    ],
)
def test_hand_edited_state_words_are_recomputed_never_read_back(enum_ws, key, value):
    """campaign_state.json is an output: a hand-edited word in it is replaced by the computed value (never echoed,
    never a traceback) and the campaign's records stay byte-identical."""
    state = enum_ws / META / "campaign_state.json"
    assert run_cli(enum_ws, "status").code == 0
    computed = json.loads(state.read_text())
    state.write_text(json.dumps(dict(computed, **{key: value})))
    records = tree_digest(enum_ws, skip=(*STABLE, ".nvflare/autofl/campaign_state.json", "autofl_report"))
    done = run_cli(enum_ws, "status")
    assert done.code == 0 and "Traceback" not in done.stderr, done.stderr[-400:]
    again = json.loads(state.read_text())
    assert {k: v for k, v in again.items() if k != "updated_at"} == {
        k: v for k, v in computed.items() if k != "updated_at"
    }
    assert tree_digest(enum_ws, skip=(*STABLE, ".nvflare/autofl/campaign_state.json", "autofl_report")) == records


# --- the record's train script: job_dir games never reach outside the job folder ----------------------------------


@pytest.mark.parametrize(
    ("job_dir", "script"),
    [
        ("/w/job", "/w/job/../other/client.py"),  # normalized out of the folder
        ("/w/job", "/w/jobX/client.py"),  # a sibling folder sharing the prefix
        ("/w/job", "../client.py"),  # job.py's parent
        ("/", "/etc/passwd"),  # a record claiming the job sits at the root
        ("", "/etc/passwd"),
        ("/w/job", "/w/job/.nvflare/autofl/campaign.json"),  # the campaign's own files
        ("/w/job", "/w/job/autofl_runs/baseline/trial.json"),
    ],
)
def test_a_record_s_train_script_outside_the_job_folder_never_enters_the_trust_contract(tmp_path, job_dir, script):
    from autofl_core.importer import api, recorded
    from autofl_core.importer.files import Workspace

    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "job.py").write_text("import nvflare\n")
    for rel in ("etc/passwd", ".nvflare/autofl/campaign.json", "autofl_runs/baseline/trial.json"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("x = 1\n")
    (tmp_path / "client.py").write_text("x = 1\n")
    found = recorded.train_script(
        recorded.parse(
            {"status": "recorded", "entry": "export_job", "job_dir": job_dir, "recipe_attrs": {"train_script": script}}
        )
    )
    workspace = Workspace(folder)
    rel, _tree, _notes = api._script_tree("job.py", found, workspace.read_file)
    trust = api.trust_section("job.py", api.ast.Module([], []), rel, None, workspace.exists, [])
    inside = [p for p in trust["allowed_edit_paths"] if p != "job.py"]
    assert inside in ([], ["etc/passwd"]), (found, trust)  # only a file that really is inside the folder
    assert not any(p.startswith((".nvflare", "autofl_runs", "/", "..")) for p in trust["allowed_edit_paths"])


@pytest.mark.parametrize(
    ("sampled", "min_clients", "num_clients", "status"),
    [
        ([["site-1", "site-2"], ["site-2", "site-1"]], 2, 2, "verified"),
        ([["site-2"], ["site-1"]], 2, 2, "violated"),  # one client a round, two sites over the run
        ([["site-1", "site-2"], ["site-1"]], 2, 2, "violated"),
        ([["site-1", "site-2"]], 3, 2, "verified"),  # a minimum over the sites: every site was sampled
        ([["site-1"]], 1, 2, "verified"),
        ([None, None], 2, 2, "verified"),  # a workflow that logs no sampling (ScatterAndGather)
    ],
)
def test_a_round_that_sampled_fewer_clients_than_the_minimum_is_a_budget_violation(
    sampled, min_clients, num_clients, status
):
    from autofl_core.trial import what_ran

    lines = [
        f"Round {i} started.\n" + (f"Sampled clients: {names}\n" if names else "") + "Total clients: 2\n"
        for i, names in enumerate(sampled)
    ]
    ran = what_ran.from_artifacts("".join(lines).encode(), None, [])
    verdict = what_ran.check(ran, num_rounds=len(sampled), num_clients=num_clients, min_clients=min_clients)
    assert verdict.status == status, verdict
