"""A small JSON Schema (draft 2020-12 subset) checker for the runner's own documents, standard library only.

The skill cannot read `shared/schemas/` at run time and ships no jsonschema dependency, so the campaign's
settings file is checked with this: the keywords the published schemas use (`type`, `enum`, `const`,
`minimum`, `maximum`, `exclusiveMinimum`, `minLength`, `pattern`, `items`, `required`, `properties`,
`additionalProperties`, `oneOf`, `anyOf`, `$ref` into `$defs`; annotations are ignored). A keyword it does
not know raises ValueError, so a schema can never ask for a rule this checker silently skips
(tests/reliability/test_r9_hostile_state.py keeps it in agreement with jsonschema). Stricter than JSON Schema
in one point: NaN and infinities are no numbers (JSON cannot hold them). Usage::

    problems(document, schema)   # [] or ["settings.timeout must be a number > 0, got NaN", ...]
"""

from __future__ import annotations

import json
import math
import re

from .bounded import is_number

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples"})
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",
        "pattern",
        "items",
        "required",
        "properties",
        "additionalProperties",
        "oneOf",
        "anyOf",
        "$ref",
    }
)
MAX_PROBLEMS = 20
TYPE_WORDS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
    "object": "an object",
    "array": "a list",
}


def problems(document, schema: dict) -> list[str]:
    """Every way `document` breaks `schema` (at most MAX_PROBLEMS), each one phrase naming the field."""
    found: list[str] = []
    _check(document, schema, schema, "", found)
    return found[:MAX_PROBLEMS]


def _check(value, rule: dict, root: dict, where: str, found: list[str]) -> None:
    unknown = set(rule) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise ValueError(f"schema keyword(s) {sorted(unknown)} are not supported by schema_check")
    if "$ref" in rule:
        _check(value, _resolve(rule["$ref"], root), root, where, found)
    if "type" in rule and not _has_type(value, rule["type"]):
        found.append(f"{_name(where)} must be {_types(rule['type'])}, got {_show(value)}")
        return
    if not _finite(value):
        found.append(f"{_name(where)} must be a finite number, got {_show(value)}")
        return
    if "const" in rule and not _equal(value, rule["const"]):
        found.append(f"{_name(where)} must be {_show(rule['const'])}, got {_show(value)}")
    if "enum" in rule and not any(_equal(value, option) for option in rule["enum"]):
        found.append(f"{_name(where)} must be one of {', '.join(map(_show, rule['enum']))}, got {_show(value)}")
    _check_number(value, rule, where, found)
    _check_string(value, rule, where, found)
    if isinstance(value, list) and "items" in rule:
        for index, item in enumerate(value):
            _check(item, rule["items"], root, f"{where}[{index}]", found)
    if isinstance(value, dict):
        _check_object(value, rule, root, where, found)
    for word, wanted in (("oneOf", lambda n: n == 1), ("anyOf", lambda n: n >= 1)):
        if word in rule:
            matches = sum(1 for option in rule[word] if not _sub_problems(value, option, root))
            if not wanted(matches):
                found.append(f"{_name(where)} does not match the allowed forms, got {_show(value)}")


def _check_number(value, rule: dict, where: str, found: list[str]) -> None:
    if not is_number(value):
        return
    if "minimum" in rule and value < rule["minimum"]:
        found.append(f"{_name(where)} must be >= {rule['minimum']}, got {_show(value)}")
    if "maximum" in rule and value > rule["maximum"]:
        found.append(f"{_name(where)} must be <= {rule['maximum']}, got {_show(value)}")
    if "exclusiveMinimum" in rule and value <= rule["exclusiveMinimum"]:
        found.append(f"{_name(where)} must be > {rule['exclusiveMinimum']}, got {_show(value)}")


def _check_string(value, rule: dict, where: str, found: list[str]) -> None:
    if not isinstance(value, str):
        return
    if "minLength" in rule and len(value) < rule["minLength"]:
        found.append(f"{_name(where)} must not be empty" if rule["minLength"] == 1 else f"{_name(where)} is too short")
    if "pattern" in rule and re.search(rule["pattern"], value) is None:
        found.append(f"{_name(where)} has the wrong form, got {_show(value)}")


def _check_object(value: dict, rule: dict, root: dict, where: str, found: list[str]) -> None:
    for key in rule.get("required", ()):
        if key not in value:
            found.append(f"{_name(_join(where, key))} is missing")
    properties = rule.get("properties", {})
    extra = rule.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            _check(item, properties[key], root, _join(where, key), found)
        elif extra is False:
            found.append(f"{_name(_join(where, key))} is not a known field")
        elif isinstance(extra, dict):
            _check(item, extra, root, _join(where, key), found)


def _sub_problems(value, rule: dict, root: dict) -> list[str]:
    found: list[str] = []
    _check(value, rule, root, "", found)
    return found


def _resolve(ref: str, root: dict) -> dict:
    if not ref.startswith("#/"):
        raise ValueError(f"schema reference {ref!r} is not supported by schema_check (only #/...)")
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _has_type(value, kinds) -> bool:
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    return any(_is(value, kind) for kind in kinds)


def _is(value, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return is_number(value)
    if kind == "integer":
        return is_number(value) and (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    raise ValueError(f"schema type {kind!r} is not supported by schema_check")


def _finite(value) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _equal(left, right) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _types(kinds) -> str:
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    return " or ".join(TYPE_WORDS.get(kind, kind) for kind in kinds)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _name(where: str) -> str:
    return where or "the document"


def _show(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
