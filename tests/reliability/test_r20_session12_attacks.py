"""Attacks on session 12's importer (issue 33): the coarse rule for writes the static reading does not follow
(h1cons), the fold of a dry run into the reading (h2fold) and the one option record (h4opts).

The promise under attack: a budget that code the reading does not follow may change is refused naming the line,
never admitted as the value the reading saw; a job that only reads its options keeps its admission and budget.
"""

from __future__ import annotations

import pytest
from autofl_core.importer import admission, api, recorded
from test_importer_recorded import record
from test_r16_session_attacks import PARSED, _job_with
from test_r18_importer_holes import _fixed, _job, _real_budget, sealed

# --- 1. code of job.py that a call not followed runs, reaching the options through another name or function ------

REACHED = {  # case: the lines after the parse; job.py runs 9 rounds
    "a method calling a function of job.py": "def bump():\n    args.num_rounds = 9\n\n\nclass Plan:\n"
    "    def __init__(self):\n        bump()\n\n\nPlan()\n",
    "a function a handed function calls": "def bump():\n    args.num_rounds = 9\n\n\ndef key(x):\n    bump()\n"
    "    return x\n\n\nmax([1], key=key)\n",
    "print calling __str__": "def bump():\n    args.num_rounds = 9\n\n\nclass Plan:\n    def __str__(self):\n"
    "        bump()\n        return 'plan'\n\n\nprint(Plan())\n",
    "dataclass __post_init__ calling a function": "import dataclasses\n\n\ndef bump():\n    args.num_rounds = 9\n\n\n"
    "@dataclasses.dataclass\nclass Cfg:\n    n: int = 1\n\n    def __post_init__(self):\n        bump()\n\n\nCfg()\n",
    "a method writing through a list holding the options": "box = [args]\n\n\nclass Plan:\n"
    "    def __init__(self):\n        box[0].num_rounds = 9\n\n\nPlan()\n",
    "copy calling __copy__ through a list": "import copy\n\nbox = [args]\n\n\nclass Plan:\n    def __copy__(self):\n"
    "        box[0].num_rounds = 9\n        return self\n\n\ncopy.copy(Plan())\n",
    "a json object_hook writing through a list": "import json\n\nbox = [args]\n\n\ndef hook(d):\n"
    "    box[0].num_rounds = 9\n    return d\n\n\njson.loads('{}', object_hook=hook)\n",
    "a logging filter writing through a dict": "import logging\n\ncfg = {'a': {'ns': args}}\n\n\ndef keep(rec):\n"
    "    cfg['a']['ns'].num_rounds = 9\n    return True\n\n\nlog = logging.getLogger('r20')\nlog.addFilter(keep)\n"
    "log.warning('x')\n",
    "a sort key writing vars(args)": "opts = vars(args)\n\n\ndef key(x):\n    opts['num_rounds'] = 9\n    return x\n\n\n"
    "sorted([1, 2], key=key)\n",
    "iter with a sentinel": "box = [args]\n\n\ndef step():\n    box[0].num_rounds = 9\n    return 0\n\n\nlist(iter(step, 0))\n",
    "functools.reduce of a lambda calling setattr": "import functools\n\nfunctools.reduce(lambda a, b: "
    "setattr(args, 'num_rounds', 9), [1, 2])\n",
    "a comprehension calling setattr on its item": "[setattr(a, 'num_rounds', 9) for a in [args]]\n",
    "vars(args).update handed to map": "list(map(vars(args).update, [{'num_rounds': 9}]))\n",
    "vars(args).update kept and called": "put = vars(args).update\nput(num_rounds=9)\n",
}


@pytest.mark.parametrize("case", list(REACHED), ids=lambda c: c.replace(" ", "-"))
def test_options_reached_by_code_not_followed_are_never_admitted_as_read(tmp_path, case):
    """Before: all were admitted with the 2 rounds parsed (`_reaches` looked one function deep, at the names the
    function itself wrote; a comprehension's item and a container's bound method were not seen)."""
    job = _job_with(tmp_path, PARSED + REACHED[case] + "rounds = args.num_rounds\n")
    assert _real_budget(job)["num_rounds"] == 9
    config = api.import_job(job)
    assert config["fixed_budget"]["num_rounds"]["value"] is None, _fixed(config)
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "fixed_budget.num_rounds is unresolved" in said and "at line" in said, said


