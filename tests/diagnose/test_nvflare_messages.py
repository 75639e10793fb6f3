"""NVFLARE's own error messages: the extraction from the pinned NVFLARE, the reviewed mapping, its rendering into
the skill, the skill's template matcher, and the coverage figures `make eval` prints."""

import ast
import json
import re
from pathlib import Path

import pytest
from module_loader import load_by_path
from nvfdiag.match import catalog as cat
from nvfdiag.match import messages

REPO = Path(__file__).resolve().parents[2]
GENERATOR = load_by_path("nvflare_messages_generator", REPO / "shared" / "catalog" / "nvflare_messages.py")
SYNC = load_by_path("shared_sync", REPO / "shared" / "sync.py")
COVERAGE = load_by_path("message_coverage", REPO / "evals" / "message_coverage.py")


@pytest.fixture(scope="module")
def extracted():
    return GENERATOR.extract(GENERATOR.installed_root())


def _pinned_nvflare() -> str:
    text = (REPO / "requirements.txt").read_text(encoding="utf-8")
    return re.search(r"^nvflare==(\S+)$", text, re.MULTILINE).group(1)


# ---- the pinned NVFLARE: every template it raises has a reviewed home ----


def test_the_installed_nvflare_is_the_pinned_one_and_the_mapping_says_so():
    version = GENERATOR.installed_version(GENERATOR.installed_root())
    assert version == _pinned_nvflare() == GENERATOR.load_mapping()["nvflare_version"]


def test_every_template_of_the_pinned_nvflare_is_mapped(extracted):
    """Fails on a new NVFLARE release and lists exactly the new (or vanished) templates."""
    diff = GENERATOR.compare(extracted, GENERATOR.load_mapping(), GENERATOR.catalog_rows())
    assert [m.template for m in diff.new] == []
    assert diff.vanished == [] and diff.unreviewed == [] and diff.unknown_groups == []
    assert [m.template for m in diff.moved] == []


def test_extraction_covers_the_areas_the_issue_names(extracted):
    areas = {m.area for m in extracted}
    assert areas == set(GENERATOR.SCOPE)
    assert len(extracted) >= 700  # ~750 distinct messages in NVFLARE 2.9
    texts = {m.template for m in extracted}
    assert "Inconsistent number of clients: num_clients={} but clients list has {} entries." in texts
    assert "You already specified clients using `to()`. Don't use `n_clients` in simulator_run." in texts
    assert "App '{}' in deploy_map doesn't exist for job {}" in texts  # raised through a local variable


def test_mapping_uses_internal_and_wrapper_groups_for_what_they_mean():
    groups = GENERATOR.mapped_groups(GENERATOR.load_mapping())
    assert (
        groups[
            "Simulation failed with return code {}. Logs are in per-site subdirectories under {}, "
            "e.g. server/simulate_job/log.txt"
        ]
        == "wrapper"
    )
    assert groups["PrebuiltCertBuilder missing from builder list; this is a bug"] == "internal"
    assert groups["{} must be an int, but got {}."] == "SIMULATION_CONFIG_ERROR"
    assert groups['Cannot find component class "{}"'] == "IMPORT_ERROR"


# ---- the generator's extraction rules, on a small source ----

SOURCE = """
def f(name, value, items):
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    if not items:
        raise TypeError("items of %s must not be empty (%d given)" % (name, len(items)))
    if name == "x":
        raise RuntimeError("bad name {} for {}".format(name, value))
    error = f"App '{name}' in deploy_map doesn't exist"
    if error:
        raise RuntimeError(error)
    raise ConfigError("first part, " + f"second {name} part")

def g(e):
    raise ValueError(str(e))
    raise KeyError("{}")
    raise ValueError("x")
"""


def test_extraction_reads_fstrings_percent_format_concatenation_and_local_variables():
    found = GENERATOR.messages_in(ast.parse(SOURCE), "recipe/x.py", "recipes")
    assert [(m.template, m.exc, m.func) for m in found] == [
        ("{} must be >= 0, got {}", "ValueError", "f"),
        ("items of {} must not be empty ({} given)", "TypeError", "f"),
        ("bad name {} for {}", "RuntimeError", "f"),
        ("App '{}' in deploy_map doesn't exist", "RuntimeError", "f"),
        ("first part, second {} part", "ConfigError", "f"),
    ]  # str(e), a lone placeholder and one-letter messages are not templates


