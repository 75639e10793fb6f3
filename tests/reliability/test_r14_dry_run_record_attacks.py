"""Attacks on the typed dry-run record, its cache and the one fold.

The promises under attack: a cached record is served only for the files that made it (data files included) and a
run that stopped short of NVFLARE is run again by the next command; a record planted or edited in the cache folder
is run again or parses to `malformed`, never a traceback; a job that reads hostile environment variables, a
controller whose properties raise, or odd `simulator_run` arguments end in one clear line or a refusal, and the
budget is never admitted wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun, moves, recorded
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def _job(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(source, encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    return folder / "job.py"


def _fixed(config: dict) -> dict:
    return {k: config["fixed_budget"][k]["value"] for k in api.FIELDS}


# --- the cache key sees data files; a run that stopped short is run again -----------------------------------------


def test_adding_or_removing_a_data_file_changes_the_key(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    before = dryrun.job_digest(job.parent, None, [], "python"), dryrun.folder_digest(job.parent)
    (job.parent / "data").mkdir()
    sample = job.parent / "data" / "train.npy"
    sample.write_bytes(b"\x93NUMPY" + b"\0" * 64)
    added = dryrun.job_digest(job.parent, None, [], "python"), dryrun.folder_digest(job.parent)
    assert None not in before + added
    assert added[0] != before[0] and added[1] != before[1]
    sample.write_bytes(b"\x93NUMPY" + b"\0" * 65)  # prepared again: another size
    resized = dryrun.job_digest(job.parent, None, [], "python")
    assert resized != added[0]
    os.utime(sample, ns=(1, 1))  # the same size, another modification time
    assert dryrun.job_digest(job.parent, None, [], "python") != resized
    sample.unlink()
    assert dryrun.job_digest(job.parent, None, [], "python") != added[0]


def test_a_data_file_is_stat_only_and_a_fifo_or_symlinked_data_file_is_never_cached(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    fifo = job.parent / "data.json"
    os.mkfifo(fifo)  # reading it would block the import forever
    assert dryrun.job_digest(job.parent, None, [], "python") is None
    fifo.unlink()
    outside = tmp_path / "dataset.bin"
    outside.write_bytes(b"x")
    (job.parent / "train.bin").symlink_to(outside)  # its target can change with nothing here changing
    assert dryrun.job_digest(job.parent, None, [], "python") is None


def test_many_data_files_stay_cacheable_up_to_their_own_limit(tmp_path):
    job = _job(tmp_path / "job", "import nvflare\n")
    data = job.parent / "images"
    data.mkdir()
    for index in range(dryrun.MAX_HASHED_FILES + 10):  # more data files than text files are hashed
        (data / f"{index:05d}.png").write_bytes(b"p")
    assert dryrun.job_digest(job.parent, None, [], "python") is not None
    for index in range(dryrun.MAX_STATED_FILES):
        (data / f"x{index:05d}.png").write_bytes(b"p")
    assert dryrun.job_digest(job.parent, None, [], "python") is None


NEEDS_DATA = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "train.npy")):
    raise FileNotFoundError("Missing prepared data files: run prepare_data.py first")
recipe = NumpyFedAvgRecipe(name="d", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_preparing_the_data_after_a_refusal_is_seen_by_the_next_import(tmp_path, private_cache):
    job = _job(tmp_path / "job", NEEDS_DATA)
    assert dry_run(job, []).status == "raised"
    (job.parent / "data").mkdir()
    (job.parent / "data" / "train.npy").write_bytes(b"\x93NUMPY")
    assert dry_run(job, []).status == "recorded"
    shutil.rmtree(job.parent / "data")  # deleting the data again is not served the stale "recorded"
    assert dry_run(job, []).status == "raised"


@sealed
def test_a_raised_run_is_never_kept_in_the_cache_folder_and_runs_again_next_command(tmp_path, private_cache):
    job = _job(tmp_path / "job", "import nvflare\nraise RuntimeError('no GPU here')\n")
    with dryrun.Session(job) as session:
        assert session.run([]).status == "raised" and session.count == 1
        assert session.run([]).status == "raised" and session.count == 1  # the same answer within one command
    cache = dryrun._cache_dir()
    assert list(cache.glob("*.json")) == []
    dryrun._MEMO.clear()  # the next command
    with dryrun.Session(job) as session:
        assert session.run([]).status == "raised" and session.count == 1  # ran again


@sealed
def test_a_recorded_run_is_kept_and_served_without_a_run(tmp_path, private_cache):
    job = _job(tmp_path / "job", NEEDS_DATA.replace("if not", "if False and not"))
    assert dry_run(job, []).status == "recorded"
    assert len(list(dryrun._cache_dir().glob("*.json"))) == 1
    dryrun._MEMO.clear()
    with dryrun.Session(job) as session:
        assert session.run([]).status == "recorded" and session.count == 0


DATA_OPTION = """import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--data_root", default=".")
parser.add_argument("--num_rounds", type=int, default=3)
args = parser.parse_args()
if not os.path.isfile(os.path.join(args.data_root, "job.py")):
    raise FileNotFoundError("Missing prepared data files")