READ_ONLY = {  # case: the lines after the parse; job.py runs the 2 rounds parsed
    "a class of job.py reading an option": "class Plan:\n    def __init__(self):\n        self.n = args.num_rounds\n\n\n"
    "Plan()\n",
    "a sort key iterating a list of names": "NAMES = ['a', 'b']\n\n\ndef key(x):\n"
    "    return len([n for n in NAMES if n == x])\n\n\nsorted(['b', 'a'], key=key)\n",
    "a comprehension calling str on a list of names": "NAMES = ['a', 'b']\nprint([str(n) for n in NAMES])\n",
}


@pytest.mark.parametrize("case", list(READ_ONLY), ids=lambda c: c.replace(" ", "-"))
def test_code_not_followed_that_only_reads_keeps_the_budget(tmp_path, case):
    job = _job_with(tmp_path, PARSED + READ_ONLY[case] + "rounds = args.num_rounds\n")
    assert _real_budget(job)["num_rounds"] == 2
    config = api.import_job(job)
    assert config["admission_errors"] == [], config["admission_errors"]
    assert _fixed(config) == {"num_clients": 2, "min_clients": 2, "num_rounds": 2}


# --- 2. the parser changed before it parses -------------------------------------------------------------------

ADD = "action = parser.add_argument('--num_rounds', type=int, default=2)"
PARSER_CHANGES = {  # case: the lines after `parser = argparse.ArgumentParser()` that make its parse give 9 rounds
    "set_defaults by a sort key": f"{ADD}\nsorted([1], key=lambda x: parser.set_defaults(num_rounds=9))",
    "set_defaults by a method of job.py": f"{ADD}\n\n\nclass Plan:\n    def __init__(self):\n"
    "        parser.set_defaults(num_rounds=9)\n\n\nPlan()",
    "set_defaults kept and called": f"{ADD}\nput = parser.set_defaults\nput(num_rounds=9)",
    "set_defaults by getattr": f"{ADD}\ngetattr(parser, 'set_defaults')(num_rounds=9)",
    "set_defaults in a comprehension": f"{ADD}\n[p.set_defaults(num_rounds=9) for p in [parser]]",
    "the last action's default": f"{ADD}\nparser._actions[-1].default = 9",
    "the action add_argument returns": f"{ADD}\naction.default = 9",
    "setattr of the action": f"{ADD}\nsetattr(action, 'default', 9)",
    "an action class registered": "import argparse as ap\n\n\nclass Nine(ap.Action):\n"
    "    def __call__(self, parser, namespace, values, option_string=None):\n"
    "        setattr(namespace, self.dest, 9)\n\n\nparser.register('action', None, Nine)\n"
    "parser.add_argument('--num_rounds', type=int, default=2)\nsys.argv += ['--num_rounds', '2']",
}


@pytest.mark.parametrize("case", list(PARSER_CHANGES), ids=lambda c: c.replace(" ", "-"))
def test_a_parser_changed_where_the_reading_does_not_look_parses_no_known_budget(tmp_path, case):
    """Before: each was admitted with the 2 rounds of the default the reading saw (`add_argument` gave None)."""
    body = (
        "parser = argparse.ArgumentParser()\n"
        + PARSER_CHANGES[case]
        + "\nargs = parser.parse_args()\nrounds = args.num_rounds\n"
    )
    job = _job_with(tmp_path, body)
    assert _real_budget(job)["num_rounds"] == 9
    config = api.import_job(job)
    assert config["fixed_budget"]["num_rounds"]["value"] is None, _fixed(config)
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "fixed_budget.num_rounds is unresolved" in said and "at line 1" in said, said


# --- 3. an env's attributes written through a dict, a comprehension or a copy -------------------------------------

