"""R8: adversarial candidate code (spec autofl.md "Sealed trials", quality bar R8), one test per attack class.

Every candidate is written as an attacker (or a careless agent) would write it, with candidate code alone, and
each also claims an improvement, so a runner that trusted it would keep it:
1. the fixed budget changed at run time: never kept (refused at evaluate, or a `crash` row `budget violated: ...`
   read from what NVFLARE's artifacts show ran);
2. the trial writes the evidence it is judged by (ledger, campaign.json, autofl.yaml, best snapshot, forged
   bytecode, a shadowing module): nothing reaches the workspace, a later honest candidate gets its true score;
3. the same with namespaces unavailable: restored byte-identical, reported as `tampering`, the row a crash;
4. helper subprocesses (interpreter and version probes) never run a module of the job;
5. a double-forked setsid daemon with a scrubbed environment or an overwritten token dies with its trial;
6. the runner is invisible through /proc: its environment and stdin never leak, its pid is not seen;
7. the budget check and the containment on real NVFLARE, and the sandbox does not change real scores.
Tests that need namespaces fail (never skip) where the machine lacks them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import r8_attacks as attacks
from runner_support import (
    REPO,
    WITHOUT_NAMESPACES,
    ledger_rows,
    manifest,
    run_cli,
    run_inproc,
    run_job_settled,
    source_dir,
    standin_workspace,
)
from sealed_checks import (
    SECRET_PREFIX,
    assert_evidence_unchanged,
    assert_live_job_is_the_best,
    assert_sealed,
    assert_unsealed,
    evidence,
    files_under,
    helper_calls,
    isolated_mode,
    job_folder,
    processes_with,
    recording_python,
)

pytestmark = pytest.mark.slow

# Runs the runner in a user namespace in which no further user namespace can be created: namespaces unavailable.
WORSE = "--lr 0.5"  # true score 0.55, below the baseline's 0.75
BETTER = "--lr 0.2"  # true score 0.85
BETTER_SCORE = 0.85


@pytest.fixture(scope="module")
def namespaces():
    """User + mount + PID namespaces (and the `unshare` tool of the no-namespace runs) must work here."""
    try:
        done = subprocess.run(
            ["unshare", "-U", "-r", "-m", "-p", "-f", "--mount-proc", "true"], capture_output=True, timeout=30
        )
        problem = None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()
    except (OSError, subprocess.SubprocessError) as error:
        problem = str(error)
    if problem:
        pytest.fail(f"R8 needs user, mount and PID namespaces and util-linux unshare (CI has them): {problem}")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One initialized stand-in campaign with a cap of 20; each test works on a copy."""
    workspace = standin_workspace(tmp_path_factory.mktemp("r8"))
    done = run_inproc(workspace, "initialize", "--max-candidates", "20")
    assert done.code == 0 and ledger_rows(workspace)[0]["score"] == 0.75, done
    return workspace


@pytest.fixture
def ws(campaign, tmp_path):
    copy = tmp_path / "ws"
    shutil.copytree(campaign, copy, symlinks=True)
    return copy


def prepare(workspace: Path, name: str, *, append: str = "", files: dict | None = None, job=None) -> Path:
    """prepare `name`; append code to its client.py, add files, edit job.py text with `job(text) -> text`."""
    assert run_inproc(workspace, "prepare", "--name", name, "--hypothesis", "r8 probe").code == 0
    folder = source_dir(workspace, name)
    if append:
        client = folder / "client.py"
        client.write_text(client.read_text() + "\n" + append + "\n")
    for rel, text in (files or {}).items():
        (folder / rel).write_text(text)
    if job is not None:
        (folder / "job.py").write_text(job((folder / "job.py").read_text()))
    return folder


def honest_candidate_scores_true(workspace: Path, prefix: tuple[str, ...] = ()) -> None:
    """A following argument-only candidate (true score 0.85) is kept with exactly that score."""
    prepare(workspace, "honest")
    done = run_cli(workspace, "evaluate", "--run-args", BETTER, prefix=prefix)
    row = ledger_rows(workspace)[-1]
    assert (done.code, row["name"], row["status"], row["score"]) == (0, "honest", "keep", BETTER_SCORE), (
        f"a later honest candidate: {row['status']} with {row['score']}, its true score is {BETTER_SCORE}"
    )


