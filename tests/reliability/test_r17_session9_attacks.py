"""Attacks on what session 9 added: the one sweep rule for private temp folders, the refusal of a dry run that
stood in for a module a handler would have replaced, the match of a downloaded evaluation job, the schema bounds
of a shared dest, the schema's values turned into switches, and the interrupt handlers' later interrupts.

The promises under attack: a sweep removes only a folder of this user whose owner is surely gone and never fails
the run that sweeps; a dry run is admitted only when it ran what `python job.py` runs on this host; a download
scores only when it is the runner's evaluation job; a candidate never moves an option past the schema's bounds,
whatever spelling it uses; a schema value is passed, and pinned on every trial, only as the command line job.py
parses as that value; and one interrupt is raised however the later ones arrive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import live_processes
import pytest
from autofl_core.common import cli
from autofl_core.importer import api, dryrun, runner_view
from autofl_core.runner import runargs
from autofl_core.runner.outcome import CampaignError
from autofl_core.trial import eval_job, eval_job_match, owned_folders, processes
from test_eval_job import CUSTOM, real_download
from test_importer_fallbacks import refusal_at

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
NAMESPACE = owned_folders.pid_namespace()
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


# --- 1. the sweep of owned folders --------------------------------------------------------------------------------


def _folder(root: Path, suffix: str, record: str | None) -> Path:
    folder = root / f"{dryrun.FOLDER_PREFIX}{suffix}"
    folder.mkdir(mode=0o700)
    (folder / "out.json").write_text("{}", encoding="utf-8")
    if record is not None:
        (folder / owned_folders.OWNER).write_text(record, encoding="ascii")
    return folder


@pytest.mark.parametrize("pid", ["2147483648", "9999999999"])
def test_a_record_naming_a_pid_no_process_can_have_never_fails_the_run_that_sweeps(tmp_path, pid):
    """A record's pid beyond what the kernel hands out (a lie, or damage) names no process: its folder is a dead
    owner's, and the sweep (run first by every dry run's `make`) goes on instead of raising OverflowError."""
    dead = _folder(tmp_path, "toobig00", f"{pid} - {NAMESPACE}\n")
    assert owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == [dead.name]
    made = owned_folders.make(tmp_path, "autofl-r17-")
    assert (made / owned_folders.OWNER).is_file()


def test_a_file_or_a_folder_where_the_other_is_expected_is_left_alone(tmp_path):
    """A regular file named like an owned folder, and an owned folder whose `owner` entry is a folder holding a
    dead owner's record: nothing is removed."""
    dead = f"{live_processes.dead_pid()} - {NAMESPACE}\n"
    named_file = tmp_path / f"{dryrun.FOLDER_PREFIX}file0000"
    named_file.write_text(dead, encoding="ascii")
    odd = _folder(tmp_path, "recdir00", None)
    (odd / owned_folders.OWNER).mkdir()
    (odd / owned_folders.OWNER / owned_folders.OWNER).write_text(dead, encoding="ascii")
    past = time.time() - owned_folders.UNRECORDED_SECONDS - 60
    os.utime(odd, (past, past))  # old, but it has an `owner` entry: not a folder its maker left unrecorded
    assert owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX) == []
    assert named_file.read_text() == dead and (odd / "out.json").is_file()


RACING_SWEEP = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autofl_core.importer import dryrun
from autofl_core.trial import owned_folders
while time.time() < float(sys.argv[3]):
    pass