ENV_TAIL = """
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
env = SimEnv(num_clients=2)
WRITE
recipe.execute(env)
"""
ENV_WRITES = {  # case: the line that makes the env run 5 clients
    "an item of vars(env)": "vars(env)['num_clients'] = 5",
    "vars(env).update": "vars(env).update(num_clients=5)",
    "env.__dict__.update": "env.__dict__.update(num_clients=5)",
    "getattr of __dict__": "getattr(env, '__dict__')['num_clients'] = 5",
    "operator.setitem of vars(env)": "import operator\noperator.setitem(vars(env), 'num_clients', 5)",
    "a comprehension calling setattr": "[setattr(e, 'num_clients', 5) for e in [env]]",
    "a copy of the env written": "import copy\nenv = copy.copy(env)\nenv.num_clients = 5",
}


@pytest.mark.parametrize("case", list(ENV_WRITES), ids=lambda c: c.replace(" ", "-"))
def test_an_env_written_where_the_reading_does_not_look_is_never_admitted_with_its_clients(tmp_path, case):
    """Before: each was admitted with 2 clients (the copy: with no client count at all, as a deployment)."""
    job = _job_with(tmp_path, "", ENV_TAIL.replace("WRITE", ENV_WRITES[case]))
    assert _real_budget(job)["num_clients"] == 5
    config = api.import_job(job)
    assert config["fixed_budget"]["num_clients"]["value"] is None, _fixed(config)
    said = " ".join(e["message"] for e in config["admission_errors"])
    assert "fixed_budget.num_clients is unresolved" in said and "line 1" in said, said


# --- 4. a FedJob's sites and controllers -------------------------------------------------------------------------

FEDJOB = (
    "import os\nfrom nvflare.job_config.api import FedJob\nfrom nvflare.app_common.workflows.fedavg import FedAvg\n"
    "from nvflare.job_config.script_runner import ScriptRunner\n"
    "job = FedJob(name='j')\njob.to(FedAvg(num_clients=2, num_rounds=3), 'server')\n"
    "job.to(ScriptRunner(script='c.py'), 'site-1')\nSEND\n"
    "job.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/tmp/w'))\n"
)
SENT_UNSEEN = {  # case: the lines that send the clients' script to two more sites
    "map of a lambda calling job.to": "list(map(lambda s: job.to(ScriptRunner(script='c.py'), s), ['b', 'c']))",
    "map of job.to": "list(map(job.to, [ScriptRunner(script='c.py')] * 2, ['b', 'c']))",
    "job.to kept and called": "send = job.to\nsend(ScriptRunner(script='c.py'), 'b')\nsend(ScriptRunner(script='c.py'), 'c')",
    "getattr of job.to": "getattr(job, 'to')(ScriptRunner(script='c.py'), 'b')\ngetattr(job, 'to')(ScriptRunner(script='c.py'), 'c')",
    "functools.partial of job.to": "import functools\nsend = functools.partial(job.to, ScriptRunner(script='c.py'))\n"
    "send('b')\nsend('c')",
    "a sort key calling job.to": "def add(s):\n    job.to(ScriptRunner(script='c.py'), s)\n    return s\n\n\n"
    "sorted(['b', 'c'], key=add)",
}


@pytest.mark.parametrize("case", list(SENT_UNSEEN), ids=lambda c: c.replace(" ", "-"))
def test_sites_a_fedjob_is_sent_to_by_code_not_followed_leave_its_clients_unresolved(case):
    """Before: admitted with 1 client (the one `job.to` the walk saw); job.py runs 3. A job given to code not followed
    (a function, getattr) may also be run by it: that refusal is the one a dry run cannot settle."""
    config = api.import_source(FEDJOB.replace("SEND", SENT_UNSEEN[case]))
    codes = [e["code"] for e in config["admission_errors"]]
    if codes == [admission.SEVERAL_RUNS]:
        assert "to code the reading does not follow" in config["admission_errors"][0]["message"]
        return
    entry = config["fixed_budget"]["num_clients"]
    assert entry["value"] is None, _fixed(config)
    assert "a site name given to job.to(...) is not resolved statically" in entry["reason"], entry
    assert codes == ["AUTOFL_UNRESOLVED_SAFETY_FIELD"]


