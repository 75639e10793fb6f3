"""The walker's statements one by one, each checked through the whole entry it leaves in the config.

Loops (unrolled, or walked once with an unresolved loop variable), unpacking, augmented assignment, calls of
functions defined in job.py (positional, keyword-only, *args, **kwargs, missing arguments), both branches of an
`if` the importer cannot resolve, and attributes of objects. The `reason` of an unresolved value is what the user
reads to fix job.py, so it is compared word for word. Mutation testing (`make mutate`, docs/mutation.md) found
these paths untested.
"""

from __future__ import annotations

import ast

import pytest
from autofl_core.importer import api
from autofl_core.importer.walker import Walker

HEAD = (
    "import argparse, os, random\nfrom nvflare.recipe import SimEnv\n"
    "from nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--n', type=int, default=2)\n"
    "parser.add_argument('--fast', action='store_true')\nargs = parser.parse_args()\n"
)
LINE = HEAD.count("\n") + 1  # the first line after HEAD


def config_of(prelude: str, value: str = "1", base_args=()) -> dict:
    source = (
        HEAD + prelude + f"r = FedAvgRecipe(min_clients=2, num_rounds=3, v={value})\nr.execute(SimEnv(num_clients=2))\n"
    )
    return api.import_source(source, base_args=base_args)


def v_of(prelude: str, value: str = "v", base_args=()) -> dict:
    return config_of(prelude, value, base_args)["recipe_args"]["v"]


def unresolved(expr: str, reason: str, *flags: str) -> dict:
    return {
        "value": None,
        "confidence": "unresolved",
        "expr": expr,
        **({"flags": list(flags)} if flags else {}),
        "reason": reason,
    }


def test_loop_over_an_unknown_sequence_leaves_its_variable_unresolved():
    prelude = "v = 0\nfor site in os.environ['SITES'].split(','):\n    last = site\n"
    reason = (
        f"loop variable of a loop over os.environ['SITES'].split(','): it reads the environment variable SITES "
        f"at run time (line {LINE + 1})"
    )
    assert v_of(prelude, "site") == unresolved("site", reason)
    assert v_of(prelude, "last") == {
        "value": None,
        "confidence": "unresolved",
        "expr": "last",
        "reason": f"it changes with each pass of the loop at line {LINE + 1}",
    }
    assert v_of(prelude, "v") == {"value": 0, "confidence": "high"}  # unchanged by the loop body


def test_loop_that_breaks_is_walked_once_with_its_reason():
    prelude = "for i in [1, 2]:\n    x = i\n    break\n"
    reason = (
        "loop variable of a loop over [1, 2]: a sequence that is not known statically, too long, or left with "
        "break/continue"
    )
    assert v_of(prelude, "i") == unresolved("i", reason)


def test_short_known_loop_is_unrolled_with_its_options():
    prelude = "total = 0\nfor k in [args.n, 3]:\n    total += k\n"
    assert v_of(prelude, "total") == {"value": 5, "confidence": "medium", "expr": "total + k", "flags": ["--n"]}
    counted = "total = 0\nfor k in [0, 1, 2, 3][: args.n]:\n    total += 10\n"
    assert v_of(counted, "total", ["--n", "3"]) == {
        "value": 30,
        "confidence": "medium",
        "expr": "total + 10",
        "flags": ["--n"],
    }


@pytest.mark.parametrize(
    ("loop", "line"),
    [
        ("while random.random() < 0.5:\n    r = FedAvgRecipe(min_clients=2, num_rounds=3)\n", LINE + 1),
        ("for x in os.environ['A']:\n    r = FedAvgRecipe(min_clients=2, num_rounds=3)\n", LINE + 1),
        ("for x in ['a', 'b']:\n    r = FedAvgRecipe(min_clients=2, num_rounds=3)\n", LINE + 1),
    ],
)
def test_a_recipe_built_in_a_loop_is_refused_with_the_loop_line(loop, line):
    source = HEAD + loop + "r.execute(SimEnv(num_clients=2))\n"
    support = api.import_source(source)["import"]["support"]
    assert support == {
        "status": "unsupported",
        "reason": f"a recipe/job/env is built or run inside a loop (line {line}); build and run "
        "exactly one, outside loops, so every trial runs the same job",
    }


