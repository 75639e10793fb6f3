"""The published report JSON Schema for tests: every report a diagnose test produces goes through `validated()`.

Usage: `report = validated(json_text_or_dict)` -> the report dict, after the published schema's validation passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "diagnose_report.v1.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
# What `jsonschema.validate` does on every call, done once: the schema checked against its metaschema and the
# validator built (~27 ms of CPU per call saved; over a thousand reports are validated in the suite).
_VALIDATOR_CLASS = jsonschema.validators.validator_for(SCHEMA)
_VALIDATOR_CLASS.check_schema(SCHEMA)
VALIDATOR = _VALIDATOR_CLASS(SCHEMA)


def validated(report: dict | str | bytes) -> dict:
    """Parse (when given JSON text) and validate a report (raising jsonschema.validate's error); return it as a
    dict."""
    if isinstance(report, (str, bytes)):
        report = json.loads(report)
    error = jsonschema.exceptions.best_match(VALIDATOR.iter_errors(report))
    if error is not None:
        raise error
    return report