@pytest.mark.parametrize("send", ["job.to(FedAvg(num_clients=2, num_rounds=3), 'server')", "job.to_server(FedAvg())"])
def test_two_controllers_on_the_server_are_not_one_round_count(send):
    """NVFLARE runs the server's workflows one after the other, so their rounds add up. Before: the first
    controller's 3 rounds were admitted."""
    config = api.import_source(FEDJOB.replace("SEND", f"job.to(ScriptRunner(script='c.py'), 'site-2')\n{send}"))
    entry = config["fixed_budget"]["num_rounds"]
    assert entry["value"] is None and "2 controllers (lines 6, 9) run one after the other" in entry["reason"], entry
    assert config["admission_errors"], _fixed(config)


def test_a_dry_run_of_two_workflows_with_the_same_rounds_is_not_one_round_count():
    """Two FedAvg of 3 rounds each run 6 rounds. Before: the distinct values ([3]) were one budget of 3."""
    fedavg = {"path": "nvflare.app_common.workflows.fedavg.FedAvg", "args": {"num_rounds": 3, "num_clients": 2}}
    server = {"workflows": [fedavg, fedavg]}
    found = recorded.budget(record(configs={"j/app/config/config_fed_server.json": server}))
    assert found["num_rounds"]["value"] is None and "several num_rounds [3, 3]" in found["num_rounds"]["reason"]


# --- 5. a job that trains more than once: refused statically, and by a dry run that sees the second run ---------

RECIPE = """from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

recipe = NumpyFedAvgRecipe(name="h", model=[0.0], min_clients=2, num_rounds=3, train_script="client.py")
"""
SEVERAL_RUNS = {  # case: the lines after the recipe; each trains twice, with 2 clients first
    "two executes": "recipe.execute(SimEnv(num_clients=2))\nrecipe.execute(SimEnv(num_clients=5))\n",
    "an execute per item of a list": "for n in [2, 5]:\n    recipe.execute(SimEnv(num_clients=n))\n",
    "a second recipe run after the first": "other = NumpyFedAvgRecipe(name='o', model=[0.0], min_clients=2, "
    "num_rounds=9, train_script='client.py')\nrecipe.execute(SimEnv(num_clients=2))\nother.execute(SimEnv(num_clients=2))\n",
    "a lambda run by map": "list(map(lambda n: recipe.execute(SimEnv(num_clients=n)), [2, 5]))\n",
    "a function run as a sort key": "def go(n):\n    recipe.execute(SimEnv(num_clients=n))\n    return n\n\n\n"
    "sorted([2, 5], key=go)\n",
}


@pytest.mark.parametrize("case", list(SEVERAL_RUNS), ids=lambda c: c.replace(" ", "-"))
def test_a_job_that_trains_twice_is_refused_statically(tmp_path, case):
    """Before: two executes were admitted with the last run's 5 clients; the loop and the second recipe were
    refused as unsupported, which a dry run settles (it then admitted the first run's budget)."""
    config = api.import_job(_job(tmp_path / "job", RECIPE + SEVERAL_RUNS[case]))
    assert [e["code"] for e in config["admission_errors"]] == [admission.SEVERAL_RUNS], config["admission_errors"]


@sealed
@pytest.mark.parametrize("case", ["a second recipe run after the first", "a lambda run by map"])
def test_the_dry_run_of_a_job_that_trains_twice_keeps_the_static_refusal(tmp_path, private_cache, case):
    """The run records the first `execute` (2 clients, 3 rounds) and goes on: the second recipe's run is seen (the
    refusal names both lines), the second run of the same job raises in NVFLARE (one run not shown: the refusal
    stays). Before session 12: what ran after the first run was never seen, and the job was admitted with the first
    run's budget."""
    config = api.import_job(_job(tmp_path / "job", RECIPE + SEVERAL_RUNS[case]), dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    assert [e["code"] for e in config["admission_errors"]] == [admission.SEVERAL_RUNS], config["admission_errors"]
