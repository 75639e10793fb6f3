"""The tests' schema check (report_schema.validated): jsonschema.validate's answer with its validator built once."""

import jsonschema
import pytest
from report_schema import SCHEMA, validated


def test_a_report_the_schema_refuses_raises_what_jsonschema_validate_raises():
    bad = {"schema_version": 1, "unexpected": True}
    with pytest.raises(jsonschema.ValidationError) as raised:
        validated(bad)
    with pytest.raises(jsonschema.ValidationError) as expected:
        jsonschema.validate(bad, SCHEMA)
    assert (raised.value.message, list(raised.value.path)) == (expected.value.message, list(expected.value.path))
    with pytest.raises(jsonschema.ValidationError):
        validated('{"schema_version": 1}')  # JSON text is parsed first
