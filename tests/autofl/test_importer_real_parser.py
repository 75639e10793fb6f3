"""Job arguments parsed by the importer agree with argparse itself: the same values, the same refusal.

Each command line goes through the importer twice (the walker applying `--base-args` to the parser it read from
job.py, and the runner's `parse_job_args` on the imported config) and through a real `argparse.ArgumentParser`
declared the same way here. The importer's parser never prints, never exits, never reads an `@file`.
"""

from __future__ import annotations

import argparse

import pytest
from autofl_core.importer import api, real_parser
from autofl_core.importer.argparse_flow import Flag, Parser
from autofl_core.importer.values import HIGH, Val

DECLARATIONS = """\
p.add_argument('-r', '--num_rounds', type=int, default=3)
p.add_argument('--lr', type=float, default=0.1)
p.add_argument('--name', default='job')
p.add_argument('--num_clients', type=int, default=2)
p.add_argument('--fast', action='store_true')
p.add_argument('--slow', action='store_false')
p.add_argument('--mode', action='store_const', const='x', default='y')
p.add_argument('-v', '--verbose', action='count', default=0)
p.add_argument('--tag', action='append')
p.add_argument('--early', action=argparse.BooleanOptionalAction, default=True)
p.add_argument('--opt', nargs='?', const='C', default='D')
p.add_argument('--many', nargs='*', type=int, default=[])
p.add_argument('--plus', nargs='+')
p.add_argument('--two', nargs=2, type=int)
p.add_argument('--optimizer', choices=['sgd', 'adam'], default='sgd')
p.add_argument('--epochs', type=int, choices=[1, 2, 4], default=1)
p.add_argument('--ext', action='extend', nargs='+')
p.add_argument('--seed', type=int, default=0, required=False)
p.add_argument('--one', action='append_const', const=1, dest='consts')
p.add_argument('--two-c', action='append_const', const=2, dest='consts')
"""

CASES = [
    [],
    ["-r", "5"],
    ["-r5"],
    ["-r=5"],
    ["--num_rounds=7"],
    ["--num_r", "4"],  # an abbreviation
    ["--num", "4"],  # ambiguous: --num_rounds or --num_clients
    ["--lr", "-0.5"],  # a negative number is a value
    ["--lr", "-1e-3"],
    ["-r", "-5"],
    ["--fast", "--slow"],
    ["--fast=1"],  # a switch given a value
    ["--mode"],
    ["-vvv"],
    ["-v", "--verbose"],
    ["--tag", "a", "--tag=b"],
    ["--no-early"],
    ["--early", "--no-early", "--early"],
    ["--opt"],
    ["--opt", "z"],
    ["--many"],
    ["--many", "1", "2", "3", "--fast"],
    ["--plus"],  # a missing value
    ["--plus", "a", "b"],
    ["--two", "1", "2"],
    ["--two", "1"],
    ["--two", "1", "2", "3"],  # one left over
    ["--optimizer", "adam"],
    ["--optimizer", "rmsprop"],  # not a choice
    ["--epochs", "3"],  # a converted value that is not a choice
    ["--epochs", "x"],  # not an int
    ["--nope", "1"],  # unknown
    ["--lr"],  # a missing value
    ["--lr", "--fast"],  # the next token is an option, not a value
    ["-r", "1", "-r", "2"],  # repeated: the last wins
    ["--ext", "a", "b", "--ext", "c"],
    ["--name", "-x"],
    ["--lr=0.5", "--num_clients", "3", "--name=a=b"],
    ["--", "--fast"],
    ["--see", "4"],  # abbreviation of --seed
    ["-x5"],
    ["--one", "--two-c", "--one"],  # append_const, two options sharing a dest
    ["--tw", "1", "2"],  # ambiguous: --two or --two-c
]


class Refusal(Exception):
    pass


class StrictParser(argparse.ArgumentParser):
    def error(self, message):
        raise Refusal(message)


