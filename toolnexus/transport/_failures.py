"""A failed exchange as the run sees it: a failure below HTTP (TLS refused, no connection,
the server gone quiet, the connection broken) or an HTTP error answer, each a ProviderError
that says what happened, wrapped in Retryable when another try may succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._bounded_json import loads_bounded
from ..errors import IdleTimeout, ProviderError
from ._retries import Retryable, parse_retry_after, retry_wanted

if TYPE_CHECKING:
    from ._direct import HttpResponse


ERROR_BODY_LIMIT = 64 * 1024


def transport_failure(exc: Exception, url: str, idle_s: float) -> Exception:
    """What a failure below HTTP means for the run; all but TLS refusals and bad
    requests are retried (a stream that already gave output is never retried, see
    `send`)."""
    import httpx2

    if not isinstance(exc, (httpx2.HTTPError, httpx2.InvalidURL)):
        return exc
    said = describe(exc)
    refusal = tls_refusal(exc)
    if refusal is not None:
        return ProviderError(
            f"TLS with {url} failed: {refusal} (check the base URL, or "
            "SSL_CERT_FILE / SSL_CERT_DIR for a private CA)"
        )
    if isinstance(exc, httpx2.ReadTimeout):
        idle = idle_s
        error: ProviderError = IdleTimeout(
            f"{url} sent nothing for {idle:g} s (idle timeout)", seconds=idle
        )
        return Retryable(error, f"the server sent nothing for {idle:g} s")
    if isinstance(
        exc, (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout, httpx2.ProxyError)
    ):
        error = ProviderError(f"could not connect to {url}: {said}")
        return Retryable(error, f"connection failed: {said}")
    if isinstance(exc, (httpx2.UnsupportedProtocol, httpx2.LocalProtocolError, httpx2.InvalidURL)):
        return ProviderError(f"cannot send the request to {url}: {said}")
    error = ProviderError(f"the connection to {url} broke: {said}")
    return Retryable(error, "connection dropped")


async def http_failure(
    response: HttpResponse, describe_error: Callable[[int, str | None], ProviderError]
) -> Exception:
    parts, size = [], 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size > ERROR_BODY_LIMIT:
            break
    raw = b"".join(parts)[:ERROR_BODY_LIMIT]
    status = response.status_code
    data: Any
    try:
        data = loads_bounded(raw)
    except ValueError:
        data = raw.decode("utf-8", "replace").strip() or None
    error = describe_error(status, data)
    if not retry_wanted(status, response.headers):
        return error
    reason = "rate limited" if status == 429 else f"the server answered {status}"
    error.retry_after = parse_retry_after(response.headers)
    return Retryable(error, reason, error.retry_after)


def tls_refusal(exc: BaseException) -> str | None:
    """Why TLS refused the connection, when an ssl error is behind `exc`."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain: httpx2 -> httpcore2 -> ssl
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"the certificate was refused: {seen.verify_message or seen}"
        if isinstance(seen, ssl.SSLError):
            return describe(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
