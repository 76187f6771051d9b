"""A client's grouped options, in seconds: how long to wait (`Timeouts`) and how to retry a
failed model call (`Retries`).

    create_client(..., timeouts=Timeouts(connect_s=5, idle_s=30, run_s=120),
                  retries=Retries(count=3, base_s=0.5, on_error=hook))

The older single keywords (`retries=<int>`, `retry_base_ms`, `on_error`, `timeout_ms`,
`connect_timeout_s`, `idle_timeout_s`) still work: given, each sets its field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ErrorHook",
    "Retries",
    "Timeouts",
]

# on_error({status, message, attempt, reason, retry_after, error}) -> None | "retry" | "fail"
ErrorHook = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Timeouts:
    """`connect_s`: to connect; `idle_s`: the longest silence while a reply is read;
    `run_s`: the whole run, tools and retries included (None: no limit)."""

    connect_s: float = 10.0
    idle_s: float = 60.0
    run_s: float | None = None


@dataclass(frozen=True)
class Retries:
    """`count` retries of a failed model call, the n-th after about `base_s * 2**(n-1)`
    seconds (or what the server's Retry-After asks); `on_error` may decide each time.
    After an idle timeout, a server that says it is still busy (llama.cpp's /slots) is
    asked again every `busy_poll_s` seconds, and the call is retried once it is free."""

    count: int = 2
    base_s: float = 0.5
    on_error: ErrorHook | None = None
    busy_poll_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.busy_poll_s > 0:
            raise ValueError("Retries.busy_poll_s must be a number of seconds above 0")


def resolve_options(
    timeouts: Timeouts | None,
    retries: Retries | int | None,
    *,
    retry_base_ms: float | None = None,
    on_error: ErrorHook | None = None,
    timeout_ms: float | None = None,
    connect_timeout_s: float | None = None,
    idle_timeout_s: float | None = None,
) -> tuple[Timeouts, Retries]:
    """The grouped options, with each older keyword that was given over its field."""
    timeouts = timeouts if timeouts is not None else Timeouts()
    if isinstance(retries, bool) or not isinstance(retries, Retries | int | None):
        raise TypeError(f"retries must be a Retries or an int, not {type(retries).__name__}")
    if not isinstance(retries, Retries):
        retries = Retries() if retries is None else Retries(count=retries)
    given_timeouts = {
        "connect_s": connect_timeout_s,
        "idle_s": idle_timeout_s,
        "run_s": None if timeout_ms is None else timeout_ms / 1000,
    }
    given_retries = {
        "base_s": None if retry_base_ms is None else retry_base_ms / 1000,
        "on_error": on_error,
    }
    timeout_changes: dict[str, Any] = {k: v for k, v in given_timeouts.items() if v is not None}
    retry_changes: dict[str, Any] = {k: v for k, v in given_retries.items() if v is not None}
    timeouts = dataclasses.replace(timeouts, **timeout_changes)
    retries = dataclasses.replace(retries, **retry_changes)
    return timeouts, retries
