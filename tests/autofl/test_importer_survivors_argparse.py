"""`--base-args` overrides the way argparse applies them: append, nargs, count, const, positionals, and the
extras of parse_known_args; the `custom:` type names; the runner's pinned arguments rebuilt from the config.

A user passes these strings in `--base-args`; the importer must read the same values job.py will see, or the
fixed budget the campaign pins is wrong. Mutation testing (`make mutate`, docs/mutation.md) found these paths
untested one by one.
"""

from __future__ import annotations

import pytest
from autofl_core.importer import api
from autofl_core.importer.argparse_flow import Flag, Parser
from autofl_core.importer.real_parser import parse

HEAD = (
    "import argparse\nfrom nvflare.recipe import SimEnv\nfrom nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
)


def parser_of(*flags: Flag, allow_abbrev: bool = True) -> Parser:
    return Parser(allow_abbrev=allow_abbrev, flags=list(flags))


def apply_overrides(parser: Parser, argv: list[str], known_only: bool) -> tuple[dict, list[str]]:
    parsed = parse(parser, argv, "parse_known_args" if known_only else "parse_args")
    return parsed.values, parsed.errors


def job(options: str, value: str, parse: str = "args = parser.parse_args()\n") -> str:
    return (
        HEAD
        + "parser = argparse.ArgumentParser()\n"
        + options
        + parse
        + f"r = FedAvgRecipe(min_clients=2, num_rounds=3, v={value})\nr.execute(SimEnv(num_clients=2))\n"
    )


def v_of(source: str, base_args=()) -> dict:
    return api.import_source(source, base_args=base_args)["recipe_args"]["v"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tag", "a", "--tag", "b"], {"tag": ["a", "b"]}),
        (["--tag=a"], {"tag": ["a"]}),
        (["--pair", "1", "2", "--pair", "3", "4"], {"pair": [[1, 2], [3, 4]]}),
        (["--many", "1", "2", "3", "--tag", "x"], {"many": [1, 2, 3], "tag": ["x"]}),
        (["--many"], {"many": []}),
        (["--opt"], {"opt": "C"}),
        (["--opt", "given"], {"opt": "given"}),
        (["--two", "5", "6", "7"], {"two": [5, 6]}),  # nargs=2 takes two; the third is left over
        (["-v", "-v", "-v"], {"verbose": 3}),
        (["--mode-const"], {"mode": "fast"}),
        (["--lr", "-0.5"], {"lr": -0.5}),  # a negative number is a value, not an option
    ],
)
def test_actions_and_nargs(argv, expected):
    parser = parser_of(
        Flag(["--tag"], "tag", action="append"),
        Flag(["--pair"], "pair", action="append", type="int", nargs=2),
        Flag(["--many"], "many", type="int", nargs="*"),
        Flag(["--opt"], "opt", nargs="?", const="C"),
        Flag(["--two"], "two", type="int", nargs=2),
        Flag(["-v", "--verbose"], "verbose", action="count"),
        Flag(["--mode-const"], "mode", action="store_const", const="fast"),
        Flag(["--lr"], "lr", type="float"),
    )
    values, errors = apply_overrides(parser, argv, known_only=True)
    assert (values, errors) == (expected, [])


def test_leftover_values_and_missing_values_are_errors():
    parser = parser_of(
        Flag(["--two"], "two", type="int", nargs=2), Flag(["--plus"], "plus", nargs="+"), Flag(["--one"], "one")
    )
    assert apply_overrides(parser, ["--two", "5", "6", "7"], False) == ({"two": [5, 6]}, ["unrecognized arguments: 7"])
    assert apply_overrides(parser, ["--plus"], False) == ({}, ["argument --plus: expected at least one argument"])
    assert apply_overrides(parser, ["--one", "--two", "1", "2"], False) == (
        {},
        ["argument --one: expected one argument"],
    )
    assert apply_overrides(parser, ["--one"], False) == ({}, ["argument --one: expected one argument"])


def test_positionals_are_filled_in_order():
    parser = parser_of(Flag([], "data"), Flag([], "rounds", type="int"), Flag(["--lr"], "lr"))
    assert apply_overrides(parser, ["/d", "--lr", "1", "4"], False) == ({"data": "/d", "lr": "1", "rounds": 4}, [])
    assert apply_overrides(parser, ["/d", "x"], False) == ({"data": "/d"}, ["argument rounds: invalid int value: 'x'"])
    assert apply_overrides(parser, ["/d", "4", "extra"], False) == (
        {"data": "/d", "rounds": 4},
        ["unrecognized arguments: extra"],
    )


