"""The JSON-Schema subset validator and the lenient reply parser (table-driven)."""

from __future__ import annotations

import pytest

from earlydx.llm.jsonschema_lite import SchemaError, check_schema, parse_reply, validate

DX_SCHEMA = {
    "type": "object",
    "properties": {
        "diagnoses": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "label": {"enum": ["supported", "partial", "unsupported"]},
        "n": {"type": "integer"},
    },
    "required": ["diagnoses"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ({"diagnoses": ["sepsis"]}, []),
        ({"diagnoses": ["sepsis"], "confidence": 0.5, "label": "partial", "n": 3}, []),
        ({}, ["missing required property 'diagnoses'"]),
        ({"diagnoses": []}, ["fewer than 1 items"]),
        ({"diagnoses": [1]}, ["$.diagnoses[0]: expected string"]),
        ({"diagnoses": ["a"], "confidence": 1.5}, ["> maximum 1"]),
        ({"diagnoses": ["a"], "confidence": -0.1}, ["< minimum 0"]),
        ({"diagnoses": ["a"], "label": "maybe"}, ["'maybe' is not one of"]),
        ({"diagnoses": ["a"], "n": True}, ["$.n: expected integer, got bool"]),
        ({"diagnoses": ["a"], "n": 1.5}, ["expected integer"]),
        ({"diagnoses": ["a"], "extra": 1}, ["unexpected property 'extra'"]),
        (["diagnoses"], ["$: expected object, got list"]),
    ],
)
def test_validate(value, errors):
    found = validate(value, DX_SCHEMA)
    assert len(found) == len(errors), found
    for want, got in zip(errors, found, strict=True):
        assert want in got


@pytest.mark.parametrize(
    ("schema", "value", "ok"),
    [
        ({"type": ["string", "null"]}, None, True),
        ({"type": ["string", "null"]}, 3, False),
        ({"type": "number"}, 3, True),
        ({"type": "boolean"}, 0, False),
        ({"type": "string", "maxLength": 3}, "abcd", False),
        ({"const": "x"}, "x", True),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1, "b": "2"}, False),
    ],
)
def test_validate_types(schema, value, ok):
    assert (validate(value, schema) == []) is ok


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "tuple"},
        {"type": "array", "items": {"oneOf": []}},
    ],
)
def test_unsupported_schema_is_refused(schema):
    with pytest.raises(SchemaError):
        check_schema(schema)


def test_check_schema_accepts_annotations():
    check_schema({"title": "t", "description": "d", **DX_SCHEMA})


@pytest.mark.parametrize(
    ("text", "parsed", "error"),
    [
        ('{"diagnoses": ["sepsis"]}', {"diagnoses": ["sepsis"]}, None),
        ('```json\n{"diagnoses": ["sepsis"]}\n```', {"diagnoses": ["sepsis"]}, None),
        ('<think>\nhmm\n</think>\n{"diagnoses": ["a"]}', {"diagnoses": ["a"]}, None),
        ('Here you go: {"diagnoses": ["a"]} done', {"diagnoses": ["a"]}, None),
        ("no json at all", None, "not JSON"),
        ('{"diagnoses": ', None, "not JSON"),
        ('{"diagnoses": []}', None, "does not match the schema"),
        (None, None, "empty reply"),
    ],
)
def test_parse_reply(text, parsed, error):
    value, err = parse_reply(text, DX_SCHEMA)
    assert value == parsed
    if error is None:
        assert err is None
    else:
        assert error in err
