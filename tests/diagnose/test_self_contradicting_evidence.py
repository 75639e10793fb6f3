"""Evidence that disagrees with itself is never high; a name under `nvflare.` the release lacks is a release mismatch.

The evidence is built here from NVFLARE 2.9.0's own wordings: how its config processing wraps a failure
(fuel/utils/json_scanner.py: `Error processing {} in JSON element {}: path: {}, exception: {}`, the inner exception
formatted by security/logging.secure_format_exception as `Class: message`), the classes it raises
(fuel/common/excepts.py ConfigError, ComponentNotAuthorized) and the templates of the reviewed mapping.
"""

from pathlib import Path

from module_loader import load_by_path
from nvfdiag.match import catalog as cat
from nvfdiag.match import dissent, releases
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
REPO = Path(__file__).resolve().parents[2]
TS = "2026-11-30 08:02:36,202 - ServerRunner - ERROR - [identity=simulator_server, run=simulate_job] - "
SITE_PACKAGES = "/home/dev/.venv/lib/python3.11/site-packages"
ELEMENT = (
    "Error processing config_fed_server.json in JSON element {'id': 'persistor', 'name': 'InitializeGlobalWeights'}:"
    " path: components.0, exception: "
)


def ev(texts, source="server/log.txt", site="server"):
    lines = [Line(source, site, i + 1, text) for i, text in enumerate(texts)]
    return Evidence(sources=[Source(source, "log", site, "complete", 100)], lines=lines)


def run(texts, **options):
    options.setdefault("mode", "simulation")
    return validated(diagnose(ev(texts), CATALOG, **options))


def others(report):
    return {c["pattern"]: c["reason"] for c in report["other_candidates"]}


def nvflare_traceback(exc_line, module="fuel/utils/class_utils.py", func="get_class_path_from_config"):
    return [
        "Traceback (most recent call last):",
        '  File "/home/dev/fl-job/job.py", line 31, in main',
        "    recipe.execute(env)",
        f'  File "{SITE_PACKAGES}/nvflare/{module}", line 107, in {func}',
        "    raise ConfigError(...)",
        exc_line,
    ]


def test_a_class_points_at_the_rows_whose_rule_matches_its_name():
    assert "CONFIG_FILE_VALIDATION_ERROR" in dissent.class_rows("ConfigError", CATALOG)
    assert "DATA_PATH_NOT_FOUND" in dissent.class_rows("FileNotFoundError", CATALOG)
    assert "IMPORT_ERROR" in dissent.class_rows("ModuleNotFoundError", CATALOG)
    assert dissent.class_rows("ValueError", CATALOG) == {}


def test_the_innermost_class_on_a_line_is_the_one_that_counts():
    line = "nvflare.fuel.common.excepts.ConfigError: " + ELEMENT + "ModuleNotFoundError: No module named 'mypkg'"
    assert dissent.exception_class(line) == "ModuleNotFoundError"
    assert dissent.exception_class("ERROR - Cannot find component class") is None


def test_a_template_mapped_to_import_error_raised_as_a_configerror_is_at_most_medium():
    exc = 'nvflare.fuel.common.excepts.ConfigError: Cannot find component class "InitializeGlobalWeights"'
    report = run(nvflare_traceback(exc))
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert report["confidence"] == "medium"
    reason = others(report)["CONFIG_FILE_VALIDATION_ERROR"]
    assert "ConfigError" in reason and "disagrees" in reason
    assert "contradicted: exception class ConfigError" in report["signals"][0]["match_basis"]["rule"]


def test_the_same_message_through_the_config_wrapper_is_at_most_medium_too():
    report = run([TS + ELEMENT + 'ConfigError: Cannot find component class "InitializeGlobalWeights"'])
    assert report["matched_pattern"] == "IMPORT_ERROR" and report["confidence"] == "medium"
    assert "CONFIG_FILE_VALIDATION_ERROR" in others(report)
    assert report["signals"][0]["match_basis"]["peeled"] is True


def test_where_the_class_says_nothing_the_config_processing_module_is_the_second_source():
    # NVFLARE 2.0-2.5 raise the same fact from fuel/utils/class_utils.py as a ValueError: no row knows ValueError, and
    # the module that raised it is NVFLARE's config processing
    report = run(nvflare_traceback("ValueError: Class mypkg.Trainer does not exist", func="instantiate_class"))
    assert report["matched_pattern"] == "IMPORT_ERROR" and report["confidence"] == "medium"
    assert "config processing" in others(report)["CONFIG_FILE_VALIDATION_ERROR"]
    # a ValueError raised elsewhere in NVFLARE is no second opinion
    report = run(nvflare_traceback("ValueError: Class mypkg.Trainer does not exist", "job_config/api.py", "to"))
    assert all("disagrees" not in reason for reason in others(report).values())


def test_a_class_that_agrees_with_the_message_leaves_it_high():
    report = run([TS + ELEMENT + "ModuleNotFoundError: No module named 'mypkg'"])
    assert report["matched_pattern"] == "IMPORT_ERROR" and report["confidence"] == "high"
    assert all("disagrees" not in reason for reason in others(report).values())


def test_a_row_whose_own_rule_names_the_class_is_not_contradicted_by_it():
    # ABSOLUTE_DATA_PATH's rule reads `FileNotFoundError ... /home/...`: the class is part of what it means
    line = "FileNotFoundError: [Errno 2] No such file or directory: '/home/alice/data/site-1.csv'"
    report = run(["Traceback (most recent call last):", '  File "/w/site-1/custom/client.py", line 9, in main', line])
    assert all("disagrees" not in reason for reason in others(report).values())