print(len(owned_folders.sweep(Path(sys.argv[2]), dryrun.FOLDER_PREFIX)))
"""


def test_two_sweepers_racing_over_the_same_dead_folders_both_finish_and_keep_the_live_one(tmp_path):
    """Two runs start at once and sweep the same dead owners' trees: neither raises, the live owner's folder is
    untouched, and nothing is left that a later sweep could not take (a dead folder left half removed still has
    its dead owner's record, or has lost it and is taken once old)."""
    dead = [_folder(tmp_path, f"dead{index:04d}", f"{live_processes.dead_pid()} - {NAMESPACE}\n") for index in range(6)]
    for folder in dead:
        for depth in range(3):
            nested = folder.joinpath(*[f"d{level}" for level in range(depth + 1)])
            nested.mkdir(exist_ok=True)
            for index in range(40):
                (nested / f"f{index}").write_text("x", encoding="ascii")
    _state, started = processes.state_and_start(os.getpid())
    live = _folder(tmp_path, "live0000", f"{os.getpid()} {started} {NAMESPACE}\n")
    start = str(time.time() + 2.0)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACING_SWEEP, str(SCRIPTS), str(tmp_path), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], [err for _out, err in outputs]
    assert (live / "out.json").is_file() and (live / owned_folders.OWNER).is_file()
    past = time.time() - owned_folders.UNRECORDED_SECONDS - 60
    for folder in (folder for folder in dead if folder.exists()):
        os.utime(folder, (past, past))
    owned_folders.sweep(tmp_path, dryrun.FOLDER_PREFIX)
    assert not any(folder.exists() for folder in dead)


# --- 2. a dry run that stood in where job.py falls back -----------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "from contextlib import suppress as quiet\nwith quiet(ImportError):\n    import x\n",
        "import contextlib\nquiet = contextlib.suppress\nwith quiet(ModuleNotFoundError):\n    import x\n",
        "MISSING = (ImportError, OSError)\nwith suppress(*MISSING):\n    import x\n",
        "MISSING = (KeyError, ImportError)\ntry:\n    import x\nexcept MISSING:\n    pass\n",
        "Absent = ModuleNotFoundError\nALL = (KeyError, Absent)\ntry:\n    import x\nexcept ALL:\n    pass\n",
        "MISSING = ImportError,\ntry:\n    import x\nexcept (KeyError, *MISSING):\n    pass\n",
        "from builtins import ImportError as Absent\ntry:\n    import x\nexcept Absent:\n    pass\n",
        "try:\n    try:\n        import x\n    except KeyError:\n        raise\nexcept ImportError:\n    pass\n",
        "try:\n    import x\nexcept (ImportError if STRICT else KeyError):\n    pass\n",
        "MISSING = errors_of('x')\ntry:\n    import x\nexcept MISSING:\n    pass\n",
    ],
    ids=[
        "suppress-imported-as",
        "suppress-assigned",
        "suppress-starred-tuple",
        "except-tuple-name",
        "except-alias-chain",
        "except-starred-in-tuple",
        "except-imported-as",
        "nested-try",
        "except-conditional-expression",
        "except-name-bound-to-a-call",
    ],
)
def test_a_catching_handler_spelled_through_a_name_guards_its_body(source):
    """The handler catches the ImportError however job.py names the exception or `suppress`."""
    assert "job.py line" in _fallback_refusal(source)


@pytest.mark.parametrize(
    "source",
    [
        "MISSING = (KeyError, ValueError)\ntry:\n    import x\nexcept MISSING:\n    pass\n",
        "from contextlib import nullcontext as quiet\nwith quiet(ImportError):\n    import x\n",
        "MISSING = ImportError\nMISSING = KeyError\ntry:\n    import x\nexcept KeyError:\n    pass\n",
    ],
    ids=["tuple-of-others", "another-context-manager", "rebound-name-unused"],
)
def test_a_handler_that_cannot_catch_the_import_error_guards_nothing(source):
    """The control: names bound to other exceptions or other context managers do not make a fallback."""
    assert _fallback_refusal(source) is None


def _fallback_refusal(source: str) -> str | None:
    """The refusal of a run that stood in for `x` at job.py's `import x` line."""
    return refusal_at(source, next(n for n, text in enumerate(source.splitlines(), 1) if text.strip() == "import x"))


JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