def test_loop_notes_record_kind_and_line():
    walk = Walker([]).run(ast.parse("import os\nwhile os.environ['A']:\n    x = 1\nfor i in [1]:\n    y = i\n"))
    notes = [(b.line, b.test, b.resolved, b.kind, b.touched_surface) for b in walk.branches]
    assert notes == [(3, "loop body", False, "loop", ""), (5, "loop body", False, "loop", "")]


def test_unpacking():
    prelude = "a, b = [args.n, 7]\nc, *d = [1, 2, 3]\ne, f = 1, 2, 3\n"
    assert v_of(prelude, "a") == {"value": 2, "confidence": "medium", "expr": "[args.n, 7]", "flags": ["--n"]}
    assert v_of(prelude, "b") == {"value": 7, "confidence": "medium", "expr": "[args.n, 7]", "flags": ["--n"]}
    assert v_of(prelude, "c") == unresolved("c", "cannot unpack statically")
    assert v_of(prelude, "e") == unresolved("e", "cannot unpack statically")
    objects = "a, b = [object(), 7]\n"
    assert v_of(objects, "b") == {"value": 7, "confidence": "high"}
    listed = "pair = (4, 5)\n[g, h] = pair\n"
    assert v_of(listed, "h") == {"value": 5, "confidence": "medium", "expr": "(4, 5)"}


def test_calls_of_local_functions_bind_their_parameters():
    prelude = (
        "def f(a, b=10, *rest, k, m=4, **extra):\n    return [a, b, k, m]\n"
        "def first(*rest, **extra):\n    return rest[0] + extra['z']\n"
        "def g(a, *, k):\n    return k\n"
    )
    assert v_of(prelude, "f(1, 2, 3, k=5, z=6)")["value"] == [1, 2, 5, 4]
    assert v_of(prelude, "f(a=1, k=5)")["value"] == [1, 10, 5, 4]
    assert v_of(prelude, "first(3, z=6)") == {"value": 9, "confidence": "medium", "expr": "rest[0] + extra['z']"}
    assert v_of(prelude, "first(3, k=6)") == unresolved("rest[0] + extra['z']", "subscript cannot be evaluated")
    assert v_of(prelude, "g(1)") == unresolved("g(1)", "missing argument")
    assert v_of(prelude, "f(k=1)") == unresolved("[a, b, k, m]", "missing argument")
    kwargs = "def h(**kw):\n    return kw['a'] + kw['b']\n"
    assert v_of(kwargs, "h(a=1, b=2)")["value"] == 3
    assert v_of(kwargs, "h(**{'a': 1, 'b': args.n})") == {
        "value": 3,
        "confidence": "medium",
        "expr": "kw['a'] + kw['b']",
        "flags": ["--n"],
    }


def test_keyword_unpacking_into_a_constructor():
    prelude = "opts = {'num_rounds': args.n}\n"
    source = HEAD + prelude + "r = FedAvgRecipe(min_clients=2, **opts)\nr.execute(SimEnv(num_clients=2))\n"
    config = api.import_source(source, base_args=["--n", "4"])
    assert config["fixed_budget"]["num_rounds"] == {
        "value": 4,
        "confidence": "pinned",
        "flag": "--n",
        "source": "FedAvgRecipe(num_rounds=...)",
        "depends_on": ["--n"],
    }


def test_what_either_side_of_an_unresolved_condition_binds_is_unresolved():
    """The sides are not merged: a name either side binds holds no value known statically afterwards, even one both
    sides agree on."""
    prelude = (
        "same = 1\nboth = 1\nif os.environ.get('X'):\n    same = 2\n    both = 2\n    one = 3\nelse:\n"
        "    same = 2\n    both = 5\n"
    )
    for name in ("same", "both", "one"):
        assert v_of(prelude, name) == {
            "value": None,
            "confidence": "unresolved",
            "expr": name,
            "reason": f"depends on the condition at line {LINE + 2}",
        }