# 1. The fixed budget changed at run time ------------------------------------------------------------------------


def after_parse(line: str):
    return lambda text: text.replace("    args = define_parser()\n", f"    args = define_parser()\n    {line}\n")


PATCH_ROUNDS = """import standin_flare

_init = standin_flare.NumpyFedAvgRecipe.__init__


def _tuned(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.num_rounds = 12


standin_flare.NumpyFedAvgRecipe.__init__ = _tuned
"""
PATCH_CLIENTS = """import standin_flare

_init = standin_flare.SimEnv.__init__


def _tuned(self, num_clients=2, workspace_root=None):
    _init(self, num_clients=3, workspace_root=workspace_root)


standin_flare.SimEnv.__init__ = _tuned
"""
SET_ROUNDS = "def tune(args):\n    args.num_rounds = 12\n"
IMPORT_TUNING = lambda text: text.replace(  # noqa: E731
    "from standin_flare import NumpyFedAvgRecipe, SimEnv\n",
    "import tuning  # noqa: F401\nfrom standin_flare import NumpyFedAvgRecipe, SimEnv\n",
)
ROUNDS, CLIENTS = "12 rounds ran, the fixed budget is 3", "3 clients took part, the fixed budget is 2"
FOUR_CLIENTS = "4 clients took part, the fixed budget is 2"
WRAP_SIMENV = """
_simenv_init = SimEnv.__init__


def _four_sites(self, *args, **kwargs):
    kwargs["num_clients"] = 4
    _simenv_init(self, **kwargs)


SimEnv.__init__ = _four_sites
"""
BUDGET_ATTACKS = {  # case: (job.py edit, new files, what the run-time check must say, must it reach that check)
    "setattr": (after_parse('setattr(args, "num_rounds", 12)'), {}, ROUNDS, False),  # the reading follows it
    "object.__setattr__": (after_parse('object.__setattr__(args, "num_rounds", 12)'), {}, ROUNDS, False),
    "module sets the option": (  # the reading refuses the namespace given to code it does not follow
        after_parse("import tuning; tuning.tune(args)"),
        {"tuning.py": SET_ROUNDS},
        ROUNDS,
        False,
    ),
    "vars": (after_parse('vars(args)["num_rounds"] = 12'), {}, ROUNDS, False),
    "sys.argv": (
        lambda text: text.replace("import argparse\n", "import argparse\nimport sys\n").replace(
            "    args = define_parser()\n", '    sys.argv += ["--num_rounds", "12"]\n    args = define_parser()\n'
        ),
        {},
        ROUNDS,
        False,
    ),
    "recipe attribute": (
        lambda text: text.replace("    env = SimEnv(", "    recipe.num_rounds = 12\n    env = SimEnv("),
        {},
        ROUNDS,
        False,
    ),
    "module patches the recipe": (IMPORT_TUNING, {"tuning.py": PATCH_ROUNDS}, ROUNDS, True),
    "module patches SimEnv": (IMPORT_TUNING, {"tuning.py": PATCH_CLIENTS}, CLIENTS, True),
    "job wraps SimEnv.__init__": (
        lambda text: text.replace("\ndef main():\n", WRAP_SIMENV + "\n\ndef main():\n"),
        {},
        FOUR_CLIENTS,
        True,
    ),
    "attribute set after construction": (
        lambda text: text.replace(
            "    run = recipe.execute(env)\n", "    env.num_clients = 4\n    run = recipe.execute(env)\n"
        ),
        {},
        FOUR_CLIENTS,
        False,
    ),
    "environment variable": (
        lambda text: text.replace("import argparse\n", "import argparse\nimport os\n").replace(
            "    env = SimEnv(", '    args.n_clients = int(os.environ.get("AUTOFL_SITES", "4"))\n    env = SimEnv('
        ),
        {},
        FOUR_CLIENTS,
        False,
    ),
    "module sets the environment the job reads": (
        lambda text: IMPORT_TUNING(text).replace(
            "    env = SimEnv(num_clients=args.n_clients",
            '    env = SimEnv(num_clients=int(__import__("os").environ.get("SITES", args.n_clients))',
        ),
        {"tuning.py": 'import os\n\nos.environ["SITES"] = "4"\n'},
        FOUR_CLIENTS,
        False,
    ),
}
RAN = {ROUNDS: (12, 2), CLIENTS: (3, 3), FOUR_CLIENTS: (3, 4)}


