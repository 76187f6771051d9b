"""JSON from outside (an endpoint, a model's tool arguments, a user's file), parsed with a
bound on how deeply it nests.

Python's parser meets `[[[[...` with a RecursionError, which no `except ValueError` catches;
and a document just under the interpreter's recursion limit parses, then breaks whatever
walks it next (printing, saving, checking it against a schema). Here a document nested
deeper than MAX_DEPTH is a `TooDeep`, a ValueError, so every caller's handling of bad JSON
covers it too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 128  # arrays and objects inside each other; real documents stay far below


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def loads_bounded(data: str | bytes) -> Any:
    """`json.loads(data)`; TooDeep when arrays and objects nest more than MAX_DEPTH deep."""
    try:
        value = _loads(data)
    except RecursionError:
        raise TooDeep() from None
    # Nesting needs brackets, and in valid JSON each one opened is closed: a document of at
    # most 2 * MAX_DEPTH characters cannot nest too deep (a stream event of a normal reply),
    # nor can one with too few brackets. Those are not walked at all.
    if len(data) > 2 * MAX_DEPTH and _brackets(data) > MAX_DEPTH:
        if _deeper_than(value, MAX_DEPTH):
            raise TooDeep()
    return value


# json's scanner (C; an attribute its decoder sets): the value at a position, and its end
_scan: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def _loads(data: str | bytes) -> Any:
    """`json.loads(data)`. A str that is one JSON document and nothing else (every stream
    event, in practice) goes straight to the scanner: json.loads's checks for a BOM and for
    whitespace around it cost a third of parsing a short event; anything else, and every
    error, is json.loads's own."""
    if isinstance(data, str):
        try:
            value, end = _scan(data, 0)
        except (StopIteration, ValueError):
            return json.loads(data)
        if end == len(data):
            return value
    return json.loads(data)


def _brackets(data: str | bytes) -> int:
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest more than `limit` deep in `value` (walked without
    recursion)."""
    pending = [(value, 1)] if isinstance(value, list | dict) else []
    while pending:
        container, depth = pending.pop()
        if depth > limit:
            return True
        items = container.values() if isinstance(container, dict) else container
        pending.extend((item, depth + 1) for item in items if isinstance(item, list | dict))
    return False


def object_or_empty(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: for an optional object in data
    from outside, read with `.get` whatever it turns out to be."""
    return value if isinstance(value, dict) else {}
