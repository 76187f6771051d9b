"""Elicitation: a server asks the person for input, as a form (a flat JSON schema of
strings, numbers, booleans, choices and multi-selects, as the protocol restricts it) or as
a URL to visit. The form's fields are read here, and what is typed for each is checked
against its limits; showing them is the host's (see requests.py)."""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from .._visible import visible
from .requests import ServerRequests

__all__ = [
    "FormField",
    "answer_elicitation",
    "describe",
    "field_hint",
    "field_value",
    "form_fields",
    "shown_default",
]

log = logging.getLogger("toolnexus.mcp")

ACTIONS = ("accept", "decline", "cancel")
TEXT_LIMIT = 2000  # of a message or a field's text, as shown


FORMATS = {  # a string field's `format`: what the person is told to type
    "email": "an email address",
    "uri": "a URI (https://...)",
    "date": "a date (YYYY-MM-DD)",
    "date-time": "a date and time (YYYY-MM-DDTHH:MM:SSZ)",
}
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
YES, NO = ("y", "yes", "true", "1"), ("n", "no", "false", "0")


@dataclass
class FormField:
    """One field of a form: `kind` is "string", "number", "integer" or "boolean" (a
    choice or a multi-select is a "string" or an "array" with `choices`, the values sent,
    and `titles`, the words shown for them); the rest are the schema's limits."""

    name: str
    title: str
    kind: str
    required: bool
    description: str = ""
    default: Any = None
    choices: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def multiple(self) -> bool:
        return self.kind == "array"


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
        kind = prop.get("type") or "string"
        choices, titles = _choices(prop.get("items") if kind == "array" else prop)
        if kind not in ("string", "number", "integer", "boolean", "array"):
            continue
        if kind == "array" and not choices:
            continue
        fields.append(
            FormField(
                name=_shown(name, 80),
                title=_shown(prop.get("title") or name, 80),
                kind=str(kind),
                required=name in required,
                description=_shown(prop.get("description") or "", TEXT_LIMIT),
                default=prop.get("default"),
                choices=choices,
                titles=titles,
                format=prop.get("format") if prop.get("format") in FORMATS else None,
                min_length=_count(prop.get("minLength")),
                max_length=_count(prop.get("maxLength")),
                minimum=_number(prop.get("minimum")),
                maximum=_number(prop.get("maximum")),
                min_items=_count(prop.get("minItems")),
                max_items=_count(prop.get("maxItems")),
            )
        )
    return fields


def field_value(field: FormField, text: str) -> Any:
    """What `text`, as typed, means for `field`, checked against the field's limits;
    ValueError (one line, naming the field) if it cannot be sent."""
    text = text.strip()
    try:
        if field.multiple:
            return _picked(field, [part for part in text.split(",") if part.strip()])
        if field.choices:
            return _chosen(field, text)
        if field.kind == "boolean":
            if text.lower() in YES or text.lower() in NO:
                return text.lower() in YES
            raise ValueError("answer yes or no")
        if field.kind in ("number", "integer"):
            return _in_range(field, _parsed_number(field.kind, text))
        return _checked_text(field, text)
    except ValueError as exc:
        raise ValueError(f"{field.title}: {exc}") from None


def shown_default(field: FormField) -> str:
    """The field's default as the person would type it ("" for none)."""
    value = field.default
    if value is None:
        return ""
    if field.kind == "boolean" and isinstance(value, bool):
        return "yes" if value else "no"
    if field.multiple and isinstance(value, list):
        return ", ".join(_title_of(field, str(v)) for v in value)
    return _title_of(field, _shown(value, TEXT_LIMIT))


def field_hint(field: FormField) -> str:
    """What the field takes, in words: its kind, its choices (their titles) and limits."""
    if field.multiple:
        wanted = _between(field.min_items, field.max_items, "of")
        return f"{wanted or 'any of'}: {', '.join(field.titles)} (separated by commas)"
    if field.choices:
        return "one of: " + " | ".join(field.titles)
    if field.kind == "boolean":
        return "yes or no"
    if field.kind in ("number", "integer"):
        kind = "a whole number" if field.kind == "integer" else "a number"
        return kind + _range(field.minimum, field.maximum)
    kind = FORMATS.get(field.format or "", "text")
    length = _between(field.min_length, field.max_length, "")
    return f"{kind}{f', {length.strip()} characters' if length else ''}"


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