def real_parse(argv: list[str], allow_abbrev: bool, known: bool = False):
    """argparse itself, declared like the job: (namespace as a dict, error or None)."""
    p = StrictParser(add_help=False, allow_abbrev=allow_abbrev)
    exec(DECLARATIONS, {"p": p, "argparse": argparse})
    try:
        if known:
            return vars(p.parse_known_args(argv)[0]), None
        return vars(p.parse_args(argv)), None
    except Refusal as exc:
        return None, str(exc)


def job(allow_abbrev: bool, parse: str = "parse_args") -> str:
    return (
        "import argparse\nfrom nvflare.recipe import SimEnv\nfrom nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
        f"p = argparse.ArgumentParser(allow_abbrev={allow_abbrev})\n" + DECLARATIONS + f"args = p.{parse}()\n"
        "r = FedAvgRecipe(min_clients=2, num_rounds=args.num_rounds)\nr.execute(SimEnv(num_clients=2))\n"
    )


def walker_parse(argv: list[str], allow_abbrev: bool, parse: str = "parse_args"):
    """The importer reading job.py with `--base-args argv`: (flag values by dest, error or None)."""
    section = api.import_source(job(allow_abbrev, parse), base_args=argv)["argparse"]
    errors = section["base_args_errors"]
    return {f["dest"]: f["value"] for f in section["flags"]}, (errors[0] if errors else None)


def runner_parse(argv: list[str], allow_abbrev: bool):
    """The runner's parse of a candidate's arguments against the imported config: (values by dest, error)."""
    config = api.import_source(job(allow_abbrev))
    defaults = {f["dest"]: f["value"] for f in config["argparse"]["flags"]}
    by_option = {f["option_strings"][0]: f["dest"] for f in config["argparse"]["flags"]}
    values, errors = api.parse_job_args(config, argv)
    canonical = {api.canonical_option(config, o)[0]: d for o, d in by_option.items()}
    return {**defaults, **{canonical[flag]: v for flag, v in values.items()}}, (errors[0] if errors else None)


@pytest.mark.parametrize("allow_abbrev", [True, False])
@pytest.mark.parametrize("argv", CASES, ids=" ".join)
def test_the_importer_parses_like_argparse(argv, allow_abbrev):
    expected, refusal = real_parse(argv, allow_abbrev)
    walked, walker_error = walker_parse(argv, allow_abbrev)
    ran, runner_error = runner_parse(argv, allow_abbrev)
    assert walker_error == refusal and runner_error == refusal
    if refusal is None:
        assert walked == expected and ran == expected


def test_the_cases_cover_values_and_refusals():
    outcomes = [real_parse(argv, True)[1] is None for argv in CASES]
    assert len(CASES) >= 30 and 10 <= outcomes.count(False) < len(CASES) - 10


def test_parse_known_args_keeps_what_it_knows_like_argparse():
    argv = ["--nope", "1", "-r", "2", "--other"]
    expected, refusal = real_parse(argv, True, known=True)
    walked, error = walker_parse(argv, True, "parse_known_args")
    assert refusal is None and error is None and walked == expected


def test_positionals_and_extras_map_back_to_their_tokens():
    parser = Parser(flags=[Flag([], "data"), Flag(["--lr"], "lr", type="float")])
    parsed = real_parser.parse(parser, ["/d", "--lr", "1", "--x", "5", "5"], "parse_known_args")
    assert parsed.values == {"data": "/d", "lr": 1.0}
    assert parsed.accepted == [True, True, True, False, False, False]
    repeated = real_parser.parse(parser, ["5", "--lr", "5", "5"], "parse_known_args")
    assert repeated.accepted == [True, True, True, False]  # the same text, told apart by position


