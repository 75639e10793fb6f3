"""The failure-pattern catalog: all spec rows present, valid shape, and clear errors when it is broken."""

import copy
import json

import pytest
import yaml
from nvfdiag.match import catalog as cat

SPEC_ROWS = {
    "USER_CODE_EXCEPTION": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "IMPORT_ERROR": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "DATA_PATH_NOT_FOUND": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "ABSOLUTE_DATA_PATH": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "CUDA_OOM": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "RESOURCE_EXCEEDS_HOST_CAPACITY": ("FIXABLE_BY_CONFIG", {"simulation", "production"}),
    "ROUND_TIMEOUT": ("ENVIRONMENT_FAILURE", {"production"}),
    "TRANSFER_PROGRESS_TIMEOUT": ("RETRYABLE", {"production"}),
    "DATUM_OBJECT_TYPE_6": ("FIXABLE_BY_CONFIG", {"simulation", "production"}),
    "PROCESS_EXIT_NEG9": ("UNKNOWN", {"simulation", "production"}),
    "PEER_GONE_OR_TIMEOUT": ("ENVIRONMENT_FAILURE", {"production"}),
    "AUTH_FAILURE": ("FIXABLE_BY_CONFIG", {"production"}),
    "STARTUP_KIT_EXPIRED": ("FIXABLE_BY_CONFIG", {"production"}),
    "COMPONENT_NOT_AUTHORIZED": ("FIXABLE_BY_CONFIG", {"simulation", "production"}),
    "PACKAGE_EXPORT_ERROR": ("FIXABLE_BY_CODE", {"simulation", "production"}),
    "SIMULATION_CONFIG_ERROR": ("FIXABLE_BY_CODE", {"simulation"}),
    "CONFIG_FILE_VALIDATION_ERROR": ("FIXABLE_BY_CONFIG", {"simulation", "production"}),
    "INFRASTRUCTURE_DEPLOYMENT_FAILURE": ("ENVIRONMENT_FAILURE", {"production"}),
    "PARTIAL_LOG_VISIBILITY": ("UNKNOWN", {"production"}),
    "SITE_AUTHORIZATION_FAILURE": ("FIXABLE_BY_CONFIG", {"production"}),
    "SUSPICIOUS_LOG_CONTENT": ("UNKNOWN", {"simulation", "production"}),
}
# Rows the spec leaves to us (docs/decisions.md): homes for NVFLARE's own messages that fit no spec row.
EXTRA_ROWS = {
    "NVFLARE_COMMAND_ERROR": ("FIXABLE_BY_CONFIG", {"simulation", "production"}),
    "NVFLARE_INTERNAL_ERROR": ("UNKNOWN", {"simulation", "production"}),
}


@pytest.fixture(scope="module")
def rendered(repo_root):
    return json.loads((repo_root / "skills/nvflare-diagnose-job/references/failure_patterns.json").read_text())


def test_loaded_catalog_has_exactly_the_spec_rows_with_spec_categories_and_modes():
    loaded = cat.load_catalog()
    assert {row.id for row in loaded.rows} == set(SPEC_ROWS) | set(EXTRA_ROWS)
    for row in loaded.rows:
        category, modes = {**SPEC_ROWS, **EXTRA_ROWS}[row.id]
        assert row.recovery_category == category, row.id
        assert set(row.modes) == modes, row.id
        assert row.next_action and row.title


def test_priorities_are_unique_and_encode_the_documented_precedence():
    loaded = cat.load_catalog()
    prio = {row.id: row.priority for row in loaded.rows}
    assert len(set(prio.values())) == len(prio)
    assert prio["IMPORT_ERROR"] > prio["USER_CODE_EXCEPTION"]
    assert prio["CUDA_OOM"] > prio["ROUND_TIMEOUT"]
    assert prio["TRANSFER_PROGRESS_TIMEOUT"] > prio["PEER_GONE_OR_TIMEOUT"] > prio["ROUND_TIMEOUT"]
    assert prio["STARTUP_KIT_EXPIRED"] > prio["AUTH_FAILURE"]
    assert loaded.row("SUSPICIOUS_LOG_CONTENT").finding_only


def test_rendered_json_matches_the_yaml_source(repo_root, rendered):
    source = yaml.safe_load((repo_root / "shared/catalog/failure_patterns.yaml").read_text())
    rendered = {k: v for k, v in rendered.items() if k != "_generated"}
    assert rendered == source


def test_follow_up_templates_use_only_known_placeholders(rendered):
    for name, template in rendered["follow_up_templates"].items():
        stripped = template
        for placeholder in (
            "{job_id}",
            "{site}",
            "{diagnose}",
            "{logs_dir}",
            "{poc_root}",
            "{workspace}",
            "{evidence}",
        ):
            stripped = stripped.replace(placeholder, "")
        assert "{" not in stripped and "}" not in stripped, name


