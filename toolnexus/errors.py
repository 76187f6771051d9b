"""The exceptions a run can raise. Everything derives from ToolnexusError."""

from __future__ import annotations

from typing import Any, NamedTuple


class ContextOverflow(NamedTuple):
    """What a "the prompt does not fit" error said: tokens sent and the model's window
    (either is None when the provider did not say)."""

    used: int | None
    window: int | None


class ToolnexusError(Exception):
    """Base class of every error the library raises on purpose.

    When a run ends in an error, `.result` is the RunResult as it stood: its transcript
    keeps the user turn and any partial answer, and is valid to send again.
    """

    result: Any = None


class ProviderError(ToolnexusError):
    """The endpoint refused or broke a model call.

    `status` is the HTTP status (None for a connection failure or an error sent inside a
    stream), `provider_message` the endpoint's own words, `hint` what the user can do,
    `context_overflow` a ContextOverflow when the prompt was too long for the model.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        hint: str | None = None,
        retry_after: float | None = None,
        body: Any = None,
        context_overflow: ContextOverflow | None = None,
    ) -> None:
        self.status = status
        self.context_overflow = context_overflow
        self.provider_message = provider_message
        self.hint = hint
        self.retry_after = retry_after
        self.body = body
        super().__init__(f"{message} ({hint})" if hint else message)


class IdleTimeout(ProviderError):
    """The endpoint sent nothing for `seconds` (the idle timeout) while a reply was awaited."""

    def __init__(self, message: str, *, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class RunCancelled(ToolnexusError):
    """The caller's cancel event fired. `.result` holds the transcript as it stood."""

    def __init__(self, message: str = "run cancelled", result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class RunTimeout(ToolnexusError):
    """The whole-run deadline passed. `.result` holds the transcript as it stood;
    `.seconds` what the deadline allowed."""

    def __init__(
        self, message: str = "run timed out", result: Any = None, seconds: float | None = None
    ) -> None:
        super().__init__(message)
        self.result = result
        self.seconds = seconds


def http_error(
    status: int,
    provider_message: str | None,
    *,
    url: str,
    model: str,
    key_env: str,
    key_sent: bool,
    body: Any = None,
    context_overflow: ContextOverflow | None = None,
) -> ProviderError:
    """A ProviderError for an HTTP failure, with a hint at what the user can change."""
    said = f": {provider_message}" if provider_message else ""
    hint = None
    if status in (401, 403):
        hint = (
            f"no API key was sent: set {key_env} or pass api_key="
            if not key_sent
            else f"check the API key (from api_key= or {key_env}) and that it may use {model!r}"
        )
    elif status == 404:
        hint = f"check the model name {model!r} and the base URL ({url})"
    elif status == 413 or context_overflow is not None:
        used, window = context_overflow or (None, None)
        size = f" ({used:,} tokens; its window is {window:,})" if used and window else ""
        hint = f"the conversation is too long for the model{size}: start a new thread or send less"
    elif status == 429:
        hint = "rate limited: wait a moment and try again"
    return ProviderError(
        f"HTTP {status} from the endpoint{said}",
        status=status,
        provider_message=provider_message,
        hint=hint,
        body=body,
        context_overflow=context_overflow,
    )
