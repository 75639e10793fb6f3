"""Which static refusals one dry run may settle is decided by the run-time input kinds the reading records
(`inputs.Input` on `api.Reading`), never by the words of a refusal (pure: hand-written records, no NVFLARE run)."""

import pytest
from autofl_core.importer import api, moves, recorded

FEDAVG = "nvflare.app_common.np.recipes.fedavg.NumpyFedAvgRecipe"
HEAD = """import argparse
import os
import random
import time
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv
from mylib import plan_for

parser = argparse.ArgumentParser()
parser.add_argument("--n_clients", type=int, default=2)
args = parser.parse_args()
"""
RUN = """recipe = NumpyFedAvgRecipe(name="k", model=[0.0], min_clients=args.n_clients, num_rounds=rounds,
                           train_script="client.py", key_metric="auc")
recipe.execute(SimEnv(num_clients=args.n_clients))
"""


def ran(files_read: tuple[str, ...] = ()) -> recorded.DryRunRecord:
    """A recorded training run asking NVFLARE for 4 rounds of 2 clients, after reading `files_read`."""
    actions = [{"option_strings": ["--n_clients"], "dest": "n_clients", "action": "_StoreAction", "value": 2}]
    parsed = recorded.parse(
        {
            "status": "recorded",
            "entry": "execute",
            "clients": ["site-1", "site-2"],
            "recipe": [FEDAVG],
            "recipe_attrs": {"num_rounds": 4, "min_clients": 2, "train_script": "client.py", "key_metric": "auc"},
            "configs": {},
            "parsers": [{"actions": actions}],
            "files_read": list(files_read),
        }
    )
    assert parsed.status == "recorded", parsed.reason
    return parsed


def folded(rounds: str, record: recorded.DryRunRecord | None = None, exists=None) -> tuple[dict, dict]:
    """(the static config, the config with `record` folded) of a job whose rounds are `rounds` (job.py lines)."""
    options = {"exists": exists} if exists else {}
    source = HEAD + rounds + RUN
    static = api.import_source(source, **options)
    moved = moves.Moved({"num_clients": ["--n_clients"], "min_clients": ["--n_clients"]})
    trust = {"train_script": "client.py", "allowed_edit_paths": ["client.py"]}
    out = api.fold_run(api.read_source(source, **options), record or ran(), moved, lambda _s: trust)
    return static, out


def settled(out: dict) -> bool:
    """True when the run settled the reading: admitted with the recorded rounds."""
    return out["admission_errors"] == [] and out["fixed_budget"]["num_rounds"]["value"] == 4


def stands_whole(out: dict, static: dict, read: str | None) -> bool:
    """The static refusal stands: the same codes and messages; where files alone hold it (`read`), each budget
    message also names the file the run read outside the job's folder, and nothing else changes."""
    said = f"; the dry run read {read}, which its cache key does not hold: one run cannot pin it"
    if read is not None:
        assert all(said in e["message"] for e in out["admission_errors"] if "fixed_budget." in e["message"])
    plain = [{**e, "message": e["message"].replace(said, "")} for e in out["admission_errors"]]
    return plain == static["admission_errors"]


def messages(config: dict) -> str:
    return " ".join(e["message"] for e in config["admission_errors"])


# (1) the old words in a refusal's text, with no such input behind it
WORDED = {
    "a loop over a call quoting the words": (
        'for rounds in plan_for("reads files", "random numbers"):\n    pass\n',
        ("reads files", "random numbers"),
    ),
    "a condition quoting the words decides which recipe runs": (
        "mode = plan_for(args.n_clients)\nrounds = 4\n"
        'if mode == "reads the clock from the host environment variable":\n'
        '    NumpyFedAvgRecipe(name="other", model=[0.0], num_rounds=1).execute(SimEnv(num_clients=1))\n',
        ("reads the clock", "host environment", "environment variable"),
    ),
    "a condition quoting the own-nvflare words": (
        "mode = plan_for(args.n_clients)\nrounds = 4\n"
        'if mode == "x is imported instead of NVFLARE":\n'
        '    NumpyFedAvgRecipe(name="other", model=[0.0], num_rounds=1).execute(SimEnv(num_clients=1))\n',
        ("is imported instead of NVFLARE",),
    ),
}


