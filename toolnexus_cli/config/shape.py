"""The config file's shape, read off the settings' classes (settings.py), which declare
every key once: the validator (file.py) checks a file against it, so no key is accepted
that the settings would not keep.

Each key maps to the type (or types) its value must be, a dict (a table of those keys),
("*", dict) (a table of named tables of those keys), or a kind a field is marked with
that the validator checks by hand (RULES, HOOKS, PRICE)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from .settings import NOT_IN_FILE, Settings


@cache
def file_shape(kind: type = Settings) -> dict[str, Any]:
    """The keys a table of `kind` (a settings class) may hold, in its fields' order."""
    hints = get_type_hints(kind, include_extras=True)  # once a process, about a millisecond
    shape = {}
    for field in dataclasses.fields(kind):
        expected = _expected(hints[field.name])
        if expected != NOT_IN_FILE:
            shape[field.name] = expected
    return shape


def _expected(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin is Annotated:
        return hint.__metadata__[0]
    if _is_table(hint):
        return file_shape(hint)
    if origin is Mapping and _is_table(get_args(hint)[1]):
        return ("*", file_shape(get_args(hint)[1]))
    if origin in (Union, types.UnionType):
        kinds = tuple(
            kind
            for member in get_args(hint)
            if member is not type(None)
            for kind in _as_tuple(_expected(member))
        )
        return kinds[0] if len(kinds) == 1 else kinds
    if hint is float:
        return (int, float)  # TOML's 30 is as good as 30.0
    return {tuple: list, Mapping: dict}.get(origin, hint)


def _as_tuple(expected: Any) -> tuple[Any, ...]:
    return expected if isinstance(expected, tuple) else (expected,)


def _is_table(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)