def test_append_in_job_py_with_base_args():
    options = "parser.add_argument('--site', action='append', default=None)\n"
    assert v_of(job(options, "args.site"), ["--site", "a", "--site", "b"]) == {
        "value": ["a", "b"],
        "confidence": "high",
        "flags": ["--site"],
    }
    nargs = "parser.add_argument('--sizes', type=int, nargs='+', default=[1])\n"
    assert v_of(job(nargs, "args.sizes"), ["--sizes", "3", "4"])["value"] == [3, 4]
    assert v_of(job(nargs, "args.sizes"))["value"] == [1]


def test_parse_known_args_keeps_the_known_values_and_the_extras_are_unresolved():
    options = "parser.add_argument('--rounds', type=int, default=3)\n"
    source = job(options, "extra", parse="args, extra = parser.parse_known_args()\n")
    assert v_of(source, ["--rounds", "5", "--other"]) == {
        "value": None,
        "confidence": "unresolved",
        "expr": "parser.parse_known_args()",
        "reason": "unknown command-line arguments",
    }
    known = job(options, "args.rounds", parse="args, extra = parser.parse_known_args()\n")
    assert v_of(known, ["--rounds", "5", "--other"])["value"] == 5


def test_parse_args_of_an_explicit_list_ignores_base_args():
    options = "parser.add_argument('--rounds', type=int, default=3)\n"
    for call in ("parser.parse_args(['--rounds', '9'])", "parser.parse_args(args=['--rounds', '9'])"):
        config = api.import_source(job(options, "args.rounds", parse=f"args = {call}\n"), base_args=["--rounds", "4"])
        assert config["recipe_args"]["v"]["value"] == 9


def test_other_parser_methods_are_unresolved_with_their_name():
    source = job("", "parser.format_help()")
    assert v_of(source) == {
        "value": None,
        "confidence": "unresolved",
        "expr": "parser.format_help()",
        "reason": "ArgumentParser.format_help() is not evaluated",
    }


@pytest.mark.parametrize(
    ("type_expr", "prelude", "name"),
    [
        ("int", "", "int"),
        ("float", "", "float"),
        ("my_type", "def my_type(text):\n    return text\n", "custom:function my_type"),
        ("pathlib.Path", "import pathlib\n", "custom:Path"),
        ("lambda s: s", "", "custom"),
    ],
)
def test_type_names(type_expr, prelude, name):
    options = f"parser.add_argument('--x', type={type_expr}, default='1')\n"
    config = api.import_source(prelude + job(options, "args.x"))
    record = config["argparse"]["flags"][0]
    assert record["type"] == name
    expected = 1 if name == "int" else 1.0 if name == "float" else "1"
    assert config["recipe_args"]["v"]["value"] == expected
    custom = name.startswith("custom")
    assert config["recipe_args"]["v"]["confidence"] == ("medium" if custom else "high")


def test_a_typed_string_default_keeps_its_expression():
    options = "parser.add_argument('--x', type=int, default='1' + '0')\n"
    assert v_of(job(options, "args.x")) == {"value": 10, "confidence": "medium", "expr": "'1' + '0'", "flags": ["--x"]}


def test_choices_of_a_set_are_sorted_and_a_non_data_default_is_unresolved():
    options = "parser.add_argument('--opt', choices={'b', 'a'}, default=argparse.SUPPRESS)\n"
    config = api.import_source(job(options, "args.opt"))
    record = config["argparse"]["flags"][0]
    assert record["choices"] == ["a", "b"]
    assert (record["default"], record["default_confidence"]) == (None, "unresolved")


def test_implicit_defaults_of_switches():
    options = (
        "parser.add_argument('--on', action='store_true')\nparser.add_argument('--off', action='store_false')\n"
        "parser.add_argument('--plain')\n"
    )
    flags = {f["dest"]: f for f in api.import_source(job(options, "1"))["argparse"]["flags"]}
    assert [(flags[d]["default"], flags[d]["default_confidence"]) for d in ("on", "off", "plain")] == [
        (False, "high"),
        (True, "high"),
        (None, "high"),
    ]


def test_set_defaults_wins_over_the_default_and_keeps_the_option():
    options = "parser.add_argument('--rounds', type=int, default=3)\nparser.set_defaults(rounds=6)\n"
    assert v_of(job(options, "args.rounds")) == {"value": 6, "confidence": "high", "flags": ["--rounds"]}