rounds = 2
BODY
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
ASKS = """import importlib.util
if importlib.util.find_spec("no_such_module_xyz") is not None:
    rounds = 9
"""
IMPORT_MODULE = """import importlib
try:
    importlib.import_module("no_such_module_xyz")
    rounds = 9
except ImportError:
    pass
"""
AFTER_MANY = """import importlib
for index in range(80):
    importlib.import_module(f"absent_module_{index}")
try:
    import no_such_module_xyz
    rounds = 9
except ImportError:
    pass
"""
SUBPACKAGE = """try:
    import tenseal
    ROUNDS = 9
except ImportError:
    ROUNDS = 2
"""


@sealed
@pytest.mark.parametrize(
    "body, beside, where, module",
    [
        (ASKS, {}, "job.py line 8", "no_such_module_xyz"),
        (IMPORT_MODULE, {}, "job.py line 9", "no_such_module_xyz"),
        (AFTER_MANY, {}, "job.py line 11", "no_such_module_xyz"),
        (
            "from lib import compat\nrounds = compat.ROUNDS\n",
            {"lib/__init__.py": "", "lib/compat.py": SUBPACKAGE},
            "lib/compat.py line 2",
            "tenseal",
        ),
    ],
    ids=["find-spec-asks", "import-module-in-try", "after-80-stand-ins", "framework-in-a-subpackage"],
)
def test_a_dry_run_that_answered_installed_where_this_host_says_absent_is_refused(
    tmp_path, body, beside, where, module
):
    """On this host job.py runs 2 rounds (the module is absent); the dry run's stand-in made it run 9. However
    job.py asks (a `find_spec`, `import_module` in a try, a fallback after 80 other stand-ins, a module of its own
    in a subfolder falling back), the record is not what runs: refused, naming the line."""
    (tmp_path / "client.py").write_text("print('trains')\n", encoding="utf-8")
    for name, text in beside.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "job.py").write_text(JOB.replace("BODY", body), encoding="utf-8")
    config = api.import_job(tmp_path / "job.py", dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    messages = [e["message"] for e in config["admission_errors"]]
    assert messages and f": {where} " in messages[0] and module in messages[0], messages
    assert "\n" not in messages[0]


# --- 3. a downloaded evaluation job -------------------------------------------------------------------------------


def _replace_with_link(path: Path) -> None:
    """`path` becomes a link to what it was, moved out of the download."""
    kept = path.parents[4] / f"outside-{path.name}"
    path.rename(kept)
    path.symlink_to(kept, target_is_directory=kept.is_dir())


def _rewrite_meta(definition: Path, edit) -> None:
    meta = json.loads((definition / eval_job.META).read_text())
    edit(meta)
    (definition / eval_job.META).write_text(json.dumps(meta))


def _signature_folder(definition: Path) -> None:
    """The signature file becomes a folder holding code: skipped as a signature file it would hide the code."""
    signature = definition / CUSTOM / ".__nvfl_sig.json"
    signature.unlink()
    signature.mkdir()
    (signature / "x.py").write_text("print('runs')\n")


DOWNLOAD_ATTACKS = {
    "extra-file-in-a-signature-named-folder": (_signature_folder, "holds app/custom/.__nvfl_sig.json/x.py"),
    "client-script-a-link": (lambda d: _replace_with_link(d / CUSTOM / "evaluate.py"), "evaluate.py is not a regular"),
    "custom-folder-a-link": (lambda d: _replace_with_link(d / CUSTOM), "app/custom is a link"),
    "huge-model": (lambda d: os.truncate(d / CUSTOM / "autofl_model.npy", 1 << 40), "autofl_model.npy differs"),
    "deploy-map-changed": (
        lambda d: _rewrite_meta(d, lambda meta: meta["deploy_map"].update({"app": ["@ALL", "site-9"]})),
        "meta.json is another configuration",
    ),
    "missing-client-config": (lambda d: os.unlink(d / eval_job.CLIENT_CONFIG), "lacks app/config"),
}


@pytest.mark.parametrize("attack", list(DOWNLOAD_ATTACKS.values()), ids=list(DOWNLOAD_ATTACKS))
def test_a_download_changed_in_any_way_that_runs_other_code_is_not_scored(tmp_path, attack):
    change, why = attack
    download, job_spec = real_download(tmp_path)
    change(eval_job_match.definition_root(download))
    with pytest.raises(eval_job.EvalJobError, match=why):
        eval_job_match.check(download, job_spec)


def test_a_folder_of_the_download_that_cannot_be_listed_is_not_scored(tmp_path, monkeypatch):
    """A folder the runner cannot list (a non-root runner and a folder without read permission; simulated here,
    as root lists everything) could hold any file: it is a difference, never an empty folder."""
    download, job_spec = real_download(tmp_path)
    hidden = eval_job_match.definition_root(download) / "app" / "hidden"
    hidden.mkdir()
    (hidden / "x.py").write_text("print('runs')\n")
    listing = os.scandir

    def unlistable(path="."):
        if os.fspath(path) == os.fspath(hidden):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", unlistable)
    with pytest.raises(eval_job.EvalJobError, match="cannot be listed"):
        eval_job_match.check(download, job_spec)


def test_a_download_whose_configuration_is_laid_out_anew_still_scores(tmp_path):
    """Key order and layout are NVFLARE's to choose: the same documents re-ordered and re-indented match."""
    download, job_spec = real_download(tmp_path)
    definition = eval_job_match.definition_root(download)
    for rel in eval_job.CONFIG_FILES:
        document = json.loads((definition / rel).read_text())
        reordered = dict(reversed(list(document.items())))
        (definition / rel).write_text(json.dumps(reordered, indent=7))
    eval_job_match.check(download, job_spec)


# --- 4. the schema's bounds and values on job.py's options --------------------------------------------------------

SWITCH_JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--fast", dest="lr", action="store_const", const=10.0)
parser.add_argument("--local_train_steps", action="count", default=0)
parser.add_argument("--cross_site_eval", action="store_const", const=1, default=0)
parser.add_argument("--aggregation_epochs", action="store_true")
parser.add_argument("--quick", dest="batch_size", action="store_const", const=1)
parser.add_argument("--batch_size", type=int, default=5)
args = parser.parse_args()
recipe = NumpyFedAvgRecipe(
    name="x", model=[0.0], min_clients=2, num_rounds=args.num_rounds, train_script="client.py",
    train_args=f"--lr {args.lr}",
)
recipe.execute(SimEnv(num_clients=2))
"""


def _switch_job(tmp_path: Path, schema: str) -> dict:
    (tmp_path / "client.py").write_text("print('trains')\n")
    (tmp_path / "job.py").write_text(SWITCH_JOB)
    (tmp_path / "mutation_schema.yaml").write_text(schema)
    return api.import_job(tmp_path / "job.py")


def test_a_switch_writing_a_bounded_dest_is_held_to_the_bounds_of_the_value_it_writes(tmp_path):
    """`--fast` writes 10.0 into `lr`, bounded to 0.3 by the schema: refused like `--lr 10`; the bounds hold for
    what job.py's parser sets, the last option naming the dest winning."""
    config = _switch_job(tmp_path, "mutable_args:\n  lr: {type: float, min: 0.01, max: 0.3}\n")
    assert config["admission_errors"] == [], config["admission_errors"]
    with pytest.raises(CampaignError, match="above mutation_schema.yaml max 0.3"):
        runargs.candidate_args(config, "--lr 10")
    for given in ("--fast", "--lr 0.2 --fast"):
        with pytest.raises(CampaignError, match="--fast .*above mutation_schema.yaml max 0.3"):
            runargs.candidate_args(config, given)
    assert [tuple(arg) for arg in runargs.candidate_args(config, "--fast --lr 0.2")] == [
        ("--fast", None),
        ("--lr", "0.2"),
    ]


def test_a_schema_count_too_large_for_a_command_line_is_one_conflict_not_a_hang(tmp_path):
    """`local_train_steps: 1000000000` (a count option) would be a billion tokens: one conflict naming the
    option, at once."""
    schema = "comparison_budget_args:\n  default_candidate_budget: {local_train_steps: 1000000000}\n"
    started = time.monotonic()
    config = _switch_job(tmp_path, schema)
    assert time.monotonic() - started < 60
    assert config["argparse"]["schema_args"] == []
    assert any("--local_train_steps" in c and "1000000000" in c for c in config["argparse"]["budget_conflicts"])


@pytest.mark.parametrize(
    "value, flag",
    [("{cross_site_eval: true}", "--cross_site_eval"), ("{aggregation_epochs: 3}", "--aggregation_epochs")],
    ids=["const-1-for-true", "store-true-for-3"],
)
def test_a_schema_value_is_passed_only_by_a_switch_that_sets_that_very_value(tmp_path, value, flag):
    """`--cross_site_eval` stores the int 1, `--aggregation_epochs` stores True: the schema's `true` and `3` are not
    what they set (Python's `True == 1` and `bool(3)` aside), so each is a conflict, never the switch."""
    config = _switch_job(tmp_path, f"comparison_budget_args:\n  default_candidate_budget: {value}\n")
    assert flag not in config["argparse"]["schema_args"], config["argparse"]
    assert any(flag in c for c in config["argparse"]["budget_conflicts"]), config["argparse"]


def test_a_schema_value_a_switch_does_set_is_passed_as_that_switch(tmp_path):
    """The control: a count of 3 over a default of 0 is three occurrences of the count option."""
    config = _switch_job(tmp_path, "comparison_budget_args:\n  default_candidate_budget: {local_train_steps: 3}\n")
    assert config["admission_errors"] == [] and config["argparse"]["budget_conflicts"] == [], config["argparse"]
    assert config["argparse"]["schema_args"] == ["--local_train_steps"] * 3


@pytest.mark.parametrize(
    "budget, key, value, pinned",
    [
        ("{local_train_steps: 3}", "local_train_steps", 3, ["--local_train_steps"] * 3),
        ("{batch_size: 1}", "batch_size", 1, ["--quick"]),
    ],
    ids=["count", "store-const-first-of-its-dest"],
)
def test_a_schema_value_set_by_a_switch_is_pinned_on_every_trials_command_line(tmp_path, budget, key, value, pinned):
    """The import reads job.py with the schema's value passed as switches (three `--local_train_steps`, `--quick`
    storing 1 in `batch_size`) and records it as the comparison value; the runner's pinned arguments must carry
    the same switches, or every trial runs job.py's default (0, None) under a budget that says otherwise."""
    config = _switch_job(tmp_path, f"comparison_budget_args:\n  default_candidate_budget: {budget}\n")
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["comparison_args"][key]["value"] == value
    args = runner_view.fixed_budget_args(config)
    assert [arg for arg in args if arg in pinned] == pinned, args
    scope: dict = {}
    exec(SWITCH_JOB.split("args = parser.parse_args()")[0], scope)
    assert getattr(scope["parser"].parse_args(args), key) == value


# --- 5. interrupts after the first --------------------------------------------------------------------------------


def test_a_second_interrupt_arriving_inside_the_first_handler_raises_once(interrupt_handlers, monkeypatch):
    """A second signal lands while the first handler is still swapping the handlers: one `Interrupted` reaches
    the code, and afterwards every interrupt signal is caught by the handler that does nothing (never SIG_IGN)."""
    real = signal.signal
    sent = []

    def swap_then_interrupt(sig, handler):
        previous = real(sig, handler)
        if not sent:
            sent.append(sig)
            os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode: inside the first handler
        return previous

    monkeypatch.setattr(signal, "signal", swap_then_interrupt)
    raised = []
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
    except cli.Interrupted as stop:
        raised.append(stop.signal_name)
    for _ in range(1000):  # a second Interrupted would surface here
        pass
    monkeypatch.undo()
    assert raised == ["SIGINT"] and sent  # the second one's, raised from inside the first handler
    handlers = [signal.getsignal(sig) for sig in cli.INTERRUPT_CODES]
    assert all(handler is cli._after_the_first for handler in handlers), handlers
    os.kill(os.getpid(), signal.SIGQUIT)
    for _ in range(1000):  # the SIGQUIT handler ran here and did nothing
        pass
