"""The HTTP exchange with a model endpoint: retries, Retry-After, timeouts, cancellation.

A producer task reads the response into a bounded channel; the run consumes it. That way
a cancel or a deadline can abandon the read at once (the connection is closed) without
cancelling the caller's own task, and a fast server cannot outrun a slow consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import random
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

# httpx imports its own command-line client (click, rich, pygments) whenever those are
# installed, which costs more start-up time than httpx itself; nothing here needs it.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx  # noqa: E402

from .control import RunControl
from .errors import ProviderError
from .events import retry_event
from .sse import SSEDecoder

if TYPE_CHECKING:
    import ssl

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
_ERROR_BODY_LIMIT = 64 * 1024

_HEAD, _DATA, _END, _FAIL, _STOP = range(5)


class _Channel:
    """A bounded single-producer, single-consumer queue whose consumer can be woken
    by an interruption even while the queue is empty or full."""

    def __init__(self, limit: int = 64) -> None:
        self._items: deque[tuple[Any, ...]] = deque()
        self._limit = limit
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def put(self, item: tuple[Any, ...]) -> None:
        while len(self._items) >= self._limit:
            self._putter = asyncio.get_running_loop().create_future()
            await self._putter
        self._items.append(item)
        self._wake(self._getter)

    def interrupt(self) -> None:
        self._items.appendleft((_STOP,))
        self._wake(self._getter)

    async def get(self) -> tuple[Any, ...]:
        while not self._items:
            self._getter = asyncio.get_running_loop().create_future()
            await self._getter
        item = self._items.popleft()
        self._wake(self._putter)
        return item


class _Retryable(Exception):
    def __init__(self, error: ProviderError, reason: str, delay: float | None = None) -> None:
        self.error = error
        self.reason = reason
        self.delay = delay  # what the server asked for, if it did


ErrorHook = Callable[[dict[str, Any]], Any]


class Transport:
    def __init__(
        self,
        *,
        retries: int = 2,
        retry_base_ms: float = 500,
        on_error: ErrorHook | None = None,
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 60.0,
        describe_error: Callable[[int, str | None], ProviderError],
    ) -> None:
        self.retries = retries
        self.retry_base_ms = retry_base_ms
        self.on_error = on_error
        self.describe_error = describe_error
        self._timeout = httpx.Timeout(idle_timeout_s, connect=connect_timeout_s)
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            for stale in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[stale]
            client = httpx.AsyncClient(timeout=self._timeout, trust_env=True,
                                       verify=_ssl_context())
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def send(
        self, url: str, headers: dict[str, str], body: dict[str, Any], control: RunControl
    ) -> AsyncIterator[tuple[str, Any]]:
        """Yield ("retry", event) before each retry, then the reply as ("json", obj) or a
        series of ("sse", [(event, data), ...])."""
        attempt = 0
        while True:
            control.check()
            started = False
            try:
                async with contextlib.aclosing(
                    self._attempt(url, headers, body, control)
                ) as items:
                    async for item in items:
                        started = True
                        yield item
                return
            except _Retryable as failure:
                if started:
                    raise failure.error from None
                attempt += 1
                delay = await self._retry_delay(failure, attempt, control)
                yield "retry", retry_event(attempt, delay, failure.reason)
                await control.sleep(delay)

    async def _retry_delay(
        self, failure: _Retryable, attempt: int, control: RunControl
    ) -> float:
        """How long to wait before retry number `attempt`, or raise the error to give up."""
        error = failure.error
        decision = "retry" if attempt <= self.retries else "fail"
        if self.on_error is not None and attempt <= self.retries:
            info = {"status": error.status, "message": str(error), "attempt": attempt,
                    "reason": failure.reason, "retry_after": failure.delay, "error": error}
            outcome = self.on_error(info)
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
                raise ProviderError(
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
        backoff = self.retry_base_ms / 1000 * 2 ** (attempt - 1)
        return backoff * (0.5 + random.random() / 2)

    async def _attempt(
        self, url: str, headers: dict[str, str], body: dict[str, Any], control: RunControl
    ) -> AsyncIterator[tuple[str, Any]]:
        channel = _Channel()
        producer = asyncio.get_running_loop().create_task(
            self._produce(channel, url, headers, body)
        )
        unsubscribe = control.subscribe(channel.interrupt)
        # If the run ends while this generator is left suspended (the loop raised, or its
        # consumer stopped reading), nobody resumes it to run the `finally` below until
        # the garbage collector does: hang up now instead.
        forget = control.on_close(lambda: _hang_up(producer))
        try:
            kind, *head = await channel.get()
            if kind == _HEAD:
                content_type = head[0]
                expects_json = head[1]
                if "json" in content_type or ("event-stream" not in content_type and expects_json):
                    yield "json", await self._read_json(channel, control)
                else:
                    async for events in self._read_sse(channel, control):
                        yield "sse", events
            else:
                self._unexpected(kind, head, control)
        finally:
            unsubscribe()
            forget()
            if not producer.done():
                _hang_up(producer)
                await asyncio.gather(producer, return_exceptions=True)

    def _unexpected(self, kind: int, payload: list[Any], control: RunControl) -> None:
        if kind == _STOP:
            control.check()
        if kind == _FAIL:
            raise payload[0]
        raise ProviderError("the response ended unexpectedly")

    async def _read_json(self, channel: _Channel, control: RunControl) -> Any:
        parts = []
        while True:
            kind, *payload = await channel.get()
            if kind == _DATA:
                parts.append(payload[0])
            elif kind == _END:
                break
            else:
                self._unexpected(kind, payload, control)
        raw = b"".join(parts)
        try:
            return json.loads(raw)
        except ValueError:
            raise ProviderError(
                f"the endpoint's reply is not valid JSON: {raw[:200]!r}"
            ) from None

    async def _read_sse(
        self, channel: _Channel, control: RunControl
    ) -> AsyncIterator[list[tuple[str, str]]]:
        decoder = SSEDecoder()
        while True:
            kind, *payload = await channel.get()
            if kind == _DATA:
                events = decoder.feed(payload[0])
                if events:
                    yield events
            elif kind == _END:
                events = decoder.close()
                if events:
                    yield events
                return
            else:
                self._unexpected(kind, payload, control)

    async def _produce(
        self, channel: _Channel, url: str, headers: dict[str, str], body: dict[str, Any]
    ) -> None:
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
            request_headers = {"content-type": "application/json", **headers}
            async with self._client().stream(
                "POST", url, content=content, headers=request_headers
            ) as response:
                if response.status_code >= 400:
                    raise await self._http_error(response)
                await channel.put((
                    _HEAD,
                    response.headers.get("content-type", ""),
                    not body.get("stream"),
                ))
                async for chunk in response.aiter_bytes():
                    await channel.put((_DATA, chunk))
            await channel.put((_END,))
        except asyncio.CancelledError:
            raise
        except _Retryable as failure:
            await channel.put((_FAIL, failure))
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            error = ProviderError(f"could not connect to {url}: {_describe(exc)}")
            await channel.put((_FAIL, _Retryable(error, f"connection failed: {_describe(exc)}")))
        except httpx.ReadTimeout:
            error = ProviderError(
                f"{url} sent nothing for {self._timeout.read:g} s (idle timeout)"
            )
            await channel.put((_FAIL, _Retryable(error, "the server stopped answering")))
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            error = ProviderError(f"the connection to {url} broke: {_describe(exc)}")
            await channel.put((_FAIL, _Retryable(error, "connection dropped")))
        except httpx.HTTPError as exc:
            await channel.put((_FAIL, ProviderError(f"request to {url} failed: {_describe(exc)}")))
        except Exception as exc:  # a ProviderError from the status, or a bug: never hang
            await channel.put((_FAIL, exc))

    async def _http_error(self, response: httpx.Response) -> Exception:
        raw = b""
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) > _ERROR_BODY_LIMIT:
                break
        try:
            data = json.loads(raw)
        except ValueError:
            data = raw.decode("utf-8", "replace").strip() or None
        error = self.describe_error(response.status_code, data)
        if response.status_code not in RETRYABLE_STATUS:
            return error
        reason = "rate limited" if response.status_code == 429 else (
            f"the server answered {response.status_code}"
        )
        error.retry_after = parse_retry_after(response.headers)
        return _Retryable(error, reason, error.retry_after)


def _hang_up(producer: asyncio.Task[None]) -> None:
    """Cancel the read once: a second cancel would interrupt httpx while it closes the
    connection, leaving the socket open."""
    if not producer.done() and not producer.cancelling():
        producer.cancel()


def parse_retry_after(headers: httpx.Headers) -> float | None:
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


_SSL_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def _ssl_context() -> ssl.SSLContext:
    """The certificate store, loaded once per process (httpx would load it again for
    every client, a tenth of a second each time). SSL_CERT_FILE / SSL_CERT_DIR are
    honoured as httpx honours them."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _SSL_CONTEXTS.get(key)
    if context is None:
        context = _SSL_CONTEXTS[key] = httpx.create_ssl_context(verify=True, trust_env=True)
    return context


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
