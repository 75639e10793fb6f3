"""Static expression evaluation: values, confidence levels, and the safety bounds (pure, no files)."""

import ast

import pytest
from autofl_core.importer.values import HIGH, MEDIUM, UNRESOLVED, describe
from autofl_core.importer.walker import Walker


def evaluate(expr: str, prelude: str = "", base_args=()):
    """Walk `prelude` then evaluate `expr` in the resulting module scope."""
    walker = Walker(list(base_args))
    walker.run(ast.parse(prelude))
    return walker.ev(ast.parse(expr, mode="eval").body)


@pytest.mark.parametrize(
    ("expr", "value"),
    [("3", 3), ("-2", -2), ("'sgd'", "sgd"), ("None", None), ("True", True), ("1e-3", 0.001)],
)
def test_scalar_literals_are_high(expr, value):
    val = evaluate(expr)
    assert (val.value, val.confidence) == (value, HIGH)


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("2 * 3 + 1", 7),
        ("[1, 2]", [1, 2]),
        ("{'lr': 0.1}", {"lr": 0.1}),
        ("f'--lr {0.5} --n {2:03d}'", "--lr 0.5 --n 002"),
        ("'a' if 1 > 2 else 'b'", "b"),
        ("[0.0] * 3", [0.0, 0.0, 0.0]),
        ("(1, 2)[1]", 2),
    ],
)
def test_simple_expressions_are_medium(expr, value):
    val = evaluate(expr)
    assert val.value == value
    assert val.confidence == MEDIUM


def test_module_constants_flow_through_names():
    val = evaluate("[0.0] * (N + 1)", prelude="N = 2\n")
    assert (val.value, val.confidence) == ([0.0, 0.0, 0.0], MEDIUM)
    assert evaluate("N", prelude="N = 4\n").confidence == HIGH


@pytest.mark.parametrize(
    "expr",
    [
        "os.environ.get('ROUNDS')",
        "int(os.getenv('ROUNDS', '3'))",
        "random.randint(1, 5)",
        "undefined_name",
        "open('x').read()",
        "[i for i in range(int(os.getenv('N', '3')))]",
        "lambda: 3",
    ],
)
def test_dynamic_values_are_unresolved(expr):
    record = describe(evaluate(expr, prelude="import os\nimport random\n"))
    assert record["confidence"] == UNRESOLVED
    assert record["value"] is None
    assert record["reason"]


@pytest.mark.parametrize(
    "expr",
    [
        "'x' * 10**9",
        "[0] * 10**9",
        "2 ** 100000",
        "10 ** 10 ** 10",
        "1 / 0",
        "repr(['x' * 50000] * 10000)",
        "[['x' * 50000] * 2] * 10",
        "'{:1000000000}'.format(1)",
        "'{:{}}'.format(1, 10**9)",
        "f'{1:1000000000}'",
        "('a' * 50000).replace('a', 'a' * 50000)",
        "'-'.join(['x' * 50000] * 100)",
        "int('9' * 5000)",
    ],
)
def test_oversized_or_failing_arithmetic_is_refused(expr):
    assert evaluate(expr).confidence == UNRESOLVED


def test_argparse_value_is_high_and_carries_its_flag():
    prelude = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--num_rounds', type=int, default=3)\n"
        "a = p.parse_args()\n"
    )
    val = evaluate("a.num_rounds", prelude)
    assert (val.value, val.confidence, val.flags) == (3, HIGH, ("--num_rounds",))
    derived = evaluate("2 * a.num_rounds", prelude, base_args=["--num_rounds", "5"])
    assert (derived.value, derived.confidence, derived.flags) == (10, MEDIUM, ("--num_rounds",))


def test_what_an_unresolved_condition_binds_is_unresolved():
    """Even a value both paths agree on: the reading does not merge the sides of a condition it cannot resolve."""
    prelude = "import os\nx = 1\nif os.environ.get('A'):\n    x = 2\ny = 5\nif os.environ.get('B'):\n    y = 5\n"
    assert evaluate("x", prelude).confidence == UNRESOLVED
    assert "line 3" in evaluate("x", prelude).reason
    y = evaluate("y", prelude)
    assert (y.confidence, y.reason, y.flags) == (UNRESOLVED, "depends on the condition at line 6", ("env:B",))
