"""Structured output: the schema a reply must follow, made strict, and checked on arrival.

The validator covers the JSON Schema subset structured output uses: type (a name or a list of
names, "null" among them for nullable), properties, required, additionalProperties, items,
enum and anyOf. Other keywords are left to the endpoint.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ._bounded_json import TooDeep, loads_bounded, object_or_empty
from .errors import ProviderError, ToolnexusError

__all__ = [
    "OutputSchema",
    "check",
    "multi",
    "parse_short_schema",
    "strict",
]

DEFAULT_NAME = "response"
_NAME = r"[a-zA-Z0-9_-]{1,64}"  # compiled when a schema is first read (re keeps it)
_SHORT_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array", "items": {"type": "string"}},
}
_FIELD = r"(?P<name>[A-Za-z_][\w-]*)(?:\s+(?P<type>\w+))?"


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """A user's schema, normalised for strict mode, and the name the endpoint knows it by."""

    name: str
    schema: dict[str, Any]

    @classmethod
    def of(cls, schema: dict[str, Any]) -> OutputSchema:
        if not isinstance(schema, dict):
            raise ToolnexusError(f"a schema must be a JSON object, not {_kind(schema)}")
        if "object" not in _types(schema) and "properties" not in schema:
            raise ToolnexusError(
                "a schema must describe an object at its root (structured "
                "output needs one): wrap a list with multi()"
            )
        title = schema.get("title")
        name = title if isinstance(title, str) and re.fullmatch(_NAME, title) else DEFAULT_NAME
        return cls(name, strict(schema))

    def read(self, text: str) -> Any:
        """The reply's JSON, checked against the schema; ProviderError when it does not fit."""
        try:
            data = loads_bounded(text)
        except TooDeep as exc:
            raise ProviderError(f"the reply is {exc}") from None
        except ValueError:
            raise ProviderError(
                f"the reply is not the JSON the schema asks for: {text[:200]!r}"
            ) from None
        problem = check(data, self.schema)
        if problem:
            raise ProviderError(f"the reply does not match the schema: {problem}")
        return data


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as strict mode wants it: every object closed (additionalProperties false)
    with all its properties required; a property that was optional may now be null."""
    out = dict(schema)
    if "object" in _types(out) or "properties" in out:
        given, required = out.get("properties") or {}, out.get("required") or []
        if not isinstance(given, dict):
            raise ToolnexusError(
                f'a schema\'s "properties" must be an object (name -> schema), not {_kind(given)}'
            )
        if not isinstance(required, list | tuple) or not all(isinstance(k, str) for k in required):
            raise ToolnexusError(
                f'a schema\'s "required" must be a list of property names, '
                f"not {json.dumps(required, default=str)[:60]}"
            )
        properties = {}
        for key, sub in given.items():
            sub = strict(sub) if isinstance(sub, dict) else {}
            properties[key] = sub if key in required else _nullable(sub)
        out["properties"] = properties
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if isinstance(out.get("items"), dict):
        out["items"] = strict(out["items"])
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [strict(s) if isinstance(s, dict) else s for s in out["anyOf"]]
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    types = _types(schema)
    if not types:
        return {"anyOf": [schema, {"type": "null"}]} if schema else schema
    if "null" in types:
        return schema
    out = {**schema, "type": [*types, "null"]}
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def check(value: Any, schema: dict[str, Any], path: str = "$") -> str | None:
    """What is wrong with `value` under `schema`, as "<path>: <problem>"; None if nothing."""
    types = _types(schema)
    if types and not any(_is(value, t) for t in types):
        return f"{path}: expected {' or '.join(types)}, got {_kind(value)}"
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        return f"{path}: {json.dumps(value)[:60]} is not one of {choices}"
    if isinstance(schema.get("anyOf"), list):
        problems = [check(value, s, path) for s in schema["anyOf"] if isinstance(s, dict)]
        if problems and all(problems):
            return problems[0]
    if isinstance(value, dict):
        return _check_object(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = check(item, schema["items"], f"{path}[{index}]")
            if problem:
                return problem
    return None


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str) -> str | None:
    properties = object_or_empty(schema.get("properties"))
    for key in schema.get("required") or ():
        if key not in value:
            return f"{path}: missing required property {key!r}"
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{key}"
        if key in properties and isinstance(properties[key], dict):
            problem = check(item, properties[key], where)
        elif extra is False:
            problem = f"{where}: not a property the schema allows"
        elif isinstance(extra, dict):
            problem = check(item, extra, where)
        else:
            problem = None
        if problem:
            return problem
    return None


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return [t for t in kind if isinstance(t, str)] if isinstance(kind, list) else []


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python = {
        "string": str,
        "boolean": bool,
        "object": dict,
        "array": list,
        "null": type(None),
    }.get(kind)
    return python is not None and isinstance(value, python)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(
        type(value), type(value).__name__
    )


# ----------------------------------------------------------------------------- helpers


def parse_short_schema(text: str) -> dict[str, Any]:
    """The short form 'name, age int, tags list: a few words' as a JSON schema.

    Fields are separated by commas, or by newlines when there are any (then a description
    may hold commas). Each is a name, an optional type (str, the default; int, float, bool,
    list of strings) and an optional `: description`. Every field is required.
    """
    separator = "\n" if "\n" in text.strip() else ","
    properties: dict[str, Any] = {}
    for field in (f.strip() for f in text.split(separator)):
        if not field:
            continue
        head, colon, description = field.partition(":")
        match = re.fullmatch(_FIELD, head.strip())
        if match is None:
            raise ToolnexusError(
                f"cannot read the schema field {field!r}: write 'name [type][: description]'"
            )
        kind = match["type"] or "str"
        if kind not in _SHORT_TYPES:
            raise ToolnexusError(
                f"unknown type {kind!r} in the schema field {field!r}: use "
                f"one of {', '.join(_SHORT_TYPES)}"
            )
        prop = dict(_SHORT_TYPES[kind])
        if colon and description.strip():
            prop["description"] = description.strip()
        properties[match["name"]] = prop
    if not properties:
        raise ToolnexusError("the schema names no fields")
    return {"type": "object", "properties": properties, "required": list(properties)}


def multi(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema for a list of `schema` objects, under "items" (strict mode wants an object
    at the root): the reply's data is then {"items": [...]}."""
    return {
        "type": "object",
        "properties": {"items": {"type": "array", "items": schema}},
        "required": ["items"],
    }