def _choices(prop: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The values a choice allows and the titles shown for them: `enum` (titled by
    `enumNames`, the older way), or `oneOf` (a single choice) or `anyOf` (the items of a
    multi-select) of `const` and `title`."""
    if not isinstance(prop, dict):
        return (), ()
    options = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        names = names if isinstance(names, list) and len(names) == len(prop["enum"]) else []
        pairs = [(v, names[i] if names else v) for i, v in enumerate(prop["enum"])]
    elif isinstance(options, list):
        pairs = [
            (o.get("const"), o.get("title") or o.get("const"))
            for o in options
            if isinstance(o, dict)
        ]
    else:
        return (), ()
    # a value is sent back as it is, so one that would not show as it is is left out
    kept = [
        (value, _shown(title, 80))
        for value, title in pairs
        if isinstance(value, str) and len(value) <= 80 and visible(value) == value
    ]
    return tuple(v for v, _ in kept), tuple(t for _, t in kept)


def _title_of(field: FormField, value: str) -> str:
    return field.titles[field.choices.index(value)] if value in field.choices else value


def _chosen(field: FormField, text: str) -> str:
    """The value of the choice typed: its title or its value, in any case."""
    for value, title in zip(field.choices, field.titles, strict=True):
        if text.casefold() in (value.casefold(), title.casefold()):
            return value
    raise ValueError("choose one of " + ", ".join(field.titles))


def _picked(field: FormField, parts: list[str]) -> list[str]:
    picked: list[str] = []
    for part in parts:
        value = _chosen(field, part.strip())
        if value not in picked:
            picked.append(value)
    low, high = field.min_items, field.max_items
    if (low is not None and len(picked) < low) or (high is not None and len(picked) > high):
        raise ValueError(f"choose {_between(low, high, 'of')}: {', '.join(field.titles)}")
    return picked


def _parsed_number(kind: str, text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        if kind == "integer":
            raise ValueError("a whole number is needed") from None
    try:
        number = float(text)
    except ValueError:
        raise ValueError("a number is needed") from None
    if not math.isfinite(number):
        raise ValueError("a number is needed")
    return number


def _in_range(field: FormField, number: int | float) -> int | float:
    low, high = field.minimum, field.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        raise ValueError(f"{_number_text(number)} is not{_range(low, high)}")
    return number


def _checked_text(field: FormField, text: str) -> str:
    low, high = field.min_length, field.max_length
    if (low is not None and len(text) < low) or (high is not None and len(text) > high):
        raise ValueError(f"{_between(low, high, '').strip()} characters are needed")
    if field.format is not None and not _well_formed(field.format, text):
        raise ValueError(f"{FORMATS[field.format]} is needed")
    return text


def _well_formed(form: str, text: str) -> bool:
    if form == "email":
        return _EMAIL.fullmatch(text) is not None
    if form == "uri":
        return _URI.fullmatch(text) is not None
    pattern = _DATE if form == "date" else _DATE_TIME
    if pattern.fullmatch(text) is None:
        return False
    try:  # the calendar's say: no 31 February
        if form == "date":
            datetime.date.fromisoformat(text)
        else:
            datetime.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _between(low: int | None, high: int | None, of: str) -> str:
    """ "2 to 4 of", "at least 1 of", "at most 3 of" ("" with neither)."""
    if low is not None and low == high:
        return f"{low} {of}".rstrip()
    if low is not None and high is not None:
        return f"{low} to {high} {of}".rstrip()
    if low is not None:
        return f"at least {low} {of}".rstrip()
    if high is not None:
        return f"at most {high} {of}".rstrip()
    return ""


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {_number_text(low)} to {_number_text(high)}"
    if low is not None:
        return f" of at least {_number_text(low)}"
    if high is not None:
        return f" of at most {_number_text(high)}"
    return ""


def _number_text(number: int | float) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _shown(value: Any, limit: int) -> str:
    return visible(str(value))[:limit]