def test_what_a_side_binds_keeps_the_options_it_came_from():
    """Unresolved after the condition, but still depending on every option either side read (so an option that
    reaches the job only through one side is not reported as unused)."""
    prelude = "if os.environ.get('X'):\n    v = args.n\nelse:\n    v = args.fast\n"
    assert v_of(prelude, "v")["flags"] == ["--n", "--fast"]


def test_a_nested_function_or_a_comprehension_in_a_side_binds_no_outer_name():
    nested = "v = 3\nif os.environ.get('X'):\n    def f():\n        v = 9\n"
    assert v_of(nested, "v") == {"value": 3, "confidence": "high"}
    comprehension = "v = 3\nif os.environ.get('X'):\n    w = [v for v in [1]]\n"
    assert v_of(comprehension, "v") == {"value": 3, "confidence": "high"}


@pytest.mark.parametrize(
    ("body", "used", "line"),
    [
        ("print(v := args.n + 1)\n", "`:=`", 0),
        ("def f():\n    global v\n    v = 9\n", "`global`", 1),
        ("def f():\n    v = 1\n    def g():\n        nonlocal v\n        v = 9\n", "`nonlocal`", 3),
        ("match args.n:\n    case 1:\n        v = 9\n", "`match`", 0),
    ],
)
def test_a_construct_the_static_reading_does_not_follow_refuses_the_job_naming_its_line(body, used, line):
    """`:=`, `global`, `nonlocal` and `match` rebind names where a walk would have to model Python's scopes and
    patterns: the static reading refuses the job, naming the first line that uses one (a dry run follows it; see
    test_importer_dryrun's `global` and `walrus` cases)."""
    errors = config_of(body)["admission_errors"]
    assert (
        errors
        and f"job.py uses {used} at line {LINE + line}, which the static reading does not follow"
        in (errors[0]["message"])
    ), errors


def test_a_recipe_run_inside_a_comprehension_is_refused_as_in_a_loop():
    """A comprehension may run its element any number of times (none: `range(0)`): like a loop, never admitted."""
    source = (
        HEAD + "runs = [FedAvgRecipe(min_clients=2, num_rounds=3).execute(SimEnv(num_clients=2)) for _ in range(0)]\n"
    )
    errors = api.import_source(source)["admission_errors"]
    assert errors and "inside a loop (line" in errors[0]["message"], errors


def test_a_side_that_returns_early_still_decides_the_result():
    """A function that returns 5 when X is set and 2 otherwise has no static result (a bug found while writing
    these tests: the early return was dropped and the function read as 2, high confidence)."""
    prelude = (
        "def pick():\n    x = 1\n    if os.environ.get('X'):\n        return 5\n    else:\n        x = 2\n"
        "    return x\n"
    )
    unpinned = {
        "value": None,
        "confidence": "unresolved",
        "expr": "pick()",
        "reason": f"depends on the condition at line {LINE + 2}",
    }
    assert v_of(prelude, "pick()") == unpinned
    loop = "def pick():\n    for s in os.environ['A']:\n        return 4\n    return 5\n"
    assert v_of(loop, "pick()") == unpinned
    guard = "def pick():\n    if os.environ.get('X'):\n        raise ValueError('no')\n    return 3\n"
    assert v_of(guard, "pick()") == {"value": 3, "confidence": "high"}  # a raise gives no result
    guard_else = "def pick():\n    if os.environ.get('X'):\n        return 4\n    else:\n        raise ValueError\n"
    assert v_of(guard_else, "pick()") == {"value": 4, "confidence": "high"}
    raises = "def pick():\n    if os.environ.get('X'):\n        raise ValueError\n    raise KeyError\n"
    # issue 22: a function that always raises makes job.py raise (Python semantics), so nothing is built
    refused = config_of(raises, "pick()")["admission_errors"][0]["message"]
    assert f"reaches `raise` at line {LINE + 3} (KeyError)" in refused and "whatever the arguments" in refused
    same = "def pick():\n    if os.environ.get('X'):\n        return 5\n    return 5\n"
    first_line = {**unpinned, "reason": f"depends on the condition at line {LINE + 1}"}
    assert v_of(same, "pick()") == first_line  # the sides are not merged, even where they agree
    both = "def pick():\n    if os.environ.get('X'):\n        return 5\n    else:\n        return 5\n"
    assert v_of(both, "pick()") == first_line
    options = "def pick():\n    if os.environ.get('X'):\n        return args.n\n    x = 1\n    return x\n"
    assert v_of(options, "pick()") == {
        "value": None,
        "confidence": "unresolved",
        "expr": "pick()",
        "flags": ["--n"],
        "reason": f"depends on the condition at line {LINE + 1}",
    }


