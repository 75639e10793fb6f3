"""One option record: the static reading and the dry run's parser record write the same `argparse.flags[]` dict,
and one rule turns an option's value into command-line arguments."""

import argparse

import pytest
from autofl_core.importer import api, dryrun_config, recorded
from autofl_core.importer import argparse_flow as ap
from autofl_core.importer.dryrun_boot import parsers
from autofl_core.importer.schema import schema_section
from autofl_core.importer.values import HIGH, Val

SOURCE = """\
import argparse


class Zero(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)


parser = argparse.ArgumentParser()
parser.add_argument("data", nargs="?", default="d")
parser.add_argument("-r", "--rounds", type=int, default=3)
parser.add_argument("--fast", action="store_true")
parser.add_argument("--mode", choices=["a", "b"], default="a")
parser.add_argument("--level", type=int, nargs="?", const=9, default=1)
parser.add_argument("--zero", action=Zero, nargs=0)
args = parser.parse_args()
"""


def _real_parser() -> argparse.ArgumentParser:
    namespace: dict = {}
    exec(SOURCE.replace("args = parser.parse_args()\n", ""), namespace)
    return namespace["parser"]


def _recorded_flags() -> list[dict]:
    parser = _real_parser()
    raw = parsers.parser_record(parser, vars(parser.parse_args([])))
    run = recorded.parse({"status": "recorded", "entry": "simulator_run", "parsers": [raw]})
    config = {"argparse": {"flags": [], "allow_abbrev": True}, "schema": schema_section(None, [], False)}
    config["unresolved"] = []
    dryrun_config.real_parser(config, run)
    return config["argparse"]["flags"]


def _without_line(flags: list[dict]) -> list[dict]:
    return [{key: value for key, value in flag.items() if key != "line"} for flag in flags]


def test_the_static_reading_and_the_dry_run_write_the_same_flag_records():
    static, ran = api.import_source(SOURCE)["argparse"]["flags"], _recorded_flags()
    assert _without_line(static) == _without_line(ran)
    assert static[2]["const"] is True  # argparse's own const of a store_true
    by_dest = {flag["dest"]: flag for flag in static}
    assert by_dest["data"]["option_strings"] == [] and by_dest["data"]["positional"] is True
    assert (by_dest["zero"]["action"], by_dest["zero"]["nargs"], by_dest["zero"]["takes_value"]) == ("custom", 0, False)
    assert "nargs" not in by_dest["fast"] and by_dest["fast"]["takes_value"] is False
    assert by_dest["level"]["const"] == 9 and by_dest["rounds"]["value"] == 3


def test_a_flag_record_reads_back_as_the_same_record():
    for record in [*api.import_source(SOURCE)["argparse"]["flags"], *_recorded_flags()]:
        assert ap.Flag.from_dict(record).to_dict() == record


def test_the_runner_sees_a_custom_action_of_no_values_as_a_switch():
    config = api.import_source(SOURCE)
    takes_value = api.cli_flags(config)["takes_value"]
    assert takes_value["--zero"] is False and takes_value["--rounds"] is True and "data" not in takes_value


def test_an_action_table_entry_per_argparse_action():
    assert ap.ACTION_NAMES["_StoreTrueAction"] == "store_true"
    assert ap.ACTION_NAMES["BooleanOptionalAction"] == "boolean_optional"
    assert ap.NO_VALUE_ACTIONS == {
        "store_const",
        "store_true",
        "store_false",
        "append_const",
        "count",
        "boolean_optional",
        "help",
        "version",
    }


@pytest.mark.parametrize(
    ("flag", "value", "tokens"),
    [
        (ap.Flag(["--ids"], "ids", type="int", nargs="+"), [1, 2], ["--ids", "1", "2"]),
        (ap.Flag(["--tag"], "tag", action="append", default=Val(["a"], HIGH)), ["a", "b"], ["--tag", "b"]),
        (ap.Flag(["--on"], "on", type="str"), True, ["--on", "true"]),
        (ap.Flag(["--fast"], "fast", action="store_true"), True, ["--fast"]),
        (ap.Flag(["--fast"], "fast", action="store_true"), False, []),
        (ap.Flag(["--fast"], "fast", action="store_true"), 1, None),
        (ap.Flag(["--early"], "early", action="boolean_optional"), False, ["--no-early"]),
        (ap.Flag(["-v", "--verbose"], "verbose", action="count", default=Val(1, HIGH)), 3, ["--verbose"] * 2),
        (ap.Flag(["--m"], "m", action="store_const", const="x", default=Val("y", HIGH)), "z", None),
    ],
)
def test_one_rule_turns_a_value_into_arguments(flag, value, tokens):
    assert ap.arguments(flag, value) == tokens