def _broken(rendered, mutate):
    doc = copy.deepcopy(rendered)
    mutate(doc)
    with pytest.raises(cat.CatalogError) as info:
        cat.parse_catalog(doc)
    message = str(info.value)
    assert "\n" not in message and message
    return message


def test_bad_regex_is_reported_with_the_row(rendered):
    def mutate(doc):
        doc["patterns"][0]["signals"][0]["regex"] = "([unclosed"

    assert doc_id(rendered, 0) in _broken(rendered, mutate)


def doc_id(doc, index):
    return doc["patterns"][index]["id"]


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d["patterns"][0].update(recovery_category="MAYBE"), "recovery_category"),
        (lambda d: d["patterns"][0].update(modes=["cloud"]), "modes"),
        (lambda d: d["patterns"][1].update(id=d["patterns"][0]["id"]), "unique"),
        (lambda d: d["patterns"][0].pop("next_action"), "next_action"),
        (lambda d: d["patterns"][0].update(follow_up={"production": ["no_such_template"]}), "follow_up"),
        (lambda d: d["patterns"][0].update(requires_any=["NOT_A_ROW"]), "NOT_A_ROW"),
        (lambda d: d.pop("patterns"), "patterns"),
        (lambda d: d["patterns"][0]["signals"][0].update(strength="huge"), "strength"),
    ],
)
def test_malformed_catalog_raises_one_clear_line(rendered, mutate, needle):
    assert needle in _broken(rendered, mutate)


def test_missing_or_corrupt_catalog_file(tmp_path):
    with pytest.raises(cat.CatalogError, match="make sync"):
        cat.load_catalog(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(cat.CatalogError, match="not valid JSON"):
        cat.load_catalog(bad)


def test_signals_are_compiled_case_insensitive():
    row = cat.load_catalog().row("IMPORT_ERROR")
    assert any(sig.regex.search("modulenotfounderror: no module named x") for sig in row.signals)


def test_every_signal_and_mode_hint_has_a_keyword_prefilter():
    loaded = cat.load_catalog()
    for row in loaded.rows:
        for sig in row.signals:
            assert sig.keywords, f"{row.id}: {sig.regex.pattern} has no keywords"
    for hints in loaded.mode_hints.values():
        assert all(hint.keywords for hint in hints)


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "peer_read_timeout while reading from site-2",
        "Error: Bind for 0.0.0.0:8002 failed: port is already allocated",
        "FileNotFoundError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\bob\\\\data.csv'",
        "x509: certificate has expired or is not yet valid",
        "Memory cgroup out of memory: Killed process 4242 (python3)",
    ],
)
def test_keyword_prefilter_never_hides_a_regex_match(text):
    """Wherever a signal regex matches, one of its keywords occurs too (else the prefilter would hide it)."""
    matched = 0
    for row in cat.load_catalog().rows:
        for sig in row.signals:
            if sig.regex.search(text):
                matched += 1
                assert sig.may_match(text.lower()), (row.id, sig.regex.pattern)
    assert matched


@pytest.mark.parametrize("row_id", ["CUDA_OOM", "PROCESS_EXIT_NEG9", "TRANSFER_PROGRESS_TIMEOUT"])
def test_expensive_retry_rule_is_in_the_next_action_of_rows_that_invite_a_rerun(row_id):
    """Spec: at most one retry of an expensive real-model run, and only after a causal factor changed."""
    action = cat.load_catalog().row(row_id).next_action.lower()
    assert "at most once" in action or "retry once" in action
    if row_id != "TRANSFER_PROGRESS_TIMEOUT":
        assert "changed" in action


def test_an_unchanged_catalog_is_parsed_once_per_process_and_a_changed_one_again(rendered, tmp_path):
    assert cat.load_catalog() is cat.load_catalog()
    path = tmp_path / "failure_patterns.json"
    path.write_text(json.dumps(rendered))
    first = cat.load_catalog(path)
    assert cat.load_catalog(path) is first
    changed = copy.deepcopy(rendered)
    changed["patterns"][0]["title"] = "a title written after the first read"
    path.write_text(json.dumps(changed))
    again = cat.load_catalog(path)
    assert (
        again is not first and again.row(changed["patterns"][0]["id"]).title == "a title written after the first read"
    )
    path.write_text("{not json")
    with pytest.raises(cat.CatalogError, match="not valid JSON"):
        cat.load_catalog(path)  # never the earlier parse of the same path