def test_new_templates_go_to_unreviewed_with_a_suggestion_and_fail_the_check():
    mapping = {
        "messages": {
            "SIMULATION_CONFIG_ERROR": [{"t": "old one {}", "at": "recipe/a.py"}],
            "internal": [{"t": "gone {}", "at": "recipe/b.py"}],
        }
    }
    extracted = [
        GENERATOR.Message("old one {}", "ValueError", "recipe/a.py", 3, "f", "recipes"),
        GENERATOR.Message("unknown command: {}", "CLIUnknownCmdException", "cli.py", 9, "g", "admin_cli"),
    ]
    groups = GENERATOR.updated_groups(extracted, mapping)
    assert groups == {
        "SIMULATION_CONFIG_ERROR": [{"t": "old one {}", "at": "recipe/a.py"}],
        "unreviewed": [{"t": "unknown command: {}", "at": "cli.py", "suggested": "NVFLARE_COMMAND_ERROR"}],
    }
    rewritten = {"messages": groups}
    diff = GENERATOR.compare(extracted, rewritten, GENERATOR.catalog_rows())
    assert not diff.clean and diff.unreviewed == ["unknown command: {}"]
    stale = GENERATOR.compare(extracted[:1], mapping, GENERATOR.catalog_rows())
    assert stale.vanished == ["gone {}"] and not stale.clean


def test_dumped_mapping_round_trips_through_yaml(tmp_path):
    import yaml

    groups = {
        "IMPORT_ERROR": [{"t": 'Cannot find "{}" \\ in {}', "at": "fuel/x.py"}],
        "wrapper": [{"t": "w {}", "at": "a.py"}],
    }
    text = GENERATOR.dump_mapping("2.9.0", groups, ["IMPORT_ERROR", "internal", "wrapper"])
    assert yaml.safe_load(text)["messages"] == groups


# ---- rendering into the skill (make sync) ----


def test_rendered_json_is_fresh_and_renames_internal():
    rendered = json.loads((REPO / "skills/nvflare-diagnose-job/references/nvflare_messages.json").read_text())
    source = SYNC.load_messages_source()
    assert (
        SYNC.render_messages_json(source, SYNC.load_catalog_source())
        == (REPO / "skills/nvflare-diagnose-job/references/nvflare_messages.json").read_bytes()
    )
    assert "internal" not in rendered["templates"] and "NVFLARE_INTERNAL_ERROR" in rendered["templates"]
    total = sum(len(v) for v in rendered["templates"].values())
    assert total == sum(len(v) for v in source["messages"].values())


def test_rendering_rejects_unknown_groups_and_leaves_out_unreviewed():
    catalog = SYNC.load_catalog_source()
    source = {"schema": "s", "nvflare_version": "9", "messages": {"unreviewed": [{"t": "a {}", "at": "x.py"}]}}
    assert json.loads(SYNC.render_messages_json(source, catalog))["templates"] == {}
    with pytest.raises(KeyError):
        SYNC.message_groups({"messages": {"NOT_A_ROW": [{"t": "a {}", "at": "x.py"}]}}, catalog)


# ---- the skill's matcher ----


def _known(*entries):
    return messages.parse_messages({"templates": dict(entries)}, {"SIMULATION_CONFIG_ERROR", "IMPORT_ERROR"})


def test_template_pieces_must_occur_in_order_on_word_boundaries():
    known = _known(
        (
            "SIMULATION_CONFIG_ERROR",
            [["{} must be an int, but got {}.", "a.py"], ["min_clients must be int, got {}", "b.py"]],
        )
    )
    assert [t.at for t in known.match("TypeError: num_rounds must be an int, but got <class 'str'>.")] == ["a.py"]
    assert known.match("ValueError: but got 3. num_rounds must be an int,") == []  # wrong order
    assert [t.at for t in known.match("x_min_clients must be int, got 3")] == []  # cuts a word at the start
    assert [t.at for t in known.match("min_clients must be int, got 3")] == ["b.py"]
    assert known.match("MIN_CLIENTS MUST BE INT, GOT 3") == []  # NVFLARE prints its messages verbatim