def test_the_branch_a_recipe_is_built_in_decides_support():
    source = (
        HEAD + "if os.environ.get('BIG'):\n    r = FedAvgRecipe(min_clients=2, num_rounds=9)\nelse:\n"
        "    r = FedAvgRecipe(min_clients=2, num_rounds=3)\nr.execute(SimEnv(num_clients=2))\n"
    )
    support = api.import_source(source)["import"]["support"]
    assert support["reason"] == (
        f"which recipe/job runs depends on a condition the importer cannot resolve (line {LINE}: "
        "os.environ.get('BIG')); make it depend only on parsed arguments or literals, or pass the choice in --base-args"
    )


def test_attributes_of_objects():
    prelude = "class Cfg:\n    pass\nc = Cfg()\nimport torch\nm = torch.nn.Linear(2, 2)\n"
    assert v_of(prelude, "c.rounds") == unresolved(
        "c.rounds",
        f"attribute 'rounds' of an instance of class Cfg (line {LINE + 2}); the importer does not follow classes",
    )
    assert v_of(prelude, "m.weight")["reason"].startswith("attribute 'weight' of Linear(...): it comes from ")
    assert v_of("", "os.environ['A'].lower")["reason"].startswith("it reads the environment variable A")


def test_file_name_and_dunder_main():
    assert v_of("", "__file__") == {"value": "job.py", "confidence": "medium", "expr": "__file__"}
    assert v_of("", "__name__ == '__main__'") == {
        "value": True,
        "confidence": "medium",
        "expr": "__name__ == '__main__'",
    }


def test_dynamic_attribute_of_a_class_picked_at_run_time_stays_dynamic():
    prelude = "import nvflare.app_opt.pt.recipes.fedavg as m\nkind = getattr(m, os.environ['K'])\n"
    source = HEAD + prelude + "r = kind.Recipe(min_clients=2, num_rounds=3)\nr.execute(SimEnv(num_clients=2))\n"
    assert api.import_source(source)["import"]["support"]["reason"].startswith(
        f"dynamic construction: the object run at line {LINE + 3} is built from a class chosen at run time"
    )


def test_option_values_rebound_in_job_py():
    assert v_of("args.n += 1\n", "args.n") == {
        "value": 3,
        "confidence": "medium",
        "expr": "args.n + 1",
        "flags": ["--n"],
    }
    assert v_of("args.extra = object()\n", "args.extra") == unresolved("args.extra", "not a data value")
    assert v_of("", "args.copy()") == unresolved("args.copy()", ".copy() on a run-time value")


def test_unrolled_loop_items_keep_their_expression():
    assert v_of("for k in [args.n]:\n    x = k\n", "x") == {
        "value": 2,
        "confidence": "medium",
        "expr": "[args.n]",
        "flags": ["--n"],
    }


def test_a_value_bound_under_an_option_keeps_its_reason():
    prelude = "if not args.fast:\n    x = os.environ['X']\n"
    assert v_of(prelude, "x") == unresolved(
        "os.environ['X']", f"it reads the environment variable X at run time (line {LINE + 1})", "--fast"
    )


def test_attribute_of_an_external_object_names_it():
    prelude = "import torch\nm = torch.nn.Linear(2, 2)\n"
    assert v_of(prelude, "m.weight") == unresolved(
        "m.weight",
        f"attribute 'weight' of Linear(...): it comes from torch.nn.Linear(...) at line {LINE + 1}, an "
        "external call the importer cannot evaluate",
    )