def test_a_required_option_missing_from_base_args_is_unresolved():
    options = "parser.add_argument('--rounds', type=int, required=True)\nparser.add_argument('data')\n"
    config = api.import_source(job(options, "args.rounds"))
    assert config["recipe_args"]["v"] == {
        "value": None,
        "confidence": "unresolved",
        "flags": ["--rounds"],
        "reason": "--rounds is required on the command line",
    }
    assert config["argparse"]["base_args_errors"] == []
    optional = "parser.add_argument('data', nargs='?', default='d')\n"
    assert v_of(job(optional, "args.data"))["value"] == "d"


def test_a_custom_type_default_string_is_medium():
    options = "def kind(s):\n    return s\nparser.add_argument('--k', type=kind, default='a')\n"
    assert v_of(job(options, "args.k")) == {"value": "a", "confidence": "medium", "flags": ["--k"]}
    assert v_of(job(options, "args.k"), ["--k", "b"]) == {"value": "b", "confidence": "medium", "flags": ["--k"]}


def rebuilt(options: str, budget_value: str, base_args=()) -> dict:
    source = (
        HEAD + "parser = argparse.ArgumentParser()\n" + options + "args = parser.parse_args()\n"
        f"r = FedAvgRecipe(min_clients=2, num_rounds={budget_value})\nr.execute(SimEnv(num_clients=2))\n"
    )
    return api.import_source(source, base_args=base_args)


def flag_value(config: dict, option: str):
    return next(f["value"] for f in config["argparse"]["flags"] if option in f["option_strings"])


def test_fixed_budget_args_pin_append_nargs_and_switches():
    options = (
        "parser.add_argument('--r', action='append', type=int, default=[1])\n"
        "parser.add_argument('--w', nargs=2, type=int, default=[1, 1])\n"
        "parser.add_argument('--fast', action=argparse.BooleanOptionalAction, default=True)\n"
        "parser.add_argument('--slow', action='store_false')\n"
        "parser.add_argument('--quick', action='store_true')\n"
    )
    value = (
        "(args.r[-1] * 2 + args.w[1]) * (2 if args.fast else 1) * (2 if args.slow else 1) + (1 if args.quick else 0)"
    )
    config = rebuilt(options, value, ["--r", "2", "--r", "3", "--w", "1", "2", "--no-fast", "--slow"])
    assert config["fixed_budget"]["num_rounds"]["value"] == 8
    assert api.fixed_budget_args(config) == ["--r", "2", "--r", "3", "--w", "1", "2", "--no-fast", "--slow"]
    on = rebuilt(options, value, ["--quick"])
    assert flag_value(config, "--r") == [1, 2, 3]  # argparse appends to the default list
    assert api.fixed_budget_args(on) == ["--w", "1", "1", "--fast", "--quick"]  # --r left at its default


def test_runner_reparses_with_the_recorded_nargs_and_action():
    options = "parser.add_argument('--w', nargs=2, type=int, default=[1, 1])\n"
    config = rebuilt(options, "args.w[0] + args.w[1]")
    assert api.parse_job_args(config, ["--w", "3", "4"]) == ({"--w": [3, 4]}, [])
    assert api.parse_job_args(config, ["--w", "3", "4", "5"]) == ({"--w": [3, 4]}, ["unrecognized arguments: 5"])
    assert api.cli_flags({"argparse": {"flags": config["argparse"]["flags"]}})["allow_abbrev"] is True


def test_a_default_that_is_not_data_is_unresolved_with_its_reason():
    options = "parser.add_argument('--opt', default=argparse.SUPPRESS)\n"
    assert v_of(job(options, "args.opt")) == {
        "value": None,
        "confidence": "unresolved",
        "flags": ["--opt"],
        "reason": "not a data value",
    }


def test_count_and_append_options_are_not_suggested_for_tuning():
    options = (
        "parser.add_argument('--lr', type=float, default=0.1)\n"
        "parser.add_argument('-l', '--level', action='count', default=0)\n"
        "parser.add_argument('--tag', action='append', default=['a'])\n"
    )
    config = api.import_source(job(options, "[args.lr, args.level, args.tag]"))
    assert config["search_space"]["suggested"] == [{"default": 0.1, "dest": "lr", "flag": "--lr", "type": "float"}]
    assert config["summary"]["allowed"] == ["--lr"]


def test_a_schema_declared_option_without_a_type_takes_the_schema_type():
    options = "parser.add_argument('--opt')\n"
    config = api.import_source(job(options, "args.opt"), schema_text="mutable_args:\n  opt: {type: str}\n")
    assert config["search_space"]["suggested"] == [{"default": None, "dest": "opt", "flag": "--opt", "type": "str"}]
