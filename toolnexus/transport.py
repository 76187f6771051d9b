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
import random
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from .control import RunControl
from .errors import ProviderError
from .events import retry_event
from .http import HTTPClient, HTTPFailure, Response
from .sse import SSEDecoder

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
StreamError = Callable[[str, str], ProviderError | None]


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
        self.connect_timeout_s = connect_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._clients: dict[asyncio.AbstractEventLoop, HTTPClient] = {}

    def _client(self) -> HTTPClient:
        """The connection pool of the running event loop (connections belong to one)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for stale in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[stale]
            client = self._clients[loop] = HTTPClient(
                connect_timeout=self.connect_timeout_s, read_timeout=self.idle_timeout_s)
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            client.close()

    async def send(
        self, url: str, headers: dict[str, str], body: dict[str, Any], control: RunControl,
        *, stream_error: StreamError | None = None, preamble: frozenset[str] = frozenset(),
    ) -> AsyncIterator[tuple[str, Any]]:
        """Yield ("retry", event) before each retry, then the reply as ("json", obj) or a
        series of ("sse", [(event, data), ...]).

        `stream_error(event, data)` tells an error sent inside a stream. An overloaded
        server often answers 200 and then sends an error before any output (only events
        named in `preamble` may come first): that is retried like an HTTP error."""
        attempt = 0
        while True:
            control.check()
            started = False
            try:
                async with contextlib.aclosing(
                    self._attempt(url, headers, body, control)
                ) as items:
                    async for item in items:
                        if not started and item[0] == "sse" and stream_error is not None:
                            started = _output_begins(item[1], stream_error, preamble)
                        else:
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
        response: Response | None = None
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
            request_headers = {"content-type": "application/json", **headers}
            response = await self._client().request("POST", url, request_headers, content)
            if response.status >= 400:
                raise await self._http_error(response)
            await channel.put((
                _HEAD, response.headers.get("content-type", ""), not body.get("stream"),
            ))
            async for chunk in response.chunks():
                await channel.put((_DATA, chunk))
            await channel.put((_END,))
        except asyncio.CancelledError:
            raise
        except _Retryable as failure:
            await channel.put((_FAIL, failure))
        except HTTPFailure as failure:
            await channel.put((_FAIL, self._transport_error(failure, url)))
        except Exception as exc:  # a ProviderError from the status, or a bug: never hang
            await channel.put((_FAIL, exc))
        finally:
            if response is not None:
                response.close()

    def _transport_error(self, failure: HTTPFailure, url: str) -> Exception:
        """What a failure below HTTP means for the run; all but TLS refusals are retried
        (a stream that already gave output is never retried, see `send`)."""
        if failure.kind == "tls":
            return ProviderError(f"{failure} (check the base URL {url}, or SSL_CERT_FILE)")
        if failure.kind == "connect":
            error = ProviderError(f"could not connect to {url}: {failure}")
            return _Retryable(error, f"connection failed: {failure}")
        if failure.kind == "timeout":
            error = ProviderError(
                f"{url} sent nothing for {self.idle_timeout_s:g} s (idle timeout)")
            return _Retryable(error, "the server stopped answering")
        error = ProviderError(f"the connection to {url} broke: {failure}")
        return _Retryable(error, "connection dropped")

    async def get_json(self, url: str, headers: dict[str, str], control: RunControl,
                       *, limit: int = 8 * 1024 * 1024) -> Any:
        """One GET (no retries) for endpoint metadata: the JSON body of a 200 answer, or
        None for any other answer, a body over `limit` bytes, or a failed connection.
        Only an interruption of the run is raised."""
        async def fetch() -> Any:
            response = await self._client().request("GET", url, headers)
            try:
                if response.status != 200:
                    return None
                raw = await response.read(limit=limit)
                return None if len(raw) > limit else json.loads(raw)
            finally:
                response.close()

        try:
            return await control.race(fetch())
        except (HTTPFailure, ValueError):
            return None

    async def _http_error(self, response: Response) -> Exception:
        raw = await response.read(limit=_ERROR_BODY_LIMIT)
        try:
            data = json.loads(raw)
        except ValueError:
            data = raw.decode("utf-8", "replace").strip() or None
        error = self.describe_error(response.status, data)
        if response.status not in RETRYABLE_STATUS:
            return error
        reason = "rate limited" if response.status == 429 else (
            f"the server answered {response.status}"
        )
        error.retry_after = parse_retry_after(response.headers)
        return _Retryable(error, reason, error.retry_after)


def _output_begins(events: list[tuple[str, str]], stream_error: StreamError,
                   preamble: frozenset[str]) -> bool:
    """Whether these events carry output; raises _Retryable for a retryable error that
    comes before any."""
    for event, data in events:
        error = stream_error(event, data)
        if error is not None:
            if error.status in RETRYABLE_STATUS:
                reason = "rate limited" if error.status == 429 else (
                    f"the server reported {error.provider_message or error.status}")
                raise _Retryable(error, reason)
            return True  # not retryable: the stream's own reading raises it
        if event not in preamble:
            return True
    return False


def _hang_up(producer: asyncio.Task[None]) -> None:
    """Cancel the read once: a second cancel could interrupt the clean-up that closes
    the connection."""
    if not producer.done() and not producer.cancelling():
        producer.cancel()


def parse_retry_after(headers: dict[str, str]) -> float | None:
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


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