SCRIPT_JOB = (
    "parser.add_argument('--lr', type=float, default=0.1)\nparser.add_argument('--epochs', type=int, default=1)\n"
)


@pytest.mark.parametrize(
    ("script", "allowed"),
    [
        (
            "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\nargs = p.parse_args()\n",
            ["--lr"],
        ),
        ("import sys\nprint(sys.argv)\n", ["--lr", "--epochs"]),  # reads argv itself: every option may reach it
        ("print('no options')\n", []),  # never reads what it is given
    ],
)
def test_options_forwarded_to_the_train_script_reach_the_job_only_if_it_accepts_them(script, allowed):
    source = (
        HEAD.replace("args = parser.parse_args()\n", SCRIPT_JOB + "args = parser.parse_args()\n")
        + "r = FedAvgRecipe(min_clients=2, num_rounds=3, train_script='train.py', "
        "train_args=f'--lr {args.lr} --epochs {args.epochs}')\nr.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(source, read_file=lambda rel: script if rel == "train.py" else None)
    assert config["summary"]["allowed"] == allowed


# ---- containers changed in place, and comprehensions -----------------------------------------------------------
COMPREHENSION = f"a comprehension at line {LINE} is not evaluated statically"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            "[x * args.n for x in [1, 2] if x > 1]",
            unresolved("[x * args.n for x in [1, 2] if x > 1]", COMPREHENSION, "--n"),
        ),
        ("{k: 1 for k in [args.n]}", unresolved("{k: 1 for k in [args.n]}", COMPREHENSION, "--n")),
        ("{s: 1 for s in ['a', 'b']}", unresolved("{s: 1 for s in ['a', 'b']}", COMPREHENSION)),
        (
            "[x for x in os.environ['L']]",
            unresolved(
                "[x for x in os.environ['L']]", f"it reads the environment variable L at run time (line {LINE})"
            ),
        ),
        (
            "[x for x in range(args.n)]",
            unresolved("[x for x in range(args.n)]", COMPREHENSION, "--n"),
        ),
        (
            "[x for x in [1] if os.environ.get('F')]",
            unresolved(
                "[x for x in [1] if os.environ.get('F')]",
                f"it reads the environment variable F at run time (line {LINE})",
            ),
        ),
        (
            "[os.environ['K'] for _ in [1]]",
            unresolved(
                "[os.environ['K'] for _ in [1]]", f"it reads the environment variable K at run time (line {LINE})"
            ),
        ),
    ],
)
def test_a_comprehension_is_unresolved_naming_the_line(expression, expected):
    """Comprehensions are not evaluated statically: unresolved naming the line (or the run-time input they read),
    keeping the options they read (a dry run reads the real value)."""
    assert v_of("", expression) == expected


def test_a_function_that_always_raises_has_no_value():
    """Issue 22: the exception leaves the function and job.py, as in Python: the job is refused at that line
    (it used to read as an unresolved value, and a job whose baseline could only crash was admitted)."""
    refused = config_of("def fail():\n    raise ValueError('no')\n", "fail()")
    assert refused["recipe_args"] == {} and refused["import"]["support"]["status"] == "unsupported"
    assert f"reaches `raise` at line {LINE + 1} (ValueError('no'))" in refused["admission_errors"][0]["message"]
    nested = (
        "def pick():\n    if os.environ.get('A'):\n        if os.environ.get('B'):\n            raise KeyError\n"
        "        else:\n            raise ValueError\n    return 3\n"
    )
    assert v_of(nested, "pick()") == {"value": 3, "confidence": "high"}  # both inner sides raise: no result there