recipe = NumpyFedAvgRecipe(name="d", model=[0.0], min_clients=2, num_rounds=args.num_rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_the_perturbed_runs_of_a_recorded_job_are_kept_even_when_they_raise(tmp_path, private_cache, monkeypatch):
    """The job's own run records; perturbing `--data_root` makes it raise. That raise answers for the perturbed
    values (the job's own run is what a fix outside the folder changes), so the next command imports from the
    cache folder without starting the sandbox (P5's warm import)."""
    job = _job(tmp_path / "job", DATA_OPTION)
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded" and config["admission_errors"] == []
    kept = [json.loads(p.read_text())["status"] for p in dryrun._cache_dir().glob("*.json")]
    assert "raised" in kept and "recorded" in kept
    dryrun._MEMO.clear()  # the next command

    def no_boot(self):
        raise AssertionError("the sandbox started for a warm import")

    monkeypatch.setattr(dryrun.Session, "start", no_boot)
    assert api.import_job(job, dry_run=True)["fixed_budget"] == config["fixed_budget"]


def test_a_raised_record_left_in_the_cache_folder_by_an_older_version_is_run_again(tmp_path, private_cache):
    job = _job(tmp_path / "job", "import nvflare\n")
    key = dryrun.job_digest(job.parent, None, [], "python")
    stale = {"status": "raised", "exception": "FileNotFoundError", "message": "Missing prepared data files"}
    (dryrun._cache_dir() / f"{key}.json").write_text(json.dumps(stale))
    assert dryrun._cached(key) is None


def test_the_campaign_s_folder_digest_moves_with_data_and_ignores_the_campaign_s_own_files(tmp_path):
    """`contract.run_args_known_unmoving` skips a run only while the folder is the one the import's perturbed
    runs ran over: new data is another folder (a run is made), the campaign's own files are not."""
    job = _job(tmp_path / "job", "import nvflare\n")
    before = dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"}))
    (job.parent / "autofl_runs" / "t1").mkdir(parents=True)
    (job.parent / "autofl_runs" / "t1" / "model.pt").write_bytes(b"w")
    (job.parent / ".nvflare").mkdir()
    (job.parent / ".nvflare" / "state.bin").write_bytes(b"s")
    assert dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"})) == before
    (job.parent / "train.csv").write_text("a,b\n")
    assert dryrun.folder_digest(job.parent, frozenset({".nvflare", "autofl_runs"})) != before


# --- a record planted or edited in the cache folder -------------------------------------------------------------

FEDAVG = "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"


def _raw(**extra) -> dict:
    server = {
        "workflows": [{"path": "nvflare.app_common.workflows.fedavg.FedAvg", "args": {"num_rounds": 5}}],
        "components": [{"path": "x.IntimeModelSelector", "args": {"key_metric": "accuracy"}}],
    }
    raw = {
        "status": "recorded",
        "entry": "simulator_run",
        "clients": ["site-1", "site-2"],
        "recipe": [FEDAVG],
        "recipe_attrs": {"min_clients": 2, "train_script": "client.py"},
        "configs": {"j/app/config/config_fed_server.json": server},
        "parsers": [
            {
                "allow_abbrev": True,
                "actions": [
                    {"option_strings": ["--a"], "dest": "a", "action": "_StoreAction", "type": "int", "value": 1},
                    {"option_strings": ["--b"], "dest": "b", "action": "_StoreAction", "type": "int", "value": 2},
                    {"option_strings": ["--c"], "dest": "c", "action": "_StoreAction", "type": "int", "value": 3},
                    {"option_strings": ["--d"], "dest": "d", "action": "_StoreAction", "type": "int", "value": 4},
                ],
            }
        ],
    }
    raw.update(extra)
    return raw


def _deep(raw: dict, value) -> dict:
    raw["parsers"][0]["actions"][3]["option_strings"] = value
    return raw


PLANTED = {
    "option_strings a dict deep inside": _deep(_raw(), {"--d": 1}),
    "option_strings holding a number": _deep(_raw(), ["--d", 4]),
    "an action that is a list": dict(_raw(), parsers=[{"actions": [["--a"]]}]),
    "parsers an object": dict(_raw(), parsers={"0": {}}),
    "recorded with no entry point": {"status": "recorded", "recipe_attrs": {"num_rounds": 3}},
    "recorded as a number": dict(_raw(), status=1),
    "status in capitals": dict(_raw(), status="RECORDED"),
    "clients a string": dict(_raw(), clients="site-1"),
    "n_clients a bool": dict(_raw(), clients=[], n_clients=True),
    "n_clients a string": dict(_raw(), clients=[], n_clients="3"),
    "a line that is text": dict(_raw(), call={"file": "job.py", "line": "12"}),
    "env_read holding numbers": dict(_raw(), env_read=[1, 2]),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_malformed_record_planted_in_the_cache_is_run_again_not_served(name, private_cache):
    """A malformed record says "run it again": a cached one must not stand in for that run on every import."""
    raw = PLANTED[name]
    assert recorded.parse(raw).status == "malformed", recorded.parse(raw)
    key = "f" * 64
    (dryrun._cache_dir() / f"{key}.json").write_text(json.dumps(raw))
    assert dryrun._cached(key) is None
    assert dryrun._store(key, raw).status == "malformed" and key not in dryrun._MEMO  # a malformed one: not kept
    assert json.loads((dryrun._cache_dir() / f"{key}.json").read_text()) == raw  # and not rewritten


@pytest.mark.parametrize(
    "rounds, admitted",
    [(-3, None), (0, None), (True, None), (3.0, None), ("3", None), ([3], None), (10**30, 10**30), (7, 7)],
)
def test_a_recorded_budget_that_is_not_a_positive_integer_is_never_a_value(rounds, admitted):
    server = {"workflows": [{"path": "nvflare.app_common.workflows.fedavg.FedAvg", "args": {"num_rounds": rounds}}]}
    parsed = recorded.parse(_raw(configs={"j/app/config/config_fed_server.json": server}, recipe_attrs={}))
    assert parsed.status == "recorded"
    found = recorded.budget(parsed)["num_rounds"]
    if isinstance(rounds, int) and not isinstance(rounds, bool):
        assert found["value"] == admitted, found
    else:  # a bool, a float or a string in a workflow's args is no integer: the recipe's own value is read
        assert found["value"] is None, found


def test_nan_deep_nesting_and_huge_configs_in_a_cached_record_end_without_a_traceback(private_cache):
    text = json.dumps(_raw()).replace('"entry"', '"seconds": NaN, "x": Infinity, "entry"')
    key = "e" * 64
    (dryrun._cache_dir() / f"{key}.json").write_text(text)
    assert dryrun._cached(key) is None  # no JSON a run writes: run again
    many = {
        f"j{i}/app/config/config_fed_server.json": {"workflows": [{"args": {"num_rounds": 5}}]} for i in range(3000)
    }
    huge = recorded.parse(_raw(configs=many))
    assert recorded.budget(huge)["num_rounds"]["value"] == 5
    (dryrun._cache_dir() / f"{key}.json").write_text(
        '{"status": "recorded", "configs": ' + "[" * 100000 + "]" * 100000 + "}"
    )
    assert dryrun._cached(key) is None


# --- environment variables: many, hostile names, one read only when another is set ------------------------------


def _rounds_run(decide):
    """A run_env whose recorded rounds are `decide(env)`; it notes what each run was asked."""
    asked = []

    def run_env(env):
        asked.append(dict(env))
        rounds, read = decide(env)
        return _with_rounds(rounds, env_read=read)

    return run_env, asked


def _with_rounds(rounds, **extra) -> recorded.DryRunRecord:
    raw = _raw(**extra)
    raw["configs"]["j/app/config/config_fed_server.json"]["workflows"][0]["args"]["num_rounds"] = rounds
    return recorded.parse(raw)


def test_the_variable_past_the_twentieth_that_decides_the_rounds_is_still_changed():
    names = [f"V{i:03d}" for i in range(300)]
    baseline = recorded.parse(_raw(env_read=names))
    run_env, asked = _rounds_run(lambda env: (int(env.get("V299", 5)), names))
    moved = moves.moving_env(baseline, run_env)
    assert "num_rounds" in moved and "V299" in moved["num_rounds"]
    assert len(asked) == 1 and len(set(asked[0].values())) == 300, "each variable gets its own number"


def test_a_variable_read_only_when_another_is_set_is_changed_in_a_second_run():
    def decide(env):
        if env.get("USE_ENV_ROUNDS"):  # ROUNDS is read only when USE_ENV_ROUNDS is set
            return int(env.get("ROUNDS", 5)), ["ROUNDS", "USE_ENV_ROUNDS"]
        return 5, ["USE_ENV_ROUNDS"]

    run_env, asked = _rounds_run(decide)
    moved = moves.moving_env(recorded.parse(_raw(env_read=["USE_ENV_ROUNDS"])), run_env)
    assert moved.get("num_rounds") == ["USE_ENV_ROUNDS", "ROUNDS"], moved
    assert len(asked) == 2 and "ROUNDS" in asked[1]


def test_variables_that_keep_appearing_pin_nothing_after_the_last_environment_run():
    counter = iter(range(1000))

    def decide(env):
        return 5, [*env, f"NEXT{next(counter)}"]

    run_env, asked = _rounds_run(decide)
    moved = moves.moving_env(recorded.parse(_raw(env_read=["FIRST"])), run_env)
    assert len(asked) == moves.MAX_ENV_RUNS and moved["num_rounds"] and moved["objective"]


def _level_runs(deciding: str | None):
    """Runs of a job comparing LEVEL with four strings; `deciding` (when LEVEL holds it) gives 9 rounds."""
    asked = []

    def run_env(env):
        asked.append(dict(env))
        compared = sorted(f"LEVEL={text}" for text in ("debug", "info", "warning", "error"))  # as the boot writes
        return _with_rounds(9 if env.get("LEVEL") == deciding else 5, env_read=["LEVEL"], env_compared=compared)

    return run_env, asked


@pytest.mark.parametrize("deciding", ["debug", "error"])
def test_each_string_a_variable_was_compared_with_is_set_in_a_further_run(deciding):
    run_env, asked = _level_runs(deciding)
    moved = moves.moving_env(recorded.parse(_raw(env_read=["LEVEL"])), run_env)
    assert moved == {"num_rounds": ["LEVEL"]}, moved
    assert asked[0] == {"LEVEL": "7"} and asked[-1] == {"LEVEL": deciding}
    assert [env["LEVEL"] for env in asked[1:]] == sorted(("debug", "info", "warning", "error"))[: len(asked) - 1]


def test_strings_that_move_nothing_pin_the_budget_after_one_run_each():
    run_env, asked = _level_runs(None)
    assert moves.moving_env(recorded.parse(_raw(env_read=["LEVEL"])), run_env) == {}
    assert len(asked) == 5 <= moves.MAX_ENV_RUNS


def test_strings_past_the_last_environment_run_pin_nothing():
    def run_env(env):
        asked.append(dict(env))
        return _with_rounds(5, env_read=["LEVEL"], env_compared=[f"LEVEL=s{i}" for i in range(8)])

    asked = []
    moved = moves.moving_env(recorded.parse(_raw(env_read=["LEVEL"])), run_env)
    assert len(asked) == moves.MAX_ENV_RUNS and moved["num_rounds"] and moved["objective"]


def test_a_name_no_environment_can_hold_is_not_set():
    run_env, asked = _rounds_run(lambda env: (5, ["A=B", "", "OK"]))
    assert moves.moving_env(recorded.parse(_raw(env_read=["A=B", "", "OK"])), run_env) == {}
    assert asked == [{"OK": "7"}]


# --- real runs: hostile variables, odd simulator arguments, a recorded max on a loss -----------------------------

HOSTILE_ENV = """import os
import subprocess
import sys

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

seen = [os.environ.get(name) for name in ("PATH", "HOME", "PYTHONPATH", "LD_PRELOAD", "TMPDIR")]
seen += [os.environ.get(f"KNOB_{i}") for i in range(300)]
home = os.path.expanduser("~")
os.makedirs(os.path.join(home, "written-by-job"), exist_ok=True)
subprocess.run(["true"], check=False)
recipe = NumpyFedAvgRecipe(name="e", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_a_job_reading_path_home_ld_preload_and_300_knobs_is_admitted_and_writes_nothing_outside(
    tmp_path, private_cache
):
    """The variables that locate the machine (PATH, HOME, PYTHONPATH) are never set to numbers, so its
    `subprocess.run(["true"])` still runs; LD_PRELOAD and 300 knobs as numbers change nothing; nothing is written
    outside the sandbox."""
    job = _job(tmp_path / "job", HOSTILE_ENV)
    before = sorted(p.name for p in job.parent.iterdir())
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_rounds": 3, "min_clients": 2, "num_clients": 2}
    assert sorted(p.name for p in job.parent.iterdir()) == before
    assert not (tmp_path / "written-by-job").exists() and not Path("written-by-job").exists()
    assert not Path("7").exists()


def test_the_variables_that_locate_the_machine_are_never_perturbed_and_gpu_visibility_is():
    names = ["PATH", "HOME", "LANG", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"]
    run_env, asked = _rounds_run(lambda env: (5, names))
    moves.moving_env(recorded.parse(_raw(env_read=names)), run_env, dryrun.FIXED_ENV)
    assert sorted(asked[0]) == ["CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"], asked


GPU_CLIENTS = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1").split(",")
recipe = NumpyFedAvgRecipe(name="g", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
recipe.execute(SimEnv(num_clients=len(gpus)))
"""


@sealed
def test_clients_counted_from_the_visible_gpus_are_refused_naming_the_variable(tmp_path, private_cache, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    config = api.import_job(_job(tmp_path / "job", GPU_CLIENTS), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert any("CUDA_VISIBLE_DEVICES" in e["message"] for e in config["admission_errors"]), _fixed(config)


CONDITIONAL_ENV = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

rounds = 3
if os.environ.get("USE_ENV_ROUNDS"):
    rounds = int(os.environ.get("ROUNDS", "3"))
recipe = NumpyFedAvgRecipe(name="c", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_rounds_read_from_one_variable_only_when_another_is_set_are_refused(tmp_path, private_cache):
    job = _job(tmp_path / "job", CONDITIONAL_ENV)
    config = api.import_job(job, dry_run=True)
    assert config["admission_errors"], _fixed(config)
    messages = " ".join(e["message"] for e in config["admission_errors"])
    assert re.search(r"\bROUNDS\b", messages), messages  # the variable read for the rounds, named in its own right


N_CLIENTS = """import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe

recipe = NumpyFedAvgRecipe(name="n", model=[0.0], min_clients=2, num_rounds=2, train_script="client.py")
root = os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/autofl-n")
recipe._job.simulator_run(root, n_clients=N)
"""


@sealed
@pytest.mark.parametrize("n_clients", ['"3"', "-2", "0", "True", "10**30"])
def test_odd_n_clients_never_become_the_admitted_client_count(tmp_path, private_cache, n_clients):
    job = _job(tmp_path / "job", N_CLIENTS.replace("=N", "=" + n_clients))
    config = api.import_job(job, dry_run=True)
    value = config["fixed_budget"]["num_clients"]["value"]
    if n_clients == "10**30":  # what NVFLARE was asked for, as written
        assert value == 10**30
    else:
        assert value is None or config["admission_errors"], (value, config["admission_errors"])


LOSS_MAX = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="l", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py",
                           key_metric="val_loss")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_a_recorded_max_on_val_loss_is_still_the_direction_refusal(tmp_path, private_cache):
    job = _job(tmp_path / "job", LOSS_MAX)
    config = api.import_job(job, dry_run=True)
    codes = [e["code"] for e in config["admission_errors"]]
    assert "AUTOFL_METRIC_DIRECTION_CONFLICT" in codes, config["admission_errors"]


ONE_VALUE = {  # the test that reads ROUNDS only when MODE holds one string
    "==": 'if os.environ.get("MODE") == "fast":',
    "lower()": 'if os.environ.get("MODE", "").lower() == "fast":',
    "in a tuple": 'if os.environ.get("MODE") in ("quick", "fast"):',
    "!=": 'if os.environ.get("MODE") != "fast":\n    pass\nelse:',
    "startswith": 'if os.getenv("MODE", "slow").strip().startswith("fa"):',
    "a word of a list": 'if "fast" in os.environ.get("MODE", "").split(","):',
}


@sealed
@pytest.mark.parametrize("test", list(ONE_VALUE), ids=lambda t: t.replace(" ", "-"))
def test_rounds_read_only_when_another_variable_holds_one_value_are_refused(tmp_path, private_cache, test):
    """Before: the environment runs set every variable to a number, MODE never held "fast", ROUNDS was never read,
    and the 3 rounds were admitted pinned though a user with MODE=fast and ROUNDS set runs others."""
    source = CONDITIONAL_ENV.replace('if os.environ.get("USE_ENV_ROUNDS"):', ONE_VALUE[test])
    config = api.import_job(_job(tmp_path / "job", source), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["admission_errors"], _fixed(config)
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "environment variable" in said and re.search(r"\bMODE\b", said) and re.search(r"\bROUNDS\b", said), said


ROUNDS_FROM_SETTINGS = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv
from settings import rounds

recipe = NumpyFedAvgRecipe(name="s", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


@sealed
def test_rounds_read_by_getenv_in_a_module_beside_job_py_are_refused(tmp_path, private_cache):
    """`os.getenv` runs in the frozen `os` module ("<frozen os>", not os.__file__). Before: the boot took that frame
    for the reader, the read was never noted, and the one run's 3 rounds were admitted pinned."""
    job = _job(tmp_path / "job", ROUNDS_FROM_SETTINGS)
    (job.parent / "settings.py").write_text('import os\n\nrounds = int(os.getenv("ROUNDS", "3"))\n', encoding="utf-8")
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "environment variable ROUNDS changed" in said, (_fixed(config), said)


@sealed
def test_a_variable_compared_with_a_string_that_decides_no_budget_keeps_the_job_admitted(tmp_path, private_cache):
    """The further run with MODE=fast changes nothing NVFLARE is asked for: the 3 rounds stay admitted."""
    source = CONDITIONAL_ENV.replace(
        'if os.environ.get("USE_ENV_ROUNDS"):\n    rounds = int(os.environ.get("ROUNDS", "3"))',
        'if os.environ.get("MODE") == "fast":\n    print("fast")',
    )
    config = api.import_job(_job(tmp_path / "job", source), dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3


ODD_CONTROLLER = """import os

from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner


class Odd(FedAvg):
    @property
    def num_rounds(self):
        GETTER

    @num_rounds.setter
    def num_rounds(self, value):
        self._kept = value


job = FedJob(name="odd", min_clients=2)
job.to_server(Odd(num_clients=2, num_rounds=4))
for i in range(2):
    job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
job.simulator_run(os.environ.get("NVFLARE_SIMULATOR_WORKSPACE_ROOT", "/tmp/autofl-odd"))
"""


@sealed
@pytest.mark.parametrize("getter", ["raise RuntimeError('no rounds')", "return '4'", "return 4.5", "return None"])
def test_a_controller_whose_num_rounds_raises_or_is_no_int_never_admits_another_round_count(
    tmp_path, private_cache, getter
):
    job = _job(tmp_path / "job", ODD_CONTROLLER.replace("GETTER", getter))
    config = api.import_job(job, dry_run=True)
    rounds = config["fixed_budget"]["num_rounds"]["value"]
    assert config["admission_errors"] or rounds == 4, (rounds, config["import"]["dry_run"])
    assert any("Odd.num_rounds" in e["message"] for e in config["admission_errors"]), config["admission_errors"]


@sealed
def test_a_controller_whose_num_rounds_getter_reads_its_own_attribute_records_what_the_export_runs(
    tmp_path, private_cache
):
    """A well-behaved getter (it returns what the setter kept): NVFLARE's export leaves the argument out, so the
    exported job builds Odd() with the constructor's 5 rounds, and 5 is what the run records and pins."""
    job = _job(tmp_path / "job", ODD_CONTROLLER.replace("GETTER", "return self._kept"))
    config = api.import_job(job, dry_run=True)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 5
