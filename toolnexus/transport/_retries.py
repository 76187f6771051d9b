"""When and how soon a failed model call is tried again: which answers are worth another
try (the status, or the server's `x-should-retry`), the wait a server asks for
(`retry-after-ms`, `Retry-After`), backoff with jitter, the caller's `on_error`, and an
error sent inside a stream before any output.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._control import RunControl
from ..errors import ProviderError, provider_error
from ..options import Retries
from ._replies import StreamError

if TYPE_CHECKING:
    pass


def retryable_status(status: int | None) -> bool:
    """Whether a failure of this status is worth another try, as the official SDKs judge it
    (openai-python's and anthropic-sdk-python's `_should_retry`): a request timeout (408),
    a lock timeout (409), a rate limit (429) and every server error (5xx, a CDN's 52x
    page included)."""
    return status is not None and (status in (408, 409, 429) or 500 <= status < 600)


MAX_RETRY_AFTER_S = 60.0


MAX_BUSY_WAIT_S = 600.0  # then the call is retried anyway


class Retryable(Exception):
    def __init__(self, error: ProviderError, reason: str, delay: float | None = None) -> None:
        self.error = error
        self.reason = reason
        self.delay = delay  # what the server asked for, if it did


@dataclass(frozen=True, slots=True)
class LoadCheck:
    """Where a server says how busy it is (a GET of JSON), and how to read why it cannot
    take a request now (None: it can, or it does not say)."""

    url: str
    read: Callable[[Any], str | None]


def retry_wanted(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed request is worth sending again: as the server says in
    `x-should-retry` ("true" or "false", as the official SDKs obey it), else by its status."""
    said = headers.get("x-should-retry", "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    return retryable_status(status)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds: `retry-after-ms`, or `Retry-After` in its
    delay-seconds form. An HTTP-date or anything unparseable gives None (use backoff)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / scale
        except ValueError:
            continue
        if seconds >= 0 and seconds == seconds and seconds != float("inf"):
            return seconds
    return None


def output_begins(
    events: list[tuple[str, str]], stream_error: StreamError, preamble: frozenset[str]
) -> bool:
    """Whether these events carry output; raises Retryable for a retryable error that
    comes before any."""
    for event, data in events:
        error = stream_error(event, data)
        if error is not None:
            if retryable_status(error.status):
                reason = (
                    "rate limited"
                    if error.status == 429
                    else (f"the server reported {error.provider_message or error.status}")
                )
                raise Retryable(error, reason)
            return True  # not retryable: the stream's own reading raises it
        if event not in preamble:
            return True
    return False


async def retry_delay(
    retries: Retries, failure: Retryable, attempt: int, control: RunControl
) -> float:
    """How long to wait before retry number `attempt`, or raise the error to give up."""
    error = failure.error
    decision = "retry" if attempt <= retries.count else "fail"
    if retries.on_error is not None and attempt <= retries.count:
        info = {
            "status": error.status,
            "message": str(error),
            "attempt": attempt,
            "reason": failure.reason,
            "retry_after": failure.delay,
            "error": error,
        }
        outcome = retries.on_error(info)
        if inspect.isawaitable(outcome):
            outcome = await control.race(outcome)
        decision = outcome or decision
    if failure.delay is not None:
        remaining = control.remaining()
        if failure.delay > MAX_RETRY_AFTER_S or (
            remaining is not None and failure.delay > remaining
        ):
            # Say how long the server asked for, whether or not retries were left:
            # "wait an hour" is what the user needs to know.
            raise provider_error(
                f"{error} - the server asked to wait {failure.delay:g} s before retrying,"
                " longer than this run can wait",
                status=error.status,
                provider_message=error.provider_message,
                retry_after=failure.delay,
                body=error.body,
            ) from None
    if decision != "retry":
        raise error
    if failure.delay is not None:
        return failure.delay
    backoff = retries.base_s * 2.0 ** (attempt - 1)
    return backoff * (0.5 + random.random() / 2)
