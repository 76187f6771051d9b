"""Callbacks a user hands the library (hooks, approvals, wait_for, on_text) may be plain
functions or async ones: what they return is awaited when it is awaitable."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """`value` itself, or what it gives once awaited."""
    if inspect.isawaitable(value):
        return await value
    return value
