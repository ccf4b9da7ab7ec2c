"""A small validator for the subset of JSON Schema the project's prompts use, and a lenient parser
of model replies.

Supported keywords: type (one or a list), properties, required, additionalProperties (bool or
schema), items, enum, const, minimum, maximum, minItems, maxItems, minLength, maxLength. Annotation
keywords (title, description, default, examples, $schema) are ignored. Any other keyword raises
`SchemaError` up front, so that a schema is never believed to be enforced when it is not.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SUPPORTED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
}
_ANNOTATIONS = {"title", "description", "default", "examples", "$schema"}
_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class SchemaError(ValueError):
    """The schema itself uses something this validator does not implement."""


def check_schema(schema: dict[str, Any], path: str = "$") -> None:
    """Raise SchemaError if `schema` uses keywords or types outside the supported subset."""
    if not isinstance(schema, dict):
        raise SchemaError(f"schema at {path} must be an object, got {type(schema).__name__}")
    unknown = set(schema) - _SUPPORTED - _ANNOTATIONS
    if unknown:
        raise SchemaError(
            f"schema at {path} uses unsupported keyword(s) {sorted(unknown)}; supported: {sorted(_SUPPORTED)}"
        )
    types = schema.get("type")
    for t in [types] if isinstance(types, str) else (types or []):
        if t not in _TYPES:
            raise SchemaError(f"schema at {path} has unknown type {t!r}")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def _type_ok(value: Any, t: str) -> bool:
    # bool is a subclass of int in Python; JSON keeps them apart.
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    return value is None  # "null"


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Return the list of violations of `schema` by `value` (empty when valid), each naming its path."""
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_type_ok(value, t) for t in allowed):
            return [f"{path}: expected {'/'.join(allowed)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: string shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: string longer than {schema['maxLength']}")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(f"{path}: missing required property {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                errors.extend(validate(item, props[name], f"{path}.{name}"))
            elif extra is False:
                errors.append(f"{path}: unexpected property {name!r}")
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, f"{path}.{name}"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors.extend(validate(item, schema["items"], f"{path}[{i}]"))
    return errors


def parse_reply(text: str | None, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """Parse a model reply as JSON and validate it.

    Reasoning blocks (`<think>...</think>`) and Markdown code fences around the JSON are removed first,
    because small models emit them even when asked for bare JSON.

    Returns:
        (value, None) when valid, (None, error message) otherwise.
    """
    if text is None:
        return None, "empty reply"
    body = _THINK.sub("", text)
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        # Fall back to the first JSON object/array in the text (a model that adds a preamble).
        start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
        if start < 0:
            return None, f"reply is not JSON: {text[:80]!r}"
        try:
            value, _ = json.JSONDecoder().raw_decode(body[start:])
        except json.JSONDecodeError as exc:
            return None, f"reply is not JSON ({exc.msg} at char {exc.pos}): {text[:80]!r}"
    errors = validate(value, schema)
    if errors:
        return None, "reply does not match the schema: " + "; ".join(errors[:5])
    return value, None