def test_the_parser_never_prints_exits_or_reads_a_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "more.txt").write_text("--lr\n9\n")
    monkeypatch.chdir(tmp_path)
    flags = [Flag(["-h", "--help"], "help", action="help"), Flag(["--lr"], "lr", type="float")]
    parser = Parser(flags=flags, fromfile_prefix_chars="@")
    assert real_parser.parse(parser, ["--help"]).errors == ["argument -h/--help: would exit instead of running the job"]
    assert real_parser.parse(parser, ["--lr", "@more.txt"]).errors == [
        "'@more.txt' would be read as a file of more arguments (fromfile_prefix_chars)"
    ]
    assert real_parser.parse(parser, ["--lr", "x"]).errors == ["argument --lr: invalid float value: 'x'"]
    assert capsys.readouterr() == ("", "")


def test_a_declaration_argparse_refuses_is_left_out():
    parser = Parser(flags=[Flag(["--n"], "n", nargs=0), Flag(["--k"], "k", action="store", const=1)])
    _, refused = real_parser.build(parser)
    assert refused == [
        "--n: nargs for store actions must be != 0; if you have nothing to store, actions such as store true or "
        "store const may be more appropriate",
        "--k: nargs must be '?' to supply const",
    ]
    assert real_parser.parse(parser, ["--k", "1"]).errors == ["unrecognized arguments: --k 1"]


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("-r7", ("--num_rounds", "7", None)),
        ("--num_r=4", ("--num_rounds", "4", None)),
        ("--fast=1", ("--fast", "1", None)),  # selects the switch; the runner refuses the value
        ("--no-early", ("--early", None, None)),  # the flag, by its canonical spelling
        ("--num", (None, None, "ambiguous option: --num could match --num_rounds, --num_clients")),
        ("--x", (None, None, "unrecognized argument --x")),
        ("-vv", ("--verbose", "v", None)),
    ],
)
def test_canonical_option_is_argparse_matching(token, expected):
    assert api.canonical_option(api.import_source(job(True)), token) == expected


def test_a_default_argparse_could_not_convert_never_refuses_other_options():
    """Only the defaults argparse builds on (append, extend, count, positionals) are declared: a recorded default
    that is not the real object (argparse.SUPPRESS, a value the dry run wrote as text) cannot fail the parse."""
    flags = [
        Flag(["--k"], "k", type="int", default=Val("==SUPPRESS==", HIGH)),
        Flag(["--n"], "n", type="int", default=Val("not a number", HIGH)),
        Flag(["--tag"], "tag", action="append", default=Val(["a"], HIGH)),
        Flag(["--lr"], "lr", type="float"),
    ]
    parsed = real_parser.parse(Parser(flags=flags), ["--lr", "1", "--tag", "b"])
    assert (parsed.values, parsed.errors) == ({"lr": 1.0, "tag": ["a", "b"]}, [])


def test_odd_records_in_a_config_never_raise_or_print(capsys):
    """A config's flag records are data: whatever argparse makes of them is a value or a refusal, never a crash."""
    records = [
        {"option_strings": ["--a"], "dest": "a", "action": "weird", "nargs": "x", "type": 5, "choices": 5},
        {"option_strings": ["--b"], "dest": "b", "action": "append", "default": (1,)},  # job.py: default=(1,)
        {"option_strings": ["+p"], "dest": "p", "action": "store"},
        {"option_strings": ["--c", "-c"], "dest": "c", "action": "count", "default": "x"},
        {"option_strings": ["--v"], "dest": "v", "action": "version"},
    ]
    config = {"argparse": {"flags": records, "fromfile_prefix_chars": None}}
    for argv in (["--a", "1"], ["--b", "2"], ["+p", "1"], ["-cc"], ["--v"], ["--", "x"], ["-c=", "--c="]):
        values, errors = api.parse_job_args(config, argv)
        assert errors or values
        for token in argv:
            api.canonical_option(config, token)
    assert api.parse_job_args(config, ["--b", "2"])[1] == [
        "job.py's parser fails on these arguments: 'tuple' object has no attribute 'append'"
    ]
    assert capsys.readouterr() == ("", "")
