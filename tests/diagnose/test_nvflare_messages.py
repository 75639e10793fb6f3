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


@pytest.fixture(scope="module")
def coverage():
    return COVERAGE.measure()  # ~10 s: every user-facing template of six releases, diagnosed twice


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


def test_coverage_figures_meet_their_goals(coverage):
    figures = coverage
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


# ---- every 2.x release line on the package registry (2.0, 2.3 to 2.9; 2.1 and 2.2 have no wheel), one mapping ----

RELEASE_LINES = ["2.0", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9"]


def test_committed_releases_are_the_latest_patch_of_every_older_line_and_the_mapping_names_them():
    committed = GENERATOR.committed_releases()
    assert [r.line for r in committed] == RELEASE_LINES[:-1]
    assert [r.version for r in committed] == ["2.0.19", "2.3.12", "2.4.2", "2.5.2", "2.6.3", "2.7.3", "2.8.3"]
    mapping = GENERATOR.load_mapping()
    assert list(mapping["releases"]) == RELEASE_LINES
    assert mapping["releases"]["2.9"] == _pinned_nvflare()
    assert all(len(r.messages) >= 250 for r in committed if r.line >= "2.4")  # 282 templates in 2.4.2, 656 in 2.8.3
    assert all(len(r.messages) >= 50 for r in committed)  # 64 in 2.0.19, 199 in 2.3.12


def test_older_lines_and_panic_reasons_are_mapped():
    """2.0's and 2.3's wordings, and reasons NVFLARE ends a run with (system_panic), select their rows."""
    entries = GENERATOR._entries(GENERATOR.load_mapping())
    assert entries["expect model to be torch.nn.Module but got {}"]["in"][0] == "2.0"
    groups = GENERATOR.mapped_groups(GENERATOR.load_mapping())
    assert groups["expect model to be torch.nn.Module but got {}"] == "CONFIG_FILE_VALIDATION_ERROR"
    assert groups["Error processing {} in JSON element {}: {}"] == "CONFIG_FILE_VALIDATION_ERROR"


def test_every_template_of_every_release_is_mapped_with_the_releases_that_raise_it(extracted):
    """Offline: the committed extractions plus the installed NVFLARE against the one reviewed mapping."""
    installed = GENERATOR.Release(GENERATOR.installed_version(GENERATOR.installed_root()), extracted)
    merged, releases_of = GENERATOR.merge(GENERATOR.all_releases(installed))
    diff = GENERATOR.compare(merged, GENERATOR.load_mapping(), GENERATOR.catalog_rows(), releases_of)
    assert diff.clean, (diff.new[:3], diff.vanished[:3], diff.wrong_releases[:3], diff.unreviewed[:3])
    assert len(merged) > len(extracted)  # older wordings the installed release no longer raises are known too
    entries = GENERATOR._entries(GENERATOR.load_mapping())
    assert entries["Unable to locate fed_admin configuration from startup kid location {}"]["in"] == [
        "2.4",
        "2.5",
        "2.6",
        "2.7",
    ]


def test_one_release_alone_does_not_call_older_wordings_vanished():
    mapping = {
        "nvflare_version": "2.9.0",
        "messages": {
            "AUTH_FAILURE": [
                {"t": "old wording {}", "at": "a.py", "in": ["2.4", "2.5"]},
                {"t": "dropped in 2.9 {}", "at": "a.py", "in": ["2.8", "2.9"]},
            ]
        },
    }
    diff = GENERATOR.compare([], mapping, GENERATOR.catalog_rows())
    assert diff.vanished == ["dropped in 2.9 {}"]
    merged = [GENERATOR.Message("old wording {}", "ValueError", "a.py", 1, "f", "recipes")]
    stale = GENERATOR.compare(merged, mapping, GENERATOR.catalog_rows(), {"old wording {}": ["2.4"]})
    assert stale.wrong_releases == ["old wording {}"] and stale.vanished == ["dropped in 2.9 {}"]
    assert not stale.clean


def _wheel(tmp_path, version: str, body: str):
    folder = tmp_path / f"src-{version}" / "nvflare"
    (folder / "recipe").mkdir(parents=True)
    (folder / "_version.py").write_text(f"version_json = '''\n{{\"version\": \"{version}\"}}\n'''\n")
    (folder / "recipe" / "x.py").write_text(body)
    (folder / "unscoped.py").write_text('def f():\n    raise ValueError("not in any scope area {}".format(1))\n')
    wheel = tmp_path / f"nvflare-{version}-py3-none-any.whl"
    import zipfile

    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(folder.rglob("*.py")):
            archive.write(path, "nvflare/" + path.relative_to(folder).as_posix())
    return folder, wheel


def test_a_wheel_is_read_like_its_unpacked_folder_without_unpacking_or_importing(tmp_path):
    body = 'def f(n):\n    raise ValueError(f"bad rounds {n} for this recipe")\n'
    folder, wheel = _wheel(tmp_path, "2.4.2", body)
    assert GENERATOR.extract(wheel) == GENERATOR.extract(folder)
    assert [m.template for m in GENERATOR.extract(wheel)] == ["bad rounds {} for this recipe"]
    assert GENERATOR.installed_version(wheel) == GENERATOR.installed_version(folder) == "2.4.2"


def test_add_release_commits_the_extraction_and_replaces_an_older_patch_of_the_line(tmp_path):
    out = tmp_path / "releases"
    _, old = _wheel(tmp_path / "a", "2.4.1", 'def f():\n    raise ValueError("first wording of the fact")\n')
    _, new = _wheel(tmp_path / "b", "2.4.2", 'def f():\n    raise ValueError("second wording of the fact")\n')
    GENERATOR.add_release(old, out)
    GENERATOR.add_release(new, out)
    releases = GENERATOR.committed_releases(out)
    assert [(r.version, [m.template for m in r.messages]) for r in releases] == [
        ("2.4.2", ["second wording of the fact"])
    ]
    assert sorted(p.name for p in out.iterdir()) == ["nvflare-2.4.2.json"]
    assert GENERATOR.load_release(out / "nvflare-2.4.2.json") == releases[0]


def test_merge_locates_each_template_where_the_newest_release_raises_it():
    older = GENERATOR.Release("2.5.2", [GENERATOR.Message("same {}", "ValueError", "old/place.py", 3, "f", "recipes")])
    newer = GENERATOR.Release("2.9.0", [GENERATOR.Message("same {}", "ValueError", "new/place.py", 9, "g", "recipes")])
    merged, releases_of = GENERATOR.merge([older, newer])
    assert [(m.at, m.line) for m in merged] == [("new/place.py", 9)]
    assert releases_of == {"same {}": ["2.5", "2.9"]}


def test_an_older_release_wording_is_diagnosed_like_the_current_one():
    known = cat.load_catalog()
    old = "ValueError: Unable to locate fed_admin configuration from startup kid location /opt/kits/admin"
    new = "ValueError: Unable to locate fed_admin configuration from startup kit location /opt/kits/admin"
    assert [t.group for t in known.messages.match(old)] == [t.group for t in known.messages.match(new)]
    assert known.messages.match(old)[0].releases == ("2.4", "2.5", "2.6", "2.7")
    assert [t.group for t in known.messages.match("RuntimeError: Simulator run failed with exit code 1.")] == [
        "wrapper"
    ]


def test_rendered_entries_carry_their_release_lines():
    rendered = json.loads((REPO / "skills/nvflare-diagnose-job/references/nvflare_messages.json").read_text())
    assert list(rendered["releases"]) == RELEASE_LINES
    entries = [entry for group in rendered["templates"].values() for entry in group]
    assert all(len(entry) == 3 and set(entry[2].split()) <= set(RELEASE_LINES) for entry in entries)


def test_coverage_is_printed_per_release_line(coverage):
    figures = coverage
    older = ["2.0.19", "2.3.12", "2.4.2", "2.5.2", "2.6.3", "2.7.3", "2.8.3"]
    assert [r.version for r in figures.releases] == [*older, _pinned_nvflare()]
    assert all(r.mapped == r.total and r.met for r in figures.releases)
    lines = figures.lines()
    assert sum(1 for line in lines if line.startswith("  nvflare 2.")) == 8
    below = COVERAGE.ReleaseCoverage("2.4.2", total=10, mapped=9, cases=5, diagnosed=5, diagnosed_lines=5)
    assert not below.met
