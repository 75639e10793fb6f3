"""Generic wrapper templates are peeled: the inner exception decides, and a rule matches only what it means."""

from nvfdiag.match import catalog as cat
from nvfdiag.match import raiser
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TS = "2025-03-04 10:11:12,345 - ClientRunner - ERROR - "
ELEMENT = (
    "Error processing config_fed_client.json in JSON element {'id': 'trainer', 'path': 'mypkg.Trainer', 'args':"
    " {'data_path': '/data/x'}}: path: executors.0.executor, exception: "
)


def ev(texts, source="site-2/log.txt", site="site-2"):
    lines = [Line(source, site, i + 1, text) for i, text in enumerate(texts)]
    return Evidence(sources=[Source(source, "log", site, "complete", 100)], lines=lines)


def run(texts, **options):
    options.setdefault("mode", "production")
    return validated(diagnose(ev(texts), CATALOG, **options))


def test_a_carrier_template_is_recognized_by_its_tail():
    by_text = {t.text: t for t in CATALOG.messages.templates}
    element = by_text["Error processing {} in JSON element {}: path: {}, exception: {}"]
    assert element.carrier and element.generic
    assert element.tail(ELEMENT + "boom") == "boom"
    assert not by_text["GPU free mem is not enough"].carrier


def test_the_inner_nvflare_message_decides_over_the_config_wrapper():
    report = run([TS + ELEMENT + 'Cannot find component class "mypkg.Trainer"'])
    assert report["matched_pattern"] == "IMPORT_ERROR"
    basis = report["signals"][0]["match_basis"]
    assert basis["peeled"] is True and "JSON element" in basis["wrapper"]


def test_an_inner_python_exception_a_catalog_rule_knows_decides():
    report = run([TS + ELEMENT + "ModuleNotFoundError: No module named 'mypkg'"])
    assert report["matched_pattern"] == "IMPORT_ERROR"


def test_a_typeerror_inside_the_wrapper_is_not_a_missing_config_file_nor_a_missing_data_path():
    report = run([TS + ELEMENT + "__init__() missing 1 required positional argument: 'lr'"])
    assert report["matched_pattern"] == "CONFIG_FILE_VALIDATION_ERROR"
    assert report["confidence"] != "high"  # the generic wrapper alone is a loose basis
    patterns = {c["pattern"] for c in report["other_candidates"]}
    assert "PACKAGE_EXPORT_ERROR" not in patterns and "DATA_PATH_NOT_FOUND" not in patterns


def test_nested_carriers_are_peeled_to_the_innermost_message():
    inner = "failed to instantiate class: CUDA out of memory. Tried to allocate 2.00 GiB"
    report = run([TS + ELEMENT + inner])
    assert report["matched_pattern"] == "CUDA_OOM"


def test_a_rule_never_spans_two_values_of_a_template():
    found = raiser.peel(CATALOG.messages.match(ELEMENT + "x"), ELEMENT + "x", CATALOG)
    assert all("config_fed_client.json" not in value or "missing" not in value for value in found.values)
    report = run([TS + "Error processing config_fed_client.json in JSON element {}: path: a, exception: missing key"])
    assert report["matched_pattern"] != "PACKAGE_EXPORT_ERROR"


def test_loose_rules_match_only_what_they_mean():
    typeerror = TS + "TypeError: load(data_path=...) missing 1 required positional argument: 'split'"
    assert run([typeerror])["matched_pattern"] != "DATA_PATH_NOT_FOUND"
    assert (
        run([TS + "config_fed_client.json not found in app_site-1/config"])["matched_pattern"] == "PACKAGE_EXPORT_ERROR"
    )
    assert run([TS + "dataset path /data/site-2 does not exist"])["matched_pattern"] == "DATA_PATH_NOT_FOUND"


def test_a_specific_message_without_a_wrapper_is_still_high():
    report = run([TS + "ModuleNotFoundError: No module named 'mypkg'"])
    assert report["matched_pattern"] == "IMPORT_ERROR" and report["confidence"] == "high"