@pytest.mark.parametrize("case", sorted(WORDED))
def test_a_refusal_quoting_the_words_of_an_input_it_does_not_read_is_settled_by_the_run(case):
    rounds, words = WORDED[case]
    static, out = folded(rounds)
    assert static["admission_errors"], "precondition: the reading refuses"
    assert all(word in messages(static) for word in words), "precondition: its text holds the words"
    assert settled(out), out["admission_errors"]


# (2) each kind, named by the refusal, blocks settling
KINDS = {
    "randomness": "rounds = random.randint(2, 6)\n",
    "time": "rounds = int(time.time()) % 5 + 1\n",
    "an environment variable": 'rounds = int(os.environ["ROUNDS"])\n',
    "the whole environment": "rounds = len(dict(os.environ))\n",
    "files": 'rounds = int(open("/srv/rounds.txt").read())\n',
    "the clock deciding an expression": "rounds = 3 if time.time() % 2 else 5\n",
    "a random draw looped over": "for rounds in random.sample([2, 3, 5], 1):\n    pass\n",
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_run_time_input_behind_a_budget_keeps_the_refusal(kind):
    static, out = folded(KINDS[kind], ran(files_read=("/srv/rounds.txt",)))
    assert static["admission_errors"], "precondition: the reading refuses"
    assert not settled(out)
    assert out["fixed_budget"]["num_rounds"]["value"] is None
    assert stands_whole(out, static, read="/srv/rounds.txt" if kind == "files" else None)


def test_files_read_only_inside_the_job_s_folder_are_pinned_by_the_run():
    rounds = 'rounds = int(open("rounds.txt").read())\n'
    assert settled(folded(rounds, ran(files_read=("rounds.txt",)))[1])
    assert not settled(folded(rounds, ran(files_read=("rounds.txt", "/srv/other.txt")))[1])
    assert not settled(folded(rounds, ran(files_read=(".git/rounds.txt",)))[1]), "a folder the cache key skips"


def test_the_job_s_own_nvflare_keeps_the_refusal():
    static, out = folded("rounds = 4\n", exists=lambda rel: rel == "nvflare.py")
    assert "is imported instead of NVFLARE" in messages(static)
    assert not settled(out) and out["admission_errors"] == static["admission_errors"]


# (3) a call reading an input, given an argument the reading cannot determine: the refusal names the argument
HIDDEN = {
    "a path tested for existence": "rounds = 9 if os.path.exists(plan_for(args.n_clients)) else 2\n",
    "a file's size": "rounds = os.path.getsize(plan_for(args.n_clients))\n",
    "a file tested in an f-string": 'rounds = int(f"{os.path.isfile(plan_for(args.n_clients)):d}") + 2\n',
}


@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_a_call_reading_files_keeps_the_refusal_when_its_argument_is_the_named_cause(case):
    static, out = folded(HIDDEN[case], ran(files_read=("/srv/sites",)))
    assert static["fixed_budget"]["num_rounds"]["confidence"] == "unresolved", "precondition: the reading refuses"
    assert "reads files" not in messages(static), "precondition: the refusal names the argument, not the files"
    assert not settled(out)
    assert stands_whole(out, static, read="/srv/sites")
    assert settled(folded(HIDDEN[case], ran(files_read=("sites",)))[1]), "files inside the job's folder are pinned"


def test_a_budget_an_unfollowed_call_alone_decides_is_settled_by_the_run():
    """The control: no run-time input kind behind the refusal, so the run settles it."""
    static, out = folded("rounds = plan_for(args.n_clients)\n")
    assert static["fixed_budget"]["num_rounds"]["confidence"] == "unresolved"
    assert settled(out), out["admission_errors"]