@pytest.mark.parametrize("case", list(BUDGET_ATTACKS), ids=lambda c: c.replace(" ", "-"))
def test_a_budget_changed_at_run_time_is_never_kept(ws, case):
    edit, files, said, must_run = BUDGET_ATTACKS[case]
    prepare(ws, "budget", files=files, job=edit)
    before, live_before = evidence(ws), job_folder(ws)
    done = run_inproc(ws, "evaluate", "--run-args", BETTER)  # 0.85 > 0.75: kept if the budget were trusted
    if done.code == 2 and not must_run:  # the static re-import already saw it: refused, nothing changed
        assert evidence(ws) == before and job_folder(ws) == live_before
        assert manifest(ws, "budget")["status"] == "prepared"
        return
    row = ledger_rows(ws)[-1]
    assert (done.code, row["name"], row["status"]) == (1, "budget", "crash"), (done.stderr, row["status"])
    assert row["failure_reason"].startswith("budget violated: ") and said in row["failure_reason"], row
    budget = manifest(ws, "budget")["result"]["budget"]
    assert budget["status"] == "violated" and said in budget["reason"], budget
    assert (budget["rounds"], budget["clients"]) == RAN[said], budget
    assert_evidence_unchanged(ws, before, "budget")
    assert_live_job_is_the_best(ws)


def test_an_honest_trial_has_its_budget_verified(ws):
    """The control of the check above: the budget that ran is read and found equal, the candidate is kept."""
    prepare(ws, "honest")
    done = run_inproc(ws, "evaluate", "--run-args", BETTER)
    assert done.code == 0 and done.envelope["candidate_status"] == "keep"
    budget = manifest(ws, "honest")["result"]["budget"]
    assert (budget["status"], budget["rounds"], budget["clients"]) == ("verified", 3, 2), budget


# 2./3. The trial writes the evidence --------------------------------------------------------------------------

TAMPERING = {  # the attack, the evidence it changes (workspace-relative)
    "ledger": (attacks.lower_the_baseline, "results.tsv"),
    "campaign.json": (attacks.loosen_campaign_json, ".nvflare/autofl/campaign.json"),
    "autofl.yaml": (attacks.widen_the_contract, "autofl.yaml"),
    "best snapshot": (attacks.plant_in_the_snapshot, ".nvflare/autofl/snapshots/best/"),
}
POISON = {"forged bytecode": attacks.forge_bytecode, "shadowing module": attacks.write_shadowing_module}
ALL_WRITES = {**{case: attack for case, (attack, _) in TAMPERING.items()}, **POISON}


@pytest.mark.parametrize("case", list(ALL_WRITES), ids=lambda c: c.replace(" ", "-"))
def test_a_sealed_trial_cannot_write_the_evidence(namespaces, ws, case):
    prepare(ws, "tamper", append=ALL_WRITES[case](ws))
    before, live_before = evidence(ws), job_folder(ws)
    done = run_cli(ws, "evaluate", "--run-args", WORSE)
    assert done.envelope is not None, done.stderr
    row = assert_evidence_unchanged(ws, before, "tamper")
    assert row["status"] in ("discard", "crash"), row  # 0.55 < 0.75: never kept
    changed = sorted(
        rel for rel in set(live_before) | set(job_folder(ws)) if live_before.get(rel) != job_folder(ws).get(rel)
    )
    assert changed == [], f"trial writes reached the workspace: {changed}"
    assert_live_job_is_the_best(ws)
    honest_candidate_scores_true(ws)
    assert_sealed(done.envelope)


