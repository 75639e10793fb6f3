"""Each expression kind the importer evaluates, resolved and unresolved, as it lands in `recipe_args`.

Contract ("Values and confidence"): a simple expression over resolved values is `medium`, with `expr` (its
source text) and the `flags` of the argparse options feeding it; anything dynamic (here the environment) is
`unresolved` with a `reason`. Mutation testing (`make mutate`) found these paths, the flags and the reasons
untested one by one.
"""

from __future__ import annotations

import pytest
from autofl_core.importer import api

JOB = (
    "import argparse, os\nfrom nvflare.recipe import SimEnv\nfrom x import ARecipe\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float, default=0.5)\n"
    "parser.add_argument('--name', default='run')\nparser.add_argument('--flag', action='store_true')\n"
    "args = parser.parse_args()\nCFG = {'k': 3, 'n': [1, 2, 3]}\n"
)
ENV = "os.environ['X']"
READS_ENV = "it reads the environment variable X at run time (line 10)"  # the reason names the input (issue 15)


def entry(expression: str, prelude: str = "") -> dict:
    source = JOB + prelude + f"r = ARecipe(min_clients=2, num_rounds=2, v={expression})\nr.run(SimEnv(num_clients=2))\n"
    return api.import_source(source)["recipe_args"]["v"]


def medium(value, expr, *flags) -> dict:
    return {"value": value, "confidence": "medium", "expr": expr, **({"flags": list(flags)} if flags else {})}


def unresolved(expr, reason) -> dict:
    return {"value": None, "confidence": "unresolved", "expr": expr, "reason": reason}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("-args.lr", medium(-0.5, "-args.lr", "--lr")),
        (f"-int({ENV})", unresolved(f"-int({ENV})", READS_ENV)),
        ("1 if args.flag else 2", medium(2, "1 if args.flag else 2", "--flag")),
        (f"1 if {ENV} else 2", unresolved(f"1 if {ENV} else 2", READS_ENV)),
        ("{'a': args.lr}", medium({"a": 0.5}, "{'a': args.lr}", "--lr")),
        (f"{{'a': {ENV}}}", unresolved(f"{{'a': {ENV}}}", READS_ENV)),
        ("CFG['k']", medium(3, "CFG['k']")),
        (f"CFG[{ENV}]", unresolved(f"CFG[{ENV}]", READS_ENV)),
        ("f'{args.name}-x'", medium("run-x", "f'{args.name}-x'", "--name")),
        ("args.flag or False", medium(False, "args.flag or False", "--flag")),
        (f"{ENV} and 1", unresolved(f"{ENV} and 1", READS_ENV)),
        ("CFG['n'][1:]", medium([2, 3], "CFG['n'][1:]")),
        ("args.lr > 0.1", medium(True, "args.lr > 0.1", "--lr")),
        ("args.lr * 2", medium(1.0, "args.lr * 2", "--lr")),
    ],
)
def test_expression_kinds(expression, expected):
    assert entry(expression) == expected


def test_an_unresolved_f_string_field():
    assert entry('f"{' + ENV + '}"') == unresolved('f"{' + ENV + '}"', READS_ENV)


def test_augmented_assignment_and_calls_keep_their_flags():
    assert entry("x", prelude="x = 1\nx += args.lr\n") == medium(1.5, "x + args.lr", "--lr")
    assert {k: v for k, v in entry("args.name.upper()").items() if k != "expr"} == {  # data methods are not evaluated
        "value": None,
        "confidence": "unresolved",
        "flags": ["--name"],
        "reason": ".upper() at line 10 is not evaluated statically",
    }
    assert entry("list(range(3))")["reason"] == "list() at line 10 is not evaluated statically"  # nor builtins
    assert entry("getattr(args, 'lr')") == {"value": 0.5, "confidence": "high", "flags": ["--lr"]}