@pytest.mark.parametrize(
    ("prelude", "expression", "flags", "what"),
    [
        ("cfg = {'n': 2}\ncfg['n'] *= args.n\n", "cfg['n']", ["--n"], "the item set at line {1}"),
        ("cfg = {'a': 1}\ndel cfg['a']\n", "cfg", None, "the item deleted at line {1}"),
        ("cfg = {'a': 1}\nalias = cfg\ncfg.update(b=args.n)\n", "alias", ["--n"], ".update() at line {2}"),
        ("sites = ['a']\nlast = sites.pop()\n", "last", None, ".pop() at line {1}"),
        ("s = {1}\ns.discard(1)\n", "s", None, ".discard() at line {1}"),
        ("cfg = [1]\nouter = {'k': cfg}\ncfg.append(2)\n", "outer", None, ".append() at line {2}"),
        ("cfg = [1]\npair = [object(), cfg]\ncfg.append(2)\n", "pair[1]", None, ".append() at line {2}"),
        ("runners = [object(), object()]\nrunners[0] = 5\n", "runners[0]", None, "the item set at line {1}"),
        (
            "if args.fast:\n    cfg = [1]\nelse:\n    cfg = [1]\ncfg.append(2)\n",
            "cfg",
            ["--fast"],
            ".append() at line {4}",
        ),
    ],
)
def test_a_container_changed_in_place_is_unresolved_naming_the_line(prelude, expression, flags, what):
    """The static reading does not follow in-place changes: the container, its aliases and every container
    holding it become unresolved with the line of the change (a dry run reads the real value)."""
    entry = v_of(prelude, expression)
    reason = (
        what.format(*(LINE + k for k in range(5))) + " changes a container in place, which is not followed statically"
    )
    assert (entry["value"], entry["confidence"], entry["reason"]) == (None, "unresolved", reason)
    assert entry.get("flags") == flags


def test_objects_holding_a_changed_container_see_it_as_unresolved():
    body = (
        "sites = ['a']\nr = FedAvgRecipe(min_clients=2, num_rounds=3, v=sites, w=[sites])\nsites.append('b')\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    args = api.import_source(HEAD + body)["recipe_args"]
    reason = f".append() at line {LINE + 2} changes a container in place, which is not followed statically"
    assert args["v"]["confidence"] == args["w"]["confidence"] == "unresolved"
    assert args["v"]["reason"] == args["w"]["reason"] == reason
    assert args["min_clients"] == {"value": 2, "confidence": "high"}


def test_a_keyword_only_default_is_evaluated_only_when_the_call_does_not_pass_it():
    """A default that builds a recipe is not a second recipe when the call passes its own."""
    define = (
        "def run(*, recipe=FedAvgRecipe(min_clients=2, num_rounds=9)):\n    recipe.execute(SimEnv(num_clients=2))\n"
    )
    passed = HEAD + define + "run(recipe=FedAvgRecipe(min_clients=2, num_rounds=3))\n"
    walk = Walker([]).run(ast.parse(passed))  # the default is built once, when `def` runs; the call builds no other
    assert [o.kwargs["num_rounds"].value for o in walk.objects if o.name == "FedAvgRecipe"] == [9, 3]
    config = api.import_source(passed)
    assert config["import"]["support"]["status"] == "supported", config["import"]["support"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 3
    defaulted = api.import_source(HEAD + define + "run()\n")
    assert defaulted["fixed_budget"]["num_rounds"]["value"] == 9


def test_unpacking_a_dict_binds_its_keys_never_its_values():
    """Python unpacks a dict's keys: `a, b = {"x": SimEnv, "y": FedAvgRecipe}` binds "x" and "y"."""
    prelude = "a, b = {'x': SimEnv, 'y': FedAvgRecipe}\nc, d = vars(args)\n"
    assert v_of(prelude, "a") == {"value": "x", "confidence": "medium"}
    assert v_of(prelude, "b") == {"value": "y", "confidence": "medium"}
    assert v_of(prelude, "[c, d]")["value"] == ["n", "fast"]
    keyed = "first, second = {args.n: SimEnv, 'y': FedAvgRecipe}\n"
    assert v_of(keyed, "first") == {"value": 2, "confidence": "medium", "flags": ["--n"]}
    assert v_of("first, second = {'x': SimEnv}\n", "first") == unresolved("first", "cannot unpack statically")