@pytest.mark.parametrize("case", list(TAMPERING), ids=lambda c: c.replace(" ", "-"))
def test_without_namespaces_tampering_is_restored_and_recorded(namespaces, ws, case):
    attack, path = TAMPERING[case]
    prepare(ws, "tamper", append=attack(ws))
    before = evidence(ws)
    done = run_cli(ws, "evaluate", "--run-args", WORSE, prefix=WITHOUT_NAMESPACES)
    assert done.envelope is not None, done.stderr
    row = assert_evidence_unchanged(ws, before, "tamper")
    assert_live_job_is_the_best(ws)
    assert (done.code, done.envelope["candidate_status"], row["status"]) == (1, "crash", "crash"), row
    assert row["failure_reason"].startswith("tampering: "), row
    tampering = done.envelope.get("tampering") or []
    assert any(rel == path or (path.endswith("/") and rel.startswith(path)) for rel in tampering), tampering
    assert_unsealed(done.envelope)
    honest_candidate_scores_true(ws, prefix=WITHOUT_NAMESPACES)


@pytest.mark.parametrize("case", list(POISON), ids=lambda c: c.replace(" ", "-"))
def test_without_namespaces_bytecode_and_shadowing_modules_do_not_outlive_the_trial(namespaces, ws, case):
    prepare(ws, "poison", append=POISON[case](ws))
    planted = attacks.forged_bytecode_path(ws, sys.implementation.cache_tag) if "bytecode" in case else ws / "shlex.py"
    existed = planted.exists()
    done = run_cli(ws, "evaluate", "--run-args", WORSE, prefix=WITHOUT_NAMESPACES)
    assert done.envelope is not None, done.stderr
    assert ledger_rows(ws)[-1]["status"] in ("discard", "crash")
    if not existed:
        assert not planted.exists(), f"{planted.name} the trial left in the workspace was not removed"
    assert_live_job_is_the_best(ws)
    honest_candidate_scores_true(ws, prefix=WITHOUT_NAMESPACES)
    assert_unsealed(done.envelope)


# 4. Helper subprocesses ----------------------------------------------------------------------------------------


def test_interpreter_and_version_probes_run_isolated_outside_the_job(tmp_path):
    """Recorded by a wrapper interpreter that appends to a log on the host (helpers run on the host with -I)."""
    workspace = standin_workspace(tmp_path)
    wrapper, log = recording_python(tmp_path)
    env = {**os.environ, f"{SECRET_PREFIX}_SECRET": uuid.uuid4().hex}
    assert run_cli(workspace, "initialize", "--python", str(wrapper), "--uncapped", env=env).code == 0
    prepare(workspace, "no-result", append=attacks.NO_RESULT)  # the no-result path asks for nvflare's version
    done = run_cli(workspace, "evaluate", env=env)
    assert done.code == 1 and ledger_rows(workspace)[-1]["status"] == "crash", done.stderr
    calls = helper_calls(log)
    assert calls, "the interpreter check at initialize was not recorded"
    for cwd, secret, options in calls:
        assert isolated_mode(options), f"a helper ran without -I: {options}"
        assert not Path(cwd).resolve().is_relative_to(workspace.resolve()), f"a helper ran in {cwd}"
        assert secret == "", "a helper got the runner's environment"


@pytest.mark.parametrize("module", ["importlib", "csv"])
def test_a_module_of_a_kept_candidate_never_runs_in_a_helper(ws, tmp_path, module):
    """site.py is not in this list: Python imports site before the working directory is on sys.path."""
    marker = tmp_path / "helper-ran.txt"
    prepare(ws, "helpers", files={f"{module}.py": attacks.helper_shadow(module, marker)})
    kept = run_inproc(ws, "evaluate", "--run-args", BETTER)
    assert kept.code == 0 and kept.envelope["candidate_status"] == "keep", kept
    assert (ws / f"{module}.py").exists()
    prepare(ws, "no-result", append=attacks.NO_RESULT)  # the no-result path runs the nvflare version probe
    assert run_cli(ws, "evaluate").code == 1
    fresh = tmp_path / "next-campaign"  # the improved job starts a new campaign: the interpreter check runs
    shutil.copytree(ws / ".nvflare" / "autofl" / "snapshots" / "best" / "source", fresh)
    assert run_cli(fresh, "initialize", "--uncapped").code == 0
    assert not marker.exists(), f"{module}.py of the job ran inside a helper, in: {marker.read_text()!r}"


