"""Attacks on holes12's rules: a namespace, container or object given to code the static reading does not follow,
environment values matched by hash, and a job's own env classes.

The promises under attack, both ways: a budget that code the reading does not follow may change is refused naming
the line (never admitted as the value the reading saw), and a safe job that only reads or logs its options keeps
its admission and budget.
"""

from __future__ import annotations

import re

import pytest
from autofl_core.importer import api
from test_r16_session_attacks import PARSED, _job_with
from test_r18_importer_holes import HASHED_ENV, _fixed, _job, _real_budget, sealed

TUNING = """def tune(namespace):
    namespace.num_rounds = 9


class Base:
    def __init__(self, a):
        a.num_rounds = 9
"""

# --- 1. code the reading does not follow that changes the budget: refused --------------------------------------

WRITES = {  # case: the lines after the parse; job.py runs 9 rounds
    "map calling a function of job.py": "def bump(a):\n    a.num_rounds = 9\n\n\nlist(map(bump, [args]))\n",
    "filter calling a lambda": "list(filter(lambda a: setattr(a, 'num_rounds', 9), [args]))\n",
    "sorted with a key that writes": "def bump(a):\n    a.num_rounds = 9\n\n\nsorted([args], key=bump)\n",
    "min with a key that writes": "def bump(a):\n    a.num_rounds = 9\n    return 0\n\n\nmin([args], key=bump)\n",
    "contextlib's callback": "import contextlib\nwith contextlib.ExitStack() as stack:\n"
    "    stack.callback(setattr, args, 'num_rounds', 9)\n",
    "functools.partial of setattr": "import functools\nfunctools.partial(setattr, args, 'num_rounds', 9)()\n",
    "dict.update of vars": "dict.update(vars(args), num_rounds=9)\n",
    "a ChainMap over vars": "import collections\ncollections.ChainMap(vars(args))['num_rounds'] = 9\n",
    "a job class inheriting a module's class": "import tuning\n\n\nclass Plan(tuning.Base):\n    pass\n\n\n"
    "Plan(args)\n",
    "a job class inheriting a job class that writes": "class Base:\n    def __init__(self, a):\n"
    "        a.num_rounds = 9\n\n\nclass Plan(Base):\n    pass\n\n\nPlan(args)\n",
    "a job class whose method hands self on": "import tuning\n\n\nclass Plan:\n    def __init__(self, a):\n"
    "        self.num_rounds = a.num_rounds\n        tuning.tune(self)\n        a.num_rounds = self.num_rounds\n\n\n"
    "Plan(args)\n",
    "a method reached by getattr": "class Plan:\n    def apply(self, a):\n        a.num_rounds = 9\n\n\n"
    "getattr(Plan(), 'apply')(args)\n",
    "a namespace rebuilt by types": "import types\nns = types.SimpleNamespace(**vars(args))\ntypes.SimpleNamespace"
    ".__init__(ns, num_rounds=9)\nargs = ns\n",
    "a json round trip assigned back": "import json\nimport tuning\nplan = json.loads(json.dumps(vars(args)))\n"
    "tuning.tune(argparse.Namespace(**plan))\nargs.num_rounds = 9 if plan else 2\n",
    "a copy written then assigned back": "import copy\nc = copy.copy(args)\nc.num_rounds = 9\nargs = c\n",
    "dataclasses.replace": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Cfg:\n    num_rounds: int\n\n\n"
    "cfg = dataclasses.replace(Cfg(args.num_rounds), num_rounds=9)\nargs.num_rounds = cfg.num_rounds\n",
}


@pytest.mark.parametrize("case", list(WRITES), ids=lambda c: c.replace(" ", "-"))
def test_code_not_followed_that_changes_the_rounds_is_never_admitted_with_the_rounds_read(tmp_path, case):
    job = _job_with(tmp_path, PARSED + WRITES[case] + "rounds = args.num_rounds\n")
    (job.parent / "tuning.py").write_text(TUNING, encoding="utf-8")
    assert _real_budget(job)["num_rounds"] == 9
    config = api.import_job(job)
    rounds = config["fixed_budget"]["num_rounds"]["value"]
    assert rounds in (None, 9), (rounds, config["admission_errors"])
    if rounds is None:
        assert config["admission_errors"], _fixed(config)