def test_an_exception_class_of_one_row_with_a_message_of_another_is_at_most_medium():
    # NVFLARE 2.9's JsonConfigurator raises its missing config file as FileNotFoundError (private/json_configer.py)
    exc = "FileNotFoundError: config_file_names ['config_fed_client.json'] does not exist or not a file"
    report = run(nvflare_traceback(exc, "private/json_configer.py", "__init__"), mode="production")
    assert report["matched_pattern"] == "PACKAGE_EXPORT_ERROR"
    assert report["confidence"] == "medium"
    assert "DATA_PATH_NOT_FOUND" in others(report)


def test_a_generic_wrapper_is_context_not_a_second_opinion():
    # json_scanner re-raises an inner ComponentNotAuthorized through the element wrapper: class and inner message
    # agree, and the wrapper only says where it happened
    exc = (
        "nvflare.fuel.common.excepts.ComponentNotAuthorized: "
        + ELEMENT
        + "ComponentNotAuthorized: component not authorized: x"
    )
    report = run([TS + exc], mode="production")
    assert report["matched_pattern"] == "COMPONENT_NOT_AUTHORIZED"
    assert all("disagrees" not in reason for reason in others(report).values())


def test_every_template_nvflare_raises_as_a_class_of_another_row_is_below_high():
    """The general case over NVFLARE's own templates (the mapping's rows vs the classes that raise them)."""
    template_dissent = load_by_path("template_dissent", REPO / "evals" / "template_dissent.py")
    figures = template_dissent.measure()
    assert figures.error is None
    assert len(figures.disagreeing) >= 10  # 19 pairs with nvflare 2.9.0 and the committed releases
    assert figures.met, figures.misses


def test_a_missing_name_under_nvflare_is_found_however_it_is_said():
    cases = {
        "ModuleNotFoundError: No module named 'nvflare.app_opt.pt.recipes.fedavg'": "nvflare.app_opt.pt.recipes.fedavg",
        "ImportError: cannot import name 'FedAvgRecipe' from 'nvflare.app_opt.pt.recipes' (/x/__init__.py)": (
            "nvflare.app_opt.pt.recipes.FedAvgRecipe"
        ),
        "AttributeError: module 'nvflare.client' has no attribute 'is_train'": "nvflare.client.is_train",
        'ConfigError: Cannot find component class "nvflare.app_common.workflows.gone.Gone"': (
            "nvflare.app_common.workflows.gone.Gone"
        ),
        "ValueError: Class nvflare.app_common.aggregators.Gone does not exist.": "nvflare.app_common.aggregators.Gone",
    }
    for text, name in cases.items():
        assert releases.name_in(text) == name, text
    # the class a line is raised as, the package itself missing, another package: not a release mismatch
    assert releases.name_in('nvflare.fuel.common.excepts.ConfigError: Cannot find component class "X"') is None
    assert releases.name_in("ModuleNotFoundError: No module named 'nvflare'") is None
    # python -m with nvflare missing altogether names the module it runs, but only `nvflare` is missing
    run_m = (
        "/usr/bin/python3: Error while finding module specification for 'nvflare.private.fed.app.client.client_train'"
        " (ModuleNotFoundError: No module named 'nvflare')"
    )
    assert releases.name_in(run_m) is None
    assert releases.name_in("ModuleNotFoundError: No module named 'torch'") is None


def test_a_class_the_installed_release_lacks_says_to_compare_releases_whatever_the_row():
    import_line = "ModuleNotFoundError: No module named 'nvflare.app_opt.pt.recipes'"
    report = run(
        ["Traceback (most recent call last):", '  File "/home/dev/fl-job/job.py", line 3, in <module>'] + [import_line]
    )
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert "pip show nvflare" in report["next_action"] and "`nvflare.app_opt.pt.recipes`" in report["next_action"]
    config = 'nvflare.fuel.common.excepts.ConfigError: Cannot find component class "nvflare.app_common.x.Gone"'
    for texts, mode in (
        ([TS + ELEMENT + config.split(": ", 1)[1]], "production"),
        (nvflare_traceback(config), "simulation"),
    ):
        report = run(texts, mode=mode)
        assert "pip show nvflare" in report["next_action"], report["matched_pattern"]


def test_the_eval_invariant_accepts_the_release_sentence_only_as_the_catalog_words_it():
    eval_checks = load_by_path("eval_checks", REPO / "evals" / "eval_checks.py")
    exc = "ModuleNotFoundError: No module named 'nvflare.app_opt.pt.recipes'"
    report = run(["Traceback (most recent call last):", '  File "/home/dev/fl-job/job.py", line 3, in <module>', exc])
    row, release = CATALOG.row("IMPORT_ERROR"), CATALOG.release_mismatch
    assert eval_checks.next_action_matches(report["next_action"], row, (), release)
    assert not eval_checks.next_action_matches(report["next_action"], row)
    forged = report["next_action"].replace("`nvflare.app_opt.pt.recipes`", "`rm -rf /`")
    assert not eval_checks.next_action_matches(forged, row, (), release)


def test_a_missing_package_that_is_not_nvflare_keeps_the_rows_own_next_action():
    report = run(
        [
            "Traceback (most recent call last):",
            '  File "/home/dev/fl-job/job.py", line 3, in <module>',
            "ModuleNotFoundError: No module named 'torchvision'",
        ]
    )
    assert report["matched_pattern"] == "IMPORT_ERROR"
    assert "pip show nvflare" not in report["next_action"]
    assert report["next_action"].startswith(CATALOG.row("IMPORT_ERROR").next_action_for("simulation")[:40])