# 5. Processes that outlive the trial ---------------------------------------------------------------------------


@pytest.fixture
def daemon_tag():
    """A unique command-line tag; any process of this test still carrying it is killed at the end, by pid."""
    tag = f"r8-daemon-{uuid.uuid4().hex}"
    yield tag
    for pid in processes_with(tag):
        try:
            os.kill(pid, 9)
        except OSError:
            pass


DELAY = 8.0  # seconds from the daemon's start (during the trial) to its write: it is still asleep when evaluate returns


@pytest.mark.parametrize("network", ["isolated", "allowed"])
@pytest.mark.parametrize("scrub", ["empty", "token"], ids=["empty-environment", "overwritten-token"])
def test_a_detached_daemon_ends_with_its_trial(namespaces, ws, daemon_tag, scrub, network):
    prepare(ws, "daemon", append=attacks.daemon(daemon_tag, DELAY, ws / "results.tsv", scrub=scrub))
    flags = ["--allow-network"] if network == "allowed" else []
    started = time.monotonic()
    done = run_cli(ws, "evaluate", "--run-args", WORSE, *flags)
    assert done.envelope is not None and done.envelope["candidate_status"] != "keep", done.stderr
    assert processes_with(daemon_tag) == [], "a process of the trial outlived it"
    right_after = files_under(ws)
    time.sleep(max(0.0, started + DELAY + 2 - time.monotonic()))
    assert processes_with(daemon_tag) == []
    assert not (ws / f"escaped-{daemon_tag}").exists(), "the daemon wrote into the workspace after the trial"
    assert files_under(ws) == right_after
    trial = json.loads((ws / "autofl_runs" / "daemon" / "trial.json").read_text())
    assert trial["survivors"] == []


# 6. Reading the runner through /proc ---------------------------------------------------------------------------


@pytest.mark.parametrize("network", ["isolated", "allowed"])
def test_the_runner_is_invisible_from_the_trial(namespaces, ws, tmp_path, network):
    secret, stdin_secret = f"{SECRET_PREFIX}_VALUE_{uuid.uuid4().hex}", f"{SECRET_PREFIX}_STDIN_{uuid.uuid4().hex}"
    stdin_file = tmp_path / "stdin.txt"
    stdin_file.write_text(stdin_secret + "\n")
    prepare(ws, "proc", append=attacks.read_the_runner(ws / "proc-dump.txt", SECRET_PREFIX))
    flags = ["--allow-network"] if network == "allowed" else []
    with open(stdin_file, encoding="utf-8") as stdin:
        done = run_cli(
            ws,
            "evaluate",
            "--run-args",
            WORSE,
            *flags,
            env={**os.environ, f"{SECRET_PREFIX}_SECRET": secret},
            stdin=stdin,
        )
    assert done.envelope is not None, done.stderr
    log = (ws / "autofl_runs" / "proc" / "run.log").read_text()
    seen = json.loads(next(line for line in log.splitlines() if line.startswith("R8-PROC-SEEN "))[13:])
    assert seen["runners"] == [], f"the trial sees the runner's process: {seen['runners']}"
    assert done.pid not in seen["pids"], f"the runner's pid {done.pid} is visible from the trial"
    for value in (secret, stdin_secret):
        assert value not in done.stderr and value not in json.dumps(done.envelope)
    for rel, data in files_under(ws).items():
        for value in (secret, stdin_secret):
            assert value.encode() not in data, f"{rel} holds the runner's {'stdin' if 'STDIN' in value else 'env'}"


# 7. Real NVFLARE -------------------------------------------------------------------------------------------------

