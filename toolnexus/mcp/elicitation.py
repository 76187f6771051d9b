"""Elicitation: a server asks the person for input, as a form (a flat JSON schema of
strings, numbers, booleans and choices) or as a URL to visit. The form's fields are read
here; showing them is the host's (see requests.py)."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ..visible import visible
from .requests import ServerRequests

log = logging.getLogger("toolnexus.mcp")

ACTIONS = ("accept", "decline", "cancel")
TEXT_LIMIT = 2000  # of a message or a field's text, as shown


@dataclass
class FormField:
    """One field of a form: `kind` is "string", "number", "integer" or "boolean";
    `choices` the allowed values of an enum."""

    name: str
    title: str
    kind: str
    required: bool
    description: str = ""
    default: Any = None
    choices: tuple[str, ...] = ()


def form_fields(schema: Any) -> list[FormField]:
    """The fields of a requested schema, in its order; properties of other kinds (which
    the protocol does not allow) are left out."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    listed = schema.get("required")
    required = listed if isinstance(listed, list) else []
    fields = []
    for name, prop in schema["properties"].items():
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type")
        choices = _choices(prop)
        if kind not in ("string", "number", "integer", "boolean") and not choices:
            continue
        fields.append(
            FormField(
                name=_shown(name, 80),
                title=_shown(prop.get("title") or name, 80),
                kind=str(kind or "string"),
                required=name in required,
                description=_shown(prop.get("description") or "", TEXT_LIMIT),
                default=prop.get("default"),
                choices=choices,
            )
        )
    return fields


def field_value(field: FormField, text: str) -> Any:
    """What `text`, as typed, means for `field`; ValueError (one line) if it cannot."""
    text = text.strip()
    if field.choices:
        if text in field.choices:
            return text
        raise ValueError(f"{field.title}: choose one of {', '.join(field.choices)}")
    if field.kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError(f"{field.title}: answer yes or no")
    if field.kind in ("number", "integer"):
        try:
            return int(text) if field.kind == "integer" else float(text)
        except ValueError:
            wanted = "an integer" if field.kind == "integer" else "a number"
            raise ValueError(f"{field.title}: {wanted} is needed") from None
    return text


def describe(request: dict[str, Any]) -> str:
    """The request's message, made visible and cut to a readable length."""
    return _shown(request.get("message") or "", TEXT_LIMIT)


async def answer_elicitation(
    requests: ServerRequests, server: str, sdk: SimpleNamespace, params: Any
) -> Any:
    """An elicitation request answered by `requests.elicit` (declined without one, or
    when it fails)."""
    request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    reply: dict[str, Any] = {"action": "decline"}
    if requests.elicit is not None:
        try:
            reply = await requests.elicit(server, request)
        except Exception as exc:
            log.warning("elicitation from %s not answered: %s", server, exc)
    if reply.get("action") not in ACTIONS:
        reply = {"action": "decline"}
    if reply["action"] != "accept":
        reply = {"action": reply["action"]}
    with contextlib.suppress(Exception):
        return sdk.types.ElicitResult.model_validate(reply)
    return sdk.types.ElicitResult(action="decline")


def _choices(prop: dict[str, Any]) -> tuple[str, ...]:
    values = prop.get("enum")
    if not isinstance(values, list):
        values = [
            option.get("const") for option in prop.get("oneOf") or [] if isinstance(option, dict)
        ]
    # a value is sent back as it is, so one that would not show as it is is left out
    return tuple(
        value
        for value in values
        if isinstance(value, str) and len(value) <= 80 and visible(value) == value
    )


def _shown(value: Any, limit: int) -> str:
    return visible(str(value))[:limit]