def test_the_schema_s_budget_value_is_spelled_as_the_runner_pins_it():
    source = SOURCE.replace("args = parser", 'parser.add_argument("--cross_site_eval", type=str)\nargs = parser')
    schema = "comparison_budget_args:\n  default_candidate_budget:\n    cross_site_eval: true\n"
    config = api.import_source(source, schema_text=schema)
    assert config["argparse"]["schema_args"] == ["--cross_site_eval", "true"]


def test_a_schema_value_starting_with_a_dash_reaches_the_job_s_parse():
    source = SOURCE.replace("args = parser", 'parser.add_argument("--model_arch", default="")\nargs = parser')
    schema = "comparison_budget_args:\n  default_candidate_budget:\n    model_arch: -x\n"
    section = api.import_source(source, schema_text=schema)["argparse"]
    assert section["schema_args"] == ["--model_arch=-x"]
    assert section["base_args_errors"] == [] and section["budget_conflicts"] == []
    assert {flag["dest"]: flag["value"] for flag in section["flags"]}["model_arch"] == "-x"


DASHED = """\
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--name")
parser.add_argument("-n", dest="short")
parser.add_argument("-lr", type=float)
parser.add_argument("--rate", type=float)
parser.add_argument("--rounds", type=int)
parser.add_argument("--opt", nargs="?", const="c")
parser.add_argument("--one", nargs=1)
parser.add_argument("--ids", nargs="+")
parser.add_argument("--pair", nargs=2, type=int)
parser.add_argument("--tag", action="append")
parser.add_argument("--pairs", action="append", nargs=2)
parser.add_argument("--ext", action="extend", nargs="+")
args = parser.parse_args()
"""


def _dashed_parser() -> argparse.ArgumentParser:
    """The job's own parser, raising argparse.ArgumentError instead of exiting."""
    namespace: dict = {}
    exec(
        DASHED.replace("ArgumentParser()", "ArgumentParser(exit_on_error=False)").replace("args = p", "# p"), namespace
    )
    return namespace["parser"]


def _reads_back(tokens: list[str], dest: str, value) -> bool:
    """True when the job's parser, given `tokens`, sets `dest` to `value` and leaves no token over."""
    try:
        parsed, left = _dashed_parser().parse_known_args(tokens)
    except argparse.ArgumentError:
        return False
    return getattr(parsed, dest) == value and not left


@pytest.mark.parametrize(
    ("dest", "value"),
    [
        ("name", "-x"),
        ("name", "-foo"),
        ("name", "-0.1"),
        ("name", "-"),
        ("name", "-a=b"),
        ("name", "plain"),
        ("short", "-x"),
        ("short", "-0.1"),
        ("lr", -0.1),
        ("rate", -0.1),
        ("rate", -1e-05),
        ("rounds", -3),
        ("opt", "-x"),
        ("one", ["-x"]),
        ("ids", ["-x"]),
        ("ids", ["-1", "-2.5", "a"]),
        ("pair", [-1, 2]),
        ("tag", ["-x", "y", "-z"]),
        ("pairs", [["-1", "a"], ["b", "c"]]),
        ("ext", ["-x"]),
    ],
)
def test_a_value_starting_with_a_dash_is_spelled_so_the_job_s_parser_reads_it_back(dest, value):
    """The tokens `arguments` gives, parsed by the job's own argparse parser, set the option to the value."""
    flags = {f["dest"]: ap.Flag.from_dict(f) for f in api.import_source(DASHED)["argparse"]["flags"]}
    tokens = ap.arguments(flags[dest], value)
    assert tokens is not None and _reads_back(tokens, dest, value), tokens


@pytest.mark.parametrize(("dest", "value"), [("ids", ["-x", "y"]), ("ids", ["1", "-x"]), ("pair", ["-1", "-x"])])
def test_several_values_argparse_would_read_as_options_are_not_spelled(dest, value):
    """Several values cannot go into one token: a text that is an option to argparse there is refused (None)."""
    flags = {f["dest"]: ap.Flag.from_dict(f) for f in api.import_source(DASHED)["argparse"]["flags"]}
    assert ap.arguments(flags[dest], value) is None
    assert not _reads_back([flags[dest].name, *map(str, value)], dest, value)  # the plain spelling fails