EXAMPLE = REPO / "examples" / "hello-numpy"
REAL_BASELINE_TEXT = "\t0.752500\t"


@pytest.fixture(scope="module")
def real_campaign(tmp_path_factory):
    """hello-numpy initialized (a real baseline), and the bare job run meanwhile with --lr 0.1: its score."""
    base = tmp_path_factory.mktemp("r8real")
    workspace, bare = base / "ws", base / "bare"
    shutil.copytree(EXAMPLE, workspace)
    shutil.copytree(EXAMPLE, bare)
    env = {**os.environ, "NVFLARE_SIMULATOR_WORKSPACE_ROOT": str(base / "bare-sim")}
    with ThreadPoolExecutor(1) as pool:  # NVFLARE's own stall in the bare job: run once more, as the runner does
        bare_run = pool.submit(run_job_settled, [sys.executable, "job.py", "--lr", "0.1"], bare, env)
        done = run_cli(workspace, "initialize", "--uncapped")
        bare_code, bare_output = bare_run.result()
    assert done.code == 0, done.stderr
    assert bare_code == 0, bare_output[-3000:]
    assert REAL_BASELINE_TEXT in (workspace / "results.tsv").read_text()
    summary = base / "bare-sim" / "hello-numpy" / "server" / "simulate_job" / "metrics" / "metrics_summary.json"
    return workspace, json.loads(summary.read_text())["final_aggregated_metrics"][0]["value"]


