"""The exceptions a run can raise. Everything derives from ToolnexusError."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .types import RunResult

__all__ = [
    "AuthFailed",
    "ContextOverflow",
    "ContextSize",
    "IdleTimeout",
    "Overloaded",
    "ProviderError",
    "RateLimited",
    "RunCancelled",
    "RunTimeout",
    "ServerError",
    "ToolnexusError",
]


@dataclass(frozen=True, slots=True)
class ContextSize:
    """What a "the prompt does not fit" error said: tokens sent and the model's window
    (either is None when the provider did not say)."""

    used: int | None
    window: int | None


class ToolnexusError(Exception):
    """Base class of every error the library raises on purpose.

    When a run ends in an error, `.result` is the RunResult as it stood: its transcript
    keeps the user turn and any partial answer, and is valid to send again. `kind` names
    the error in one word, for programs (a subclass has its own).
    """

    result: Any = None
    kind: ClassVar[str] = "error"


class ProviderError(ToolnexusError):
    """The endpoint refused or broke a model call.

    `status` is the HTTP status (None for a connection failure; an error sent inside a
    stream has the status its type stands for, when it says one), `provider_message` the
    endpoint's own words, `hint` what the user can do, `context_overflow` a ContextSize
    when the prompt was too long for the model. A subclass says what kind of failure it
    is (`provider_error` picks it); `kind` names it in one word for programs.
    """

    kind = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        hint: str | None = None,
        retry_after: float | None = None,
        body: Any = None,
        context_overflow: ContextSize | None = None,
    ) -> None:
        self.status = status
        self.context_overflow = context_overflow
        self.provider_message = provider_message
        self.hint = hint
        self.retry_after = retry_after
        self.body = body
        super().__init__(f"{message} ({hint})" if hint else message)


class RateLimited(ProviderError):
    """HTTP 429: too many requests or tokens for now; `retry_after` when the server said."""

    kind = "rate_limited"


class AuthFailed(ProviderError):
    """HTTP 401 or 403: the key is missing, wrong, or may not use the model."""

    kind = "auth_failed"


class ServerError(ProviderError):
    """HTTP 5xx: the endpoint (or a proxy or CDN in front of it) failed."""

    kind = "server_error"


class Overloaded(ServerError):
    """HTTP 503 or 529: the endpoint is too busy now."""

    kind = "overloaded"


class ContextOverflow(ProviderError):
    """The prompt does not fit the model's context window: `used` tokens were sent
    (None when not said) and the window is `window` tokens (None when not said)."""

    kind = "context_overflow"

    @property
    def used(self) -> int | None:
        return self.context_overflow.used if self.context_overflow is not None else None

    @property
    def window(self) -> int | None:
        return self.context_overflow.window if self.context_overflow is not None else None


class IdleTimeout(ProviderError):
    """The endpoint sent nothing for `seconds` (the idle timeout) while a reply was awaited."""

    kind = "idle_timeout"

    def __init__(self, message: str, *, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class RunCancelled(ToolnexusError):
    """The caller's cancel event fired. `.result` holds the transcript as it stood."""

    kind = "cancelled"

    result: RunResult | None

    def __init__(self, message: str = "run cancelled", result: RunResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class RunTimeout(ToolnexusError):
    """The whole-run deadline passed. `.result` holds the transcript as it stood;
    `.seconds` what the deadline allowed."""

    kind = "timeout"

    result: RunResult | None

    def __init__(
        self,
        message: str = "run timed out",
        result: RunResult | None = None,
        seconds: float | None = None,
    ) -> None:
        super().__init__(message)
        self.result = result
        self.seconds = seconds


def error_class(status: int | None, context_overflow: ContextSize | None) -> type[ProviderError]:
    """The ProviderError subclass for a failure of this status (None: unknown)."""
    if context_overflow is not None:
        return ContextOverflow
    if status in (401, 403):
        return AuthFailed
    if status == 429:
        return RateLimited
    if status in (503, 529):
        return Overloaded
    if status is not None and 500 <= status < 600:
        return ServerError
    return ProviderError


def provider_error(
    message: str,
    *,
    status: int | None = None,
    provider_message: str | None = None,
    hint: str | None = None,
    retry_after: float | None = None,
    body: Any = None,
    context_overflow: ContextSize | None = None,
) -> ProviderError:
    """A ProviderError of the class its status and overflow say."""
    return error_class(status, context_overflow)(
        message,
        status=status,
        provider_message=provider_message,
        hint=hint,
        retry_after=retry_after,
        body=body,
        context_overflow=context_overflow,
    )


def http_error(
    status: int,
    provider_message: str | None,
    *,
    url: str,
    model: str,
    key_env: str,
    key_sent: bool,
    body: Any = None,
    context_overflow: ContextSize | None = None,
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
        used, window = (
            (context_overflow.used, context_overflow.window) if context_overflow else (None, None)
        )
        size = f" ({used:,} tokens; its window is {window:,})" if used and window else ""
        hint = f"the conversation is too long for the model{size}: start a new thread or send less"
    elif status == 429:
        hint = "rate limited: wait a moment and try again"
    return provider_error(
        f"HTTP {status} from the endpoint{said}",
        status=status,
        provider_message=provider_message,
        hint=hint,
        body=body,
        context_overflow=context_overflow,
    )
