"""The published report JSON Schema for tests: every report a diagnose test produces goes through `validated()`.

Usage: `report = validated(json_text_or_dict)` -> the report dict, after `jsonschema.validate` passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "diagnose_report.v1.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validated(report: dict | str | bytes) -> dict:
    """Parse (when given JSON text) and validate a report; return it as a dict."""
    if isinstance(report, (str, bytes)):
        report = json.loads(report)
    jsonschema.validate(report, SCHEMA)
    return report