@pytest.mark.integration
def test_real_nvflare_budget_changed_at_run_time_is_a_crash(namespaces, real_campaign, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(real_campaign[0], workspace)
    tune = 'import sys\n\nsys.argv += ["--num_rounds", "5"]\n'  # another module's code, run on import: runs see it
    edit = lambda text: text.replace("import argparse\n", "import argparse\n\nimport tuning  # noqa: F401\n")  # noqa: E731
    prepare(workspace, "more-rounds", files={"tuning.py": tune}, job=edit)
    # the import's dry run sees the budget NVFLARE is asked for and refuses the candidate before it trains ...
    refused = run_cli(workspace, "evaluate", "--run-args", "--lr 0.1")
    assert refused.code == 2 and "changes the fixed budget (num_rounds 3 -> 5)" in refused.stderr, refused.stderr
    assert ledger_rows(workspace)[-1]["name"] == "baseline"
    # ... and where no dry run happens, the run-time check of what ran stays the last line of defence
    done = run_cli(workspace, "evaluate", "--run-args", "--lr 0.1", env={**os.environ, "AUTOFL_IMPORT_DRY_RUN": "0"})
    row = ledger_rows(workspace)[-1]
    assert (done.code, row["name"], row["status"]) == (1, "more-rounds", "crash"), done.stderr
    assert row["failure_reason"].startswith("budget violated: 5 rounds ran, the fixed budget is 3"), row
    budget = manifest(workspace, "more-rounds")["result"]["budget"]
    assert (budget["status"], budget["rounds"], budget["clients"]) == ("violated", 5, 2), budget
    assert_live_job_is_the_best(workspace)


@pytest.mark.integration
def test_real_nvflare_client_count_changed_at_run_time_is_a_crash(namespaces, real_campaign, tmp_path):
    """SimEnv's constructor wrapped in job.py: NVFLARE runs three clients, the budget says two (never kept).

    With three clients of which FedAvg samples two, NVFLARE 2.9's simulator often loses a client as it starts its
    worker (`Communication error with client site-N: [Errno 104] ...`, then it waits forever): that run is a crash
    named at once as a simulator stall, and the candidate is tried again under a new name until one runs through."""
    workspace = tmp_path / "ws"
    shutil.copytree(real_campaign[0], workspace)
    wrap = WRAP_SIMENV.replace('kwargs["num_clients"] = 4', 'kwargs["num_clients"] = 3')
    edit = lambda text: text.replace("\ndef main():\n", wrap + "\n\ndef main():\n")  # noqa: E731
    prepare(workspace, "more-sites", job=edit)
    # the import's dry run sees the client count NVFLARE is asked for and refuses the candidate before it trains ...
    refused = run_cli(workspace, "evaluate", "--run-args", "--lr 0.1")
    assert refused.code == 2 and "changes the fixed budget (num_clients 2 -> 3)" in refused.stderr, refused.stderr
    assert ledger_rows(workspace)[-1]["name"] == "baseline"
    # ... and where no dry run happens, what ran (the clients that joined and sent results) is checked
    no_dry_run = {**os.environ, "AUTOFL_IMPORT_DRY_RUN": "0"}
    for attempt in range(4):
        name = "more-sites" if attempt == 0 else f"more-sites-{attempt}"
        if attempt:
            prepare(workspace, name, job=edit)
        done = run_cli(workspace, "evaluate", "--run-args", f"--lr 0.1{attempt}", env=no_dry_run)
        row = ledger_rows(workspace)[-1]
        assert (done.code, row["name"], row["status"]) == (1, name, "crash"), done.stderr  # never kept
        if not row["failure_reason"].startswith("simulator stall: server log shows 'Communication error with client"):
            break
    assert row["failure_reason"] == "budget violated: 3 clients took part, the fixed budget is 2", row
    budget = manifest(workspace, name)["result"]["budget"]
    assert (budget["status"], budget["rounds"], budget["clients"]) == ("violated", 3, 3), budget
    assert_live_job_is_the_best(workspace)


@pytest.mark.integration
def test_real_nvflare_trial_is_contained_and_scores_as_the_bare_job(namespaces, real_campaign, tmp_path, daemon_tag):
    workspace, bare_score = tmp_path / "ws", real_campaign[1]
    shutil.copytree(real_campaign[0], workspace)
    target = workspace / "results.tsv"
    code = attacks.lower_the_baseline(workspace, REAL_BASELINE_TEXT) + attacks.daemon(
        daemon_tag, DELAY, target, scrub="empty", score_text=REAL_BASELINE_TEXT
    )
    prepare(workspace, "attack", append=code)
    before, started = evidence(workspace), time.monotonic()
    done = run_cli(workspace, "evaluate", "--run-args", "--lr 0.005")  # worse than the baseline
    assert done.envelope is not None and done.envelope["candidate_status"] != "keep", done.stderr
    assert_evidence_unchanged(workspace, before, "attack")
    assert processes_with(daemon_tag) == [], "a process of the trial outlived it"
    assert_sealed(done.envelope)
    prepare(workspace, "plain")
    done = run_cli(workspace, "evaluate", "--run-args", "--lr 0.1")
    assert done.code == 0 and ledger_rows(workspace)[-1]["score"] == round(bare_score, 6), (bare_score, done.stderr)
    time.sleep(max(0.0, started + DELAY + 2 - time.monotonic()))
    assert not (workspace / f"escaped-{daemon_tag}").exists() and REAL_BASELINE_TEXT in target.read_text()
    assert_live_job_is_the_best(workspace)


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "contained"])
def test_a_trial_cannot_forge_what_the_runner_may_remove(namespaces, ws, sealed):
    """The records of what the runner may remove from the workspace (created.json, installed.json) are evidence
    too: a trial that names the user's data file in them, with its true hash, gets nothing removed, neither at
    its own discard nor at the next keep (contained: the records are restored and the trial is a crash)."""
    (ws / "data.csv").write_text("a,b\n1,2\n")
    prepare(ws, "tamper", append=attacks.forge_removal_records(ws))
    done = run_cli(ws, "evaluate", "--run-args", WORSE, prefix=() if sealed else WITHOUT_NAMESPACES)
    assert done.envelope is not None, done.stderr
    meta = ws / ".nvflare" / "autofl"
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (meta / "installed.json").exists() and not (meta / "created.json").exists()
    if not sealed:
        assert done.envelope["candidate_status"] == "crash", done.envelope
        assert ".nvflare/autofl/installed.json" in (done.envelope.get("tampering") or []), done.envelope
    honest_candidate_scores_true(ws, prefix=() if sealed else WITHOUT_NAMESPACES)
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n"