def test_most_literal_text_comes_first_and_words_cut_by_placeholders_are_not_indexed():
    known = _known(
        ("SIMULATION_CONFIG_ERROR", [["{} must > 0, but got {}", "a.py"], ["timeout must > 0, but got {}", "b.py"]]),
        ("IMPORT_ERROR", [["{}ing module {}", "c.py"]]),
    )
    assert [t.at for t in known.match("timeout must > 0, but got -1")] == ["b.py", "a.py"]
    assert "ing" not in known.by_word and "module" in known.by_word


def test_hostile_lines_are_matched_in_linear_time():
    import time

    known = cat.load_catalog().messages
    line = "ValueError: " + "must be " * 5000 + "x"
    start = time.process_time()  # CPU time: other processes on the machine add none
    known.match(line)
    assert time.process_time() - start < 0.5


def test_broken_or_missing_mapping_is_a_one_line_catalog_error(tmp_path):
    with pytest.raises(cat.CatalogError, match="make sync"):
        cat.load_catalog(messages_path=tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"templates": {"NO_SUCH_ROW": [["a {}", "x.py"]]}}))
    with pytest.raises(cat.CatalogError, match="unknown row"):
        cat.load_catalog(messages_path=bad)
    bad.write_text("{not json")
    with pytest.raises(cat.CatalogError, match="not valid JSON"):
        cat.load_catalog(messages_path=bad)


# ---- the figures make eval prints ----


def test_generated_cases_look_like_real_tracebacks_from_job_py():
    message = GENERATOR.Message(
        "Inconsistent: num_clients={} but clients list has {} entries",
        "ValueError",
        "recipe/poc_env.py",
        70,
        "__init__",
        "recipes",
    )
    text = COVERAGE.traceback_text(message)
    assert text.startswith("Traceback (most recent call last):\n")
    assert '/site-packages/nvflare/recipe/poc_env.py", line 70, in __init__' in text
    assert text.rstrip().endswith("ValueError: Inconsistent: num_clients=sample1 but clients list has sample2 entries")
    custom = GENERATOR.Message("no such job: {}", "JobNotFound", "fuel/flare_api/flare_api.py", 5, "f", "admin_cli")
    assert "nvflare.fuel.flare_api.flare_api.JobNotFound: no such job: sample1" in COVERAGE.traceback_text(custom)


def test_coverage_figures_meet_their_goals():
    figures = COVERAGE.measure()
    assert figures.error is None and figures.total >= 700
    assert figures.mapped == figures.total
    assert figures.diagnosed / figures.cases >= 0.95 and figures.diagnosed_lines / figures.cases >= 0.95, (
        figures.misses[:5]
    )
    assert figures.met and "goal" in figures.lines()[0]


def test_coverage_goal_fails_below_95_percent():
    figures = COVERAGE.MessageCoverage(total=10, mapped=10, cases=100, diagnosed=94, diagnosed_lines=100)
    assert not figures.met
    assert not COVERAGE.MessageCoverage(total=10, mapped=9, cases=100, diagnosed=100, diagnosed_lines=100).met
    assert COVERAGE.MessageCoverage(total=10, mapped=10, cases=100, diagnosed=95, diagnosed_lines=95).met


def test_open_text_is_what_the_templates_own_words_leave_over():
    known = _known(
        ("SIMULATION_CONFIG_ERROR", [["failed to instantiate class: {}", "a.py"], ["{} must be {}, got {}", "b.py"]])
    )
    text = "ValueError: failed to instantiate class: RuntimeError: CUDA out of memory"
    assert known.match(text)[0].open_text(text) == ["ValueError: ", "RuntimeError: CUDA out of memory"]
    assert known.match("x: lr must be float, got 'a'")[0].open_text("x: lr must be float, got 'a'") == [
        "x: lr",
        "float",
        "'a'",
    ]
    assert known.templates[0].open_text("unrelated") == []


def test_one_word_templates_are_never_looked_for():
    known = _known(("IMPORT_ERROR", [["unreachable", "a.py"], ['Expected "{}"', "b.py"], ["session closed", "c.py"]]))
    assert known.match("Error: Kubernetes cluster unreachable: connection refused") == []
    assert known.match('Error: Expected "x"') == []
    assert [t.at for t in known.match("SessionClosed: session closed")] == ["c.py"]
